/*
 * msg.c - the merge's public entry points over opmsg_msg_t, for every
 * opcode that has a document: an OP_MSG's is the core's to size and write
 * (merge.c), through the opmsg_op_msg_t opmsg_msg_t keeps (opmsg-parse.h);
 * OP_QUERY's and OP_REPLY's is their one document.
 */
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
      if (msg->op_reply.number_returned == 1 && msg->body) {
         *size = msg->body_len;
         return true;
      }
      return opmsg_fail(error, OPMSG_ERR_WRONG_OPCODE,
                        "an OP_REPLY with %d documents has no single document to merge to",
                        msg->op_reply.number_returned);
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

/* A new bson_t whose document is size bytes, for the caller to write in
 * place: libbson's public API only. bson_sized_new() makes the bson_t (its
 * bytes inside it up to libbson's inline size, else one allocation of
 * exactly the capacity asked), and bson_reserve_buffer() sets the length
 * and hands over the bytes. The capacity asked is size + 5: reserve_buffer
 * grows the empty document's 5 bytes by size, so with that room it has no
 * reason to reallocate (libbson 1.23 to 2.x do not). NULL when libbson
 * refuses the size (past its largest document, which the parse already
 * bounds). */
static OPMSG_ALWAYS_INLINE bson_t *
new_bson_of(size_t size, uint8_t **data)
{
   if (OPMSG_UNLIKELY(size > (size_t) INT32_MAX - 5)) {
      return NULL;
   }
   bson_t *b = bson_sized_new(size + 5);
   *data = bson_reserve_buffer(b, (uint32_t) size);
   if (OPMSG_UNLIKELY(!*data)) {
      bson_destroy(b);
      return NULL;
   }
   return b;
}

bson_t *
opmsg_merge_bson(const opmsg_msg_t *msg, bson_error_t *error)
{
   size_t size = 0;
   uint8_t *data;
   if (!msg) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg must not be NULL");
      return NULL;
   }
   /* Most replies: an OP_MSG body alone is its own merge. */
   bool alone = msg->opcode == OPMSG_OP_MSG && opmsg_msg_ccore(msg)->n_sequences == 0;
   if (OPMSG_LIKELY(alone)) {
      size = msg->body_len;
   } else if (!merged_size(msg, &size, error)) {
      return NULL;
   }
   bson_t *b = new_bson_of(size, &data);
   if (OPMSG_UNLIKELY(!b)) {
      opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE, "libbson refuses a %zu-byte document", size);
      return NULL;
   }
   if (OPMSG_LIKELY(alone)) {
      memcpy(data, msg->body, size);
   } else {
      write_merged(msg, data);
   }
   return b;
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
