// Not part of the pull request: a stub laid over PR 1's tree for one build
// only, the build of PR 2's new tests on its base (scripts/fork-check.sh,
// fork/trixie/2-section-rules/unpatched/). test-mcd-rpc.c calls mcd_crc32c() and
// mcd_rpc_message_from_data_in_place_with_error(), which PR 2 adds: here they
// are what PR 1's tree can give, no checksum and its own parser with a generic
// error, so that those tests compile there and fail.

#ifndef MCD_CRC32C_H_INCLUDED
#define MCD_CRC32C_H_INCLUDED

#include <mongoc/mcd-rpc.h>

#include <bson/bson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint32_t
mcd_crc32c(const void *data, size_t len)
{
   (void)data;
   (void)len;
   return 0u;
}

static inline bool
mcd_rpc_message_from_data_in_place_with_error(
   mcd_rpc_message *rpc, const void *data, size_t length, const void **data_end, bson_error_t *error)
{
   if (mcd_rpc_message_from_data_in_place(rpc, data, length, data_end)) {
      return true;
   }
   bson_set_error(error, 3u, 14u, "malformed message (unpatched)");
   return false;
}

#endif // MCD_CRC32C_H_INCLUDED
