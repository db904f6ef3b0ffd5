#!/bin/sh
# Usage: tests/dropin/gate-test.sh GATE_TEST DROPIN FORK_FAKE
# The drop-in is active for the libmongoc
# series it is tested with (1.23.x on the rpc path; 1.30.x and 2.5.x on the
# mcd-rpc path, which also needs libmongoc's mcd_rpc_* functions), decided at the first call when libmongoc is dlopen()ed after start-up
# (globally or privately), says why with OPMSG_MONGOC_DEBUG=1, once, names
# its OPMSG_MONGOC_CHECK level (warning once about an unknown one), and stays
# silent in processes without libmongoc. In front of the fork's patched
# libmongoc (FORK_FAKE: the fake with the function the fork's series adds)
# it stands aside, saying why.
set -eu
test_bin=$1
dropin=$2
fork_fake=$3
fail=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

run() { # VERSION SCOPE EXPECT MESSAGE
  if ! FAKE_MONGOC_VERSION=$1 OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$dropin \
       "$test_bin" "$2" "$3" 2>"$err"; then
    echo "FAIL: libmongoc $1 ($2 dlopen): expected $3"; cat "$err"; fail=1
  fi
  n=$(grep -c "opmsg-mongoc: $4" "$err" || true)
  if [ "$n" -ne 1 ]; then
    echo "FAIL: libmongoc $1 ($2): expected one line 'opmsg-mongoc: $4', got $n:"
    cat "$err"; fail=1
  fi
}

run 1.23.1 global active  "active: libmongoc 1.23.1 (rpc path)"
run 1.23.5 local  active  "active: libmongoc 1.23.5 (rpc path)"
run 1.24.0 global forward "inactive: libmongoc 1.24.0 is not one this drop-in is tested with"
run 1.22.2 local  forward "inactive: libmongoc 1.22.2 is not one this drop-in is tested with"
run 2.4.0  global forward "inactive: libmongoc 2.4.0 is not one this drop-in is tested with"
# A 1.30 or 2.5 that lacks the mcd-rpc functions (the fake has only 1.23's)
# is not trusted with either path.
run 1.30.4 global forward "inactive: libmongoc lacks one of the mcd_rpc_\* functions"
run 2.5.7  local  forward "inactive: libmongoc lacks one of the mcd_rpc_\* functions"

# The fork's libmongoc already carries the fix: forwarded to, untouched.
FAKE_MONGOC_PATH=$fork_fake run 1.23.1 global forward \
  "inactive: libmongoc 1.23.1 already carries the fix (the fork's patch series: _mongoc_rpc_copy_reply)"
FAKE_MONGOC_PATH=$fork_fake run 1.23.1 local forward "inactive: libmongoc 1.23.1 already carries the fix"

# OPMSG_MONGOC_DISABLE=1 turns it off.
if ! OPMSG_MONGOC_DISABLE=1 FAKE_MONGOC_VERSION=1.23.1 OPMSG_MONGOC_DEBUG=1 \
     LD_PRELOAD=$dropin "$test_bin" global forward 2>"$err" ||
   ! grep -q "inactive: OPMSG_MONGOC_DISABLE is set" "$err"; then
  echo "FAIL: OPMSG_MONGOC_DISABLE=1 did not turn the drop-in off"; cat "$err"; fail=1
fi

# OPMSG_MONGOC_CHECK is read once and named in the activation line; an
# unknown value warns once (also without OPMSG_MONGOC_DEBUG) and the default
# applies.
if ! OPMSG_MONGOC_CHECK=top-level FAKE_MONGOC_VERSION=1.23.1 OPMSG_MONGOC_DEBUG=1 \
     LD_PRELOAD=$dropin "$test_bin" global active 2>"$err" ||
   [ "$(grep -c 'opmsg-mongoc: active: libmongoc 1.23.1 (rpc path), .*, check top-level$' "$err")" -ne 1 ]; then
  echo "FAIL: OPMSG_MONGOC_CHECK=top-level is not in the activation line"; cat "$err"; fail=1
fi
if ! OPMSG_MONGOC_CHECK=strict FAKE_MONGOC_VERSION=1.23.1 \
     LD_PRELOAD=$dropin "$test_bin" local active 2>"$err" ||
   [ "$(cat "$err")" != "opmsg-mongoc: OPMSG_MONGOC_CHECK=strict is not a check level (spec, top-level or full); checking at spec" ]; then
  echo "FAIL: OPMSG_MONGOC_CHECK=strict: expected one warning line"; cat "$err"; fail=1
fi

# A process without libmongoc (a shell inheriting LD_PRELOAD) is untouched,
# whatever the variables say.
out=$(OPMSG_MONGOC_DEBUG=1 OPMSG_MONGOC_CHECK=strict LD_PRELOAD=$dropin sh -c 'echo fine' 2>&1)
if [ "$out" != "fine" ]; then
  echo "FAIL: a shell with the drop-in preloaded printed: $out"; fail=1
fi
[ "$fail" -eq 0 ] && echo "gate: all cases passed"
exit "$fail"
