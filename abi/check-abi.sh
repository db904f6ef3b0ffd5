#!/bin/sh
# libopmsg's ABI check, run after every link of libopmsg.so.
#
# check-abi.sh LIB SYMBOLS
#   Fails when LIB no longer exports a symbol listed in SYMBOLS (name@@version,
#   one per line, # comments), when a symbol's version changed (that is a
#   disappearance too), or when LIB exports anything outside the versioned
#   opmsg_ API. A new symbol is fine and only reported.
#   When abidiff (Debian: abigail-tools) is installed, LIB has debugging
#   information and the baseline libopmsg.abi sits beside SYMBOLS, it also
#   fails when the types of the public API changed in a way that breaks
#   programs built against the baseline (a struct's size or layout, a
#   parameter's type, ...). Added functions are fine there too. That type
#   check needs LIB to link the libbson the baseline was recorded with
#   (libbson-1.0.so.0); against another (libbson 2) it is skipped.
# check-abi.sh --generate LIB
#   Prints the SYMBOLS list for LIB (packaging compares it with the list).
# check-abi.sh --update LIB
#   After an intended API change (new functions, or at a new SONAME):
#   rewrites libopmsg.symbols and, with abidw, libopmsg.abi beside this script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
headers=$here/../include/opmsg

exports() {
  # Defined, exported symbols as name@@version (nm shows the version node).
  nm -D --defined-only "$1" | awk '$2 ~ /^[TDRBVWiu]$/ {print $3}' | LC_ALL=C sort
}

symbols_list() {
  echo "# The ABI of $(basename "$1"): every exported symbol with its version."
  echo "# abi/check-abi.sh fails the build when one disappears or changes;"
  echo "# after adding API run: abi/check-abi.sh --update <build>/src/libopmsg.so"
  exports "$1"
}

has_debug_info() {
  LC_ALL=C readelf -S "$1" 2>/dev/null | grep -q '\.debug_info'
}

case $1 in
  --generate)
    symbols_list "$2"
    exit 0 ;;
  --update)
    symbols_list "$2" > "$here/libopmsg.symbols"
    echo "abi: wrote $here/libopmsg.symbols"
    if command -v abidw >/dev/null 2>&1 && has_debug_info "$2"; then
      # Public types only, no paths of the build machine.
      abidw --headers-dir "$headers" --drop-private-types --no-corpus-path \
            --short-locs "$2" | sed "s| comp-dir-path='[^']*'||" > "$here/libopmsg.abi"
      echo "abi: wrote $here/libopmsg.abi"
    else
      echo "abi: libopmsg.abi not written (needs abidw from abigail-tools and a -g build)" >&2
    fi
    exit 0 ;;
esac

lib=$1
list=$2
exported=$(exports "$lib")
status=0
for sym in $(grep -v '^#' "$list"); do
  if ! printf '%s\n' "$exported" | grep -qxF "$sym"; then
    echo "abi: $sym is no longer exported by $(basename "$lib") (removed, or its version changed)" >&2
    status=1
  fi
done
stray=$(printf '%s\n' "$exported" | grep -v '^opmsg_[A-Za-z0-9_]*@@OPMSG_' || true)
if [ -n "$stray" ]; then
  echo "abi: symbols outside the versioned opmsg_ API are exported:" $stray >&2
  status=1
fi
new=$(printf '%s\n' "$exported" | grep -vxF -f "$list" || true)
if [ -n "$new" ] && [ $status -eq 0 ]; then
  echo "abi: new symbols, add them to $(basename "$list") (abi/check-abi.sh --update):" $new >&2
fi

# The libbson a library links (its DT_NEEDED), and the one the baseline was
# recorded with: libopmsg's types include libbson's (bson_t, bson_error_t),
# so the type comparison only means something against the same libbson.
# Built with another one (libbson 2's libbson2.so.2 against a baseline of
# libbson-1.0.so.0), it is another ABI altogether: the exported symbols are
# still checked above, the types are not.
needed_bson() {
  LC_ALL=C readelf -d "$1" 2>/dev/null | sed -n 's/.*Shared library: \[\(libbson[^]]*\)\].*/\1/p' | head -n 1
}
baseline=$(dirname "$list")/libopmsg.abi
if [ -f "$baseline" ]; then
  base_bson=$(sed -n "s/.*<dependency name='\(libbson[^']*\)'.*/\1/p" "$baseline" | head -n 1)
  lib_bson=$(needed_bson "$lib")
  if [ -n "$base_bson" ] && [ -n "$lib_bson" ] && [ "$base_bson" != "$lib_bson" ]; then
    echo "abi: note: $(basename "$lib") links $lib_bson, $(basename "$baseline") was recorded" \
         "with $base_bson: symbols checked, the type comparison is skipped" >&2
    baseline=""
  fi
fi
if [ -n "$baseline" ] && [ -f "$baseline" ] && command -v abidiff >/dev/null 2>&1 && has_debug_info "$lib"; then
  rc=0
  report=$(abidiff --no-added-syms --headers-dir2 "$headers" "$baseline" "$lib" 2>&1) || rc=$?
  # abidiff's status bits: 1 tool error, 2 usage error, 4 ABI change,
  # 8 incompatible ABI change.
  if [ $((rc & 12)) -ne 0 ]; then
    printf '%s\n' "$report" >&2
    # An incompatible change needs a new SONAME (OPMSG_SOVERSION in
    # CMakeLists.txt): programs built against the old one must not load this.
    base_soname=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")
    lib_soname=$(LC_ALL=C readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
    if [ "$base_soname" = "$lib_soname" ]; then
      echo "abi: the public API of $(basename "$lib") changed incompatibly against $(basename "$baseline")" \
           "under the same SONAME $lib_soname: bump OPMSG_SOVERSION in CMakeLists.txt (and say so in NEWS)," \
           "then abi/check-abi.sh --update $lib" >&2
    else
      echo "abi: the public API changed incompatibly and the SONAME moved from $base_soname to $lib_soname:" \
           "record the new baseline with abi/check-abi.sh --update $lib" >&2
    fi
    status=1
  elif [ $rc -ne 0 ]; then
    echo "abi: abidiff could not compare (status $rc); type check skipped: $report" >&2
  fi
fi
exit $status
