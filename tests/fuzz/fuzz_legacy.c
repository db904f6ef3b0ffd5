/*
 * fuzz_legacy.c - the legacy handshake opcodes: OP_QUERY and OP_REPLY.
 *
 * Input: one control byte (fuzz_options_from_byte(); bits 5-6 force the
 * opCode: 1 OP_REPLY, 2 OP_QUERY, 0 or 3 leave it), then the message.
 *
 * Properties, for an accepted message (beyond fuzz_check_accepted()):
 *  - OP_REPLY: the reply iterator yields exactly numberReturned documents,
 *    back to back from `documents` to its end, the first being the body;
 *    and opmsg_build_reply() with the parsed fields and documents writes
 *    the message again byte for byte;
 *  - OP_QUERY: fullCollectionName, numberToSkip, numberToReturn, the query
 *    and the optional field selector tile the message exactly;
 *  - any other opcode: the reply iterator refuses it and yields nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <stdlib.h>
#include <string.h>

static void
check_reply(const opmsg_msg_t *msg)
{
   FUZZ_CHECK(msg->op_reply.number_returned >= 0);
   FUZZ_CHECK(msg->op_reply.documents == msg->data + 36 || msg->op_reply.number_returned == 0);
   FUZZ_CHECK(36 + msg->op_reply.documents_len == msg->len);

   size_t n = (size_t) msg->op_reply.number_returned;
   bson_t *docs = fuzz_bson_array(n);
   const bson_t **ptrs = calloc(n ? n : 1, sizeof *ptrs);
   FUZZ_CHECK(ptrs != NULL);

   opmsg_reply_iter_t it;
   FUZZ_CHECK(opmsg_reply_iter_init(&it, msg));
   const uint8_t *expect = msg->data + 36;
   size_t count = 0;
   bson_t doc;
   while (opmsg_reply_iter_next(&it, &doc)) {
      FUZZ_CHECK_MSG(count < n, "the iterator yields more than numberReturned");
      FUZZ_CHECK(bson_get_data(&doc) == expect && doc.len >= 5);
      if (count == 0) {
         FUZZ_CHECK(msg->body == expect && msg->body_len == doc.len);
      }
      expect += doc.len;
      FUZZ_CHECK(expect <= msg->data + msg->len);
      FUZZ_CHECK(bson_init_static(&docs[count], bson_get_data(&doc), doc.len));
      ptrs[count] = &docs[count];
      count++;
   }
   FUZZ_CHECK(count == n);
   FUZZ_CHECK(expect == msg->data + msg->len);
   if (n == 0) {
      FUZZ_CHECK(msg->body == NULL);
   }

   /* Written again from the parsed fields: the same bytes. */
   opmsg_reply_t r;
   opmsg_reply_init(&r);
   r.request_id = msg->request_id;
   r.response_to = msg->response_to;
   r.response_flags = msg->flags;
   r.cursor_id = msg->op_reply.cursor_id;
   r.starting_from = msg->op_reply.starting_from;
   r.documents = ptrs;
   r.n_documents = n;
   FUZZ_CHECK(opmsg_reply_size(&r) == msg->len);
   uint8_t *buf = malloc(msg->len);
   FUZZ_CHECK(buf != NULL);
   size_t written = 0;
   bson_error_t error;
   FUZZ_CHECK_MSG(opmsg_build_reply(&r, buf, msg->len, &written, &error), "build_reply refuses a parsed reply: %s",
                  error.message);
   FUZZ_CHECK(written == msg->len);
   FUZZ_CHECK_MSG(memcmp(buf, msg->data, msg->len) == 0, "build_reply does not give the parsed reply back");
   free(buf);
   free(ptrs);
   free(docs);
}

static void
check_query(const opmsg_msg_t *msg)
{
   const char *ns = msg->op_query.full_collection_name;
   FUZZ_CHECK(ns == (const char *) msg->data + 20);
   size_t ns_len = strnlen(ns, msg->len - 20);
   FUZZ_CHECK(ns_len > 0 && ns_len < msg->len - 20);
   size_t off = 20 + ns_len + 1;
   FUZZ_CHECK((int32_t) fuzz_u32(msg->data + off) == msg->op_query.number_to_skip);
   FUZZ_CHECK((int32_t) fuzz_u32(msg->data + off + 4) == msg->op_query.number_to_return);
   off += 8;
   FUZZ_CHECK(msg->body == msg->data + off);
   off += msg->body_len;
   if (msg->op_query.field_selector) {
      FUZZ_CHECK(msg->op_query.field_selector == msg->data + off);
      FUZZ_CHECK(msg->op_query.field_selector_len >= 5 &&
                 fuzz_u32(msg->op_query.field_selector) == msg->op_query.field_selector_len);
      off += msg->op_query.field_selector_len;
   } else {
      FUZZ_CHECK(msg->op_query.field_selector_len == 0);
   }
   FUZZ_CHECK_MSG(off == msg->len, "the query's parts leave %zu bytes over", msg->len - off);

   opmsg_reply_iter_t it;
   bson_t doc;
   FUZZ_CHECK(!opmsg_reply_iter_init(&it, msg));
   FUZZ_CHECK(!opmsg_reply_iter_next(&it, &doc));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   fuzz_init();
   if (size < 1) {
      return 0;
   }
   opmsg_options_t opts;
   fuzz_options_from_byte(data[0], &opts);
   size_t len = size - 1;
   uint8_t *msg = malloc(len ? len : 1);
   FUZZ_CHECK(msg != NULL);
   memcpy(msg, data + 1, len);
   unsigned force = (data[0] >> 5) & 3u;
   if (len >= 16 && (force == 1 || force == 2)) {
      uint32_t op = force == 1 ? OPMSG_OP_REPLY : OPMSG_OP_QUERY;
      msg[12] = (uint8_t) op;
      msg[13] = (uint8_t) (op >> 8);
      msg[14] = 0;
      msg[15] = 0;
   }

   opmsg_msg_t parsed;
   bson_error_t error;
   if (!opmsg_parse(msg, len, &opts, &parsed, &error)) {
      fuzz_check_error(&error);
      free(msg);
      return 0;
   }
   if (parsed.opcode == OPMSG_OP_REPLY) {
      check_reply(&parsed);
   } else if (parsed.opcode == OPMSG_OP_QUERY) {
      check_query(&parsed);
   } else {
      opmsg_reply_iter_t it;
      bson_t doc;
      FUZZ_CHECK(!opmsg_reply_iter_init(&it, &parsed));
      FUZZ_CHECK(!opmsg_reply_iter_next(&it, &doc));
   }
   size_t merged_len = 0;
   free(fuzz_check_accepted(&parsed, &opts, &merged_len));
   free(msg);
   return 0;
}
