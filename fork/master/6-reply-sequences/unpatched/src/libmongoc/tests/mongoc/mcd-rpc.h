// Not part of the pull request: a stub laid over PR 2's tree for one build
// only, the build of PR 5's new tests on its base (scripts/fork-check.sh).
// The test sources find this header before the library's (src/libmongoc/tests
// comes first on their include path). It includes PR 2's own mcd-rpc.h and
// gives what PR 5 adds as PR 2's tree would answer: no documentSequencesAllowed
// bit on any request, and no count of a sequence's documents.

#ifndef OPMSG_UNPATCHED_MCD_RPC_H
#define OPMSG_UNPATCHED_MCD_RPC_H

#include "../../src/mongoc/mcd-rpc.h"

#define MONGOC_OP_MSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED (UINT32_C(0x01) << 17)

static inline int32_t
mcd_rpc_op_msg_section_get_document_sequence_count(const mcd_rpc_message *rpc, size_t index)
{
   (void)rpc;
   (void)index;
   return -1;
}

#endif
