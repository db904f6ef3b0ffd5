// Not part of the pull request: a stub laid over PR 1's tree for one build
// only, the build of PR 2's new tests on its base (scripts/fork-check.sh).
// PR 2 gives mcd_rpc_message_from_data_in_place() an error parameter, which
// test-mcd-rpc.c passes. The test sources find this header before the
// library's (src/libmongoc/tests comes first on their include path): it
// includes PR 1's own mcd-rpc.h and takes the extra argument, setting the
// generic error PR 1's tree can give, so that those tests compile there and
// fail.

#ifndef OPMSG_UNPATCHED_MCD_RPC_H
#define OPMSG_UNPATCHED_MCD_RPC_H

#include "../../src/mongoc/mcd-rpc.h"

#include <bson/bson.h>

static inline bool
unpatched_mcd_rpc_message_from_data_in_place(
   mcd_rpc_message *rpc, const void *data, size_t length, const void **data_end, bson_error_t *error)
{
   if (mcd_rpc_message_from_data_in_place(rpc, data, length, data_end)) {
      return true;
   }
   bson_set_error(error, 3u, 14u, "malformed message (unpatched)");
   return false;
}

#define mcd_rpc_message_from_data_in_place(rpc, data, length, data_end, error) \
   unpatched_mcd_rpc_message_from_data_in_place(rpc, data, length, data_end, error)

#endif
