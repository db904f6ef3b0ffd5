#!/bin/bash
# The pristine mongo-c-driver tree a fork series applies to, as a git
# repository of its own under build/fork/src/REF/ (made once, then reused).
#
# Usage: scripts/fork-source.sh REF [--source DIR] [--fresh]
#
# REF is one of
#   master     mongo-c-driver master at a047e0bc10f1 (2.6.0-dev), the base of
#              the upstream pull request (fork/master/)
#   bookworm   Debian's packaging branch debian/bookworm (1.23.1-1+deb12u3)
#   trixie     debian/trixie (1.30.4-1+deb13u2)
#   unstable   debian/unstable (2.5.0-1)
#
# Where the tree comes from, first match wins:
#   --source DIR   a checkout of mongo-c-driver at that ref (a clone of the
#                  upstream repository, or any folder holding the tree); it
#                  is copied, never changed
#   ../shared/upstream/ next to this repository: the tarball of the ref,
#                  checked against its SHA256SUMS
#   otherwise the script stops and prints the git commands that fetch it.
#
# The tree is committed as one commit with a fixed author and date, so the
# same tree always gives the same base commit, tagged opmsg-base. A Debian
# packaging tree (bookworm, trixie, unstable) keeps its own patches
# unapplied there, as dpkg-source wants it; a second commit applies them
# the way dpkg-source does, and the tag opmsg-series-base names where a
# fork series applies (opmsg-base itself for master). Prints the tree's
# path. --fresh makes it again even when it exists.
set -euo pipefail

say() { echo "fork-source: $*" >&2; }
die() { echo "fork-source: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:-}
shift || true
source_dir=""
fresh=0
while [ $# -gt 0 ]; do
  case $1 in
    --source) source_dir=${2:?--source needs a folder}; shift 2 ;;
    --fresh) fresh=1; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done

# ref -> tarball stem, the commit of the upstream repository, and the branch.
case $ref in
  master) stem=mongo-c-driver-master-a047e0bc10f1; commit=a047e0bc10f1a1e1419ac6ae2b87386d8c8ec9d3; branch=master ;;
  bookworm) stem=mongo-c-driver-debian-bookworm-4706cc75d5ad; commit=4706cc75d5ad; branch=debian/bookworm ;;
  trixie) stem=mongo-c-driver-debian-trixie-deecb8d0c76a; commit=deecb8d0c76a; branch=debian/trixie ;;
  unstable) stem=mongo-c-driver-debian-unstable-4ec56e607789; commit=4ec56e607789; branch=debian/unstable ;;
  *) die "usage: $0 master|bookworm|trixie|unstable [--source DIR] [--fresh]" ;;
esac

dest=$top/build/fork/src/$ref
if [ -d "$dest/.git" ] && [ $fresh -eq 0 ] && git -C "$dest" rev-parse -q --verify refs/tags/opmsg-series-base >/dev/null; then
  echo "$dest"
  exit 0
fi

shared=$(cd "$top/.." && pwd)/shared/upstream
tarball=$shared/$stem.tar.xz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "$source_dir" ]; then
  [ -f "$source_dir/CMakeLists.txt" ] && [ -d "$source_dir/src/libmongoc" ] ||
    die "$source_dir does not look like a mongo-c-driver tree"
  # A checkout of its own: not a folder that merely lies inside another
  # repository (an unpacked tarball under some project's ignored build/).
  toplevel=$(git -C "$source_dir" rev-parse --show-toplevel 2>/dev/null || true)
  if [ -n "$toplevel" ] && [ "$(realpath "$toplevel")" = "$(realpath "$source_dir")" ]; then
    have=$(git -C "$source_dir" rev-parse HEAD)
    case $have in
      "$commit"*) ;;
      *) say "warning: $source_dir is at $have, not $commit ($branch): the series may not apply" ;;
    esac
    # The committed tree only: no build outputs, no local changes.
    mkdir -p "$work/tree"
    git -C "$source_dir" archive HEAD | tar -x -C "$work/tree"
  else
    mkdir -p "$work/tree"
    cp -a "$source_dir/." "$work/tree/"
  fi
elif [ -f "$tarball" ]; then
  (cd "$shared" && grep " $stem.tar.xz\$" SHA256SUMS | sha256sum -c --quiet -) ||
    die "$tarball does not match its SHA256SUMS"
  tar -xJf "$tarball" -C "$work"
  # The tarball unpacks into one folder; its name is the ref's.
  mv "$work"/mongo-c-driver-* "$work/tree"
else
  cat >&2 <<EOF
fork-source: no mongo-c-driver tree for '$ref'. Fetch it with:

  git clone https://github.com/mongodb/mongo-c-driver.git
  git -C mongo-c-driver checkout $commit    # $branch

then run again with --source mongo-c-driver (or put the tarball
$stem.tar.xz in ../shared/upstream/ next to this repository).
EOF
  exit 1
fi

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/tree" "$dest"
(
  cd "$dest"
  git init -q
  git config user.name "opmsg fork"
  git config user.email "fork@opmsg.invalid"
  git config core.autocrlf false
  git add -A -f .
  export GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z"
  git commit -q -m "mongo-c-driver $branch ($commit)"
  git tag opmsg-base
  if [ -f debian/patches/series ]; then
    # In series order, each with no fuzz: a patch that needs fuzz, or does
    # not apply, is a tree this script does not know.
    sed 's/#.*//' debian/patches/series | awk 'NF {print $1}' | while read -r p; do
      patch -s -t -F 0 -N -p1 --no-backup-if-mismatch <"debian/patches/$p" >/dev/null ||
        { echo "fork-source: error: Debian's patch $p does not apply to the $ref tree" >&2; exit 1; }
    done
    git add -A -f .
    git commit -q --allow-empty -m "Debian's patches applied (debian/patches/series)"
  fi
  git tag opmsg-series-base
)
say "$ref: $(git -C "$dest" rev-parse --short opmsg-base) (pristine $branch; a series applies to $(git -C "$dest" rev-parse --short opmsg-series-base)) in build/fork/src/$ref"
echo "$dest"
