// Not part of the pull request: a stub laid over PR 2's tree for one build
// only, the build of PR 5's new tests on its base (scripts/fork-check.sh).
// test-mcd-rpc.c calls mcd_rpc_message_get_reply(), which PR 5 adds: here it
// is what PR 2's tree gives a receive path, the body alone, so that those
// tests compile there and fail.

#ifndef OPMSG_UNPATCHED_MONGOC_RPC_PRIVATE_H
#define OPMSG_UNPATCHED_MONGOC_RPC_PRIVATE_H

#include "../../src/mongoc/mongoc-rpc-private.h"

static inline bool
mcd_rpc_message_get_reply(const mcd_rpc_message *rpc, bson_t *reply, bson_error_t *error)
{
   if (mcd_rpc_message_get_body(rpc, reply)) {
      return true;
   }
   bson_set_error(error, 3u, 14u, "no body (unpatched)");
   return false;
}

#endif
