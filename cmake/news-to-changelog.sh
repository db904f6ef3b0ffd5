#!/bin/sh
# news-to-changelog.sh NEWS VERSION OUTDIR: writes OUTDIR/changelog.gz (NEWS
# itself) and OUTDIR/changelog.Debian.gz (the newest NEWS entry in Debian's
# changelog format), both compressed reproducibly (gzip -9n).
set -eu
news=$1
version=$2
out=$3
mkdir -p "$out"
gzip -9n < "$news" > "$out/changelog.gz"
# The first NEWS entry: "* opmsg X.Y.Z (YYYY-MM-DD)" then "- " items.
date=$(sed -n 's/^\* opmsg [^ ]* (\([0-9-]*\)).*/\1/p' "$news" | head -n 1)
{
  printf 'opmsg (%s) unstable; urgency=medium\n\n' "$version"
  awk '/^\* opmsg / { if (seen) exit; seen = 1; next }
       seen && /^  - / { sub(/^  - /, "  * "); print; next }
       seen && /^    / { print }' "$news"
  printf '\n -- opmsg maintainers <maintainers@opmsg.invalid>  %s\n' \
    "$(LC_ALL=C date -u -d "${date:-1970-01-01} 12:00" '+%a, %d %b %Y %H:%M:%S +0000')"
} | gzip -9n > "$out/changelog.Debian.gz"
