/*
 * opmsg-parse.h - the public parse over the core: opmsg_parse() from the
 * header on (the options turned into limits, the parser of each opcode it
 * dispatches to: header.c), and opmsg_msg_t's hold on the OP_MSG core.
 *
 * Not installed. Not part of the core: these take the public opmsg_msg_t
 * and opmsg_options_t.
 */
#ifndef OPMSG_PARSE_H
#define OPMSG_PARSE_H

#include "opmsg-common.h"
#include "opmsg-document.h"
#include "opmsg-msg.h"

/* OP_QUERY's numberToSkip and numberToReturn, the two int32s right after
 * fullCollectionName's NUL (opmsg/wire.h). */
#define OPMSG_QUERY_SKIP_RETURN_SIZE 8

/* opmsg_msg_t keeps the core's parsed OP_MSG in its priv_ (its size is the
 * ABI, its contents are opmsg's): the public functions hand the core its
 * own struct, with nothing to copy. */
_Static_assert(sizeof(opmsg_op_msg_t) <= sizeof(((opmsg_msg_t *) 0)->priv_), "opmsg_msg_t.priv_ holds opmsg_op_msg_t");
_Static_assert(_Alignof(opmsg_op_msg_t) <= _Alignof(void *), "opmsg_msg_t.priv_ aligns opmsg_op_msg_t");

static inline opmsg_op_msg_t *
opmsg_msg_core(opmsg_msg_t *msg)
{
   return (opmsg_op_msg_t *) (void *) msg->priv_;
}

static inline const opmsg_op_msg_t *
opmsg_msg_ccore(const opmsg_msg_t *msg)
{
   return (const opmsg_op_msg_t *) (const void *) msg->priv_;
}

/* The check level the caller's options ask for, the one mapping from
 * options to a level: NULL the default (spec, 0); OPMSG_PARSE_FULL_VALIDATE
 * full whatever the level says; otherwise the level given (an unknown one
 * counts as top-level here: parsing refuses it first through
 * opmsg_options_valid()). What each level checks is opmsg-common.h's
 * mapping (opmsg_check_top(), opmsg_check_deep()). */
static inline opmsg_check_t
opmsg_options_check(const opmsg_options_t *opts)
{
   if (!opts) {
      return OPMSG_CHECK_SPEC;
   }
   if ((opts->flags & OPMSG_PARSE_FULL_VALIDATE) || opmsg_check_deep(opts->check)) {
      return OPMSG_CHECK_FULL;
   }
   return opmsg_check_frames_only(opts->check) ? OPMSG_CHECK_SPEC : OPMSG_CHECK_TOP_LEVEL;
}

/* opmsg_limits_set() from the caller's options (NULL: the defaults), at
 * the level opmsg_options_check() gives. Inline: every parse starts with
 * it. */
static inline void
opmsg_limits_from(const opmsg_options_t *opts, opmsg_limits_t *limits)
{
   opmsg_check_t check = opmsg_options_check(opts);
   if (!opts) {
      opmsg_limits_set(limits, 0, 0, 0);
   } else {
      opmsg_limits_set(limits, opts->max_message_size, opts->max_bson_size, opts->flags);
   }
   if (opmsg_check_deep(check)) {
      opmsg_limits_full(limits);
   } else {
      limits->check = check;
   }
}
/* False with OPMSG_ERR_INVALID_ARGUMENT when opts asks for a check level
 * that does not exist. NULL is valid. */
bool opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Per-opcode parsers, called by opmsg_parse() after the header checks.
 * msg->data, len, header fields are set; each fills the rest. Each reports
 * into r, whose offsets count from the message's first byte.
 * ------------------------------------------------------------------------- */
/* OP_MSG: the core's opmsg_op_msg_parse() into opmsg_msg_core(msg), and
 * the public fields from it. Inline: opmsg_parse() is its only caller. */
static inline bool
opmsg_parse_msg(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   opmsg_op_msg_t *m = opmsg_msg_core(msg);
   if (!opmsg_op_msg_parse(m, msg->data, msg->len, limits, r)) {
      return false;
   }
   msg->flags = m->flags;
   msg->checksum_present = (m->flags & OPMSG_FLAG_CHECKSUM_PRESENT) != 0;
   msg->checksum = m->checksum;
   msg->body = m->body;
   msg->body_len = m->body_len;
   msg->n_sequences = m->n_sequences;
   return true;
}
bool opmsg_parse_query(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r);
bool opmsg_parse_reply(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r);
bool opmsg_parse_compressed(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r);

/* OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS (legacy-crud.c). */
bool opmsg_parse_removed(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r);
size_t opmsg_removed_min_length(int32_t opcode);

/* The smallest messageLength each opcode can have. */
size_t opmsg_min_length(int32_t opcode);
/* OP_MSG and OP_REPLY: what a server answers with (OPMSG_PARSE_REPLY; an
 * OP_COMPRESSED reply carries one of them). */
bool opmsg_is_reply_opcode(int32_t opcode);

#endif /* OPMSG_PARSE_H */
