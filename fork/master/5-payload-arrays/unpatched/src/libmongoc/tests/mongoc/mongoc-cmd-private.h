// Not part of the pull request: a stub laid over master for one build only,
// the build of PR 6's new tests on its base (scripts/fork-check.sh).
// PR 6 gives _mongoc_cmd_append_payload_as_array() the command as a
// parameter and an empty `out` to set; master's appends to an `out` that
// already holds the command. This header, found before the library's,
// includes master's own and copies the command into `out` first.

#ifndef OPMSG_UNPATCHED_MONGOC_CMD_PRIVATE_H
#define OPMSG_UNPATCHED_MONGOC_CMD_PRIVATE_H

#include "../../src/mongoc/mongoc-cmd-private.h"

static inline void
opmsg_unpatched_append_payload_as_array(const mongoc_cmd_t *cmd, const bson_t *command, bson_t *out)
{
   BSON_ASSERT(bson_concat(out, command));
   _mongoc_cmd_append_payload_as_array(cmd, out);
}

#define _mongoc_cmd_append_payload_as_array(cmd, command, out) \
   opmsg_unpatched_append_payload_as_array(cmd, command, out)

#endif
