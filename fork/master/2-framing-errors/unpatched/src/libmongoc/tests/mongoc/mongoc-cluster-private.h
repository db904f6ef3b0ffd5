// Not part of the pull request: a stub laid over PR 1's tree for one build
// only, the build of PR 2's new tests on its base (scripts/fork-check.sh).
// PR 2 gives mcd_rpc_message_decompress() an error parameter, which
// test-mongoc-cluster.c passes: this header, found before the library's,
// includes PR 1's own and drops the extra argument.

#ifndef OPMSG_UNPATCHED_MONGOC_CLUSTER_PRIVATE_H
#define OPMSG_UNPATCHED_MONGOC_CLUSTER_PRIVATE_H

#include "../../src/mongoc/mongoc-cluster-private.h"

#define mcd_rpc_message_decompress(rpc, data, data_len, max_msg_size, error) \
   ((void)(error), mcd_rpc_message_decompress(rpc, data, data_len, max_msg_size))

#endif
