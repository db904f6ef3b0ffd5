# make check-sequences: document sequences in replies, live
# (scripts/check-sequences.sh, docs/fork.md "Live: against FerretDB with
# sequences"). The fork's libmongoc (FORK_PREFIX, the install prefix of all
# pull requests applied that make check-fork leaves) reads with find,
# aggregate and getMore in batches of 1, 101, 10,000 documents and one of
# 16 MiB - 1 KiB from FerretDB with upstream/ferretdb/ (ferretdb-seq) and
# from stock FerretDB: the same documents in the same order from both, and
# every cursor reply of ferretdb-seq carries document sequences (counted
# through `opmsg tap`). pymongo, the Node driver, mongosh, the Go driver and
# libmongoc 1.23 with and without the drop-in run the interop workload
# against both: no sequences, the same cursor replies. One line:
#   live sequences: server ferretdb-seq, fork replies with sequences N of N, documents D = D stock, peers unchanged P/P
# Fails unless every part holds, or when FORK_PREFIX has no build.
#
#   FORK_PREFIX=DIR   the fork's install prefix (include/, lib/libmongoc2.so)
FORK_PREFIX ?= build/fork/master/builds/all/prefix

.PHONY: check-sequences

check-sequences: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target opmsg_cli opmsg_mongoc interop-client-mongoc
	@FORK_PREFIX=$(FORK_PREFIX) scripts/check-sequences.sh $(BUILD)
