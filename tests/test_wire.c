/*
 * test_wire.c - the wire's vocabulary (opmsg/wire.h): each named offset is
 * where opmsg_parse() finds its field, the bounded reads stay inside the
 * bytes given, and the lenient section step frames what the parser walks.
 */
#include "testutil.h"

#include <string.h>

/* The header's and OP_MSG's fields, read by name, are what the parse read. */
static void
test_op_msg_fields(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;

   tu_buf_init(&b);
   tu_msg_begin(&b, OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_EXHAUST_ALLOWED);
   opmsg_write_u32(b.data + OPMSG_OFF_REQUEST_ID, 77);
   opmsg_write_u32(b.data + OPMSG_OFF_RESPONSE_TO, 66);
   tu_msg_body(&b, "{\"insert\": \"c\", \"$db\": \"d\"}");
   size_t mark = tu_msg_seq_begin(&b, "documents");
   tu_put_json_doc(&b, "{\"_id\": 1}");
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));

   assert_int_equal(opmsg_wire_i32(b.data, b.len, OPMSG_OFF_MESSAGE_LENGTH), msg.message_length);
   assert_int_equal(opmsg_wire_i32(b.data, b.len, OPMSG_OFF_REQUEST_ID), 77);
   assert_int_equal(msg.request_id, 77);
   assert_int_equal(opmsg_wire_i32(b.data, b.len, OPMSG_OFF_RESPONSE_TO), msg.response_to);
   assert_int_equal(opmsg_wire_i32(b.data, b.len, OPMSG_OFF_OPCODE), OPMSG_OP_MSG);
   assert_int_equal((uint32_t) opmsg_wire_i32(b.data, b.len, OPMSG_OFF_FLAG_BITS), msg.flags);
   assert_int_equal((uint32_t) opmsg_wire_i32(b.data, b.len, b.len - OPMSG_CHECKSUM_SIZE), msg.checksum);

   /* The sections, stepped over leniently, are the body and the sequence
    * the parse found, and end where the checksum begins. */
   size_t end = b.len - OPMSG_CHECKSUM_SIZE;
   size_t off = OPMSG_OFF_SECTIONS;
   assert_int_equal(b.data[off], OPMSG_SECTION_BODY);
   assert_ptr_equal(b.data + off + 1, msg.body);
   size_t n = opmsg_wire_section(b.data, end, off);
   assert_int_equal(n, 1 + msg.body_len);
   off += n;
   opmsg_sequence_t seq;
   assert_true(opmsg_sequence_find(&msg, "documents", &seq));
   assert_int_equal(off, seq.offset);
   assert_int_equal(b.data[off], OPMSG_SECTION_SEQUENCE);
   assert_ptr_equal(b.data + off + OPMSG_SECTION_OFF_IDENTIFIER, seq.identifier);
   assert_int_equal(opmsg_wire_i32(b.data, end, off + OPMSG_SECTION_OFF_SIZE),
                    (int32_t) (4 + seq.identifier_len + 1 + seq.documents_len));
   off += opmsg_wire_section(b.data, end, off);
   assert_int_equal(off, end);
   /* Past the end, or a section that does not fit: 0. */
   assert_int_equal(opmsg_wire_section(b.data, end, end), 0);
   assert_int_equal(opmsg_wire_section(b.data, end - 1, seq.offset), 0);
   tu_buf_free(&b);
}

/* OP_REPLY's and OP_COMPRESSED's fields. */
static void
test_reply_and_compressed_fields(void **state)
{
   (void) state;
   bson_t *doc = BCON_NEW("ok", BCON_INT32(1));
   const bson_t *docs[] = {doc};
   opmsg_reply_t reply;
   opmsg_reply_init(&reply);
   reply.cursor_id = 0x0102030405060708;
   reply.starting_from = 3;
   reply.response_flags = 8;
   reply.documents = docs;
   reply.n_documents = 1;
   uint8_t buf[128];
   size_t len;
   opmsg_msg_t msg;
   bson_error_t error;
   assert_true(opmsg_build_reply(&reply, buf, sizeof buf, &len, &error));
   assert_true(opmsg_parse(buf, len, NULL, &msg, &error));
   assert_int_equal(opmsg_wire_i32(buf, len, OPMSG_OFF_RESPONSE_FLAGS), 8);
   assert_int_equal(opmsg_wire_i64(buf, len, OPMSG_OFF_CURSOR_ID), msg.op_reply.cursor_id);
   assert_int_equal(opmsg_wire_i32(buf, len, OPMSG_OFF_STARTING_FROM), 3);
   assert_int_equal(opmsg_wire_i32(buf, len, OPMSG_OFF_NUMBER_RETURNED), 1);
   assert_ptr_equal(buf + OPMSG_OFF_REPLY_DOCUMENTS, msg.body);

   size_t clen;
   uint8_t *c = opmsg_compress(buf, len, OPMSG_COMPRESSOR_NOOP, OPMSG_COMPRESS_DEFAULT_LEVEL, &clen, &error);
   assert_non_null(c);
   assert_true(opmsg_parse(c, clen, NULL, &msg, &error));
   assert_int_equal(opmsg_wire_i32(c, clen, OPMSG_OFF_ORIGINAL_OPCODE), OPMSG_OP_REPLY);
   assert_int_equal(opmsg_wire_i32(c, clen, OPMSG_OFF_UNCOMPRESSED_SIZE), (int32_t) len - OPMSG_HEADER_SIZE);
   assert_int_equal(c[OPMSG_OFF_COMPRESSOR_ID], OPMSG_COMPRESSOR_NOOP);
   assert_ptr_equal(c + OPMSG_COMPRESSED_OVERHEAD, msg.op_compressed.compressed);
   bson_free(c);
   bson_destroy(doc);
}

/* A read that does not fit the bytes gives 0, however near the end. */
static void
test_bounds(void **state)
{
   (void) state;
   const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
   assert_int_equal(opmsg_wire_i32(bytes, 8, 4), 0x08070605);
   assert_int_equal(opmsg_wire_i32(bytes, 8, 5), 0);
   assert_int_equal(opmsg_wire_i32(bytes, 3, 0), 0);
   assert_int_equal(opmsg_wire_i32(bytes, 8, SIZE_MAX - 1), 0);
   assert_int_equal(opmsg_wire_i64(bytes, 8, 0), 0x0807060504030201);
   assert_int_equal(opmsg_wire_i64(bytes, 7, 0), 0);
   assert_int_equal(opmsg_wire_i32(NULL, 8, 0), 0);
   /* A kind 1 of size 5 (its size and an empty identifier), and others. */
   const uint8_t sec[6] = {1, 5, 0, 0, 0, 0};
   assert_int_equal(opmsg_wire_section(sec, 6, 0), 6);
   assert_int_equal(opmsg_wire_section(sec, 5, 0), 0);
   assert_int_equal(opmsg_wire_section(sec, 6, 1), 0); /* kind 5 */
   assert_int_equal(opmsg_wire_section(sec, 6, SIZE_MAX), 0);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_op_msg_fields),
      cmocka_unit_test(test_reply_and_compressed_fields),
      cmocka_unit_test(test_bounds),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
