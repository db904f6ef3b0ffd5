#!/bin/bash
# Usage: tests/encryption/run-encryption.sh CLIENT [DROPIN]
#
# Client-side encryption end to end against FerretDB: runs CLIENT (enc-client,
# linked with the system's libmongoc only) once stock and once with
# LD_PRELOAD=DROPIN (libopmsg-mongoc.so), and ends with one line:
#
#   encryption VERSION: operations N, documents M, equal with drop-in yes,
#   equal stock yes, ciphertext on server yes
#
# (on one line). "equal" means: the program's own checks passed (the
# documents read back through automatic decryption are byte for byte the
# plaintext ones written, the commands went through libmongocrypt) and, for
# the drop-in, the drop-in said it was active, rejected no reply and the
# program's output is identical to the stock run's. "ciphertext on server":
# both runs found only BSON binary subtype 6 without plaintext in the stored
# documents. Exit status 1 when any of them is "no".
#
# Without DROPIN, or when the drop-in says it is inactive on a libmongoc
# series it is not tested with (it forwards there), the drop-in column reads
# "skipped" or "inactive" and does not fail the run. On a tested series
# (1.23.x, 1.30.x, 2.5.x) an inactive drop-in fails.
#
# Runs against the CTest fixture's FerretDB (OPMSG_FERRETDB_STATE), else
# itself under tests/peers/with-ferretdb.sh (a private FerretDB) unless
# OPMSG_FERRETDB_URI is set; exits 77 (skipped) when FerretDB is missing or
# libmongoc has no client-side encryption.
#
# Environment: OPMSG_ENC_TRACE=0 turns off the gdb trace (informational: which
# function built the merged commands handed to libmongocrypt).
# OPMSG_ENC_LIBDIR=DIR: the second run loads another libmongoc instead of
# the drop-in, with LD_LIBRARY_PATH=DIR (the patched mongo-c-driver of
# scripts/fork-check-encryption.sh): it must report another libmongoc
# version than the stock run, pass the same checks and print the same
# output; the line then says "equal patched" and names that version.
# Each run's exit status is collected (|| rc_*=$?) and judged with its RESULT line.
set -eu

client=${1:?usage: run-encryption.sh CLIENT [DROPIN]}
dropin=${2:-}
here=$(cd "$(dirname "$0")" && pwd)

# The FerretDB of the CTest fixture (tests/interop/CMakeLists.txt) when there is one.
if [ -z "${OPMSG_FERRETDB_URI:-}" ] && [ -f "${OPMSG_FERRETDB_STATE:-/nonexistent}/port" ]; then
  OPMSG_FERRETDB_PORT=$(cat "$OPMSG_FERRETDB_STATE/port")
  export OPMSG_FERRETDB_PORT OPMSG_FERRETDB_URI="mongodb://127.0.0.1:$OPMSG_FERRETDB_PORT/"
fi
if [ -z "${OPMSG_FERRETDB_URI:-}" ]; then
  peer="$here/../peers/with-ferretdb.sh"
  if [ ! -x "$peer" ]; then
    echo "SKIP: tests/peers/with-ferretdb.sh not found"
    exit 77
  fi
  exec "$peer" "$0" "$@"
fi
if [ ! -x "$client" ]; then
  echo "run-encryption: $client is not an executable" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/opmsg-enc.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
run_id=$$
start=$(date +%s)

# The program's standard output is deterministic (decrypted documents,
# command counts, one RESULT line): the two runs' must be identical.
result_field() { # FILE KEY -> value of KEY=value on the RESULT line
  sed -n "s/^RESULT .*\<$2=\([^ ]*\).*/\1/p" "$1" | tail -n 1
}
# A run's own checks held: the documents read back equal what was written,
# and the commands went through libmongocrypt.
run_passed() { # OUT
  [ "$(result_field "$1" equal)" = yes ] && [ "$(result_field "$1" path)" = automatic ]
}
# A second run printed what the stock run printed.
same_output() { # OUT WITH-WHAT
  diff -u "$work/stock.out" "$1" >"$work/diff" && return 0
  echo "FAIL: output differs with $2:"; head -n 40 "$work/diff"
  return 1
}

echo "== stock libmongoc"
rc_stock=0
"$client" "$OPMSG_FERRETDB_URI" "s$run_id" >"$work/stock.out" 2>"$work/stock.err" || rc_stock=$?
grep -v '^DOC ' "$work/stock.out" || true
if [ "$rc_stock" -eq 77 ]; then
  grep -h '^SKIP' "$work/stock.out" "$work/stock.err" || true
  exit 77
fi
version=$(sed -n 's/^enc-client: libmongoc \([^,]*\),.*/\1/p' "$work/stock.err" | head -n 1)
[ -n "$version" ] || version=unknown

equal_stock=no
# (A failed server check alone also makes the exit status 1: that is the
# ciphertext column's business.)
if run_passed "$work/stock.out"; then
  equal_stock=yes
else
  echo "FAIL: stock run (exit $rc_stock)"; grep -v endSessions "$work/stock.err" || true
fi
cipher_stock=$(result_field "$work/stock.out" ciphertext)

equal_dropin=skipped
cipher_dropin=yes
if [ -n "$dropin" ]; then
  echo "== with LD_PRELOAD=$(basename "$dropin")"
  if [ ! -f "$dropin" ]; then
    echo "FAIL: $dropin not found"
    equal_dropin=no
  else
    rc_dropin=0
    OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$dropin "$client" "$OPMSG_FERRETDB_URI" "d$run_id" \
      >"$work/dropin.out" 2>"$work/dropin.err" || rc_dropin=$?
    grep -v '^DOC ' "$work/dropin.out" || true
    grep '^opmsg-mongoc:' "$work/dropin.err" || true
    cipher_dropin=$(result_field "$work/dropin.out" ciphertext)
    if grep -q '^opmsg-mongoc: active' "$work/dropin.err"; then
      equal_dropin=yes
      if ! run_passed "$work/dropin.out"; then
        echo "FAIL: run with the drop-in (exit $rc_dropin)"
        grep -v endSessions "$work/dropin.err" || true
        equal_dropin=no
      fi
      if grep -q '^opmsg-mongoc: rejected' "$work/dropin.err"; then
        echo "FAIL: the drop-in rejected a FerretDB reply"
        equal_dropin=no
      fi
      same_output "$work/dropin.out" "the drop-in" || equal_dropin=no
    elif [ "${version#1.23.}" != "$version" ] || [ "${version#1.30.}" != "$version" ] ||
         [ "${version#2.5.}" != "$version" ]; then
      echo "FAIL: the drop-in did not say it is active on libmongoc $version"
      grep -v endSessions "$work/dropin.err" || true
      equal_dropin=no
    else
      equal_dropin=inactive
      # It forwards to libmongoc: the run must still pass.
      if ! run_passed "$work/dropin.out"; then
        echo "FAIL: run with the (inactive) drop-in (exit $rc_dropin)"
        grep -v endSessions "$work/dropin.err" || true
        equal_dropin=no
      fi
    fi
  fi
fi

libdir=${OPMSG_ENC_LIBDIR:-}
patched_version=""
if [ -n "$libdir" ]; then
  echo "== with LD_LIBRARY_PATH=$libdir"
  rc_patched=0
  LD_LIBRARY_PATH=$libdir "$client" "$OPMSG_FERRETDB_URI" "p$run_id" \
    >"$work/patched.out" 2>"$work/patched.err" || rc_patched=$?
  grep -v '^DOC ' "$work/patched.out" || true
  patched_version=$(sed -n 's/^enc-client: libmongoc \([^,]*\),.*/\1/p' "$work/patched.err" | head -n 1)
  cipher_dropin=$(result_field "$work/patched.out" ciphertext)
  equal_dropin=yes
  # The library that ran, by the file it was loaded from: a release's
  # patched tree reports the same version as the system's own library.
  patched_file=$(sed -n 's/^enc-client: loaded //p' "$work/patched.err" | head -n 1)
  case $(realpath -m "$patched_file") in
    "$(realpath -m "$libdir")"/*) ;;
    *) echo "FAIL: with LD_LIBRARY_PATH=$libdir the program still ran ${patched_file:-a libmongoc not found in its memory map} (libmongoc ${patched_version:-?})"
       equal_dropin=no ;;
  esac
  if ! run_passed "$work/patched.out"; then
    echo "FAIL: run with libmongoc $patched_version (exit $rc_patched)"
    grep -v endSessions "$work/patched.err" || true
    equal_dropin=no
  fi
  same_output "$work/patched.out" "libmongoc $patched_version" || equal_dropin=no
fi

ciphertext=no
[ "$cipher_stock" = yes ] && [ "$cipher_dropin" = yes ] && ciphertext=yes

# Informational: who built the merged command (command + document sequence
# as an array) that libmongocrypt received, traced with gdb.
trace() { # LABEL [LD_PRELOAD]
  local out="$work/gdb.$1"
  printf '%s\n' 'set pagination off' 'set breakpoint pending on' \
    'break _mongoc_cmd_append_payload_as_array' 'commands' 'bt 2' 'continue' 'end' \
    'run' >"$work/gdb.cmds"
  timeout 120 gdb -q -batch -nx ${2:+-ex "set environment LD_PRELOAD=$2"} \
    -x "$work/gdb.cmds" --args "$client" "$OPMSG_FERRETDB_URI" "t$1$run_id" \
    >"$out" 2>&1 </dev/null || true
  local calls by_cse where
  calls=$(grep -c '^#0 ' "$out" || true)
  by_cse=$(grep -c '^#1 .*_mongoc_cse_auto_encrypt' "$out" || true)
  where=$(sed -n 's/^#0 .* \(from\|at\) \([^ :]*\).*/\2/p' "$out" |
          sed 's|.*mongoc-dropin/.*|libopmsg-mongoc.so|; s|.*/||' |
          sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  echo "   $1: $calls calls of _mongoc_cmd_append_payload_as_array, $by_cse from" \
       "_mongoc_cse_auto_encrypt${where:+ (in $where)}"
}
if [ "${OPMSG_ENC_TRACE:-1}" != 0 ] && command -v gdb >/dev/null 2>&1; then
  echo "== merged commands handed to libmongocrypt (gdb)"
  trace stock
  [ -z "$dropin" ] || trace drop-in "$dropin"
fi

ops=$(result_field "$work/stock.out" operations)
docs=$(result_field "$work/stock.out" documents)
echo "   run time: $(( $(date +%s) - start )) s"
if [ -n "$libdir" ]; then
  echo "encryption $version and patched ${patched_version:-?}: operations ${ops:-0}, documents ${docs:-0}," \
       "equal patched $equal_dropin, equal stock $equal_stock, ciphertext on server $ciphertext"
else
  echo "encryption $version: operations ${ops:-0}, documents ${docs:-0}," \
       "equal with drop-in $equal_dropin, equal stock $equal_stock," \
       "ciphertext on server $ciphertext"
fi
case "$equal_dropin $equal_stock $ciphertext" in
  *no*) exit 1 ;;
esac
exit 0
