/*
 * header.c - the 16-byte message header shared by every opcode, the
 * options' check, and the dispatch from opmsg_parse() to each opcode's
 * parser.
 */
#include "opmsg-msg.h"
#include "opmsg-parse.h"

#include <stddef.h>
#if OPMSG_USE_SSE2 && defined(__x86_64__)
#include <emmintrin.h>
#endif

bool
opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error)
{
   if (opts && !opmsg_check_known(opts->check)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "opmsg_options_t.check is %d, not a check level (%d %s, %d %s, %d %s)", (int) opts->check,
                        OPMSG_CHECK_SPEC, opmsg_check_name(OPMSG_CHECK_SPEC), OPMSG_CHECK_TOP_LEVEL,
                        opmsg_check_name(OPMSG_CHECK_TOP_LEVEL), OPMSG_CHECK_FULL, opmsg_check_name(OPMSG_CHECK_FULL));
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
   opmsg_report_init(&r, error, data, 0, &opmsg_parser_side);
   return check_header(data, &limits, message_length, &r);
}

/* The fields every opcode's parse sets first: the header's, and 0 in every
 * other one. */
static OPMSG_ALWAYS_INLINE void
start_msg(opmsg_msg_t *msg, const uint8_t *data, size_t len)
{
   /* A copy of a static zero struct: a few vector stores (memset of this
    * size became a `rep stos`, whose start-up alone was a third of parsing
    * a small message). */
   static const opmsg_msg_t zero;
   *msg = zero;
   msg->data = data;
   msg->len = len;
   msg->message_length = (int32_t) len;
   msg->request_id = opmsg_read_i32(data + OPMSG_OFF_REQUEST_ID);
   msg->response_to = opmsg_read_i32(data + OPMSG_OFF_RESPONSE_TO);
   msg->opcode = opmsg_read_i32(data + OPMSG_OFF_OPCODE);
}

#if OPMSG_USE_SSE2 && defined(__x86_64__)
/* The stores of fill_alone() follow these layouts. */
_Static_assert(sizeof(opmsg_msg_t) == 160 && offsetof(opmsg_msg_t, len) == 8 &&
                  offsetof(opmsg_msg_t, message_length) == 16 && offsetof(opmsg_msg_t, opcode) == 28 &&
                  offsetof(opmsg_msg_t, flags) == 32 && offsetof(opmsg_msg_t, checksum) == 40 &&
                  offsetof(opmsg_msg_t, body) == 48 && offsetof(opmsg_msg_t, body_len) == 56 &&
                  offsetof(opmsg_msg_t, n_sequences) == 60 && offsetof(opmsg_msg_t, op_reply) == 64 &&
                  sizeof(((opmsg_msg_t *) 0)->op_reply) == 32 && offsetof(opmsg_msg_t, priv_) == 96,
               "opmsg_msg_t's layout");
_Static_assert(sizeof(opmsg_op_msg_t) == 64 && offsetof(opmsg_op_msg_t, body) == 8 &&
                  offsetof(opmsg_op_msg_t, len) == 16 && offsetof(opmsg_op_msg_t, body_len) == 20 &&
                  offsetof(opmsg_op_msg_t, flags) == 24 && offsetof(opmsg_op_msg_t, checksum) == 28 &&
                  offsetof(opmsg_op_msg_t, sections_end) == 32 && offsetof(opmsg_op_msg_t, n_sequences) == 36 &&
                  offsetof(opmsg_op_msg_t, merged_size) == 40 && offsetof(opmsg_op_msg_t, splice) == 44,
               "opmsg_op_msg_t's layout");

/* What start_msg() and opmsg_op_msg_alone() write, for a body alone, in
 * ten 16-byte stores instead of some twenty: the store unit, not the
 * checks, was what the parse of a body alone waited on. The header's four
 * fields are its first 16 bytes as they are.
 * Kept as intrinsics because plain C does not quite hold the speed
 * (opmsg-bench --cpu-time, parse of the five body-alone cases at frames
 * and spec, two runs each, gcc 12 -O2): these stores 4.1-4.2 ns a parse
 * (4.2-4.9 in two whole runs), the plain C below 4.4-4.8 ns (4.3-4.9):
 * gcc stores it field by field, some thirty stores. start_msg()'s zero
 * copy and then the fields was 5.1-5.3 ns; a memset or a compound literal
 * of the whole struct becomes a `rep stos`. The plain C is the fallback,
 * tested by `make check-portable`. */
static OPMSG_ALWAYS_INLINE void
fill_alone(opmsg_msg_t *msg, const uint8_t *data, size_t len, uint32_t flags, uint32_t body_len)
{
   uint8_t *p = (uint8_t *) msg;
   const uint8_t *body = data + OPMSG_OFF_SECTIONS + 1;
   const __m128i zero = _mm_setzero_si128();
#define OPMSG_STORE(off, v) _mm_storeu_si128((__m128i *) (void *) (p + (off)), (v))
   OPMSG_STORE(0, _mm_set_epi64x((long long) len, (long long) (uintptr_t) data));
   OPMSG_STORE(16, _mm_loadu_si128((const __m128i *) (const void *) data));
   OPMSG_STORE(32, _mm_cvtsi32_si128((int) flags));
   OPMSG_STORE(48, _mm_set_epi64x((long long) body_len, (long long) (uintptr_t) body));
   /* The union of the other opcodes. */
   OPMSG_STORE(64, zero);
   OPMSG_STORE(80, zero);
   /* The core (opmsg_msg_core()): data, body; len, body_len, flags;
    * sections_end, merged_size; the rest 0. */
   OPMSG_STORE(96, _mm_set_epi64x((long long) (uintptr_t) body, (long long) (uintptr_t) data));
   OPMSG_STORE(112, _mm_set_epi32(0, (int) flags, (int) body_len, (int) len));
   OPMSG_STORE(128, _mm_set_epi32(0, (int) body_len, 0, (int) len));
   OPMSG_STORE(144, zero);
#undef OPMSG_STORE
}
#else
/* The same in plain C, field by field, with no store twice: what every
 * machine but x86-64 runs, and x86-64 with OPMSG_SIMD=OFF. */
static OPMSG_ALWAYS_INLINE void
fill_alone(opmsg_msg_t *msg, const uint8_t *data, size_t len, uint32_t flags, uint32_t body_len)
{
   static const opmsg_msg_t zero;
   /* The union of the other opcodes' fields, 0 (op_reply is its first
    * byte: every member starts there). */
   memcpy(&msg->op_reply, &zero.op_reply, offsetof(opmsg_msg_t, priv_) - offsetof(opmsg_msg_t, op_reply));
   msg->data = data;
   msg->len = len;
   msg->message_length = (int32_t) len;
   msg->request_id = opmsg_read_i32(data + OPMSG_OFF_REQUEST_ID);
   msg->response_to = opmsg_read_i32(data + OPMSG_OFF_RESPONSE_TO);
   msg->opcode = OPMSG_OP_MSG;
   msg->flags = flags;
   msg->checksum_present = false;
   msg->checksum = 0;
   msg->body = data + OPMSG_OFF_SECTIONS + 1;
   msg->body_len = body_len;
   msg->n_sequences = 0;
   opmsg_op_msg_set_alone(opmsg_msg_core(msg), data, len, flags, body_len);
}
#endif

/* The reply most messages are, taken before anything else: an OP_MSG whose
 * body fills it alone (opmsg_op_msg_alone_ok()), at the spec level
 * (NULL options, 0), not a request (which must name its
 * database). True when msg is parsed; false for anything else, a fault
 * included, which the whole way then checks and names. */
static OPMSG_ALWAYS_INLINE bool
parse_alone(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg)
{
   uint32_t flags, body_len;
   /* opmsg_limits_from()'s two limits, without the rest of the struct. */
   size_t max_message = OPMSG_DEFAULT_MAX_MESSAGE_SIZE, max_bson = OPMSG_DEFAULT_MAX_BSON_SIZE;
   if (opts) {
      if (!opmsg_check_frames_only(opmsg_options_check(opts)) || (opts->flags & OPMSG_PARSE_REQUEST)) {
         return false;
      }
      if (opts->max_message_size || opts->max_bson_size) {
         opmsg_limits_t limits;
         opmsg_limits_from(opts, &limits);
         max_message = limits.max_message_size;
         max_bson = limits.max_bson_size;
      }
   }
   if (len < OPMSG_OP_MSG_MIN_LENGTH || opmsg_read_u32(data + OPMSG_OFF_MESSAGE_LENGTH) != len ||
       opmsg_read_i32(data + OPMSG_OFF_OPCODE) != OPMSG_OP_MSG || len > max_message ||
       !opmsg_op_msg_alone_ok(data, len, max_bson + OPMSG_BODY_ALLOWANCE, &flags, &body_len)) {
      return false;
   }
   fill_alone(msg, data, len, flags, body_len);
   return true;
}

/* The parse of opmsg_parse() and opmsg_parse_with_offset(), into r: data
 * and msg are not NULL. Out of line, so that the frame of the whole way
 * (its registers, the limits) is not set up for parse_alone(). */
static OPMSG_NOINLINE bool
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

   /* Every field an opcode does not fill is 0. */
   start_msg(msg, data, len);

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

/* opmsg_parse() the whole way: out of line, so that opmsg_parse() sets up
 * no frame (the report context, the registers of the checks) for the short
 * one. */
static OPMSG_NOINLINE bool
parse_whole(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg, bson_error_t *error)
{
   opmsg_report_t r;
   if (!data || !msg) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "data and msg must not be NULL");
   }
   opmsg_report_init(&r, error, data, 0, &opmsg_parser_side);
   return parse_reported(data, len, opts, msg, &r);
}

bool
opmsg_parse(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg, bson_error_t *error)
{
   if (OPMSG_LIKELY(data && msg && parse_alone(data, len, opts, msg))) {
      return true;
   }
   return parse_whole(data, len, opts, msg, error);
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
   opmsg_report_init(&r, error, data, 0, &opmsg_parser_side);
   bool ok = parse_alone(data, len, opts, msg) || parse_reported(data, len, opts, msg, &r);
   if (offset) {
      *offset = ok ? len : r.offset;
   }
   return ok;
}
