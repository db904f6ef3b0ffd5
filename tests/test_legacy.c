/* test_legacy.c - OP_QUERY / OP_REPLY parsing, the handshake builder, the
 * OP_REPLY builder and reader. Field values of the vectors were read from
 * their bytes (xxd) independently of opmsg. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

static void
parse_ok(const uint8_t *data, size_t len, uint32_t flags, opmsg_msg_t *msg)
{
   opmsg_options_t opts;
   bson_error_t error;

   opmsg_options_init(&opts);
   opts.flags = flags;
   if (!opmsg_parse(data, len, &opts, msg, &error)) {
      fail_msg("parse failed: %s (%s)", error.message, opmsg_error_name(error.code));
   }
}

static void
put_i64(tu_buf_t *b, int64_t v)
{
   uint8_t le[8];
   opmsg_write_i64(le, v);
   tu_put(b, le, 8);
}

static void
fix_length(tu_buf_t *b)
{
   opmsg_write_u32(b->data, (uint32_t) b->len);
}

/* An OP_REPLY head: header, flags, cursorID, startingFrom, numberReturned. */
static void
reply_begin(tu_buf_t *b, int32_t number_returned)
{
   tu_buf_init(b);
   tu_put_i32(b, 0);
   tu_put_i32(b, 11);
   tu_put_i32(b, 10);
   tu_put_i32(b, OPMSG_OP_REPLY);
   tu_put_i32(b, 8);
   put_i64(b, 0);
   tu_put_i32(b, 0);
   tu_put_i32(b, number_returned);
}

/* An OP_QUERY head up to the query. */
static void
query_begin(tu_buf_t *b, const char *ns)
{
   tu_buf_init(b);
   tu_put_i32(b, 0);
   tu_put_i32(b, 3);
   tu_put_i32(b, 0);
   tu_put_i32(b, OPMSG_OP_QUERY);
   tu_put_i32(b, 0);
   tu_put_cstr(b, ns);
   tu_put_i32(b, 0);
   tu_put_i32(b, -1);
}

static void
assert_rejects_code(tu_buf_t *b, uint32_t flags, opmsg_error_code_t code)
{
   fix_length(b);
   tu_assert_rejects(b->data, b->len, flags, code);
}

static bool
has_key(const uint8_t *doc, uint32_t len, const char *key)
{
   bson_t b;
   assert_true(bson_init_static(&b, doc, len));
   return bson_has_field(&b, key);
}

/* ---------------------------------------------------------------------------
 * Vectors
 * ------------------------------------------------------------------------- */

/* FerretDB handshake1/3: Node 4.0 / mongosh isMaster over OP_QUERY. */
static void
check_ferret_query(const char *file, int32_t request_id)
{
   size_t len;
   uint8_t *data = tu_read_file(file, &len);
   opmsg_msg_t msg;

   assert_int_equal(len, 372);
   parse_ok(data, len, OPMSG_PARSE_FULL_VALIDATE, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_QUERY);
   assert_int_equal(msg.request_id, request_id);
   assert_int_equal(msg.response_to, 0);
   assert_int_equal(msg.flags, 0);
   assert_string_equal(msg.op_query.full_collection_name, "admin.$cmd");
   assert_int_equal(msg.op_query.number_to_skip, 0);
   assert_int_equal(msg.op_query.number_to_return, -1);
   assert_int_equal(msg.body_len, 333);
   assert_ptr_equal(msg.body, data + 39);
   assert_null(msg.op_query.field_selector);
   assert_int_equal(msg.op_query.field_selector_len, 0);
   assert_string_equal(opmsg_command_name(&msg), "ismaster");
   assert_true(has_key(msg.body, msg.body_len, "loadBalanced"));

   /* Merging an OP_QUERY gives its query, unchanged. */
   bson_error_t error;
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   assert_non_null(merged);
   assert_int_equal(merged->len, msg.body_len);
   assert_memory_equal(bson_get_data(merged), msg.body, msg.body_len);
   bson_destroy(merged);
   free(data);
}

static void
test_ferret_queries(void **state)
{
   (void) state;
   check_ferret_query("thirdparty/ferretdb_handshake1.bin", 1);
   check_ferret_query("thirdparty/ferretdb_handshake3.bin", 2);
}

static void
check_ferret_reply(const char *file, int32_t request_id, int32_t response_to, int32_t connection_id)
{
   size_t len;
   uint8_t *data = tu_read_file(file, &len);
   opmsg_msg_t msg;
   opmsg_reply_iter_t it;
   bson_t doc;
   bson_iter_t iter;

   assert_int_equal(len, 319);
   parse_ok(data, len, OPMSG_PARSE_FULL_VALIDATE, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_REPLY);
   assert_int_equal(msg.request_id, request_id);
   assert_int_equal(msg.response_to, response_to);
   assert_int_equal(msg.flags, OPMSG_REPLY_FLAG_AWAIT_CAPABLE);
   assert_int_equal(msg.op_reply.cursor_id, 0);
   assert_int_equal(msg.op_reply.starting_from, 0);
   assert_int_equal(msg.op_reply.number_returned, 1);
   assert_ptr_equal(msg.op_reply.documents, data + 36);
   assert_int_equal(msg.op_reply.documents_len, 283);
   assert_ptr_equal(msg.body, data + 36);
   assert_int_equal(msg.body_len, 283);

   assert_true(opmsg_reply_iter_init(&it, &msg));
   assert_true(opmsg_reply_iter_next(&it, &doc));
   assert_true(bson_iter_init_find(&iter, &doc, "maxWireVersion"));
   assert_int_equal(bson_iter_int32(&iter), 13);
   assert_true(bson_iter_init_find(&iter, &doc, "connectionId"));
   assert_int_equal(bson_iter_int32(&iter), connection_id);
   assert_true(bson_iter_init_find(&iter, &doc, "maxMessageSizeBytes"));
   assert_int_equal(bson_iter_int32(&iter), 48000000);
   assert_false(opmsg_reply_iter_next(&it, &doc));

   char *json = tu_merge_json(data, len, 0);
   assert_non_null(strstr(json, "\"ismaster\" : true"));
   bson_free(json);
   free(data);
}

static void
test_ferret_replies(void **state)
{
   (void) state;
   check_ferret_reply("thirdparty/ferretdb_handshake2.bin", 290, 1, 28);
   check_ferret_reply("thirdparty/ferretdb_handshake4.bin", 291, 2, 29);
}

/* mongo-c-driver's hand-annotated OP_QUERY: ns "db.coll", query
 * {query: false}, selector {selector: true}. */
static void
test_mcdrpc_query(void **state)
{
   (void) state;
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_query.bin", &len);
   opmsg_msg_t msg;
   bson_t sel;
   bson_iter_t iter;

   assert_int_equal(len, 65);
   parse_ok(data, len, OPMSG_PARSE_FULL_VALIDATE, &msg);
   assert_int_equal(msg.request_id, 0x01020304);
   assert_int_equal(msg.response_to, 0x05060708);
   assert_int_equal(msg.flags, 0);
   assert_string_equal(msg.op_query.full_collection_name, "db.coll");
   assert_int_equal(msg.op_query.number_to_skip, 0);
   assert_int_equal(msg.op_query.number_to_return, 0);
   assert_ptr_equal(msg.body, data + 36);
   assert_int_equal(msg.body_len, 13);
   assert_string_equal(opmsg_command_name(&msg), "query");
   assert_ptr_equal(msg.op_query.field_selector, data + 49);
   assert_int_equal(msg.op_query.field_selector_len, 16);
   assert_true(bson_init_static(&sel, msg.op_query.field_selector, msg.op_query.field_selector_len));
   assert_true(bson_iter_init_find(&iter, &sel, "selector"));
   assert_true(bson_iter_bool(&iter));

   char *json = tu_merge_json(data, len, 0);
   assert_string_equal(json, "{ \"query\" : false }");
   bson_free(json);
   free(data);
}

/* mongo-c-driver's OP_REPLY: cursorID 0x1122334455667788, two documents
 * {index: 0} and {index: 1}. */
static void
test_mcdrpc_reply(void **state)
{
   (void) state;
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_reply.bin", &len);
   opmsg_msg_t msg;
   opmsg_reply_iter_t it;
   bson_t doc;
   bson_iter_t iter;
   bson_error_t error;
   int32_t i = 0;

   assert_int_equal(len, 68);
   parse_ok(data, len, 0, &msg);
   assert_int_equal(msg.flags, 0);
   assert_true(msg.op_reply.cursor_id == (int64_t) 0x1122334455667788LL);
   assert_int_equal(msg.op_reply.starting_from, 0);
   assert_int_equal(msg.op_reply.number_returned, 2);
   assert_int_equal(msg.op_reply.documents_len, 32);
   assert_int_equal(msg.body_len, 16);

   assert_true(opmsg_reply_iter_init(&it, &msg));
   while (opmsg_reply_iter_next(&it, &doc)) {
      assert_true(bson_iter_init_find(&iter, &doc, "index"));
      assert_int_equal(bson_iter_int32(&iter), i);
      i++;
   }
   assert_int_equal(i, 2);

   /* Two documents do not merge into one. */
   assert_null(opmsg_merge_bson(&msg, &error));
   assert_int_equal(error.code, OPMSG_ERR_WRONG_OPCODE);
   free(data);
}

static void
parse_each(const uint8_t *msg, size_t len, void *ctx)
{
   opmsg_msg_t m;
   parse_ok(msg, len, OPMSG_PARSE_FULL_VALIDATE, &m);
   (*(size_t *) ctx)++;
}

/* Every recorded client opens with an OP_QUERY isMaster on admin.$cmd, and
 * every recorded server answers with an OP_REPLY of one document. */
static void
test_captures(void **state)
{
   (void) state;
   const char *labels[] = {"mongoc_c1",          "pymongo_c1",         "pymongo_c2",        "node364_c1",
                           "node364_c2",         "node6_c1",           "node6_c2",          "mockseq_mongoc_c1",
                           "mockseq_pymongo_c1", "mockseq_pymongo_c2", "mockseq_pymongo_c3"};

   for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
      char rel[96];
      size_t len, mlen;
      uint8_t *data;
      opmsg_msg_t msg;
      bson_error_t error;
      bson_t doc;
      bson_iter_t iter;

      snprintf(rel, sizeof rel, "captures/%s_c2s.bin", labels[i]);
      data = tu_read_file(rel, &len);
      assert_true(opmsg_frame_length(data, len, NULL, &mlen, &error));
      assert_true(mlen <= len);
      parse_ok(data, mlen, OPMSG_PARSE_FULL_VALIDATE, &msg);
      assert_int_equal(msg.opcode, OPMSG_OP_QUERY);
      assert_string_equal(msg.op_query.full_collection_name, "admin.$cmd");
      assert_int_equal(bson_strcasecmp(opmsg_command_name(&msg), "isMaster"), 0);
      assert_int_equal(msg.op_query.number_to_skip, 0);
      /* -1 or 1: one reply document either way. */
      assert_true(msg.op_query.number_to_return == -1 || msg.op_query.number_to_return == 1);
      assert_true(has_key(msg.body, msg.body_len, "client"));
      int32_t request_id = msg.request_id;
      /* The rest of what the client sent parses too. */
      size_t parsed = 0;
      size_t framed = tu_for_each_message(data, len, parse_each, &parsed);
      assert_int_equal(framed, parsed);
      assert_true(parsed >= 1);
      free(data);

      snprintf(rel, sizeof rel, "captures/%s_s2c.bin", labels[i]);
      data = tu_read_file(rel, &len);
      assert_true(opmsg_frame_length(data, len, NULL, &mlen, &error));
      parse_ok(data, mlen, OPMSG_PARSE_FULL_VALIDATE, &msg);
      assert_int_equal(msg.opcode, OPMSG_OP_REPLY);
      assert_int_equal(msg.response_to, request_id);
      assert_int_equal(msg.op_reply.number_returned, 1);
      assert_true(opmsg_body(&msg, &doc));
      assert_true(bson_iter_init_find(&iter, &doc, "ok"));
      assert_true(bson_iter_as_bool(&iter));
      free(data);
   }
}

/* ---------------------------------------------------------------------------
 * OP_REPLY rules
 * ------------------------------------------------------------------------- */

static void
test_reply_counts(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;

   /* Negative. */
   reply_begin(&b, -1);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   reply_begin(&b, INT32_MIN);
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   /* More promised than present. */
   reply_begin(&b, 2);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   reply_begin(&b, INT32_MAX);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   reply_begin(&b, 1);
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   /* A whole document more than promised. */
   reply_begin(&b, 1);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   tu_put_json_doc(&b, "{\"ok\": 2}");
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   reply_begin(&b, 0);
   tu_put_json_doc(&b, "{}");
   assert_rejects_code(&b, 0, OPMSG_ERR_REPLY_COUNT);
   tu_buf_free(&b);

   /* Zero documents is a valid reply without a body. */
   reply_begin(&b, 0);
   fix_length(&b);
   parse_ok(b.data, b.len, 0, &msg);
   assert_int_equal(msg.op_reply.number_returned, 0);
   assert_null(msg.body);
   assert_int_equal(msg.op_reply.documents_len, 0);
   tu_buf_free(&b);
}

static void
test_reply_trailing_and_truncated(void **state)
{
   (void) state;
   tu_buf_t b;

   /* Bytes too few to be a document. */
   for (int n = 1; n <= 4; n++) {
      reply_begin(&b, 1);
      tu_put_json_doc(&b, "{\"ok\": 1}");
      for (int i = 0; i < n; i++) {
         tu_put_u8(&b, 0);
      }
      assert_rejects_code(&b, 0, OPMSG_ERR_TRAILING_BYTES);
      tu_buf_free(&b);
   }

   /* Junk that does not frame as a document. */
   reply_begin(&b, 1);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   tu_put(&b, "\x40\x00\x00\x00junkjunk", 12);
   assert_rejects_code(&b, 0, OPMSG_ERR_TRAILING_BYTES);
   tu_buf_free(&b);

   /* The second document runs past the end. */
   reply_begin(&b, 2);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   tu_put(&b,
          "\x10\x00\x00\x00\x10"
          "a\x00",
          7);
   assert_rejects_code(&b, 0, OPMSG_ERR_DOCUMENT_LENGTH);
   tu_buf_free(&b);

   /* A bad element inside the second document. */
   reply_begin(&b, 2);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   tu_put(&b,
          "\x0c\x00\x00\x00\x7f"
          "a\x00\x01\x02\x03\x04\x00",
          12);
   /* An element's rule: from the top-level level up; below it the
    * documents are only framed. */
   fix_length(&b);
   tu_assert_rejects_from(b.data, b.len, 0, OPMSG_ERR_DOCUMENT_ELEMENT, OPMSG_CHECK_TOP_LEVEL);
   tu_buf_free(&b);

   /* Full validation reaches nested elements of every document. */
   reply_begin(&b, 2);
   tu_put_json_doc(&b, "{\"ok\": 1}");
   /* {d: {b: <boolean byte 2>}} */
   tu_put(&b,
          "\x11\x00\x00\x00\x03"
          "d\x00\x09\x00\x00\x00\x08"
          "b\x00\x02\x00\x00",
          17);
   fix_length(&b);
   opmsg_msg_t msg;
   parse_ok(b.data, b.len, 0, &msg);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_FULL_VALIDATE, OPMSG_ERR_INVALID_BOOLEAN);
   tu_buf_free(&b);

   /* Every prefix of a real reply, declared as the whole message, fails. */
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/ferretdb_handshake2.bin", &len);
   for (size_t cut = 36; cut < len; cut++) {
      uint8_t *copy = malloc(cut);
      opmsg_msg_t m;
      bson_error_t error;
      memcpy(copy, data, cut);
      opmsg_write_u32(copy, (uint32_t) cut);
      assert_false(opmsg_parse(copy, cut, NULL, &m, &error));
      free(copy);
   }
   free(data);
}

static void
test_reply_document_limit(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   char json[300];

   /* A 100-byte-ish string: documents of about 120 bytes. */
   snprintf(json, sizeof json, "{\"s\": \"%0100d\"}", 0);
   opmsg_options_init(&opts);
   opts.max_bson_size = 64;
   /* The first document is the reply body: it may use the allowance. */
   reply_begin(&b, 1);
   tu_put_json_doc(&b, json);
   fix_length(&b);
   assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   tu_buf_free(&b);

   /* The second may not. */
   reply_begin(&b, 2);
   tu_put_json_doc(&b, "{}");
   tu_put_json_doc(&b, json);
   fix_length(&b);
   assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_int_equal(error.code, OPMSG_ERR_DOCUMENT_TOO_LARGE);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * OP_QUERY rules
 * ------------------------------------------------------------------------- */

static void
test_query_namespace(void **state)
{
   (void) state;
   tu_buf_t b;

   /* Empty. */
   query_begin(&b, "");
   tu_put_json_doc(&b, "{\"isMaster\": 1}");
   assert_rejects_code(&b, 0, OPMSG_ERR_QUERY_NAMESPACE);
   tu_buf_free(&b);

   /* Never terminated: the whole rest of the message is name. */
   tu_buf_init(&b);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 3);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, OPMSG_OP_QUERY);
   tu_put_i32(&b, 0);
   tu_put(&b, "admin.$cmdadmin.$cmdadmin.$cmd", 30);
   assert_rejects_code(&b, 0, OPMSG_ERR_QUERY_NAMESPACE);
   tu_buf_free(&b);

   /* Terminated too late to leave room for skip, return and a query. */
   tu_buf_init(&b);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 3);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, OPMSG_OP_QUERY);
   tu_put_i32(&b, 0);
   tu_put(&b, "admin.$cmdadmin.$cmdadmin.$cm", 29);
   tu_put_u8(&b, 0);
   assert_rejects_code(&b, 0, OPMSG_ERR_QUERY_NAMESPACE);
   tu_buf_free(&b);

   /* Not UTF-8: only full validation looks. */
   query_begin(&b, "admin.\xff$cmd");
   tu_put_json_doc(&b, "{\"isMaster\": 1}");
   fix_length(&b);
   opmsg_msg_t msg;
   parse_ok(b.data, b.len, 0, &msg);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_FULL_VALIDATE, OPMSG_ERR_QUERY_NAMESPACE);
   tu_buf_free(&b);
}

static void
test_query_documents(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;

   /* Fewer than 5 bytes after the query. */
   for (int n = 1; n <= 4; n++) {
      query_begin(&b, "admin.$cmd");
      tu_put_json_doc(&b, "{\"isMaster\": 1}");
      for (int i = 0; i < n; i++) {
         tu_put_u8(&b, 0);
      }
      assert_rejects_code(&b, 0, OPMSG_ERR_TRAILING_BYTES);
      tu_buf_free(&b);
   }

   /* Bytes after the selector. */
   query_begin(&b, "admin.$cmd");
   tu_put_json_doc(&b, "{\"isMaster\": 1}");
   tu_put_json_doc(&b, "{}");
   tu_put_json_doc(&b, "{}");
   assert_rejects_code(&b, 0, OPMSG_ERR_TRAILING_BYTES);
   tu_buf_free(&b);

   /* A selector that runs past the end. */
   query_begin(&b, "admin.$cmd");
   tu_put_json_doc(&b, "{\"isMaster\": 1}");
   tu_put(&b, "\x20\x00\x00\x00\x00", 5);
   assert_rejects_code(&b, 0, OPMSG_ERR_DOCUMENT_LENGTH);
   tu_buf_free(&b);

   /* A query that runs past the end. */
   query_begin(&b, "admin.$cmd");
   tu_put(&b,
          "\x20\x00\x00\x00\x10"
          "a\x00\x01\x00\x00\x00\x00",
          12);
   assert_rejects_code(&b, 0, OPMSG_ERR_DOCUMENT_LENGTH);
   tu_buf_free(&b);

   /* Bad UTF-8 in the query: full validation only. */
   query_begin(&b, "admin.$cmd");
   tu_put(&b,
          "\x0f\x00\x00\x00\x02"
          "a\x00\x03\x00\x00\x00\xc3\x28\x00\x00",
          15);
   fix_length(&b);
   parse_ok(b.data, b.len, 0, &msg);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_FULL_VALIDATE, OPMSG_ERR_INVALID_UTF8);
   tu_buf_free(&b);

   /* The smallest OP_QUERY: one-byte namespace and an empty query. */
   query_begin(&b, "a");
   tu_put_json_doc(&b, "{}");
   fix_length(&b);
   assert_int_equal(b.len, 35);
   parse_ok(b.data, b.len, 0, &msg);
   assert_string_equal(msg.op_query.full_collection_name, "a");
   assert_int_equal(msg.body_len, 5);
   assert_null(opmsg_command_name(&msg));
   tu_buf_free(&b);

   /* Every prefix of a real query, declared as the whole message, fails. */
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/ferretdb_handshake1.bin", &len);
   for (size_t cut = 16; cut < len; cut++) {
      uint8_t *copy = malloc(cut);
      opmsg_msg_t m;
      bson_error_t error;
      memcpy(copy, data, cut);
      opmsg_write_u32(copy, (uint32_t) cut);
      assert_false(opmsg_parse(copy, cut, NULL, &m, &error));
      free(copy);
   }
   free(data);
}

/* ---------------------------------------------------------------------------
 * The handshake builder
 * ------------------------------------------------------------------------- */

/* Building with libmongoc's parameters gives libmongoc's bytes: flags
 * secondaryOk, isMaster: 1, helloOk, its client document, compression []. */
static void
test_hello_matches_mongoc(void **state)
{
   (void) state;
   size_t len, mlen, written;
   uint8_t *data = tu_read_file("captures/mongoc_c1_c2s.bin", &len);
   opmsg_msg_t msg;
   bson_t query, client;
   bson_iter_t iter;
   bson_error_t error;
   opmsg_hello_query_t q;
   uint32_t client_len;
   const uint8_t *client_data;

   assert_true(opmsg_frame_length(data, len, NULL, &mlen, &error));
   parse_ok(data, mlen, 0, &msg);
   assert_true(opmsg_body(&msg, &query));
   assert_true(bson_iter_init_find(&iter, &query, "client"));
   bson_iter_document(&iter, &client_len, &client_data);
   assert_true(bson_init_static(&client, client_data, client_len));

   opmsg_hello_query_init(&q);
   q.client = &client;
   q.send_compression = true;
   q.request_id = msg.request_id;
   q.flags = OPMSG_QUERY_FLAG_SECONDARY_OK;
   assert_int_equal(opmsg_hello_query_size(&q), mlen);

   uint8_t *out = malloc(mlen);
   assert_true(opmsg_build_hello_query(&q, out, mlen, &written, &error));
   assert_int_equal(written, mlen);
   assert_memory_equal(out, data, mlen);
   free(out);
   free(data);
}

static void
test_hello_build_parse(void **state)
{
   (void) state;
   const char *names[] = {"zstd", "snappy", "zlib"};
   bson_t *client = bson_new_from_json((const uint8_t *) "{\"driver\": {\"name\": \"opmsg\", \"version\": "
                                                         "\"0.1.0\"}, \"os\": {\"type\": \"Linux\"}}",
                                       -1, NULL);
   bson_t *extra = bson_new_from_json((const uint8_t *) "{\"saslSupportedMechs\": \"admin.u\", "
                                                        "\"loadBalanced\": false}",
                                      -1, NULL);
   opmsg_hello_query_t q;
   opmsg_msg_t msg;
   bson_error_t error;
   size_t size, written;
   uint8_t *buf;

   assert_non_null(client);
   assert_non_null(extra);
   opmsg_hello_query_init(&q);
   q.client = client;
   q.send_compression = true;
   q.compression = names;
   q.n_compression = 3;
   q.extra = extra;
   q.request_id = 42;

   size = opmsg_hello_query_size(&q);
   assert_true(size > 0);
   buf = malloc(size + 8);
   memset(buf, 0xAB, size + 8);

   /* One byte short: refused, nothing written. */
   assert_false(opmsg_build_hello_query(&q, buf, size - 1, &written, &error));
   assert_int_equal(error.code, OPMSG_ERR_BUFFER_TOO_SMALL);
   for (size_t i = 0; i < size + 8; i++) {
      assert_int_equal(buf[i], 0xAB);
   }

   assert_true(opmsg_build_hello_query(&q, buf, size + 8, &written, &error));
   assert_int_equal(written, size);
   assert_int_equal(buf[size], 0xAB);
   parse_ok(buf, size, OPMSG_PARSE_FULL_VALIDATE, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_QUERY);
   assert_int_equal(msg.request_id, 42);
   assert_int_equal(msg.response_to, 0);
   assert_int_equal(msg.flags, 0);
   assert_string_equal(msg.op_query.full_collection_name, "admin.$cmd");
   assert_int_equal(msg.op_query.number_to_skip, 0);
   assert_int_equal(msg.op_query.number_to_return, -1);
   assert_null(msg.op_query.field_selector);
   assert_string_equal(opmsg_command_name(&msg), "isMaster");

   char *json = tu_merge_json(buf, size, 0);
   assert_string_equal(json, "{ \"isMaster\" : { \"$numberInt\" : \"1\" }, \"helloOk\" : true, "
                             "\"client\" : { \"driver\" : { \"name\" : \"opmsg\", \"version\" "
                             ": \"0.1.0\" }, \"os\" : { \"type\" : \"Linux\" } }, "
                             "\"compression\" : [ \"zstd\", \"snappy\", \"zlib\" ], "
                             "\"saslSupportedMechs\" : \"admin.u\", \"loadBalanced\" : false }");
   bson_free(json);

   /* The forbidden-compression rule applies to what it builds (with every
    * codec: test_compress.c; noop is in every build). */
   uint8_t out[1024];
   assert_false(opmsg_compress_into(buf, size, OPMSG_COMPRESSOR_NOOP, -1, out, sizeof out, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_COMPRESSION_FORBIDDEN);

   /* hello instead of isMaster, no helloOk, no optional parts. */
   opmsg_hello_query_init(&q);
   q.use_hello = true;
   q.hello_ok = false;
   size = opmsg_hello_query_size(&q);
   assert_true(opmsg_build_hello_query(&q, buf, size, &written, &error));
   json = tu_merge_json(buf, size, OPMSG_PARSE_FULL_VALIDATE);
   assert_string_equal(json, "{ \"hello\" : { \"$numberInt\" : \"1\" } }");
   bson_free(json);

   /* Compression requested with no names: "compression" : [ ]. */
   opmsg_hello_query_init(&q);
   q.send_compression = true;
   size = opmsg_hello_query_size(&q);
   assert_true(opmsg_build_hello_query(&q, buf, size, &written, &error));
   {
      opmsg_msg_t m;
      bson_t query;
      bson_iter_t iter, child;
      parse_ok(buf, size, OPMSG_PARSE_FULL_VALIDATE, &m);
      assert_true(opmsg_body(&m, &query));
      assert_int_equal(bson_count_keys(&query), 3);
      assert_true(bson_iter_init_find(&iter, &query, "compression"));
      assert_true(BSON_ITER_HOLDS_ARRAY(&iter));
      assert_true(bson_iter_recurse(&iter, &child));
      assert_false(bson_iter_next(&child));
   }

   free(buf);
   bson_destroy(client);
   bson_destroy(extra);
}

static void
test_hello_errors(void **state)
{
   (void) state;
   opmsg_hello_query_t q;
   bson_error_t error;
   uint8_t buf[512];
   const char *bad_names[] = {"zlib", NULL};
   const char *dup_keys[] = {"isMaster", "ismaster", "hello", "helloOk", "client", "compression"};

   opmsg_hello_query_init(&q);
   assert_false(opmsg_build_hello_query(NULL, buf, sizeof buf, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   assert_false(opmsg_build_hello_query(&q, NULL, 0, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);

   q.send_compression = true;
   q.compression = bad_names;
   q.n_compression = 2;
   assert_int_equal(opmsg_hello_query_size(&q), 0);
   assert_false(opmsg_build_hello_query(&q, buf, sizeof buf, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   q.compression = NULL;
   assert_false(opmsg_build_hello_query(&q, buf, sizeof buf, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);

   bson_t client = BSON_INITIALIZER;
   for (size_t i = 0; i < sizeof dup_keys / sizeof dup_keys[0]; i++) {
      bson_t extra = BSON_INITIALIZER;
      BSON_APPEND_INT32(&extra, "x", 1);
      BSON_APPEND_INT32(&extra, dup_keys[i], 1);
      opmsg_hello_query_init(&q);
      q.client = &client;
      q.send_compression = true;
      q.extra = &extra;
      assert_false(opmsg_build_hello_query(&q, buf, sizeof buf, NULL, &error));
      assert_int_equal(error.code, OPMSG_ERR_DUPLICATE_KEY);
      bson_destroy(&extra);
   }
   bson_destroy(&client);
}

/* ---------------------------------------------------------------------------
 * The OP_REPLY builder and reader
 * ------------------------------------------------------------------------- */

static void
test_reply_build_parse(void **state)
{
   (void) state;
   bson_t *docs[3];
   const bson_t *cdocs[3];
   opmsg_reply_t r;
   opmsg_msg_t msg;
   opmsg_reply_iter_t it;
   bson_error_t error;
   bson_t doc;
   size_t size, written;
   uint8_t *buf;
   int n = 0;

   docs[0] = bson_new_from_json((const uint8_t *) "{\"ismaster\": true, "
                                                  "\"maxWireVersion\": 13, \"ok\": 1.0}",
                                -1, NULL);
   docs[1] = bson_new();
   docs[2] = bson_new_from_json((const uint8_t *) "{\"a\": {\"b\": [1, 2]}}", -1, NULL);
   for (int i = 0; i < 3; i++) {
      assert_non_null(docs[i]);
      cdocs[i] = docs[i];
   }

   opmsg_reply_init(&r);
   r.request_id = 100;
   r.response_to = 7;
   r.response_flags = OPMSG_REPLY_FLAG_AWAIT_CAPABLE;
   r.cursor_id = -2;
   r.starting_from = 5;
   r.documents = cdocs;
   r.n_documents = 3;
   size = opmsg_reply_size(&r);
   assert_int_equal(size, 36 + docs[0]->len + docs[1]->len + docs[2]->len);
   buf = malloc(size);
   assert_false(opmsg_build_reply(&r, buf, size - 1, &written, &error));
   assert_int_equal(error.code, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_true(opmsg_build_reply(&r, buf, size, &written, &error));
   assert_int_equal(written, size);

   parse_ok(buf, size, OPMSG_PARSE_FULL_VALIDATE, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_REPLY);
   assert_int_equal(msg.request_id, 100);
   assert_int_equal(msg.response_to, 7);
   assert_int_equal(msg.flags, OPMSG_REPLY_FLAG_AWAIT_CAPABLE);
   assert_true(msg.op_reply.cursor_id == -2);
   assert_int_equal(msg.op_reply.starting_from, 5);
   assert_int_equal(msg.op_reply.number_returned, 3);
   assert_true(opmsg_reply_iter_init(&it, &msg));
   while (opmsg_reply_iter_next(&it, &doc)) {
      assert_true(n < 3);
      assert_true(bson_equal(&doc, docs[n]));
      n++;
   }
   assert_int_equal(n, 3);
   free(buf);

   /* One document: merging gives it back. */
   r.n_documents = 1;
   size = opmsg_reply_size(&r);
   buf = malloc(size);
   assert_true(opmsg_build_reply(&r, buf, size, NULL, &error));
   parse_ok(buf, size, 0, &msg);
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   assert_non_null(merged);
   assert_true(bson_equal(merged, docs[0]));
   bson_destroy(merged);
   free(buf);

   /* No documents. */
   r.n_documents = 0;
   r.documents = NULL;
   size = opmsg_reply_size(&r);
   assert_int_equal(size, 36);
   buf = malloc(size);
   assert_true(opmsg_build_reply(&r, buf, size, NULL, &error));
   parse_ok(buf, size, 0, &msg);
   assert_int_equal(msg.op_reply.number_returned, 0);
   assert_true(opmsg_reply_iter_init(&it, &msg));
   assert_false(opmsg_reply_iter_next(&it, &doc));
   free(buf);

   /* Bad arguments. */
   uint8_t small[64];
   assert_int_equal(opmsg_reply_size(NULL), 0);
   r.n_documents = 2;
   assert_false(opmsg_build_reply(&r, small, sizeof small, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   const bson_t *with_null[2] = {docs[1], NULL};
   r.documents = with_null;
   assert_false(opmsg_build_reply(&r, small, sizeof small, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);

   /* The reader refuses other opcodes. */
   size_t len;
   uint8_t *q = tu_read_file("thirdparty/ferretdb_handshake1.bin", &len);
   parse_ok(q, len, 0, &msg);
   assert_false(opmsg_reply_iter_init(&it, &msg));
   assert_false(opmsg_reply_iter_next(&it, &doc));
   free(q);

   for (int i = 0; i < 3; i++) {
      bson_destroy(docs[i]);
   }
}

/* One document check for every opcode (document.c's opmsg_doc_check()):
 * {a: {x: <type 0x42>}} has a sound top level, so every opcode accepts it
 * by default, and with OPMSG_PARSE_FULL_VALIDATE every opcode refuses it
 * with the same code, naming the element's offset in its own message. */
static void
test_one_document_check(void **state)
{
   (void) state;
   static const uint8_t doc[] = {16, 0, 0, 0, 0x03, 'a', 0, 8, 0, 0, 0, 0x42, 'x', 0, 0, 0};
   /* Each opcode's fields between the header and the document. */
#define FIELDS(op, bytes) {op, bytes, sizeof bytes - 1}
   static const struct {
      int32_t opcode;
      const char *fields;
      size_t len;
   } cases[] = {
      FIELDS(OPMSG_OP_MSG, "\0\0\0\0"
                           "\0"), /* flags, kind 0 */
      FIELDS(OPMSG_OP_QUERY, "\0\0\0\0"
                             "db.$cmd\0"
                             "\0\0\0\0"
                             "\xff\xff\xff\xff"),
      FIELDS(OPMSG_OP_REPLY, "\0\0\0\0"
                             "\0\0\0\0\0\0\0\0"
                             "\0\0\0\0"
                             "\1\0\0\0"),
      FIELDS(OPMSG_OP_INSERT, "\0\0\0\0"
                              "db.c\0"),
      FIELDS(OPMSG_OP_DELETE, "\0\0\0\0"
                              "db.c\0"
                              "\0\0\0\0"), /* ZERO, ns, flags */
   };
#undef FIELDS
   uint32_t code = 0;

   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      tu_buf_t b;
      opmsg_msg_t msg;
      bson_error_t error;
      opmsg_options_t opts = {0};

      tu_buf_init(&b);
      tu_put_i32(&b, 0);
      tu_put_i32(&b, 1);
      tu_put_i32(&b, 0);
      tu_put_i32(&b, cases[i].opcode);
      tu_put(&b, cases[i].fields, cases[i].len);
      size_t off = b.len;
      tu_put(&b, doc, sizeof doc);
      opmsg_write_u32(b.data, (uint32_t) b.len);

      assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
      assert_ptr_equal(msg.body, b.data + off);
      opts.flags = OPMSG_PARSE_FULL_VALIDATE;
      assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
      assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
      if (i == 0) {
         code = error.code;
         assert_int_not_equal(code, 0);
      }
      assert_int_equal(error.code, code);
      char where[32];
      snprintf(where, sizeof where, "offset %zu", off + 11);
      assert_non_null(strstr(error.message, where));
      tu_buf_free(&b);
   }
}

/* The removed opcodes, each in its own member of opmsg_msg_t's union
 * (0.5.0), under the wire's names: every field where the bytes put it. */
static void
parse_removed(tu_buf_t *b, int32_t opcode, const char *fields, size_t len, opmsg_msg_t *msg)
{
   bson_error_t error;
   tu_buf_init(b);
   tu_put_i32(b, 0);
   tu_put_i32(b, 1);
   tu_put_i32(b, 0);
   tu_put_i32(b, opcode);
   tu_put(b, fields, len);
   opmsg_write_u32(b->data, (uint32_t) b->len);
   if (!opmsg_parse(b->data, b->len, NULL, msg, &error)) {
      fail_msg("opCode %d: %s", opcode, error.message);
   }
   assert_int_equal(msg->opcode, opcode);
}

static void
test_removed_opcode_views(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   /* {} and {a: 1}: 5 and 12 bytes. */
#define EMPTY "\5\0\0\0\0"
#define A1          \
   "\x0c\0\0\0\x10" \
   "a\0\1\0\0\0\0"

   /* OP_INSERT: flags 1, "db.c", two documents. */
   static const char insert[] = "\1\0\0\0"
                                "db.c\0" EMPTY A1;
   parse_removed(&b, OPMSG_OP_INSERT, insert, sizeof insert - 1, &msg);
   assert_int_equal(msg.flags, 1);
   assert_string_equal(msg.op_insert.full_collection_name, "db.c");
   assert_ptr_equal(msg.op_insert.full_collection_name, b.data + 20);
   assert_int_equal(msg.op_insert.count, 2);
   assert_ptr_equal(msg.op_insert.documents, b.data + 25);
   assert_int_equal(msg.op_insert.documents_len, 17);
   assert_ptr_equal(msg.body, b.data + 25);
   assert_int_equal(msg.body_len, 5);
   tu_buf_free(&b);

   /* OP_UPDATE: ZERO, "db.c", flags 2, selector {}, update {a: 1}. */
   static const char update[] = "\0\0\0\0"
                                "db.c\0"
                                "\2\0\0\0" EMPTY A1;
   parse_removed(&b, OPMSG_OP_UPDATE, update, sizeof update - 1, &msg);
   assert_int_equal(msg.flags, 2);
   assert_string_equal(msg.op_update.full_collection_name, "db.c");
   assert_ptr_equal(msg.body, b.data + 29);
   assert_int_equal(msg.body_len, 5);
   assert_ptr_equal(msg.op_update.update, b.data + 34);
   assert_int_equal(msg.op_update.update_len, 12);
   tu_buf_free(&b);

   /* OP_DELETE: ZERO, "db.c", flags 1, selector {a: 1}. */
   static const char del[] = "\0\0\0\0"
                             "db.c\0"
                             "\1\0\0\0" A1;
   parse_removed(&b, OPMSG_OP_DELETE, del, sizeof del - 1, &msg);
   assert_int_equal(msg.flags, 1);
   assert_string_equal(msg.op_delete.full_collection_name, "db.c");
   assert_ptr_equal(msg.body, b.data + 29);
   assert_int_equal(msg.body_len, 12);
   tu_buf_free(&b);

   /* OP_GET_MORE: ZERO, "db.c", numberToReturn 7, cursorID 0x0102030405060708. */
   static const char get_more[] = "\0\0\0\0"
                                  "db.c\0"
                                  "\7\0\0\0"
                                  "\x08\x07\x06\x05\x04\x03\x02\x01";
   parse_removed(&b, OPMSG_OP_GET_MORE, get_more, sizeof get_more - 1, &msg);
   assert_string_equal(msg.op_get_more.full_collection_name, "db.c");
   assert_int_equal(msg.op_get_more.number_to_return, 7);
   assert_true(msg.op_get_more.cursor_id == 0x0102030405060708);
   assert_null(msg.body);
   tu_buf_free(&b);

   /* OP_KILL_CURSORS: ZERO, two cursor IDs. */
   static const char kill[] = "\0\0\0\0"
                              "\2\0\0\0"
                              "\1\0\0\0\0\0\0\0"
                              "\2\0\0\0\0\0\0\0";
   parse_removed(&b, OPMSG_OP_KILL_CURSORS, kill, sizeof kill - 1, &msg);
   assert_int_equal(msg.op_kill_cursors.number_of_cursor_ids, 2);
   assert_ptr_equal(msg.op_kill_cursors.cursor_ids, b.data + 24);
   assert_int_equal(msg.op_kill_cursors.cursor_ids_len, 16);
   assert_int_equal(opmsg_wire_i64(b.data, b.len, 32), 2);
   assert_null(msg.body);
   tu_buf_free(&b);
#undef EMPTY
#undef A1
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ferret_queries),
      cmocka_unit_test(test_ferret_replies),
      cmocka_unit_test(test_mcdrpc_query),
      cmocka_unit_test(test_mcdrpc_reply),
      cmocka_unit_test(test_captures),
      cmocka_unit_test(test_reply_counts),
      cmocka_unit_test(test_reply_trailing_and_truncated),
      cmocka_unit_test(test_reply_document_limit),
      cmocka_unit_test(test_query_namespace),
      cmocka_unit_test(test_query_documents),
      cmocka_unit_test(test_hello_matches_mongoc),
      cmocka_unit_test(test_hello_build_parse),
      cmocka_unit_test(test_hello_errors),
      cmocka_unit_test(test_reply_build_parse),
      cmocka_unit_test(test_one_document_check),
      cmocka_unit_test(test_removed_opcode_views),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
