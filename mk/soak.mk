# make check-soak: the soak (tests/soak/, docs/soak.md). A pooled,
# multi-threaded libmongoc program with streaming monitors against a peer that
# answers from a seed with legal, rare, illegal and faulty replies; every
# operation scored (right, clean error, wrong), crashes located, RSS and
# descriptors measured. Per release (this machine, then the Debian roots)
# and kind (stock, the drop-in preloaded, the drop-in under ASan, the fork's
# libmongoc), one line:
#   soak VERSION KIND: operations N, right R, clean errors E, wrong 0, crashes 0, rss growth K KiB, fd growth 0
# Fails when preload, preload-asan or fork is not clean (stock is expected
# to crash; its run says where).
#
#   SOAK_SEED=N          the seed (default: a new one, printed; give it again to replay)
#   SOAK_OPS=10000       operations per run
#   SOAK_KINDS="stock preload preload-asan fork"
#   SOAK_RELEASES="host trixie sid"   (the roots need root and build/roots/READY-*)
#   SOAK_THREADS=8       pooled threads (plus 2 single-threaded clients)
#   SOAK_FORK_LIBDIR=DIR the fork's libmongoc (DIR/SUITE for a root); unset: fork runs skipped
#   SOAK_ARGS="..."      more tests/soak/run_soak.py options, e.g. --without app:op_reply
#
# make check-soak-fork: the fork kind alone, on the packages of make fork-debs.
.PHONY: check-soak

ifeq ($(origin SOAK_SEED),undefined)
SOAK_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
SOAK_OPS ?= 10000
SOAK_KINDS ?= stock preload preload-asan fork
SOAK_RELEASES ?= host trixie sid
SOAK_THREADS ?= 8
SOAK_FORK_LIBDIR ?=
SOAK_ARGS ?=

check-soak: deps configure
	@scripts/add-test-suite.sh $(BUILD) soak
	cmake --build $(BUILD) -j $(JOBS) --target opmsg opmsg_mongoc soak-client soak_client_lib soak-late
	@BUILD=$(BUILD) SOAK_SEED=$(SOAK_SEED) SOAK_OPS=$(SOAK_OPS) SOAK_KINDS="$(SOAK_KINDS)" \
	  SOAK_RELEASES="$(SOAK_RELEASES)" SOAK_THREADS=$(SOAK_THREADS) SOAK_FORK_LIBDIR="$(SOAK_FORK_LIBDIR)" \
	  SOAK_ARGS="$(SOAK_ARGS)" tests/soak/check-soak.sh

# The soak's fork kind on the packages make fork-debs built, taken from its
# apt repository build/fork-debs/apt/pool/{bookworm,trixie,sid}/ and
# unpacked, not installed (scripts/fork-debs-libdir.sh): bookworm on this
# machine, trixie and sid in their roots. Fails unless all three releases
# have packages and each run is clean (0 wrong, 0 crashes).
.PHONY: check-soak-fork
check-soak-fork:
	@scripts/fork-debs-libdir.sh $(BUILD)/soak-fork
	@for r in bookworm trixie sid; do [ -d $(BUILD)/soak-fork/$$r ] || \
	  { echo "check-soak-fork: no $$r packages: run make check-fork-debs first" >&2; exit 1; }; done
	@$(MAKE) --no-print-directory check-soak SOAK_KINDS=fork SOAK_FORK_LIBDIR=$(abspath $(BUILD))/soak-fork \
	  | tee $(BUILD)/soak-fork.log
	@n=$$(grep '^soak [^ ]* fork: operations $(SOAK_OPS), right [0-9]*, clean errors [0-9]*, wrong 0, crashes 0' \
	  $(BUILD)/soak-fork.log | awk '{print $$2}' | sort -u | wc -l); [ "$$n" -eq 3 ] || \
	  { echo "check-soak-fork: $$n of 3 releases clean" >&2; exit 1; }
