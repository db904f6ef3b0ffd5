/*
 * header.c - the 16-byte message header shared by every opcode, the
 * options' check, and the dispatch from opmsg_parse() to each opcode's
 * parser.
 */
#include "opmsg-msg.h"
#include "opmsg-parse.h"

bool
opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error)
{
   if (opts && (unsigned) opts->check > (unsigned) OPMSG_CHECK_FULL) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "opmsg_options_t.check is %d, not a check level (0 top-level, 1 frames, 2 full)",
                        (int) opts->check);
   }
   return true;
}

bool
opmsg_is_reply_opcode(int32_t opcode)
{
   return opcode == OPMSG_OP_MSG || opcode == OPMSG_OP_REPLY;
}

size_t
opmsg_min_length(int32_t opcode)
{
   switch (opcode) {
   case OPMSG_OP_MSG:
      return OPMSG_OP_MSG_MIN_LENGTH;
   case OPMSG_OP_COMPRESSED:
      /* header, originalOpcode, uncompressedSize, compressorId. */
      return OPMSG_COMPRESSED_OVERHEAD;
   case OPMSG_OP_QUERY:
      /* header, flags, a one-byte namespace, skip, return, a document. */
      return OPMSG_HEADER_SIZE + 4 + 2 + 4 + 4 + 5;
   case OPMSG_OP_REPLY:
      /* header, responseFlags, cursorID, startingFrom, numberReturned. */
      return OPMSG_OFF_REPLY_DOCUMENTS;
   default:
      return opmsg_removed_min_length(opcode);
   }
}

/* Checks messageLength and the opcode; used on a whole message and on the
 * first bytes of a stream alike. Inline: it is on every parse's path. */
static OPMSG_ALWAYS_INLINE bool
check_header(const uint8_t *data, const opmsg_limits_t *limits, size_t *message_length, opmsg_report_t *r)
{
   int32_t length = opmsg_read_i32(data + OPMSG_OFF_MESSAGE_LENGTH);
   int32_t opcode = opmsg_read_i32(data + OPMSG_OFF_OPCODE);
   size_t min = opmsg_min_length(opcode);

   if (min == 0) {
      return opmsg_report(r, OPMSG_ERR_UNKNOWN_OPCODE, 12, "opCode %d at offset 12 is not one MongoDB defines", opcode);
   }
   if ((limits->flags & OPMSG_PARSE_REPLY) && !opmsg_is_reply_opcode(opcode) && opcode != OPMSG_OP_COMPRESSED) {
      return opmsg_report(r, OPMSG_ERR_NOT_A_REPLY, 12,
                          "opCode %d at offset 12 is a request: a server never replies with it", opcode);
   }
   /* Signed first: a negative length must not pass a size_t comparison. */
   if (length < 0 || (size_t) length < min) {
      return opmsg_report(r, OPMSG_ERR_LENGTH_TOO_SMALL, 0,
                          "messageLength %d at offset 0 is below the %zu bytes opCode %d needs", length, min, opcode);
   }
   if ((size_t) length > limits->max_message_size) {
      return opmsg_report(r, OPMSG_ERR_LENGTH_TOO_LARGE, 0,
                          "messageLength %d at offset 0 is above the limit of %zu bytes", length,
                          limits->max_message_size);
   }
   *message_length = (size_t) length;
   return true;
}

bool
opmsg_frame_length(const uint8_t *data, size_t len, const opmsg_options_t *opts, size_t *message_length,
                   bson_error_t *error)
{
   opmsg_limits_t limits;
   opmsg_report_t r;
   if (!data || !message_length) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "data and message_length must not be NULL");
   }
   if (len < OPMSG_HEADER_SIZE) {
      return opmsg_fail(error, OPMSG_ERR_TRUNCATED, "%zu bytes are fewer than the 16-byte header", len);
   }
   opmsg_limits_from(opts, &limits);
   opmsg_report_init(&r, error, data, 0, false);
   return check_header(data, &limits, message_length, &r);
}

/* The parse of opmsg_parse() and opmsg_parse_with_offset(), into r: data
 * and msg are not NULL. Inline into both, so that neither pays a call. */
static OPMSG_ALWAYS_INLINE bool
parse_reported(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg, opmsg_report_t *r)
{
   opmsg_limits_t limits;
   size_t length = 0;

   /* Faults of the header are reported at its field: messageLength at 0
    * (also when there are not 16 bytes for it), opCode at 12. */
   if (len < OPMSG_HEADER_SIZE) {
      return opmsg_report(r, OPMSG_ERR_TRUNCATED, 0, "%zu bytes are fewer than the 16-byte header", len);
   }
   if (!opmsg_options_valid(opts, r->error)) {
      return false;
   }
   opmsg_limits_from(opts, &limits);
   if (!check_header(data, &limits, &length, r)) {
      return false;
   }
   if (length != len) {
      return opmsg_report(r, length > len ? OPMSG_ERR_TRUNCATED : OPMSG_ERR_LENGTH_MISMATCH, 0,
                          "messageLength %zu at offset 0 but %zu bytes given", length, len);
   }

   /* Every field an opcode does not fill is 0. Assigning a zero struct
    * compiles to a few vector stores; memset of this size became a
    * `rep stos`, whose start-up alone was a third of parsing a small
    * message. */
   static const opmsg_msg_t zero;
   *msg = zero;
   msg->data = data;
   msg->len = len;
   msg->message_length = (int32_t) length;
   msg->request_id = opmsg_read_i32(data + OPMSG_OFF_REQUEST_ID);
   msg->response_to = opmsg_read_i32(data + OPMSG_OFF_RESPONSE_TO);
   msg->opcode = opmsg_read_i32(data + OPMSG_OFF_OPCODE);

   switch (msg->opcode) {
   case OPMSG_OP_MSG:
      return opmsg_parse_msg(msg, &limits, r);
   case OPMSG_OP_QUERY:
      return opmsg_parse_query(msg, &limits, r);
   case OPMSG_OP_REPLY:
      return opmsg_parse_reply(msg, &limits, r);
   case OPMSG_OP_COMPRESSED:
      return opmsg_parse_compressed(msg, &limits, r);
   default:
      return opmsg_parse_removed(msg, &limits, r);
   }
}

bool
opmsg_parse(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg, bson_error_t *error)
{
   opmsg_report_t r;
   if (!data || !msg) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "data and msg must not be NULL");
   }
   opmsg_report_init(&r, error, data, 0, false);
   return parse_reported(data, len, opts, msg, &r);
}

bool
opmsg_parse_with_offset(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg, size_t *offset,
                        bson_error_t *error)
{
   opmsg_report_t r;
   if (!data || !msg) {
      if (offset) {
         *offset = 0;
      }
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "data and msg must not be NULL");
   }
   opmsg_report_init(&r, error, data, 0, false);
   bool ok = parse_reported(data, len, opts, msg, &r);
   if (offset) {
      *offset = ok ? len : r.offset;
   }
   return ok;
}
