#!/bin/sh
# libopmsg's ABI check, run after every link of libopmsg.so.
#
# Usage: abi/check-abi.sh LIB SYMBOLS [MAP [OBJECT...]]
#   Fails when LIB no longer exports a symbol listed in SYMBOLS (name@@version,
#   one per line, # comments), when a symbol's version changed (that is a
#   disappearance too), or when LIB exports anything outside the versioned
#   opmsg_ API. A new symbol is reported (add it to SYMBOLS with --update).
#   With MAP (src/libopmsg.map, the version script LIB was linked with) it
#   also fails when the map lists a pattern instead of names, lists a name
#   twice, or lists a name LIB does not export (a listed symbol disappeared,
#   or never existed), and when a new symbol (not in SYMBOLS) is in another
#   node than the newest, which must be the one of LIB's own version
#   (OPMSG_0.4 for libopmsg.so.0.4.x). With the OBJECTs LIB was linked
#   from, it fails when one of them defines a symbol for export (OPMSG_EXPORT:
#   global, default visibility) that no node lists, which the map's
#   "local: *" would otherwise hide without a word.
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

# MAP's nodes in order ("node NAME") and what each lists ("name NODE
# SECTION NAME"): comments removed, then one token per line.
map_entries() {
  tr '\n' ' ' <"$1" | sed -E 's:/\*([^*]|\*+[^*/])*\*+/: :g; s/([{};:])/ \1 /g' | tr -s ' \t' '\n' |
    awk 'NF == 0 { next }
         depth == 0 && $0 == "{" { depth = 1; next }
         depth == 0 && after { after = ($0 != ";"); next }
         depth == 0 { node = $0; print "node", node; next }
         $0 == "}" { depth = 0; after = 1; next }
         $0 == "global" || $0 == "local" { section = $0; next }
         $0 == ":" || $0 == ";" { next }
         { print "name", node, section, $0 }'
}

# What the objects define for export: global, default visibility (the
# rest of the library is hidden by -fvisibility=hidden).
object_exports() {
  for o in "$@"; do
    LC_ALL=C readelf -sW "$o" | awk '$5 == "GLOBAL" && $6 == "DEFAULT" && $7 != "UND" {print $8}'
  done | LC_ALL=C sort -u
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
map=${3:-}
[ $# -ge 3 ] && shift 3 || shift $#
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

# The map: each release's symbols by name, new ones in the newest node.
if [ -n "$map" ]; then
  entries=$(map_entries "$map")
  mapname=$(basename "$map")
  newest=$(printf '%s\n' "$entries" | awk '$1 == "node" {n = $2} END {print n}')
  listed=$(printf '%s\n' "$entries" | awk '$1 == "name" && $3 == "global" {print $4 "@@" $2}')
  patterns=$(printf '%s\n' "$listed" | grep '[][*?]' || true)
  if [ -n "$patterns" ]; then
    echo "abi: $mapname lists patterns, not names:" $patterns "(list each symbol in the node of the release that added it)" >&2
    status=1
  fi
  twice=$(printf '%s\n' "$listed" | sed 's/@@.*//' | LC_ALL=C sort | uniq -d)
  if [ -n "$twice" ]; then
    echo "abi: $mapname lists these in more than one node:" $twice >&2
    status=1
  fi
  for sym in $(printf '%s\n' "$listed" | grep -v '[][*?]'); do
    if ! printf '%s\n' "$exported" | grep -qxF "$sym"; then
      echo "abi: $mapname lists ${sym%@@*} in ${sym#*@@}, but $(basename "$lib") does not export it" \
           "(removed or renamed? a released symbol must stay)" >&2
      status=1
    fi
  done
  # A new symbol belongs in the node of the version being made.
  own=$(basename "$(readlink -f "$lib")" | sed -n 's/^libopmsg\.so\.\([0-9]*\)\.\([0-9]*\)\..*/OPMSG_\1.\2/p')
  for sym in $new; do
    if [ "${sym#*@@}" != "$newest" ]; then
      echo "abi: ${sym%@@*} is new (not in $(basename "$list")) but listed in ${sym#*@@}:" \
           "new symbols go into the newest node, $newest" >&2
      status=1
    elif [ -n "$own" ] && [ "$newest" != "$own" ]; then
      echo "abi: ${sym%@@*} is new, and $mapname's newest node $newest is not this version's:" \
           "open a node $own for it (inheriting $newest)" >&2
      status=1
    fi
  done
  if [ $# -gt 0 ]; then
    names=$(printf '%s\n' "$listed" | sed 's/@@.*//')
    for sym in $(object_exports "$@"); do
      if ! printf '%s\n' "$names" | grep -qxF "$sym"; then
        echo "abi: $sym is marked for export (OPMSG_EXPORT) but no node of $mapname lists it," \
             "so the library hides it: add it to the newest node, $newest" >&2
        status=1
      fi
    done
  fi
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
# Likewise the architecture (libabigail's name for it): the baseline is one
# architecture's; a cross build (cmake/s390x.cmake) is checked by symbols.
elf_arch() {
  case "$(LC_ALL=C readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p')" in
    *X86-64*) echo elf-amd-x86_64 ;;
    AArch64) echo elf-arm-aarch64 ;;
    "IBM S/390") echo elf-ibm-s390 ;;
    *) echo unknown ;;
  esac
}
baseline=$(dirname "$list")/libopmsg.abi
if [ -f "$baseline" ]; then
  base_arch=$(sed -n "1s/.* architecture='\([^']*\)'.*/\1/p" "$baseline")
  lib_arch=$(elf_arch "$lib")
  if [ -n "$base_arch" ] && [ "$base_arch" != "$lib_arch" ]; then
    echo "abi: note: $(basename "$lib") is $lib_arch, $(basename "$baseline") was recorded" \
         "on $base_arch: symbols checked, the type comparison is skipped" >&2
    baseline=""
  fi
fi
if [ -n "$baseline" ] && [ -f "$baseline" ]; then
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
