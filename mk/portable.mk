# make check-portable: the portable code paths, which the x86-64 builds of
# `make check` never run, built and tested (scripts/check-portable.sh): in
# build-nosimd/ x86-64 with every SSE2 path compiled out (OPMSG_SIMD=OFF),
# in build-s390x/ a big-endian s390x build whose unit tests run under
# qemu-user. Prints "portable nosimd: tests P/R" and "portable s390x:
# tests P/R"; fails when either ctest fails (a CI step: .ci/run calls it).
.PHONY: check-portable

check-portable: deps
	@JOBS=$(JOBS) scripts/check-portable.sh
