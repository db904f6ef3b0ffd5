#!/bin/bash
# Usage: scripts/fork-debs-libdir.sh OUT
# The libraries of the fixes track's packages of
# make fork-debs (build/fork-debs/RELEASE-fixes/out/, sbuild's output),
# unpacked (dpkg-deb -x, nothing installed; not -dev, not dbgsym) into
# OUT/RELEASE, shared objects and SONAME links flattened, for the soak's fork
# kind (make check-soak-fork; docs/soak.md). A release not built is left out,
# saying so; the script fails when none was.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$(realpath -m "$1") found=0
say() { echo "fork-debs-libdir: $*"; }
for rel in bookworm trixie sid; do
  debs=build/fork-debs/$rel-fixes/out
  pkgs=""
  for p in "$debs"/lib*.deb; do
    case ${p##*/} in *-dev_*|*-dbgsym_*) ;; libbson*_*|libmongoc*_*) pkgs="$pkgs $p" ;; esac
  done
  [ -n "$pkgs" ] || { say "$rel: no packages in $debs (make fork-debs builds them)"; continue; }
  tmp=$(mktemp -d) && rm -rf "${out:?}/$rel" && mkdir -p "$out/$rel"
  for p in $pkgs; do dpkg-deb -x "$p" "$tmp"; done
  find "$tmp" -name 'lib*.so*' \( -type f -o -type l \) -exec cp -a {} "$out/$rel/" \; && rm -rf "$tmp"
  say "$rel: $(printf '%s ' ${pkgs//$debs\//})-> $out/$rel" && found=$((found + 1))
done
[ "$found" -gt 0 ] || { say "no release's packages found: run make fork-debs first"; exit 1; }
