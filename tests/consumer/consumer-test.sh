#!/bin/sh
# Usage: tests/consumer/consumer-test.sh MODE BUILD_DIR SOURCE_DIR WORK_DIR
#
# Uses libopmsg the way a program outside this tree would: installed, then
# found through pkg-config or find_package(opmsg). The consumer programs are
# the examples (examples/*.c), so every example is compiled with -Wall
# -Wextra -Werror and run against the seed vectors here.
#
# MODE
#   install     install BUILD_DIR's components "runtime" and "dev" into
#               WORK_DIR/prefix (wiped first) and check the layout
#   pkgconfig   compile the examples with `cc $(pkg-config --cflags --libs
#               opmsg)` against that prefix and run them
#   pc-paths    check that the installed opmsg.pc points at the prefix it
#               was installed into (include and library directories)
#   cmake       configure tests/consumer/project (find_package(opmsg) +
#               opmsg::opmsg, opmsg::opmsg_static) against the prefix,
#               build it and run the programs; check the error table in
#               the installed opmsg.h (opmsg_error_code_t's comments)
#               against the installed library's opmsg_error_name()
#   api-doc     check the headers as the reference (no install needed): every
#               exported function has its comment, every error code its name,
#               the same as src/error.c's; docs/api.md and
#               docs/guide-library.md name only functions the headers export
#
# Settings from CMake, in the environment: OPMSG_CC, OPMSG_CMAKE,
# OPMSG_GENERATOR, OPMSG_PKG_CONFIG, OPMSG_PYTHON, OPMSG_LIBDIR,
# OPMSG_INCLUDEDIR (GNUInstallDirs' relative directories), OPMSG_VERSION, OPMSG_SOVERSION,
# OPMSG_SAN_FLAGS (sanitizer flags of a sanitised build, else empty).
set -eu

mode=$1
build=$2
src=$3
work=$4
prefix=$work/prefix
libdir=$prefix/${OPMSG_LIBDIR:-lib}
incdir=$prefix/${OPMSG_INCLUDEDIR:-include}
seed=$src/tests/data/seed
examples=$src/examples
check="${OPMSG_PYTHON:-python3} $src/tests/consumer/check_output.py"
status=0

fail() {
  echo "FAIL: $*" >&2
  status=1
}

die() {
  echo "FAIL: $*" >&2
  exit 1
}

need_prefix() {
  [ -f "$prefix/.installed" ] || die "no install in $prefix (the consumer.install test sets it up)"
}

# --- install -----------------------------------------------------------------

do_install() {
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for comp in runtime dev; do
    "${OPMSG_CMAKE:-cmake}" --install "$build" --prefix "$prefix" --component "$comp" \
      > "$work/install-$comp.log" 2>&1 || { cat "$work/install-$comp.log" >&2; die "cmake --install --component $comp"; }
  done
  for f in "$incdir/opmsg/opmsg.h" "$libdir/libopmsg.so" "$libdir/libopmsg.a" \
           "$libdir/libopmsg.so.${OPMSG_SOVERSION}" "$libdir/pkgconfig/opmsg.pc" \
           "$libdir/cmake/opmsg/opmsgConfig.cmake" "$libdir/cmake/opmsg/opmsgConfigVersion.cmake"; do
    [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
  done
  # Every header opmsg.h includes must be installed beside it.
  for h in $(sed -n 's|^#include <opmsg/\(.*\)>.*|\1|p' "$incdir/opmsg/opmsg.h"); do
    [ -f "$incdir/opmsg/$h" ] || fail "opmsg.h includes <opmsg/$h>, which is not installed"
  done
  if command -v objdump >/dev/null 2>&1; then
    soname=$(objdump -p "$libdir/libopmsg.so" | awk '$1 == "SONAME" {print $2}')
    [ "$soname" = "libopmsg.so.${OPMSG_SOVERSION}" ] || fail "SONAME is '$soname'"
  fi
  [ "$status" -eq 0 ] && touch "$prefix/.installed"
  return 0
}

# --- running the examples ----------------------------------------------------

# expect_fail EXIT_CODE TEXT PROGRAM ARGS...: the program must exit with
# EXIT_CODE and say TEXT on stderr.
expect_fail() {
  want=$1 text=$2
  shift 2
  rc=0
  "$@" > "$out/fail.out" 2> "$out/fail.err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$(basename "$1") $2...: exit $rc, expected $want"
  grep -q -- "$text" "$out/fail.err" || fail "$(basename "$1"): stderr lacks '$text': $(cat "$out/fail.err")"
}

# run_examples BIN_DIR: the checks every build of the examples must pass.
run_examples() {
  bin=$1
  out=$bin/out
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

  # The programs must load the library from the prefix, not from elsewhere.
  if command -v ldd >/dev/null 2>&1; then
    ldd "$bin/merge" | grep -q "libopmsg.so.* => $libdir/" ||
      fail "merge does not load libopmsg from $libdir: $(ldd "$bin/merge" | grep opmsg || echo none)"
  fi

  # merge: the JSON and the raw bytes equal the seed's expected merge.
  for v in seq flat deep; do
    "$bin/merge" "$seed/$v.bin" "$out/$v.bson" > "$out/merge-$v.txt" || fail "merge $v.bin exited $?"
    cmp -s "$out/$v.bson" "$seed/$v.merged.bson" || fail "merge_into of $v.bin differs from $v.merged.bson"
    $check json "$out/merge-$v.txt" "$seed/$v.merged.bson" || fail "merge $v.bin: JSON"
  done

  # view: command, $db, each sequence's documents, the merged top level.
  for v in seq flat deep; do
    "$bin/view" "$seed/$v.bin" > "$out/view-$v.txt" || fail "view $v.bin exited $?"
    $check view "$out/view-$v.txt" "$seed/$v.merged.bson" || fail "view $v.bin"
  done

  # A reply whose batch is the dotted sequence cursor.firstBatch: merged
  # inside the body's cursor; the view shows the path.
  $check cursor-reply "$out/cursor.bin" || fail "writing the cursor reply"
  "$bin/merge" "$out/cursor.bin" > "$out/merge-cursor.txt" || fail "merge cursor.bin exited $?"
  $check cursor-json "$out/merge-cursor.txt" || fail "merge of the cursor reply"
  "$bin/view" "$out/cursor.bin" > "$out/view-cursor.txt" || fail "view cursor.bin exited $?"
  $check cursor-view "$out/view-cursor.txt" || fail "view of the cursor reply"

  # encode: its message parses and merges to the documented insert, in the
  # example itself and through merge and view; the split gives 4+4+2.
  if [ -x "$bin/encode" ]; then
    "$bin/encode" "$out/people.bin" > "$out/encode.txt" || fail "encode exited $?"
    $check people "$out/encode.txt" || fail "encode: merged message"
    $check batches "$out/encode.txt" 10 4 || fail "encode: batches"
    "$bin/merge" "$out/people.bin" > "$out/merge-people.txt" || fail "merge people.bin exited $?"
    $check people "$out/merge-people.txt" || fail "merge of encode's message"
    "$bin/view" "$out/people.bin" > "$out/view-people.txt" || fail "view people.bin exited $?"
    grep -qx 'sequence documents: 3 documents, [0-9]* bytes' "$out/view-people.txt" ||
      fail "view of encode's message: $(cat "$out/view-people.txt")"
    # The message carries a CRC-32C: one changed byte of the body must be
    # caught (offset 30 is inside the key "insert").
    cp "$out/people.bin" "$out/tampered.bin"
    printf 'X' | dd of="$out/tampered.bin" bs=1 seek=30 conv=notrunc 2>/dev/null
    expect_fail 1 "checksum-mismatch" "$bin/merge" "$out/tampered.bin"
  fi

  # Errors: a cut message, a missing file, a usage error.
  head -c 100 "$seed/seq.bin" > "$out/cut.bin"
  expect_fail 1 "truncated" "$bin/merge" "$out/cut.bin"
  expect_fail 1 "truncated" "$bin/view" "$out/cut.bin"
  expect_fail 1 "cannot read" "$bin/merge" "$out/does-not-exist.bin"
  expect_fail 2 "usage" "$bin/merge"
}

# --- pkg-config ----------------------------------------------------------------

# same_dir A B: both name the same existing directory (a relocatable .pc
# may say .../lib/pkgconfig/../../include).
same_dir() {
  a=$(cd "$1" 2>/dev/null && pwd -P) || return 1
  b=$(cd "$2" 2>/dev/null && pwd -P) || return 1
  [ "$a" = "$b" ]
}

pc() {
  PKG_CONFIG_PATH="$libdir/pkgconfig" "${OPMSG_PKG_CONFIG:-pkg-config}" "$@"
}

do_pkgconfig() {
  need_prefix
  dir=$work/pkgconfig
  rm -rf "$dir"
  mkdir -p "$dir"
  v=$(pc --modversion opmsg) || die "pkg-config cannot find opmsg in $libdir/pkgconfig"
  [ "$v" = "$OPMSG_VERSION" ] || fail "pkg-config says version $v, the build is $OPMSG_VERSION"
  flags=$(pc --cflags --libs opmsg)
  # Until opmsg.pc is relocatable (see the pc-paths test), point its own
  # directories at the prefix; libbson's flags are used as pkg-config gives them.
  pc_inc=$(pc --variable=includedir opmsg)
  pc_lib=$(pc --variable=libdir opmsg)
  if ! same_dir "$pc_inc" "$incdir" || ! same_dir "$pc_lib" "$libdir"; then
    echo "note: opmsg.pc names $pc_inc and $pc_lib; using $incdir and $libdir" >&2
    flags=$(printf '%s\n' "$flags" | sed -e "s#-I$pc_inc\( \|$\)#-I$incdir\1#" -e "s#-L$pc_lib\( \|$\)#-L$libdir\1#")
  fi
  echo "pkg-config flags: $flags"
  for ex in merge view encode; do
    [ -f "$examples/$ex.c" ] || continue
    # shellcheck disable=SC2086 # the flags are words on purpose
    ${OPMSG_CC:-cc} -std=c11 -Wall -Wextra -Werror ${OPMSG_SAN_FLAGS:-} \
      "$examples/$ex.c" -o "$dir/$ex" $flags || die "compiling examples/$ex.c with pkg-config's flags"
  done
  run_examples "$dir"
}

do_pc_paths() {
  need_prefix
  pc_inc=$(pc --variable=includedir opmsg)
  pc_lib=$(pc --variable=libdir opmsg)
  same_dir "$pc_inc" "$incdir" ||
    fail "opmsg.pc installed under $prefix gives includedir=$pc_inc (configured, not relocated)"
  same_dir "$pc_lib" "$libdir" ||
    fail "opmsg.pc installed under $prefix gives libdir=$pc_lib (configured, not relocated)"
}

# --- CMake ---------------------------------------------------------------------

do_cmake() {
  need_prefix
  dir=$work/cmake
  rm -rf "$dir"
  gen=""
  [ -n "${OPMSG_GENERATOR:-}" ] && gen="-G${OPMSG_GENERATOR}"
  # The prefix comes first in the search; the configure log must show the
  # package was found there (a system-wide opmsg must not stand in for it).
  "${OPMSG_CMAKE:-cmake}" -S "$src/tests/consumer/project" -B "$dir" ${gen:+"$gen"} \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    -DCMAKE_C_COMPILER="${OPMSG_CC:-cc}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="${OPMSG_SAN_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${OPMSG_SAN_FLAGS:-}" \
    -DOPMSG_EXAMPLES_DIR="$examples" > "$work/cmake-configure.log" 2>&1 ||
    { cat "$work/cmake-configure.log" >&2; die "configuring the consumer project"; }
  grep -q "opmsg $OPMSG_VERSION from $libdir/cmake/opmsg" "$work/cmake-configure.log" ||
    fail "find_package did not pick the install: $(grep 'opmsg ' "$work/cmake-configure.log")"
  "${OPMSG_CMAKE:-cmake}" --build "$dir" > "$work/cmake-build.log" 2>&1 ||
    { cat "$work/cmake-build.log" >&2; die "building the consumer project"; }
  run_examples "$dir"

  # The static build: the same results, and no libopmsg.so needed.
  out=$dir/out-static
  mkdir -p "$out"
  if command -v objdump >/dev/null 2>&1; then
    ! objdump -p "$dir/merge_static" | grep -q 'NEEDED.*libopmsg' ||
      fail "merge_static needs libopmsg.so"
  fi
  "$dir/merge_static" "$seed/seq.bin" "$out/seq.bson" > "$out/merge-seq.txt" || fail "merge_static exited $?"
  cmp -s "$out/seq.bson" "$seed/seq.merged.bson" || fail "merge_static: merge_into differs"
  $check json "$out/merge-seq.txt" "$seed/seq.merged.bson" || fail "merge_static: JSON"

  # The error table, in the installed opmsg.h: code and name of every
  # code, as the installed library's opmsg_error_name() gives them.
  "$dir/error_table" > "$out/error-table.txt" || fail "error_table exited $?"
  header_error_rows "$incdir/opmsg/opmsg.h" |
    awk '{ printf "| %s | `%s` |\n", $1, $3 }' > "$out/error-table-header.txt"
  diff -u "$out/error-table-header.txt" "$out/error-table.txt" >&2 ||
    fail "the error table in opmsg.h (opmsg_error_code_t) differs from opmsg_error_name() (- header, + library)"
}

# header_error_rows OPMSG_H: "CODE CONSTANT NAME" for each enumerator of
# opmsg_error_code_t, NAME from the comment just above it (/* "name": ...),
# "-" when that comment gives none.
header_error_rows() {
  awk '
    /^ *\/\* "[a-z0-9-]*":/ { s = $0; sub(/^ *\/\* "/, "", s); sub(/".*/, "", s); name = s }
    /^ *OPMSG_(OK|ERR_[A-Z0-9_]*) = [0-9]*,/ {
      n = $3; sub(/,.*/, "", n)
      print n, $1, (name == "" ? "-" : name)
      name = ""
    }' "$1"
}

# --- the headers as the reference ------------------------------------------------

do_api_doc() {
  inc=$src/include/opmsg
  # Every exported function is documented where it is declared: the line
  # above its OPMSG_EXPORT ends a comment.
  awk '/^OPMSG_EXPORT/ && prev !~ /\*\/$/ { print FILENAME ": " $0 } { prev = $0 }' \
    "$inc"/*.h > "$work/api-undocumented.txt"
  [ -s "$work/api-undocumented.txt" ] && { cat "$work/api-undocumented.txt" >&2; fail "exported functions without a comment above them"; }
  sed -n '/OPMSG_EXPORT/,/(/p' "$inc"/*.h | grep -o 'opmsg_[a-z0-9_]*(' |
    tr -d '(' | sort -u > "$work/api-header.txt"
  [ -s "$work/api-header.txt" ] || die "no OPMSG_EXPORT functions found in include/opmsg"

  # The error table: every code has its name, and the names are those of
  # src/error.c's table (consumer.cmake checks the built library too).
  header_error_rows "$inc/opmsg.h" > "$work/api-errors.txt"
  [ -s "$work/api-errors.txt" ] || die "no opmsg_error_code_t enumerators found in opmsg.h"
  awk '$3 == "-" { print "opmsg.h: " $2 " has no \"name\": comment" }' "$work/api-errors.txt" > "$work/api-unnamed.txt"
  [ -s "$work/api-unnamed.txt" ] && { cat "$work/api-unnamed.txt" >&2; fail "error codes without their name in opmsg.h"; }
  awk '{ print $2, $3 }' "$work/api-errors.txt" | sort > "$work/api-errors-header.txt"
  sed -n 's/^ *\[\(OPMSG_[A-Z0-9_]*\)\] = "\([^"]*\)",.*/\1 \2/p' "$src/src/error.c" | sort > "$work/api-errors-src.txt"
  [ -s "$work/api-errors-src.txt" ] || die "no error names found in src/error.c"
  diff -u "$work/api-errors-header.txt" "$work/api-errors-src.txt" >&2 ||
    fail "the error names in opmsg.h differ from src/error.c's (- header, + source)"

  # The guides name only functions that exist.
  for doc in "$src/docs/api.md" "$src/docs/guide-library.md"; do
    [ -f "$doc" ] || die "${doc#"$src"/} is missing"
    grep -o 'opmsg_[a-z0-9_]*()' "$doc" | tr -d '()' | sort -u | while read -r fn; do
      grep -qx "$fn" "$work/api-header.txt" || echo "$fn"
    done > "$work/api-stale.txt"
    [ -s "$work/api-stale.txt" ] && { sed 's/^/  /' "$work/api-stale.txt" >&2; fail "${doc#"$src"/} names functions the headers do not export"; }
  done
  return 0
}

case $mode in
  install) do_install ;;
  pkgconfig) do_pkgconfig ;;
  pc-paths) do_pc_paths ;;
  cmake) do_cmake ;;
  api-doc) do_api_doc ;;
  *) die "unknown mode $mode" ;;
esac
[ "$status" -eq 0 ] && echo "consumer $mode: ok"
exit "$status"
