/*
 * rpc.c - libmongoc 1.23's reply path, rebuilt on libopmsg.
 *
 * _mongoc_rpc_scatter: every message is checked by opmsg_parse() (length
 *   equal to the bytes read, flags, CRC-32C, sections, documents, limits).
 *   What the struct then holds depends on who asked:
 *   - libmongoc itself calls scatter only on what a server sent it (every
 *     call site in the .so is a receive path), and its callers read
 *     sections[0] straight from the struct, never a second section. So for
 *     them the message must be a reply (OPMSG_PARSE_REPLY: a request opcode
 *     there is an error, where the original went on to read garbage), and
 *     OP_MSG document sequences are merged into the body (at their dotted
 *     path): sections[0] is the merged body, n_sections 1.
 *   - Any other caller (libmongoc's mock server parsing the requests it
 *     receives, a proxy) gets the sections as they are on the wire, as the
 *     original's contract says: validated, but not merged. The struct has
 *     room for two sections; a message with more is refused rather than
 *     written past the struct as the original would.
 *   OP_REPLY and OP_COMPRESSED fields are filled exactly as the original
 *   fills them; request opcodes from other callers go to the original after
 *   libopmsg has checked them. An OP_REPLY that answers an OP_MSG is refused
 *   to libmongoc (see "The request a reply answers" below).
 * _mongoc_rpc_gather: forwarded untouched; it notes the opcode of the
 *   request libmongoc is about to send on this thread.
 * _mongoc_rpc_decompress: bounded by the sizes scatter checked; never aborts.
 *   The message it rebuilds is scattered for the same kind of caller.
 * _mongoc_rpc_reply_get_first_msg: fails instead of aborting or returning an
 *   uninitialised document.
 *
 * Whatever libopmsg rejects makes scatter or decompress return false, which
 * every caller already turns into "invalid reply" / "could not decompress".
 */
#include "dropin-private.h"
#include "opmsg-bytes.h"

#include <string.h>

/* Clears a mongoc_rpc_t (96 bytes, 8-aligned). gcc makes memset() of this
 * size a `rep stos`, whose start-up was half of what the drop-in added to a
 * reply without sequences; a copy of a static zero block is six 16-byte
 * loads and six 16-byte stores (gcc 12 -O2 on x86-64), as the SSE2 stores
 * that were here, in plain C. */
static inline void
rpc_clear(void *rpc)
{
   static const struct {
      uint64_t w[DROPIN_RPC_SIZE / 8];
   } zero;
   _Static_assert(DROPIN_RPC_SIZE % 8 == 0, "whole words");
   memcpy(rpc, &zero, sizeof zero);
}

/* OP_MSG for libmongoc's reply path: the body, merged with its sequences
 * when there are any, as the one section its callers read. */
static bool
fill_msg_merged(dropin_rpc_msg_t *out, const opmsg_msg_t *m)
{
   const uint8_t *body = m->body;
   bson_error_t error;

   if (m->n_sequences > 0) {
      size_t size = opmsg_merged_size(m);
      uint8_t *slot = dropin_slot_acquire(size);

      if (!slot) {
         return dropin_reject_msg("OP_MSG", "no memory for the merged body");
      }
      if (!opmsg_merge_into(m, slot, size, NULL, &error)) {
         return dropin_reject("OP_MSG", &error);
      }
      body = slot;
   }
   out->flags = m->flags;
   out->sections[0].payload_type = 0;
   out->sections[0].payload.bson_document = body;
   out->n_sections = 1;
   return true;
}

/* OP_MSG for any other caller: the sections in wire order, pointing into
 * the message, as the original leaves them. */
static bool
fill_msg_wire(dropin_rpc_msg_t *out, const opmsg_msg_t *m)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   int n = 0;
   bool body_done = false;

   if (m->n_sequences == 0) {
      /* Most messages: the body alone. */
      out->sections[0].payload_type = 0;
      out->sections[0].payload.bson_document = m->body;
      out->flags = m->flags;
      out->n_sections = 1;
      return true;
   }
   if (m->n_sequences + 1 > 2) {
      return dropin_reject_msg("OP_MSG", "more than two sections: mongoc_rpc_msg_t "
                                         "has room for two");
   }
   opmsg_sequence_iter_init(&it, m);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      if (!body_done && m->body < seq.documents) {
         out->sections[n].payload_type = 0;
         out->sections[n++].payload.bson_document = m->body;
         body_done = true;
      }
      out->sections[n].payload_type = 1;
      /* The wire's section size: itself, the identifier and its NUL, the
       * documents. */
      out->sections[n].payload.sequence.size = (int32_t) (4 + seq.identifier_len + 1 + seq.documents_len);
      out->sections[n].payload.sequence.identifier = seq.identifier;
      out->sections[n++].payload.sequence.bson_documents = seq.documents;
   }
   if (!body_done) {
      out->sections[n].payload_type = 0;
      out->sections[n++].payload.bson_document = m->body;
   }
   out->flags = m->flags;
   out->n_sections = n;
   return true;
}

/* OP_REPLY: the four fixed fields verbatim, then the documents in place. */
static void
fill_reply(void *rpc, const uint8_t *buf, size_t buflen)
{
   memcpy((uint8_t *) rpc + DROPIN_OFF_REPLY_FLAGS, buf + DROPIN_OFF_REPLY_FLAGS,
          DROPIN_REPLY_WIRE_FIXED - DROPIN_OFF_REPLY_FLAGS);
   dropin_write_ptr(rpc, DROPIN_OFF_REPLY_DOCUMENTS, buf + DROPIN_REPLY_WIRE_FIXED);
   dropin_write_i32(rpc, DROPIN_OFF_REPLY_DOCUMENTS_LEN, (int32_t) (buflen - DROPIN_REPLY_WIRE_FIXED));
}

/* OP_COMPRESSED: the same. The callers allocate uncompressedSize + 16
 * bytes before they decompress; opmsg_parse() has bounded uncompressedSize
 * by the message size limit (and, for a reply, checked that it carries a
 * reply). */
static void
fill_compressed(void *rpc, const uint8_t *buf, size_t buflen)
{
   memcpy((uint8_t *) rpc + DROPIN_OFF_COMP_ORIGINAL_OPCODE, buf + DROPIN_OFF_COMP_ORIGINAL_OPCODE,
          DROPIN_COMPRESSED_WIRE_FIXED - DROPIN_OFF_COMP_ORIGINAL_OPCODE);
   dropin_write_ptr(rpc, DROPIN_OFF_COMP_MESSAGE, buf + DROPIN_COMPRESSED_WIRE_FIXED);
   dropin_write_i32(rpc, DROPIN_OFF_COMP_MESSAGE_LEN, (int32_t) (buflen - DROPIN_COMPRESSED_WIRE_FIXED));
}

/* ---------------------------------------------------------------------------
 * The request a reply answers
 *
 * Two of libmongoc 1.23's receive paths read a reply as OP_MSG without
 * looking at its opcode: the command path (mongoc_cluster_run_opmsg) and the
 * streaming server monitor (_server_monitor_awaitable_hello_recv) both take
 * msg.sections[0] straight from the struct. An OP_REPLY there puts
 * numberReturned and half of the documents pointer where they read the
 * body's address, and they crash on it (stock alike): the streaming monitor
 * of every pooled client, on an OP_REPLY to its awaitable hello.
 * Scatter cannot tell those two call sites from the ones that read an
 * OP_REPLY correctly (the OP_QUERY hellos, the async handshake, legacy
 * cursors): the two are static functions of libmongoc, with no dynamic
 * symbol, which only the offsets of one build would name; and the monitor's
 * struct is uninitialised stack, not the request. What tells them apart is the request: each of those
 * paths reads the answer on the thread that just sent an OP_MSG, and the
 * others sent OP_QUERY or OP_GET_MORE. Every request libmongoc 1.23 sends
 * goes through _mongoc_rpc_gather() (uncompressed first: compression
 * gathers again), so the drop-in notes there, per thread, the opcode of the
 * last request that expects an answer, and refuses an OP_REPLY (plain or
 * compressed) to libmongoc when that was OP_MSG. A server answers OP_MSG
 * with OP_MSG (OP_REPLY answers only OP_QUERY and OP_GET_MORE), so no
 * server that keeps to the protocol meets the refusal; the streaming
 * monitor's later moreToCome messages answer the same OP_MSG, and the
 * monitor thread sends nothing in between.
 * What remains: one thread that interleaves an OP_QUERY exhaust cursor with
 * OP_MSG commands of another client sees that cursor's next batch refused
 * (a clean error), as its last request was the OP_MSG.
 * ------------------------------------------------------------------------- */
static _Thread_local int32_t last_request_opcode; /* 0 before the first */

void
_mongoc_rpc_gather(void *rpc, void *array)
{
   dropin_caller_t caller = DROPIN_CALLER();
   dropin_gather_fn original = dropin_originals()->gather;

   if (caller.path == DROPIN_RPC_123 && caller.from_mongoc && rpc) {
      int32_t opcode = dropin_read_i32(rpc, OPMSG_OFF_OPCODE);

      /* OP_COMPRESSED is the same request gathered again; an OP_MSG with
       * moreToCome and the removed write opcodes get no answer. */
      if ((opcode == OPMSG_OP_MSG &&
           !((uint32_t) dropin_read_i32(rpc, DROPIN_OFF_MSG_FLAGS) & OPMSG_FLAG_MORE_TO_COME)) ||
          opcode == OPMSG_OP_QUERY || opcode == OPMSG_OP_GET_MORE) {
         last_request_opcode = opcode;
      }
   }
   if (original) {
      original(rpc, array);
   }
}

/* reply: the caller is libmongoc's receive path (see the top).
 * inner: called by decompress on the rebuilt message, where OP_COMPRESSED
 * would be nesting. */
static bool
scatter(void *rpc, const uint8_t *buf, size_t buflen, bool reply, bool inner)
{
   opmsg_msg_t m;
   bson_error_t error;
   int32_t opcode;

   /* The previous merged body on this thread has been copied by now. */
   dropin_slot_release();
   rpc_clear(rpc);
   if (!buf || buflen < OPMSG_HEADER_SIZE) {
      return false;
   }
   memcpy(rpc, buf, OPMSG_HEADER_SIZE);
   /* opmsg_parse() also insists messageLength == buflen. */
   if (!opmsg_parse(buf, buflen, dropin_parse_options(reply), &m, &error)) {
      memset(rpc, 0, DROPIN_RPC_SIZE);
      return dropin_reject(reply ? "reply" : "message", &error);
   }
   opcode = m.opcode;
   if (inner && opcode == OPMSG_OP_COMPRESSED) {
      return dropin_reject_msg("OP_COMPRESSED", "nested OP_COMPRESSED");
   }
   switch (opcode) {
   case OPMSG_OP_MSG:
      return reply ? fill_msg_merged((dropin_rpc_msg_t *) rpc, &m) : fill_msg_wire((dropin_rpc_msg_t *) rpc, &m);
   case OPMSG_OP_REPLY:
   case OPMSG_OP_COMPRESSED:
      /* An OP_REPLY, or an OP_COMPRESSED carrying one, where libmongoc
       * reads OP_MSG (see "The request a reply answers"). */
      if (reply && last_request_opcode == OPMSG_OP_MSG &&
          (opcode == OPMSG_OP_REPLY || m.op_compressed.original_opcode == OPMSG_OP_REPLY)) {
         memset(rpc, 0, DROPIN_RPC_SIZE);
         return dropin_reject_msg("reply", "OP_REPLY answering an OP_MSG request (libmongoc would read it as OP_MSG)");
      }
      if (opcode == OPMSG_OP_REPLY) {
         fill_reply(rpc, buf, buflen);
      } else {
         fill_compressed(rpc, buf, buflen);
      }
      return true;
   default:
      /* A request opcode from a caller that is not libmongoc's reply path
       * (OPMSG_PARSE_REPLY refused it there): checked by libopmsg, laid
       * out by the original, which knows those structs. */
      if (inner || !dropin_originals()->scatter) {
         return dropin_reject_msg("message", "request opcode not expected here");
      }
      return dropin_originals()->scatter(rpc, buf, buflen);
   }
}

bool
_mongoc_rpc_scatter(void *rpc, const uint8_t *buf, size_t buflen)
{
   dropin_caller_t caller = DROPIN_CALLER();

   if (caller.path != DROPIN_RPC_123) {
      dropin_scatter_fn original = dropin_originals()->scatter;
      return original ? original(rpc, buf, buflen) : false;
   }
   return scatter(rpc, buf, buflen, caller.from_mongoc, false);
}

/* Re-reads the OP_COMPRESSED that scatter filled rpc from: its fields point
 * 25 bytes into the caller's message, which is still alive (every caller
 * decompresses straight after scattering). The fields are compared with the
 * bytes so a struct scattered elsewhere is refused, not trusted. */
static bool
reparse_compressed(const void *rpc, bool reply, opmsg_msg_t *m, bson_error_t *error)
{
   const uint8_t *payload = dropin_read_ptr(rpc, DROPIN_OFF_COMP_MESSAGE);
   int32_t payload_len = dropin_read_i32(rpc, DROPIN_OFF_COMP_MESSAGE_LEN);
   const uint8_t *start;

   if (dropin_read_i32(rpc, OPMSG_OFF_OPCODE) != OPMSG_OP_COMPRESSED || !payload || payload_len < 0 ||
       dropin_read_i32(rpc, OPMSG_OFF_MESSAGE_LENGTH) != payload_len + DROPIN_COMPRESSED_WIRE_FIXED) {
      return false;
   }
   start = payload - DROPIN_COMPRESSED_WIRE_FIXED;
   if (memcmp(start, rpc, DROPIN_COMPRESSED_WIRE_FIXED) != 0) {
      return false;
   }
   return opmsg_parse(start, (size_t) payload_len + DROPIN_COMPRESSED_WIRE_FIXED, dropin_parse_options(reply), m,
                      error);
}

bool
_mongoc_rpc_decompress(void *rpc_le, uint8_t *buf, size_t buflen)
{
   dropin_caller_t caller = DROPIN_CALLER();
   opmsg_msg_t m;
   bson_error_t error;

   if (caller.path != DROPIN_RPC_123) {
      dropin_decompress_fn original = dropin_originals()->decompress;
      return original ? original(rpc_le, buf, buflen) : false;
   }
   memset(&error, 0, sizeof error);
   if (!reparse_compressed(rpc_le, caller.from_mongoc, &m, &error)) {
      return error.code ? dropin_reject("OP_COMPRESSED", &error)
                        : dropin_reject_msg("OP_COMPRESSED", "not the message scatter was given");
   }
   /* The callers allocate exactly uncompressedSize + 16 bytes. */
   if (!buf || buflen != opmsg_decompressed_size(&m)) {
      return dropin_reject_msg("OP_COMPRESSED", "output buffer is not 16 + uncompressedSize");
   }
   if (!opmsg_decompress_into(&m, buf, buflen, NULL, &error)) {
      return dropin_reject("OP_COMPRESSED", &error);
   }
   return scatter(rpc_le, buf, buflen, caller.from_mongoc, true);
}

bool
_mongoc_rpc_reply_get_first_msg(void *msg, bson_t *reply)
{
   const dropin_rpc_msg_t *m = msg;
   const uint8_t *doc;

   if (DROPIN_CALLER().path != DROPIN_RPC_123) {
      dropin_get_first_msg_fn original = dropin_originals()->get_first_msg;
      return original ? original(msg, reply) : false;
   }
   if (m->sections[0].payload_type != 0) {
      return false;
   }
   doc = m->sections[0].payload.bson_document;
   if (!doc || opmsg_read_i32(doc) < 5) {
      return false;
   }
   return bson_init_static(reply, doc, (size_t) opmsg_read_i32(doc));
}
