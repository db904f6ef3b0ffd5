/*
 * rpc.c - libmongoc 1.23's reply path, rebuilt on libopmsg.
 *
 * _mongoc_rpc_scatter: every reply is checked by opmsg_parse() (length equal
 *   to the bytes read, flags, CRC-32C, sections, documents, limits). OP_MSG
 *   document sequences are merged into the body (at their dotted path), so
 *   the caller sees one body in sections[0] and n_sections 1. OP_REPLY and
 *   OP_COMPRESSED fields are filled exactly as the original fills them.
 * _mongoc_rpc_decompress: bounded by the sizes scatter checked; never aborts.
 * _mongoc_rpc_reply_get_first_msg: fails instead of aborting or returning an
 *   uninitialised document.
 *
 * Whatever libopmsg rejects makes scatter or decompress return false, which
 * every caller already turns into "invalid reply" / "could not decompress".
 */
#include "dropin-private.h"

#include <string.h>

static inline int32_t
rd_i32(const uint8_t *p)
{
   int32_t v;
   memcpy(&v, p, 4); /* libmongoc 1.23 runs on little-endian x86-64 only here */
   return v;
}

static inline void
wr_ptr(void *rpc, size_t off, const void *ptr)
{
   memcpy((uint8_t *) rpc + off, &ptr, sizeof ptr);
}

static inline void
wr_i32(void *rpc, size_t off, int32_t v)
{
   memcpy((uint8_t *) rpc + off, &v, 4);
}

static bool
reject(const char *what, const bson_error_t *error)
{
   if (dropin_debug_level()) {
      dropin_log("rejected %s: %s (%s)", what, error->message,
                 opmsg_error_name(error->code));
   }
   return false;
}

static bool
reject_msg(const char *what, const char *message)
{
   if (dropin_debug_level()) {
      dropin_log("rejected %s: %s", what, message);
   }
   return false;
}

/* OP_MSG: the body, merged with its sequences when there are any. */
static bool
fill_msg(dropin_rpc_msg_t *out, const opmsg_msg_t *m)
{
   const uint8_t *body = m->body;
   bson_error_t error;

   if (m->n_sequences > 0) {
      size_t size = opmsg_merged_size(m);
      uint8_t *slot = dropin_slot_acquire(size);

      if (!slot) {
         return reject_msg("OP_MSG", "no memory for the merged body");
      }
      if (!opmsg_merge_into(m, slot, size, NULL, &error)) {
         return reject("OP_MSG", &error);
      }
      body = slot;
   }
   out->flags = m->flags;
   out->sections[0].payload_type = 0;
   out->sections[0].payload.bson_document = body;
   out->n_sections = 1;
   return true;
}

/* OP_REPLY: the four fixed fields verbatim, then the documents in place. */
static void
fill_reply(void *rpc, const uint8_t *buf, size_t buflen)
{
   memcpy((uint8_t *) rpc + DROPIN_OFF_REPLY_FLAGS, buf + DROPIN_OFF_REPLY_FLAGS,
          DROPIN_REPLY_WIRE_FIXED - DROPIN_OFF_REPLY_FLAGS);
   wr_ptr(rpc, DROPIN_OFF_REPLY_DOCUMENTS, buf + DROPIN_REPLY_WIRE_FIXED);
   wr_i32(rpc, DROPIN_OFF_REPLY_DOCUMENTS_LEN,
          (int32_t) (buflen - DROPIN_REPLY_WIRE_FIXED));
}

/* OP_COMPRESSED: the same, after the checks the callers' allocation of
 * uncompressedSize + 16 bytes depends on (they allocate before decompress). */
static bool
fill_compressed(void *rpc, const uint8_t *buf, size_t buflen,
                const opmsg_msg_t *m)
{
   if (m->original_opcode != OPMSG_OP_MSG && m->original_opcode != OPMSG_OP_REPLY) {
      return reject_msg("OP_COMPRESSED",
                        "originalOpcode is neither OP_MSG nor OP_REPLY");
   }
   if (m->uncompressed_size < 5 ||
       (size_t) m->uncompressed_size + OPMSG_HEADER_SIZE >
          OPMSG_DEFAULT_MAX_MESSAGE_SIZE ||
       !opmsg_compressor_available(m->compressor_id)) {
      return reject_msg("OP_COMPRESSED", "uncompressedSize or compressorId");
   }
   memcpy((uint8_t *) rpc + DROPIN_OFF_COMP_ORIGINAL_OPCODE,
          buf + DROPIN_OFF_COMP_ORIGINAL_OPCODE,
          DROPIN_COMPRESSED_WIRE_FIXED - DROPIN_OFF_COMP_ORIGINAL_OPCODE);
   wr_ptr(rpc, DROPIN_OFF_COMP_MESSAGE, buf + DROPIN_COMPRESSED_WIRE_FIXED);
   wr_i32(rpc, DROPIN_OFF_COMP_MESSAGE_LEN,
          (int32_t) (buflen - DROPIN_COMPRESSED_WIRE_FIXED));
   return true;
}

/* inner: called by decompress on the rebuilt message, where OP_COMPRESSED
 * would be nesting and other opcodes cannot occur. */
static bool
scatter(void *rpc, const uint8_t *buf, size_t buflen, bool inner)
{
   opmsg_msg_t m;
   bson_error_t error;
   int32_t opcode;

   /* The previous merged body on this thread has been copied by now. */
   dropin_slot_release();
   memset(rpc, 0, DROPIN_RPC_SIZE);
   if (!buf || buflen < OPMSG_HEADER_SIZE) {
      return false;
   }
   memcpy(rpc, buf, OPMSG_HEADER_SIZE);
   opcode = rd_i32(buf + DROPIN_OFF_OPCODE);
   if (opcode != OPMSG_OP_MSG && opcode != OPMSG_OP_REPLY &&
       opcode != OPMSG_OP_COMPRESSED) {
      if (inner || !dropin_originals()->scatter) {
         return reject_msg("reply", "unexpected opcode");
      }
      /* Request opcodes and unknown ones: the original's behaviour (a
       * warning and false for unknown ones). */
      return dropin_originals()->scatter(rpc, buf, buflen);
   }
   if (inner && opcode == OPMSG_OP_COMPRESSED) {
      return reject_msg("OP_COMPRESSED", "nested OP_COMPRESSED");
   }
   /* opmsg_parse() also insists messageLength == buflen. */
   if (!opmsg_parse(buf, buflen, dropin_parse_options(), &m, &error)) {
      memset(rpc, 0, DROPIN_RPC_SIZE);
      return reject(opcode == OPMSG_OP_MSG ? "OP_MSG"
                    : opcode == OPMSG_OP_REPLY ? "OP_REPLY"
                                               : "OP_COMPRESSED",
                    &error);
   }
   switch (opcode) {
   case OPMSG_OP_MSG:
      return fill_msg((dropin_rpc_msg_t *) rpc, &m);
   case OPMSG_OP_REPLY:
      fill_reply(rpc, buf, buflen);
      return true;
   default:
      return fill_compressed(rpc, buf, buflen, &m);
   }
}

bool
_mongoc_rpc_scatter(void *rpc, const uint8_t *buf, size_t buflen)
{
   if (!dropin_active(__builtin_return_address(0))) {
      dropin_scatter_fn original = dropin_originals()->scatter;
      return original ? original(rpc, buf, buflen) : false;
   }
   return scatter(rpc, buf, buflen, false);
}

/* Re-reads the OP_COMPRESSED that scatter filled rpc from: its fields point
 * 25 bytes into the caller's message, which is still alive (every caller
 * decompresses straight after scattering). The fields are compared with the
 * bytes so a struct scattered elsewhere is refused, not trusted. */
static bool
reparse_compressed(const void *rpc, opmsg_msg_t *m, bson_error_t *error)
{
   const uint8_t *payload;
   int32_t payload_len;
   const uint8_t *start;

   memcpy(&payload, (const uint8_t *) rpc + DROPIN_OFF_COMP_MESSAGE,
          sizeof payload);
   payload_len = rd_i32((const uint8_t *) rpc + DROPIN_OFF_COMP_MESSAGE_LEN);
   if (rd_i32((const uint8_t *) rpc + DROPIN_OFF_OPCODE) != OPMSG_OP_COMPRESSED ||
       !payload || payload_len < 0 ||
       rd_i32((const uint8_t *) rpc + DROPIN_OFF_MSG_LEN) !=
          payload_len + DROPIN_COMPRESSED_WIRE_FIXED) {
      return false;
   }
   start = payload - DROPIN_COMPRESSED_WIRE_FIXED;
   if (memcmp(start, rpc, DROPIN_COMPRESSED_WIRE_FIXED) != 0) {
      return false;
   }
   return opmsg_parse(start,
                      (size_t) payload_len + DROPIN_COMPRESSED_WIRE_FIXED,
                      dropin_parse_options(), m, error);
}

bool
_mongoc_rpc_decompress(void *rpc_le, uint8_t *buf, size_t buflen)
{
   opmsg_msg_t m;
   bson_error_t error;

   if (!dropin_active(__builtin_return_address(0))) {
      dropin_decompress_fn original = dropin_originals()->decompress;
      return original ? original(rpc_le, buf, buflen) : false;
   }
   memset(&error, 0, sizeof error);
   if (!reparse_compressed(rpc_le, &m, &error)) {
      return error.code ? reject("OP_COMPRESSED", &error)
                        : reject_msg("OP_COMPRESSED",
                                     "not the message scatter was given");
   }
   /* The callers allocate exactly uncompressedSize + 16 bytes. */
   if (!buf || buflen != opmsg_decompressed_size(&m)) {
      return reject_msg("OP_COMPRESSED", "output buffer is not 16 + uncompressedSize");
   }
   if (!opmsg_decompress_into(&m, buf, buflen, NULL, &error)) {
      return reject("OP_COMPRESSED", &error);
   }
   return scatter(rpc_le, buf, buflen, true);
}

bool
_mongoc_rpc_reply_get_first_msg(void *msg, bson_t *reply)
{
   const dropin_rpc_msg_t *m = msg;
   const uint8_t *doc;

   if (!dropin_active(__builtin_return_address(0))) {
      dropin_get_first_msg_fn original = dropin_originals()->get_first_msg;
      return original ? original(msg, reply) : false;
   }
   if (m->sections[0].payload_type != 0) {
      return false;
   }
   doc = m->sections[0].payload.bson_document;
   if (!doc || rd_i32(doc) < 5) {
      return false;
   }
   return bson_init_static(reply, doc, (size_t) rd_i32(doc));
}
