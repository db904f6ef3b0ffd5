#!/bin/bash
# Debian's side of the fork, made at build time (make fork-debs runs it; it
# writes under build/, never under fork/): the quilt patches with DEP-3
# headers, their series lines and the debian/changelog entry for one
# release's source package of mongo-c-driver.
#
#   scripts/fork-debian-patches.sh --release REL --tree DIR --version VERSION
#                                  --out DIR [--test-build]
#
#   --release  bookworm, trixie or unstable
#   --tree     the unpacked source package the packages are built from
#              (`apt-get source`, or Debian's packaging tree), with
#              Debian's own patches applied; it is copied, never changed
#   --version  the version of the entry (INSTALLED+opmsgN or TREE+opmsgN)
#   --test-build  the entry says the packages are a test build, for test
#              systems only (the tree is older than what the release runs)
#
# The patches are the fork's committed `git format-patch` files, in pull
# request order, each folder's 0000-cover-letter.patch left out:
#   unstable  fork/master/K-NAME/[0-9][0-9][0-9][0-9]-*.patch
#   trixie    fork/trixie/K-NAME/...    (the hand-made ports)
#   bookworm  fork/bookworm/K-NAME/...
#
# They are applied with `git am` to a copy of --tree, which proves they
# apply there; each commit becomes one quilt patch, opmsg-K-NAME-NNNN-....patch,
# with a DEP-3 header: Description (the commit message), Author, Forwarded
# (fork/debian/forwarded), Last-Update (the commit's date). Applied once more
# the way dpkg-source applies them (patch -p1, no fuzz) they must give the
# same tree. The changelog entry is the committed text fork/debian/REL/changelog
# (the only hand-written part) under a header made here:
# "mongo-c-driver (VERSION) DIST; urgency=medium", the tree's distribution,
# dated with the newest commit but never before the tree's own top entry.
#
# Written to --out (emptied first): patches/, series, changelog (the entry
# alone), FROM (which files it was made from).
set -euo pipefail

say() { echo "fork-debian-patches: $*" >&2; }
die() { echo "fork-debian-patches: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export LC_ALL=C

rel="" tree="" version="" out="" test_build=0
while [ $# -gt 0 ]; do
  case $1 in
    --release) rel=${2:?}; shift 2 ;;
    --tree) tree=$(realpath "${2:?}"); shift 2 ;;
    --version) version=${2:?}; shift 2 ;;
    --out) out=$(realpath -m "${2:?}"); shift 2 ;;
    --test-build) test_build=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$rel" ] && [ -d "$tree/debian" ] && [ -n "$version" ] && [ -n "$out" ] ||
  die "usage: $0 --release REL --tree DIR --version VERSION --out DIR [--test-build]"
case $rel in
  unstable) series=fork/master ;;
  trixie|bookworm) series=fork/$rel ;;
  *) die "unknown release $rel (bookworm, trixie, unstable)" ;;
esac
text=fork/debian/$rel/changelog
[ -f "$text" ] || die "no $text (the changelog entry's text)"
forwarded=$(sed -n '1p' fork/debian/forwarded 2>/dev/null || true)
[ -n "$forwarded" ] || die "fork/debian/forwarded is missing or empty"
maintainer=$(sed -n 's/^set(CPACK_PACKAGE_CONTACT "\(.*\)")$/\1/p' cmake/packaging.cmake)
[ -n "$maintainer" ] || die "no CPACK_PACKAGE_CONTACT in cmake/packaging.cmake"

# The patch files, in pull request order.
files=()
mapfile -t prs < <(find "$series" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*-*' -printf '%f\n' | sort -V)
for d in "${prs[@]}"; do
  mapfile -t -O ${#files[@]} files < <(find "$series/$d" -maxdepth 1 -type f \
    -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | sort)
done
[ ${#files[@]} -gt 0 ] || die "no patches in $series/"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git_fixed() {
  GIT_AUTHOR_NAME=fork GIT_AUTHOR_EMAIL=fork@example.invalid \
  GIT_COMMITTER_NAME=fork GIT_COMMITTER_EMAIL=fork@example.invalid \
  GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \
    git -C "$work/tree" -c core.autocrlf=false -c commit.gpgsign=false "$@"
}
cp -a "$tree" "$work/tree"
rm -rf "$work/tree/.pc" "$work/tree/.git"
git_fixed init -q
git_fixed add -A -f .
git_fixed commit -q -m base
git_fixed tag debian
for f in "${files[@]}"; do
  git_fixed am -q --keep-cr --committer-date-is-author-date "$top/$f" ||
    die "$f does not apply to $rel's source $(cd "$tree" && dpkg-parsechangelog -S Version) with Debian's patches applied"
done

rm -rf "$out"
mkdir -p "$out/patches"
: >"$out/series"
n=0 newest=0
for c in $(git_fixed rev-list --reverse debian..HEAD); do
  f=${files[$n]}
  n=$((n + 1))
  p=${f#"$series/"}
  name=opmsg-${p//\//-}
  {
    echo "Description: $(git_fixed log -1 --format=%s "$c")"
    git_fixed log -1 --format=%b "$c" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' |
      sed 's/[[:space:]]*$//; s/^$/./; s/^/ /'
    echo "Author: $(git_fixed log -1 --format='%an <%ae>' "$c")"
    echo "Forwarded: $forwarded"
    echo "Last-Update: $(git_fixed log -1 --date=format:%Y-%m-%d --format=%ad "$c")"
    echo "---"
    git_fixed diff-tree -p --no-renames --no-color --no-ext-diff --src-prefix=a/ --dst-prefix=b/ "$c^" "$c" |
      grep -v '^index [0-9a-f]*\.\.[0-9a-f]*'
  } >"$out/patches/$name"
  grep -q '^Binary files .* differ$' "$out/patches/$name" && die "$f changes a binary file: no quilt patch can carry it"
  echo "$name" >>"$out/series"
  t=$(git_fixed log -1 --format=%at "$c")
  [ "$t" -le "$newest" ] || newest=$t
done

# Applied as dpkg-source applies them, they give git am's tree.
tip=$(git_fixed rev-parse HEAD)
git_fixed checkout -q --detach debian
while read -r name; do
  patch -d "$work/tree" -s -t -F 0 -N -p1 --no-backup-if-mismatch <"$out/patches/$name" >/dev/null ||
    die "$rel: $name does not apply with patch -p1 -F0 (as dpkg-source applies it)"
done <"$out/series"
git_fixed add -A -f .
git_fixed diff --cached --quiet "$tip" || die "$rel: the quilt patches do not give the tree git am gave"

stock_time=$(cd "$tree" && dpkg-parsechangelog -S Timestamp)
dist=$(cd "$tree" && dpkg-parsechangelog -S Distribution)
[ "$newest" -gt "$stock_time" ] || newest=$((stock_time + 60))
{
  echo "mongo-c-driver ($version) $dist; urgency=medium"
  echo
  sed '/^#/d' "$text"
  if [ $test_build -eq 1 ]; then
    echo "  * Test build: Debian's packaging tree $(cd "$tree" && dpkg-parsechangelog -S Version) is older"
    echo "    than the release's current revision; for test systems only."
  fi
  echo
  echo " -- $maintainer  $(date -u -R -d "@$newest")"
} >"$out/changelog"
[ "$(dpkg-parsechangelog -l "$out/changelog" -S Version)" = "$version" ] || die "the changelog entry does not parse"
printf '%s\n' "${files[@]}" >"$out/FROM"
say "$rel: $n quilt patches from $series/ for $version"
