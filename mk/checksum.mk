# make check-checksum: OP_MSG checksums, live (scripts/check-checksum.sh,
# docs/fork.md "Live: checksums with FerretDB"). The fork's libmongoc
# (FORK_PREFIX, the install prefix of all pull requests applied that make
# check-fork leaves; PR 3's URI option opMsgChecksum) runs a workload with
# opMsgChecksum=true against stock FerretDB v1.24.2 through `opmsg tap`,
# which checks every checksum; then the option's cost on the client, twice.
# One line:
#   fork checksum live: requests with checksum N of N, accepted N, replies with checksum M verified M, cost X-Y ns/message (B-byte requests)
# Fails unless every request carried a right checksum and was answered with
# ok: 1 and every checksummed reply was right, or when FORK_PREFIX has no build.
#
#   FORK_PREFIX=DIR   the fork's install prefix (include/, lib/libmongoc2.so)
FORK_PREFIX ?= build/fork/master/builds/all/prefix

.PHONY: check-checksum

check-checksum: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target opmsg_cli
	@FORK_PREFIX=$(FORK_PREFIX) scripts/check-checksum.sh $(BUILD)
