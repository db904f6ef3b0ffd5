/*
 * names.c - the names of opcodes and flag bits, as the wire protocol
 * documentation spells them.
 *
 * The one home of these tables: `opmsg dump` and `opmsg tap` print these
 * names and scripts read them, so the tools ask here rather than keep
 * copies that could drift apart.
 */
#include "opmsg-common.h"

const char *
opmsg_opcode_name(int32_t opcode)
{
   switch (opcode) {
   case OPMSG_OP_REPLY:
      return "OP_REPLY";
   case OPMSG_OP_UPDATE:
      return "OP_UPDATE";
   case OPMSG_OP_INSERT:
      return "OP_INSERT";
   case OPMSG_OP_QUERY:
      return "OP_QUERY";
   case OPMSG_OP_GET_MORE:
      return "OP_GET_MORE";
   case OPMSG_OP_DELETE:
      return "OP_DELETE";
   case OPMSG_OP_KILL_CURSORS:
      return "OP_KILL_CURSORS";
   case OPMSG_OP_COMPRESSED:
      return "OP_COMPRESSED";
   case OPMSG_OP_MSG:
      return "OP_MSG";
   default:
      return NULL;
   }
}

/* Indexed by bit; a NULL entry is a bit the protocol does not name. */
static const char *const msg_flag_names[32] = {
   [0] = "checksumPresent", [1] = "moreToCome", [16] = "exhaustAllowed", [17] = "documentSequencesAllowed"};
static const char *const query_flag_names[32] = {
   [1] = "tailableCursor", [2] = "slaveOk", [3] = "oplogReplay", [4] = "noCursorTimeout",
   [5] = "awaitData",      [6] = "exhaust", [7] = "partial"};
static const char *const reply_flag_names[32] = {
   [0] = "cursorNotFound", [1] = "queryFailure", [2] = "shardConfigStale", [3] = "awaitCapable"};

const char *
opmsg_flag_name(int32_t opcode, unsigned bit)
{
   const char *const *names;

   switch (opcode) {
   case OPMSG_OP_MSG:
      names = msg_flag_names;
      break;
   case OPMSG_OP_QUERY:
      names = query_flag_names;
      break;
   case OPMSG_OP_REPLY:
      names = reply_flag_names;
      break;
   default:
      return NULL;
   }
   return bit < 32 ? names[bit] : NULL;
}

/* The check levels' names: the CLI's --check and the drop-in's
 * OPMSG_MONGOC_CHECK both read them here. */
static const char *const check_names[OPMSG_CHECK_LAST + 1] = {
   [OPMSG_CHECK_SPEC] = "spec",
   [OPMSG_CHECK_TOP_LEVEL] = "top-level",
   [OPMSG_CHECK_FULL] = "full",
};

const char *
opmsg_check_name(opmsg_check_t check)
{
   return opmsg_check_known(check) ? check_names[check] : NULL;
}

bool
opmsg_check_from_name(const char *name, opmsg_check_t *check)
{
   for (unsigned i = 0; name && i < sizeof check_names / sizeof check_names[0]; i++) {
      if (strcmp(name, check_names[i]) == 0) {
         *check = (opmsg_check_t) i;
         return true;
      }
   }
   return false;
}
