/*
 * mcdrpc.c - the reply path of libmongoc 1.30 and 2.5 (mcd-rpc), rebuilt on
 * libopmsg.
 *
 * Every receive path in those versions runs the same four calls: parse
 * (mcd_rpc_message_from_data_in_place), ingress (counters), decompress if
 * necessary, and get_body; two of them then read the OP_MSG flag bits. The
 * message object (mcd_rpc_message) is opaque: this file never looks inside
 * it, it reads it through libmongoc's own exported accessors.
 *
 * One rule for both reply paths (rpc.c has the other): sections stay as they
 * are on the wire, validated by libopmsg, and document sequences are merged
 * only where a reply is consumed.
 * - from_data_in_place: the bytes are checked by opmsg_parse() (CRC-32C,
 *   unique and non-clashing identifiers, trailing bytes, limits, documents)
 *   and then by the original, which fills the object: a message either
 *   rejects is rejected. A message libopmsg refuses has its data_end where
 *   libopmsg found the fault (opmsg_parse_with_offset()). When libmongoc itself is the caller it is parsing a
 *   server's reply (every call site in the .so is a receive path), so the
 *   message must be a reply (OPMSG_PARSE_REPLY): a request opcode there is
 *   an error for that operation, where the original accepted it and
 *   mcd_rpc_message_ingress() then aborted the process. Other callers
 *   (libmongoc's mock server parses the requests it receives with
 *   mcd_rpc_message_from_data and reads their sections one by one) get the
 *   object exactly as the original fills it.
 * - get_body: the only place libmongoc reads a reply's document. With
 *   sequences, it returns the merged document, owned by the caller's bson_t.
 * - decompress / decompress_if_necessary: sizes bounded by the limits (and
 *   2.x's max_msg_size) before allocating, exact sizes, never an abort, and
 *   on failure nothing is left in *data for the caller to leak.
 * - ingress: an opcode it does not count is skipped instead of aborting.
 * - op_msg_get_flag_bits: 0 for a message that is not OP_MSG (the streaming
 *   monitor asks without checking the opcode), instead of aborting.
 *
 * The lifetime of get_body's document, call site by call site (1.30.4 and
 * 2.5; the receive paths are the same in both):
 * - The original returns a view into the parsed buffer. Every caller is done
 *   with it before that buffer is freed, and every caller calls
 *   bson_destroy() on it when get_body succeeded:
 *   - cluster, OP_MSG command path (_mongoc_cluster_run_opmsg_recv): reads
 *     it (cluster time, ok, session), bson_copy_to(), bson_destroy();
 *   - cluster, OP_QUERY command path (handshakes of pooled clients):
 *     bson_copy_to(), bson_destroy() straight away;
 *   - server monitor, hello over OP_MSG and over OP_QUERY, and the streaming
 *     monitor: bson_copy_to(), bson_destroy() straight away;
 *   - async handshake / single-threaded heartbeat (mongoc-async-cmd.c):
 *     kept in the async command until its completion callback has run
 *     (which calls the application's heartbeat APM callbacks: they may run
 *     other commands on the same thread), then bson_destroy() when the
 *     command is destroyed (1.30 marks it for cleanup on success; 2.5
 *     always destroys it);
 *   - mcd_rpc_message_check_ok (legacy OP_REPLY cursors, 1.30): copies it
 *     into the error document, bson_destroy().
 * - So a merged body is returned as a document the caller owns (one
 *   allocation, opmsg_merge_init()), freed by the bson_destroy() every
 *   caller already makes. Nothing is kept per thread or per message, so the
 *   async path's re-entrant callbacks cannot invalidate it, unlike a buffer
 *   freed at the next parse. A body without sequences stays a view into the
 *   buffer, exactly as the original returns it.
 * - On failure *reply is left untouched, as the original leaves it (the
 *   1.30 async path does not destroy it then).
 */
#include "dropin-private.h"


/* Where the original parser's pointers into the message point: the first
 * section's body or identifier (opmsg/wire.h) and the compressed bytes. */
#define MSG_FIRST_BODY (OPMSG_OFF_SECTIONS + 1)
#define MSG_FIRST_IDENTIFIER (OPMSG_OFF_SECTIONS + OPMSG_SECTION_OFF_IDENTIFIER)
#define COMPRESSED_PAYLOAD OPMSG_COMPRESSED_OVERHEAD

static bool
mcd_path(dropin_path_t path)
{
   return path == DROPIN_MCD_130 || path == DROPIN_MCD_25;
}


/* ---------------------------------------------------------------------------
 * The wire bytes behind a parsed message
 *
 * The original parser stores pointers into the buffer it was given (its
 * documented in-place contract), at fixed offsets from the message's start:
 * an OP_MSG's first section and an OP_COMPRESSED's payload. From one of them
 * the message is found again, and its header is compared with what the
 * object says, so an object filled any other way is refused, not trusted.
 * ------------------------------------------------------------------------- */
static bool
wire_bytes(const void *rpc, const uint8_t **start, size_t *len)
{
   const dropin_mcd_t *f = dropin_mcd();
   int32_t opcode = f->op_code(rpc);
   int32_t length = f->message_length(rpc);
   const uint8_t *p;

   if (opcode == OPMSG_OP_MSG) {
      if (f->sections_count(rpc) == 0) {
         return false;
      }
      p = f->section_kind(rpc, 0) == 0 ? (const uint8_t *) f->section_body(rpc, 0) - MSG_FIRST_BODY
                                       : (const uint8_t *) f->section_identifier(rpc, 0) - MSG_FIRST_IDENTIFIER;
   } else if (opcode == OPMSG_OP_COMPRESSED) {
      p = (const uint8_t *) f->compressed_message(rpc) - COMPRESSED_PAYLOAD;
   } else {
      return false;
   }
   /* The header as libopmsg reads it must be the one the object holds
    * (which also rules out a length below 16). */
   if (!opmsg_frame_length(p, OPMSG_HEADER_SIZE, NULL, len, NULL) || length < 0 || *len != (size_t) length) {
      return false;
   }
   if (opmsg_wire_i32(p, OPMSG_HEADER_SIZE, OPMSG_OFF_REQUEST_ID) != f->request_id(rpc) ||
       opmsg_wire_i32(p, OPMSG_HEADER_SIZE, OPMSG_OFF_RESPONSE_TO) != f->response_to(rpc) ||
       opmsg_wire_i32(p, OPMSG_HEADER_SIZE, OPMSG_OFF_OPCODE) != opcode) {
      return false;
   }
   *start = p;
   return true;
}

/* ---------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------- */

/* reply: the caller is libmongoc's receive path. */
static bool
parse_in_place(void *rpc, const void *data, size_t length, const void **data_end, bool reply)
{
   const dropin_mcd_t *f = dropin_mcd();
   opmsg_msg_t m;
   bson_error_t error;
   size_t offset;

   if (!rpc || !data) {
      /* A caller's bug, not a peer's input: the original's answer. */
      return f->from_data_in_place(rpc, data, length, data_end);
   }
   /* As the original: the message may be followed by other bytes, which
    * are not part of it. A messageLength that does not fit them, or is
    * below a header, is the parse's to refuse (at offset 0). */
   int32_t declared = opmsg_wire_i32(data, length, OPMSG_OFF_MESSAGE_LENGTH);
   size_t message_length = declared >= OPMSG_HEADER_SIZE && (size_t) declared < length ? (size_t) declared : length;
   if (!opmsg_parse_with_offset(data, message_length, dropin_parse_options(reply), &m, &offset, &error)) {
      if (data_end) {
         /* The caller wants to know where the message went wrong
          * (libmongoc's own callers pass NULL): where libopmsg found the
          * fault, the start of the field, section, document or element that
          * breaks a rule, as the original points at the field it stopped
          * at. */
         *data_end = (const uint8_t *) data + offset;
      }
      return dropin_reject(reply ? "reply" : "message", &error);
   }
   return f->from_data_in_place(rpc, data, length, data_end);
}

bool
mcd_rpc_message_from_data_in_place(void *rpc, const void *data, size_t length, const void **data_end)
{
   dropin_caller_t caller = DROPIN_CALLER();

   if (!mcd_path(caller.path)) {
      const dropin_mcd_t *f = dropin_mcd();
      return f->from_data_in_place ? f->from_data_in_place(rpc, data, length, data_end) : false;
   }
   return parse_in_place(rpc, data, length, data_end, caller.from_mongoc);
}

/* new + parse, as the original, whose own call to from_data_in_place would
 * come from inside libmongoc and look like a reply path: replaced so that
 * the mock server's requests keep their opcodes and sections. */
void *
mcd_rpc_message_from_data(const void *data, size_t length, const void **data_end)
{
   const dropin_mcd_t *f = dropin_mcd();
   void *rpc;

   if (!mcd_path(DROPIN_CALLER().path)) {
      return f->from_data ? f->from_data(data, length, data_end) : NULL;
   }
   rpc = f->message_new();
   if (rpc && !parse_in_place(rpc, data, length, data_end, false)) {
      f->message_destroy(rpc);
      rpc = NULL;
   }
   return rpc;
}

/* ---------------------------------------------------------------------------
 * The body
 * ------------------------------------------------------------------------- */
bool
mcd_rpc_message_get_body(const void *rpc, bson_t *reply)
{
   const dropin_mcd_t *f = dropin_mcd();
   const uint8_t *start;
   size_t len;
   opmsg_msg_t m;
   bson_error_t error;

   if (!mcd_path(DROPIN_CALLER().path)) {
      return f->get_body ? f->get_body(rpc, reply) : false;
   }
   /* Body-only messages and OP_REPLY: the original's view. */
   if (!rpc || !reply || f->op_code(rpc) != OPMSG_OP_MSG || f->sections_count(rpc) < 2) {
      return f->get_body(rpc, reply);
   }
   if (!wire_bytes(rpc, &start, &len)) {
      return dropin_reject_msg("OP_MSG", "the message is not the one that was parsed");
   }
   if (!opmsg_parse(start, len, dropin_parse_options(false), &m, &error)) {
      return dropin_reject("OP_MSG", &error);
   }
   /* Fails only without memory (the size was checked by the parse); *reply
    * is then an empty document that needs no bson_destroy(). */
   if (!opmsg_merge_init(&m, reply, &error)) {
      return dropin_reject("OP_MSG", &error);
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * Decompression
 * ------------------------------------------------------------------------- */

/* 2.x passes the largest decompressed message it accepts (the original
 * aborts on 16 or less and refuses more than 48,000,000); 1.30 passes
 * nothing, and the default limit applies. */
static bool
decompressed_limit(dropin_path_t path, int32_t max_msg_size, bool reply, opmsg_options_t *opts)
{
   *opts = *dropin_parse_options(reply);
   if (path == DROPIN_MCD_25) {
      if (max_msg_size <= OPMSG_HEADER_SIZE || (uint32_t) max_msg_size > OPMSG_DEFAULT_MAX_MESSAGE_SIZE) {
         return false;
      }
      opts->max_message_size = (size_t) max_msg_size;
   }
   return true;
}

static bool
decompress(dropin_path_t path, void *rpc, void **data, size_t *data_len, int32_t max_msg_size, bool reply)
{
   const dropin_mcd_t *f = dropin_mcd();
   const uint8_t *start;
   size_t len;
   opmsg_msg_t m;
   opmsg_options_t inner_opts;
   opmsg_decompressed_t d;
   bson_error_t error;

   if (!rpc || !data || !data_len) {
      return false;
   }
   /* Whatever happens, the caller owns nothing unless this succeeds. */
   *data = NULL;
   *data_len = 0;
   if (f->op_code(rpc) != OPMSG_OP_COMPRESSED) {
      return dropin_reject_msg("OP_COMPRESSED", "decompress of another opcode");
   }
   if (!decompressed_limit(path, max_msg_size, reply, &inner_opts)) {
      return dropin_reject_msg("OP_COMPRESSED", "max_msg_size out of range");
   }
   if (!wire_bytes(rpc, &start, &len)) {
      return dropin_reject_msg("OP_COMPRESSED", "the message is not the one that was parsed");
   }
   /* libopmsg bounds the rebuilt message by the limit before allocating it
    * (one bson_malloc() of exactly 16 + uncompressedSize bytes, which
    * libmongoc adopts and frees with bson_free/bson_realloc), decompresses,
    * and checks the inner message as a parse would. */
   if (!opmsg_parse(start, len, dropin_parse_options(reply), &m, &error) ||
       !opmsg_decompress_parse(&m, &inner_opts, &d, &error)) {
      return dropin_reject("OP_COMPRESSED", &error);
   }
   f->message_reset(rpc);
   if (!f->from_data_in_place(rpc, d.data, d.len, NULL)) {
      opmsg_decompressed_destroy(&d);
      return dropin_reject_msg("OP_COMPRESSED", "libmongoc refused the inner message");
   }
   *data = d.data;
   *data_len = d.len;
   return true;
}

bool
mcd_rpc_message_decompress(void *rpc, void **data, size_t *data_len, int32_t max_msg_size)
{
   dropin_caller_t caller = DROPIN_CALLER();
   const dropin_mcd_t *f = dropin_mcd();

   if (caller.path == DROPIN_MCD_130) {
      return decompress(caller.path, rpc, data, data_len, 0, caller.from_mongoc);
   }
   if (caller.path == DROPIN_MCD_25) {
      return decompress(caller.path, rpc, data, data_len, max_msg_size, caller.from_mongoc);
   }
   /* Forwarded with the arity of the libmongoc that is there. */
   if (dropin_mcd_decompress_takes_max()) {
      return f->decompress4(rpc, data, data_len, max_msg_size);
   }
   return f->decompress3 ? f->decompress3(rpc, data, data_len) : false;
}

bool
mcd_rpc_message_decompress_if_necessary(void *rpc, void **data, size_t *data_len, int32_t max_msg_size)
{
   dropin_caller_t caller = DROPIN_CALLER();
   const dropin_mcd_t *f = dropin_mcd();

   if (!mcd_path(caller.path)) {
      if (dropin_mcd_decompress_takes_max()) {
         return f->decompress_if_necessary4(rpc, data, data_len, max_msg_size);
      }
      return f->decompress_if_necessary3 ? f->decompress_if_necessary3(rpc, data, data_len) : false;
   }
   if (!rpc || !data || !data_len) {
      return false;
   }
   if (f->op_code(rpc) != OPMSG_OP_COMPRESSED) {
      *data = NULL;
      *data_len = 0;
      return true;
   }
   return decompress(caller.path, rpc, data, data_len, caller.path == DROPIN_MCD_25 ? max_msg_size : 0,
                     caller.from_mongoc);
}

/* ---------------------------------------------------------------------------
 * The two functions that abort on opcodes they do not expect
 * ------------------------------------------------------------------------- */
void
mcd_rpc_message_ingress(const void *rpc)
{
   const dropin_mcd_t *f = dropin_mcd();
   int32_t opcode;

   if (!mcd_path(DROPIN_CALLER().path)) {
      if (f->ingress) {
         f->ingress(rpc);
      }
      return;
   }
   /* The counters exist for OP_MSG, OP_REPLY and OP_COMPRESSED carrying one
    * of them; for anything else the original aborts. Reply paths never get
    * here with another opcode (OPMSG_PARSE_REPLY refused it). */
   opcode = rpc ? f->op_code(rpc) : 0;
   if (opcode == OPMSG_OP_COMPRESSED) {
      opcode = f->original_opcode(rpc);
   }
   if (opcode == OPMSG_OP_MSG || opcode == OPMSG_OP_REPLY) {
      f->ingress(rpc);
   } else if (dropin_debug_level()) {
      dropin_log("ingress: opcode %d is not counted", (int) opcode);
   }
}

uint32_t
mcd_rpc_op_msg_get_flag_bits(const void *rpc)
{
   const dropin_mcd_t *f = dropin_mcd();

   if (mcd_path(DROPIN_CALLER().path) && rpc && f->op_code(rpc) != OPMSG_OP_MSG) {
      /* The streaming monitor reads the flags of any reply; an OP_REPLY
       * has no moreToCome. */
      return 0;
   }
   return f->flag_bits ? f->flag_bits(rpc) : 0;
}
