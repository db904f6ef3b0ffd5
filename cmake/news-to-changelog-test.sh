#!/bin/sh
# Usage: cmake/news-to-changelog-test.sh
# news-to-changelog.sh on two small NEWS files: an "* Unreleased" entry is
# VERSION's, UNRELEASED, and the releases below it keep their own versions;
# without one, the newest release is VERSION's. Dates fall entry by entry
# (lintian wants the newest entry newest). Exit 1 on the first difference.
set -eu
here=$(dirname "$0") t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
printf '%s\n' '* Unreleased' '  - new' '' '* opmsg 0.2.0 (2026-12-03)' '  - two' '' \
  '* opmsg 0.1.0 (2026-12-01)' '  - one' >"$t/NEWS"
expect() {  # WHAT: the changelog's headings and dates against stdin
  zcat "$t/changelog.Debian.gz" | grep -E '^(opmsg| --)' | sed 's/^ -- .*  //' >"$t/got"
  diff -u - "$t/got" >&2 || { echo "news-to-changelog-test: $1 differs" >&2; exit 1; }
}
sh "$here/news-to-changelog.sh" "$t/NEWS" 0.3.0-1 "$t"
expect unreleased <<'X'
opmsg (0.3.0-1) UNRELEASED; urgency=medium
Thu, 03 Dec 2026 12:00:00 +0000
opmsg (0.2.0-1) unstable; urgency=medium
Thu, 03 Dec 2026 11:59:00 +0000
opmsg (0.1.0-1) unstable; urgency=medium
Tue, 01 Dec 2026 11:58:00 +0000
X
sed -i '1,3d' "$t/NEWS"
sh "$here/news-to-changelog.sh" "$t/NEWS" 0.2.0-1 "$t"
expect released <<'X'
opmsg (0.2.0-1) unstable; urgency=medium
Thu, 03 Dec 2026 12:00:00 +0000
opmsg (0.1.0-1) unstable; urgency=medium
Tue, 01 Dec 2026 11:59:00 +0000
X
echo "news-to-changelog-test: ok"
