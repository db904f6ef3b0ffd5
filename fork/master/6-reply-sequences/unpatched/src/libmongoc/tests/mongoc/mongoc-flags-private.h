// Not part of the pull request: a stub laid over PR 2's tree for one build
// only, the build of PR 5's new tests on its base (scripts/fork-check.sh).
// The mock server's request.c names the documentSequencesAllowed bit, which
// PR 5 adds: this header, found before the library's, includes PR 2's own
// and names the bit.

#ifndef OPMSG_UNPATCHED_MONGOC_FLAGS_PRIVATE_H
#define OPMSG_UNPATCHED_MONGOC_FLAGS_PRIVATE_H

#include "../../src/mongoc/mongoc-flags-private.h"

#define MONGOC_MSG_DOCUMENT_SEQUENCES_ALLOWED (1 << 17)

#endif
