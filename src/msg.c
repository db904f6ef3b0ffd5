/*
 * msg.c - the merge's public entry points over opmsg_msg_t, for every
 * opcode that has a document: an OP_MSG's is the core's to size and write
 * (merge.c), through the opmsg_op_msg_t opmsg_msg_t keeps (opmsg-parse.h);
 * OP_QUERY's and OP_REPLY's is their one document.
 */
#include "opmsg-bson-compat.h"
#include "opmsg-parse.h"

/* ---------------------------------------------------------------------------
 * The merge, for every opcode that has a document
 * ------------------------------------------------------------------------- */

/* Whether msg has a merged document, and its size. */
static bool
merged_size(const opmsg_msg_t *msg, size_t *size, bson_error_t *error)
{
   switch (msg->opcode) {
   case OPMSG_OP_MSG:
      *size = opmsg_op_msg_merged_size(opmsg_msg_ccore(msg));
      return true;
   case OPMSG_OP_QUERY:
      *size = msg->body_len;
      return true;
   case OPMSG_OP_REPLY:
      if (msg->number_returned == 1 && msg->body) {
         *size = msg->body_len;
         return true;
      }
      return opmsg_fail(error, OPMSG_ERR_WRONG_OPCODE,
                        "an OP_REPLY with %d documents has no single document to merge to", msg->number_returned);
   case OPMSG_OP_COMPRESSED:
      return opmsg_fail(error, OPMSG_ERR_WRONG_OPCODE,
                        "an OP_COMPRESSED message must be decompressed before it is merged");
   default:
      return opmsg_fail(error, OPMSG_ERR_WRONG_OPCODE, "opCode %d (removed in MongoDB 5.1) has no document to merge to",
                        msg->opcode);
   }
}

size_t
opmsg_merged_size(const opmsg_msg_t *msg)
{
   size_t size = 0;
   return merged_size(msg, &size, NULL) ? size : 0;
}

/* size is merged_size()'s. */
static void
write_merged(const opmsg_msg_t *msg, uint8_t *out)
{
   if (msg->opcode == OPMSG_OP_MSG) {
      opmsg_op_msg_merge(opmsg_msg_ccore(msg), out);
   } else {
      memcpy(out, msg->body, msg->body_len);
   }
}

bool
opmsg_merge_into(const opmsg_msg_t *msg, uint8_t *buf, size_t buf_len, size_t *written, bson_error_t *error)
{
   size_t size = 0;
   if (!msg || !buf) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg and buf must not be NULL");
   }
   /* Most replies: an OP_MSG body alone is its own merge. */
   if (OPMSG_LIKELY(msg->opcode == OPMSG_OP_MSG && opmsg_msg_ccore(msg)->n_sequences == 0 &&
                    buf_len >= msg->body_len)) {
      memcpy(buf, msg->body, msg->body_len);
      if (written) {
         *written = msg->body_len;
      }
      return true;
   }
   if (!merged_size(msg, &size, error)) {
      return false;
   }
   if (buf_len < size) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "the merged document needs %zu bytes, the buffer has %zu",
                        size, buf_len);
   }
   write_merged(msg, buf);
   if (written) {
      *written = size;
   }
   return true;
}

/* One block: the bson_t, then the document. libbson declares bson_t with
 * 128-byte alignment, so the block is allocated aligned (and its size
 * rounded up, as C11's aligned_alloc asks); sizeof(bson_t) is a multiple of
 * that alignment, so the bytes behind it need nothing more. The block
 * becomes the bson_t itself where libbson's flags are the ones opmsg knows
 * (docs/design.md says why it is worth it): its frame (the length and
 * terminator the merge writes anyway) goes first, for libbson's look at
 * it, and the caller writes the rest. NULL when this libbson's flags are
 * not those: *block is then the block, for the general way. */
static OPMSG_ALWAYS_INLINE bson_t *
take_block(size_t size, bson_t **block)
{
   size_t align = BSON_ALIGNOF(bson_t);
   size_t total = (sizeof(bson_t) + size + align - 1) / align * align;
   bson_t *b = bson_aligned_alloc(align, total);
   uint8_t *data = (uint8_t *) (b + 1);
   opmsg_write_u32(data, (uint32_t) size);
   data[size - 1] = 0;
   *block = b;
   return OPMSG_LIKELY(opmsg_bson_take_block(b, size)) ? b : NULL;
}

/* opmsg_merge_bson() of every message but an OP_MSG body alone. */
static OPMSG_NOINLINE bson_t *
merge_bson_written(const opmsg_msg_t *msg, bson_error_t *error)
{
   size_t size = 0;
   bson_t *block;
   if (!merged_size(msg, &size, error)) {
      return NULL;
   }
   bson_t *b = take_block(size, &block);
   write_merged(msg, (uint8_t *) (block + 1));
   if (b) {
      return b;
   }
   /* Elsewhere libbson's public way, a copy, rather than a guess. */
   b = opmsg_bson_adopt_block(block, size, opmsg_bson_own_static);
   if (!b) {
      opmsg_fail(error, OPMSG_ERR_INVALID_VALUE, "internal error: merged document is malformed");
   }
   return b;
}

bson_t *
opmsg_merge_bson(const opmsg_msg_t *msg, bson_error_t *error)
{
   if (!msg) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg must not be NULL");
      return NULL;
   }
   /* Most replies: an OP_MSG body alone is its own merge. */
   if (OPMSG_LIKELY(msg->opcode == OPMSG_OP_MSG && opmsg_msg_ccore(msg)->n_sequences == 0)) {
      size_t size = msg->body_len;
      size_t align = BSON_ALIGNOF(bson_t);
      bson_t *b = bson_aligned_alloc(align, (sizeof(bson_t) + size + align - 1) / align * align);
      memcpy(b + 1, msg->body, size);
      if (OPMSG_LIKELY(opmsg_bson_take_block(b, size))) {
         return b;
      }
      /* Another libbson: the general way below, which copies. */
      bson_free(b);
   }
   return merge_bson_written(msg, error);
}

bool
opmsg_merge_init(const opmsg_msg_t *msg, bson_t *out, bson_error_t *error)
{
   size_t size = 0;
   if (!out) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "out must not be NULL");
   }
   bson_init(out);
   if (!msg) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg must not be NULL");
   }
   if (!merged_size(msg, &size, error)) {
      return false;
   }
   /* Public API only: reserve_buffer sets the length and leaves the bytes to
    * us, so the document is written once, in place. Its allocation aborts
    * when memory runs out (bson_realloc()); it refuses only a size past
    * libbson's largest document, which the parse already bounds. */
   uint8_t *data = size <= (size_t) INT32_MAX ? bson_reserve_buffer(out, (uint32_t) size) : NULL;
   if (!data) {
      bson_reinit(out);
      return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE, "libbson refuses a %zu-byte document", size);
   }
   write_merged(msg, data);
   return true;
}
