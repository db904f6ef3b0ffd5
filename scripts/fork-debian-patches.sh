#!/bin/bash
# Debian's side of the fork: from each fork series, the quilt patches that go
# into the release's source package (debian/patches/), their series lines
# and the changelog entry, in fork/debian/RELEASE/ (fork/README.md).
#
#   scripts/fork-debian-patches.sh [--check] [--series DIR] [--out DIR]
#                                  [--source RELEASE=DIR]... [RELEASE...]
#   scripts/fork-debian-patches.sh --example DIR [--source RELEASE=DIR]... [RELEASE...]
#
# RELEASE is unstable, trixie or bookworm (default: all three). Each takes
# its patches from `git format-patch` files:
#   unstable   the pull requests fork/master/K-NAME/, in their numbers'
#              order (1-no-abort, 2-section-rules, 3-reply-sequences,
#              4-payload-arrays), each folder's 0001-*.patch ... (its
#              0000-cover-letter.patch is no patch) (master's src/libmongoc
#              is 2.5.0's); a folder without pull request folders gives its
#              *.patch (the example series below)
#   trixie     fork/trixie/*.patch    (frozen: against trixie's packaging tree)
#   bookworm   fork/bookworm/*.patch  (frozen: against bookworm's packaging tree)
# and applies them with `git am` to the release's packaging tree
# (scripts/fork-source.sh; --source RELEASE=DIR is passed on as its --source)
# with Debian's own patches already applied, which proves they apply there.
# Each commit becomes one quilt patch, opmsg-NNNN-NAME.patch (a pull
# request's: opmsg-K-FOLDER-NNNN-NAME.patch, e.g.
# opmsg-1-no-abort-0001-....patch), with a DEP-3 header: Description (the
# commit message), Author, Origin (the patch file in the project's
# repository), Forwarded (fork/debian/forwarded: "no", or
# the upstream pull request's address once there is one; "not-needed" for the
# example), Last-Update (the commit's date). The patches are applied once more as dpkg-source applies
# them (patch -p1, no fuzz) and must give the tree `git am` gave.
#
# Written to DIR/RELEASE/ (default fork/debian): patches/, series (the lines
# for debian/patches/series), changelog (the entry for debian/changelog,
# version <stock>+opmsg1, a local package, dated with the newest commit but
# never before the entry under it) and GENERATED (where it all came from). Nothing depends on the day it runs: the same series
# always gives the same files. A release whose series has no patches gets
# only PLACEHOLDER; a series folder holding a PLACEHOLDER file (the example)
# passes it on beside the patches: make fork-debs then reports the
# hostile-reply harness without failing on it.
#
# --check writes to a temporary folder and fails, showing the difference,
# when DIR differs from it (CI: make fork-debian-patches-check).
# --example DIR writes a throwaway series for each RELEASE, one commit that
# adds a comment to libmongoc's reply path and its tests, into DIR/master/,
# DIR/trixie/ or DIR/bookworm/ (each marked PLACEHOLDER): make fork-debs
# builds with it while fork/debian/RELEASE/ is a placeholder, so every step
# runs before the real series exist. It is never committed.
set -euo pipefail

say() { echo "fork-debian-patches: $*" >&2; }
die() { echo "fork-debian-patches: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export LC_ALL=C

check=0
series_root=fork
out_root=fork/debian
example=""
sources=()
releases=()
while [ $# -gt 0 ]; do
  case $1 in
    --check) check=1; shift ;;
    --series) series_root=${2:?--series needs a folder}; shift 2 ;;
    --out) out_root=${2:?--out needs a folder}; shift 2 ;;
    --source) sources+=("${2:?--source needs RELEASE=DIR}"); shift 2 ;;
    --example) example=${2:?--example needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) releases+=("$1"); shift ;;
  esac
done
[ ${#releases[@]} -gt 0 ] || releases=(unstable trixie bookworm)

# The series a release's patches come from.
series_of() {
  case $1 in
    unstable) echo master ;;
    trixie|bookworm) echo "$1" ;;
    *) die "unknown release $1 (unstable, trixie, bookworm)" ;;
  esac
}

# fork-source.sh's --source for REF, when one was given.
source_args() {
  local s
  for s in "${sources[@]}"; do
    [ "${s%%=*}" = "$1" ] && printf '%s\n' --source "${s#*=}"
  done
  return 0
}

# Committer and dates of the commits made here: fixed, so the same input
# always gives the same trees.
git_fixed() {
  GIT_AUTHOR_NAME="opmsg fork" GIT_AUTHOR_EMAIL="fork@opmsg.invalid" \
  GIT_COMMITTER_NAME="opmsg fork" GIT_COMMITTER_EMAIL="fork@opmsg.invalid" \
  GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
    git -c core.autocrlf=false -c commit.gpgsign=false "$@"
}

# A clone of REF's tree in DEST with Debian's own patches (if it is a
# packaging tree) applied the way dpkg-source applies them
# (scripts/fork-source.sh's opmsg-series-base), tagged opmsg-debian.
prepared_tree() {
  local ref=$1 dest=$2 base args=()
  mapfile -t args < <(source_args "$ref")
  base=$(scripts/fork-source.sh "$ref" "${args[@]}") || die "no $ref tree (scripts/fork-source.sh $ref)"
  git clone -q "$base" "$dest"
  git -C "$dest" checkout -q --detach opmsg-series-base
  git -C "$dest" tag opmsg-debian
}

# --- The throwaway example series --------------------------------------------

if [ -n "$example" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  for rel in "${releases[@]}"; do
    ref=$(series_of "$rel")
    prepared_tree "$ref" "$work/$ref"
    if [ -f "$work/$ref/src/libmongoc/tests/test-mcd-rpc.c" ]; then
      tests=src/libmongoc/tests/test-mcd-rpc.c
    else
      tests=src/libmongoc/tests/test-mongoc-rpc.c
    fi
    for f in src/libmongoc/src/mongoc/mongoc-rpc.c "$tests"; do
      printf '\n/* opmsg example series: a comment that stands in for the fork, so that\n * make fork-debs builds and checks the packages before the fork exists. */\n' \
        >>"$work/$ref/$f"
    done
    git_fixed -C "$work/$ref" commit -q -a -F - <<'EOF'
Example: a comment in the reply path and its tests

A stand-in for the fork's series while it does not exist yet: it
changes no code, so the packages built with it behave as stock ones.
It exercises every step of make fork-debs (fork/README.md).
EOF
    rm -rf "${example:?}/$ref"
    mkdir -p "$example/$ref"
    git -C "$work/$ref" format-patch -q -o "$(realpath -m "$example/$ref")" opmsg-debian..HEAD
    echo "A throwaway example series (scripts/fork-debian-patches.sh --example): not the fork." \
      >"$example/$ref/PLACEHOLDER"
  done
  say "example series for ${releases[*]} in $example"
  exit 0
fi

# --- Generating fork/debian/RELEASE/ -----------------------------------------

homepage=$(sed -n 's/^ *HOMEPAGE_URL "\(.*\)"$/\1/p' CMakeLists.txt)
[ -n "$homepage" ] || die "no HOMEPAGE_URL in CMakeLists.txt"
maintainer=$(sed -n 's/^set(CPACK_PACKAGE_CONTACT "\(.*\)")$/\1/p' cmake/packaging.cmake)
[ -n "$maintainer" ] || die "no CPACK_PACKAGE_CONTACT in cmake/packaging.cmake"
forwarded=$(sed -n '1p' fork/debian/forwarded 2>/dev/null || true)
[ -n "$forwarded" ] || die "fork/debian/forwarded is missing or empty"

# The commit message as a DEP-3 Description: the subject, then the body as
# continuation lines (an empty line is " .").
dep3_description() {
  local repo=$1 commit=$2
  echo "Description: $(git -C "$repo" log -1 --format=%s "$commit")"
  git -C "$repo" log -1 --format=%b "$commit" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' |
    sed 's/[[:space:]]*$//; s/^$/./; s/^/ /'
}

patches() { if [ "$1" -eq 1 ]; then echo "1 patch"; else echo "$1 patches"; fi; }

# A series' patch files, in order: its pull request folders' (K-NAME/, in
# their numbers' order, the cover letters left out), or its own *.patch.
series_files() {  # SERIES-DIR
  local prs
  prs=$(find "$1" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*-*' -printf '%f\n' 2>/dev/null | sort -V)
  if [ -n "$prs" ]; then
    for d in $prs; do
      find "$1/$d" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' -type f | sort
    done
  else
    find "$1" -maxdepth 1 -name '*.patch' -type f 2>/dev/null | sort
  fi
}

# One release into DEST (an empty folder).
generate() {
  local rel=$1 dest=$2 series files=() work tree stock dist n=0 c name file newest=0 newest_commit t tip rel_path
  series=$(series_of "$rel")
  mapfile -t files < <(series_files "$series_root/$series")
  if [ ${#files[@]} -eq 0 ]; then
    cat >"$dest/PLACEHOLDER" <<EOF
No patches yet: fork/$series/ holds no series. Once it does,
make fork-debian-patches writes here the quilt patches for Debian's
$rel package of mongo-c-driver, their series lines and the changelog
entry (fork/README.md, "Debian's packages").
EOF
    say "$rel: placeholder (fork/$series/ has no patches)"
    return 0
  fi
  work=$tmp/work-$rel
  tree=$work/tree
  mkdir -p "$work"
  prepared_tree "$rel" "$tree"
  stock=$(cd "$tree" && dpkg-parsechangelog -S Version)
  dist=$(cd "$tree" && dpkg-parsechangelog -S Distribution)
  for file in "${files[@]}"; do
    git_fixed -C "$tree" am -q --keep-cr "$(realpath "$file")" ||
      die "$file does not apply to $rel's packaging tree ($stock) with Debian's patches applied"
  done
  # The example is not for upstream; the fork's patches are forwarded as
  # fork/debian/forwarded says.
  local fwd=$forwarded
  [ ! -f "$series_root/$series/PLACEHOLDER" ] || fwd=not-needed
  mkdir -p "$dest/patches"
  : >"$dest/series"
  local subjects=""
  for c in $(git -C "$tree" rev-list --reverse opmsg-debian..HEAD); do
    file=${files[$n]}
    n=$((n + 1))
    # The file's path under the series folder: NAME.patch or K-FOLDER/NAME.patch.
    rel_path=${file#"$series_root/$series/"}
    name=opmsg-${rel_path//\//-}
    {
      dep3_description "$tree" "$c"
      echo "Author: $(git -C "$tree" log -1 --format='%an <%ae>' "$c")"
      echo "Origin: other, $homepage/blob/main/fork/$series/$rel_path"
      echo "Forwarded: $fwd"
      echo "Last-Update: $(git -C "$tree" log -1 --date=format:%Y-%m-%d --format=%ad "$c")"
      echo "---"
      git -C "$tree" -c diff.noprefix=false -c diff.mnemonicPrefix=false -c diff.algorithm=myers \
        -c core.quotePath=true diff-tree -p --no-renames --no-color --no-ext-diff --no-textconv \
        --src-prefix=a/ --dst-prefix=b/ --full-index "$c^" "$c" |
        grep -v '^index [0-9a-f]*\.\.[0-9a-f]*'
    } >"$dest/patches/$name"
    if grep -q '^Binary files .* differ$' "$dest/patches/$name"; then
      die "$file changes a binary file: a quilt patch cannot carry it"
    fi
    echo "$name" >>"$dest/series"
    case $rel_path in */*) subjects+="PR ${rel_path%%-*}: " ;; esac
    subjects+="$(git -C "$tree" log -1 --format=%s "$c")"$'\n'
    t=$(git -C "$tree" log -1 --format=%at "$c")
    [ "$t" -le "$newest" ] || { newest=$t; newest_commit=$c; }
  done
  # What they are: "fork/master/ (4 pull requests, 12 patches)".
  local what nprs
  nprs=$(printf '%s\n' "${files[@]}" | sed -n "s|^$series_root/$series/\([^/]*\)/.*|\1|p" | sort -u | wc -l)
  what="fork/$series/ ($(patches "$n"))"
  [ "$nprs" -eq 0 ] || what="fork/$series/ ($nprs pull requests, $(patches "$n"))"
  # Applied as dpkg-source applies them, they must give git am's tree.
  tip=$(git -C "$tree" rev-parse HEAD)
  git -C "$tree" checkout -q --detach opmsg-debian
  while read -r name; do
    patch -d "$tree" -s -t -F 0 -N -p1 --no-backup-if-mismatch <"$dest/patches/$name" >/dev/null ||
      die "$rel: $name does not apply with patch -p1 -F0 (as dpkg-source applies it)"
  done <"$dest/series"
  git -C "$tree" add -A -f .
  git -C "$tree" diff --cached --quiet "$tip" ||
    die "$rel: the quilt patches do not give the tree git am gave"
  # The entry is dated with the newest commit, and always after the entry
  # before it (lintian: latest-debian-changelog-entry-without-new-date).
  local date stock_time
  stock_time=$(cd "$tree" && dpkg-parsechangelog -S Timestamp)
  if [ "$newest" -gt "$stock_time" ]; then
    date=$(git -C "$tree" log -1 --date=format:'%a, %d %b %Y %H:%M:%S %z' --format=%ad "$newest_commit")
  else
    date=$(date -u -R -d "@$((stock_time + 60))")
  fi
  # "Local package": a rebuild of Debian's package, not an upload to Debian
  # (lintian then asks for no NMU version or wording).
  {
    echo "mongo-c-driver ($stock+opmsg1) $dist; urgency=medium"
    echo
    echo "  * Local package: libmongoc's reply path from the opmsg fork,"
    echo "    $what:"
    printf '%s' "$subjects" | while read -r s; do
      echo "$s" | fold -s -w 72 | sed '1s/^/    - /; 2,$s/^/      /; s/ *$//'
    done
    echo
    echo " -- $maintainer  $date"
  } >"$dest/changelog"
  if [ "$nprs" -eq 0 ]; then
    echo "Generated by scripts/fork-debian-patches.sh (make fork-debian-patches) from"
    echo "$what, applied to Debian's $rel packaging tree of"
    echo "mongo-c-driver $stock with Debian's own patches. Do not edit: change the"
    echo "series and generate again."
  else
    echo "Generated by scripts/fork-debian-patches.sh (make fork-debian-patches) from"
    echo "$what, in their numbers' order,"
    echo "applied to Debian's $rel packaging tree of mongo-c-driver $stock with"
    echo "Debian's own patches. Do not edit: change the pull requests and generate"
    echo "again."
  fi >"$dest/GENERATED"
  if [ -f "$series_root/$series/PLACEHOLDER" ]; then
    cp "$series_root/$series/PLACEHOLDER" "$dest/PLACEHOLDER"
  fi
  rm -rf "$work"
  say "$rel: $what for mongo-c-driver $stock"
}

status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for rel in "${releases[@]}"; do
  mkdir -p "$tmp/$rel"
  generate "$rel" "$tmp/$rel"
  if [ $check -eq 1 ]; then
    if ! diff -ruN "$out_root/$rel" "$tmp/$rel"; then
      say "$out_root/$rel differs from what the series give: run make fork-debian-patches"
      status=1
    fi
  else
    rm -rf "${out_root:?}/$rel"
    mkdir -p "$out_root"
    cp -r "$tmp/$rel" "$out_root/$rel"
  fi
done
[ $check -eq 0 ] || [ $status -ne 0 ] || say "$out_root is what the series give (${releases[*]})"
exit $status
