#!/bin/bash
# fork-debs-libdir.sh OUT: the libraries of the packages `make fork-debs`
# built, unpacked per release for the soak's fork kind
# (make check-soak-fork; docs/soak.md).
#
#   OUT/RELEASE   from the fixes track's packages of make fork-debs,
#                 build/fork-debs/RELEASE-fixes/out/ (sbuild's output; so far
#                 bookworm only: docs/debian.md)
#
# Only the runtime packages (libbson's and libmongoc's, not -dev, not
# dbgsym) are unpacked, with dpkg-deb -x, nothing is installed: the soak
# puts OUT/RELEASE first on LD_LIBRARY_PATH and checks that the client
# loaded the libmongoc found there. A release whose packages were not built
# is left out, saying so; the script fails when none was.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$(realpath -m "$1")
say() { echo "fork-debs-libdir: $*"; }

found=0
for rel in bookworm trixie sid; do
  debs=build/fork-debs/$rel-fixes/out
  mapfile -t pkgs < <(find "$debs" -maxdepth 1 -name 'lib*.deb' 2>/dev/null |
                        grep -E '/lib(bson|mongoc)[^/_]*_' | grep -v -E -- '-(dev|dbgsym)_' | sort)
  if [ ${#pkgs[@]} -eq 0 ]; then
    say "$rel: no packages in $debs (make fork-debs builds them)"
    continue
  fi
  tmp=$(mktemp -d)
  for p in "${pkgs[@]}"; do dpkg-deb -x "$p" "$tmp"; done
  rm -rf "${out:?}/$rel"
  mkdir -p "$out/$rel"
  # Shared objects and their SONAME links, flattened into one directory.
  find "$tmp" -name 'lib*.so*' \( -type f -o -type l \) -exec cp -a {} "$out/$rel/" \;
  rm -rf "$tmp"
  say "$rel: $(printf '%s\n' "${pkgs[@]##*/}" | tr '\n' ' ')-> $out/$rel"
  found=$((found + 1))
done
[ "$found" -gt 0 ] || { say "no release's packages found: run make fork-debs first"; exit 1; }
