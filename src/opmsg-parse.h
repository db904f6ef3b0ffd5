/*
 * opmsg-parse.h - opmsg_parse() from the header on: the options turned into
 * limits, and the parser of each opcode it dispatches to (header.c).
 *
 * Not installed.
 */
#ifndef OPMSG_PARSE_H
#define OPMSG_PARSE_H

#include "opmsg-common.h"

/* opmsg_limits_set() from the caller's options (NULL: the defaults), with
 * the check level (an unknown level counts as the default here; parsing
 * refuses it first through opmsg_options_valid()). */
void opmsg_limits_from(const opmsg_options_t *opts, opmsg_limits_t *limits);
/* False with OPMSG_ERR_INVALID_ARGUMENT when opts asks for a check level
 * that does not exist. NULL is valid. */
bool opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Per-opcode parsers, called by opmsg_parse() after the header checks.
 * msg->data, len, header fields are set; each fills the rest. Each reports
 * into r, whose offsets count from the message's first byte.
 * ------------------------------------------------------------------------- */
bool opmsg_parse_msg(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r);
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
