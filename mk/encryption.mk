# make check-encryption: client-side field level encryption end to end
# (tests/encryption/, docs/encryption.md). A libmongoc program with a local
# KMS key, explicit encryption and automatic decryption writes and reads
# encrypted documents on a private FerretDB, stock and with
# LD_PRELOAD=libopmsg-mongoc.so, and checks the server holds only ciphertext.
# Ends with one line per libmongoc version, e.g.
#   encryption 1.23.1: operations 15, documents 26, equal with drop-in yes, equal stock yes, ciphertext on server yes
# and fails when any of them says "no" (exit 77: skipped, FerretDB or
# libmongocrypt missing). A build tree configured before the suite existed
# gets "encryption" added to its OPMSG_TEST_SUITES.
#
# ENC_ROOTS: Debian releases to run it in as well, each in the root
# scripts/debian-root.sh made (build/roots/SUITE; needs root). Default: every
# root marked usable (build/roots/READY-SUITE), e.g. trixie (libmongoc
# 1.30) and sid (2.x); ENC_ROOTS= runs this machine's libmongoc only.
.PHONY: check-encryption

ENC_READY := $(patsubst build/roots/READY-%,%,$(wildcard build/roots/READY-*))
ENC_ROOTS ?= $(filter trixie,$(ENC_READY)) $(filter sid,$(ENC_READY)) \
	$(filter-out trixie sid,$(ENC_READY))

check-encryption: deps configure
	@scripts/add-test-suite.sh $(BUILD) encryption
	cmake --build $(BUILD) -j $(JOBS) --target enc-client
	@dropin=""; \
	if cmake --build $(BUILD) -j $(JOBS) --target opmsg_mongoc >/dev/null 2>&1; then \
	  dropin=$(abspath $(BUILD))/src/mongoc-dropin/libopmsg-mongoc.so; \
	else echo "check-encryption: the drop-in does not build here: stock only"; fi; \
	tests/encryption/check-encryption.sh $(abspath $(BUILD))/tests/encryption/enc-client \
	  "$$dropin" $(ENC_ROOTS)
