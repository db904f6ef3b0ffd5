/*
 * test_parse.c - the OP_MSG rules: passing cases, and failing ones that
 * sweep a rule's values (every required flag bit, section kinds, lengths,
 * element types) or are not one reply's bytes. Each failing case asserts
 * the error code that names the rule at every check level.
 *
 * The failing cases that are one reply each (one per rule and kind of
 * fault) are rows of tests/data/rules/cases.tsv, which test_offsets.c
 * checks (verdict per level and offset) and the conformance vectors are
 * written from; the tests below say which rows they leave to the table.
 */
#include "testutil.h"

#include <string.h>

/* A valid message: body, one sequence. */
static void
build_insert(tu_buf_t *b, uint32_t flags)
{
   tu_buf_init(b);
   tu_msg_begin(b, flags);
   tu_msg_body(b, "{\"insert\": \"coll\", \"$db\": \"test\"}");
   size_t m = tu_msg_seq_begin(b, "documents");
   tu_put_json_doc(b, "{\"_id\": 1}");
   tu_put_json_doc(b, "{\"_id\": 2}");
   tu_msg_seq_end(b, m);
   tu_msg_end(b);
}

/* Accepted at every check level. */
static void
assert_accepts(const tu_buf_t *b, uint32_t flags)
{
   for (size_t i = 0; i < TU_N_LEVELS; i++) {
      bson_error_t error;
      if (tu_parse_code(b->data, b->len, flags, tu_levels[i], &error) != OPMSG_OK) {
         fail_msg("rejected a valid message at %s: %s: %s", opmsg_check_name(tu_levels[i]),
                  opmsg_error_name(error.code), error.message);
      }
   }
}

static void
test_valid_insert(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;
   build_insert(&b, 0);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_int_equal(msg.opcode, OPMSG_OP_MSG);
   assert_int_equal(msg.request_id, 7);
   assert_int_equal(msg.n_sequences, 1);
   assert_false(msg.checksum_present);
   assert_string_equal(opmsg_command_name(&msg), "insert");
   uint32_t len;
   assert_string_equal(opmsg_db(&msg, &len), "test");
   assert_int_equal(len, 4);
   tu_buf_free(&b);
}

/* --- header ------------------------------------------------------------ */

static void
test_header_bounds(void **state)
{
   (void) state;
   tu_buf_t b;
   build_insert(&b, 0);

   /* Fewer bytes than a header (no opcode: not a row). messageLength above
    * the bytes, below them, 20, negative and above the default limit:
    * rules/cases.tsv hdr_truncated, hdr_length_mismatch,
    * hdr_length_too_small, hdr_length_neg, hdr_length_too_large. */
   tu_assert_rejects(b.data, 15, 0, OPMSG_ERR_TRUNCATED);

   /* Unknown opcode. */
   uint8_t hdr[32] = {0};
   opmsg_write_u32(hdr, 32);
   opmsg_write_u32(hdr + 12, 2010);
   tu_assert_rejects(hdr, sizeof hdr, 0, OPMSG_ERR_UNKNOWN_OPCODE);
   tu_buf_free(&b);
}

static void
test_size_limit(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   build_insert(&b, 0);

   opmsg_options_init(&opts);
   opts.max_message_size = b.len;
   assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   opts.max_message_size = b.len - 1;
   assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   assert_int_equal(error.code, OPMSG_ERR_LENGTH_TOO_LARGE);

   /* The default is 48,000,000, decimal: a header claiming one byte more
    * is refused by the framing check before any byte is read. */
   uint8_t hdr[16] = {0};
   size_t need;
   opmsg_write_u32(hdr, 48000000u);
   opmsg_write_u32(hdr + 12, OPMSG_OP_MSG);
   assert_true(opmsg_frame_length(hdr, sizeof hdr, NULL, &need, &error));
   assert_int_equal(need, 48000000u);
   opmsg_write_u32(hdr, 48000001u);
   assert_false(opmsg_frame_length(hdr, sizeof hdr, NULL, &need, &error));
   assert_int_equal(error.code, OPMSG_ERR_LENGTH_TOO_LARGE);
   tu_buf_free(&b);
}

/* --- flag bits ---------------------------------------------------------- */

static void
test_flags(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;

   /* Every unknown required bit (2-15) is refused. */
   for (int bit = 2; bit < 16; bit++) {
      build_insert(&b, 1u << bit);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_REQUIRED_FLAGS);
      tu_buf_free(&b);
   }
   /* Unknown optional bits (16-31) are ignored; moreToCome and
    * exhaustAllowed are exposed. */
   build_insert(&b, 0xFFFF0000u | OPMSG_FLAG_MORE_TO_COME);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_true(msg.flags & OPMSG_FLAG_MORE_TO_COME);
   assert_true(msg.flags & OPMSG_FLAG_EXHAUST_ALLOWED);
   tu_buf_free(&b);
}

/* --- checksum ----------------------------------------------------------- */

static void
test_checksum(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;

   build_insert(&b, OPMSG_FLAG_CHECKSUM_PRESENT);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_true(msg.checksum_present);
   assert_int_equal(msg.checksum, opmsg_crc32c(0, b.data, b.len - 4));
   assert_int_equal(msg.n_sequences, 1);

   /* One flipped bit anywhere, the header included, is caught. */
   for (size_t i = 0; i < b.len - 4; i += 7) {
      if (i < 4 || (i >= 12 && i < 20)) {
         continue; /* length, opcode and flags fail other rules first */
      }
      b.data[i] ^= 0x10;
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_CHECKSUM_MISMATCH);
      b.data[i] ^= 0x10;
   }
   /* A wrong checksum is accepted only when the caller skips the check. */
   b.data[b.len - 1] ^= 0xFF;
   tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_CHECKSUM_MISMATCH);
   assert_accepts(&b, OPMSG_PARSE_SKIP_CHECKSUM);
   tu_buf_free(&b);
   /* The flag set but the 4 bytes never written, and no room for a
    * section and a checksum: rules/cases.tsv crc_missing, crc_no_room. */
}

/* --- sections ----------------------------------------------------------- */

static void
test_section_order(void **state)
{
   (void) state;
   tu_buf_t b;
   /* Sequences before, around and after the body are all legal. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   size_t m = tu_msg_seq_begin(&b, "a");
   tu_put_json_doc(&b, "{\"x\": 1}");
   tu_msg_seq_end(&b, m);
   tu_msg_body(&b, "{\"cmd\": 1, \"$db\": \"d\"}");
   m = tu_msg_seq_begin(&b, "b");
   tu_msg_seq_end(&b, m);
   tu_msg_end(&b);
   char *json = tu_merge_json(b.data, b.len, 0);
   char *want = tu_canonical_json("{\"cmd\": 1, \"$db\": \"d\", \"a\": [{\"x\": 1}], \"b\": []}");
   assert_string_equal(json, want);
   bson_free(want);
   bson_free(json);
   tu_buf_free(&b);
}

static void
test_unknown_kind(void **state)
{
   (void) state;
   for (int kind = 2; kind < 256; kind += 17) {
      tu_buf_t b;
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      tu_msg_body(&b, "{\"ping\": 1}");
      tu_put_u8(&b, (uint8_t) kind);
      tu_put_json_doc(&b, "{\"x\": 1}");
      tu_msg_end(&b);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_UNKNOWN_SECTION);
      tu_buf_free(&b);
   }
}

/* A sequence's size (-1, 0, 4, INT32_MIN, INT32_MAX, past the message, 3
 * below its documents): rules/cases.tsv seq_size_*. */

static void
test_identifier_clash(void **state)
{
   (void) state;
   struct {
      const char *body;
      const char *id;
   } cases[] = {
      /* The identifier names a body field, at the top and down a path, or
       * goes through a scalar, an array, a missing field (a key "ab" is not
       * "a") or a field twice (at any depth): rules/cases.tsv id_clash_*.
       * The neighbours that do not clash: */
      {"{\"cursor\": {\"id\": 0}}", "cursor.firstBatch"},
      {"{\"a\": {\"c\": 1}}", "a.b"},
      {"{\"ab\": 1, \"a\": {}}", "a.b"},
      {"{\"a.b\": 1}", "a"},
      {"{\"documentsX\": 1}", "documents"},
      /* A sub-document on the path may hold a key twice elsewhere (the
       * path's next component twice: id_clash_ambiguous_*). */
      {"{\"a\": {\"x\": 1, \"x\": 2, \"b\": {}}}", "a.b.c"},
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      tu_buf_t b;
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      tu_msg_body(&b, cases[i].body);
      size_t m = tu_msg_seq_begin(&b, cases[i].id);
      tu_put_json_doc(&b, "{\"_id\": 1}");
      tu_msg_seq_end(&b, m);
      tu_msg_end(&b);
      assert_accepts(&b, 0);
      tu_buf_free(&b);
   }
}

static void
test_trailing_bytes(void **state)
{
   (void) state;
   /* One and five stray bytes, and one before a checksum: rules/cases.tsv
    * sec_trailing_zero, sec_trailing_five, sec_trailing_before_crc. */
   for (int extra = 2; extra <= 4; extra++) {
      tu_buf_t b;
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      tu_msg_body(&b, "{\"ping\": 1}");
      for (int i = 0; i < extra; i++) {
         tu_put_u8(&b, 0);
      }
      tu_msg_end(&b);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_TRAILING_BYTES);
      tu_buf_free(&b);
   }
}

static void
test_duplicate_keys(void **state)
{
   (void) state;
   tu_buf_t b;
   /* A body key twice, alone and beside a sequence (the spec allows it, and
    * so do libbson and libmongoc: refused from the top-level level up
    * only): rules/cases.tsv lvl_body_dup_key, lvl_body_dup_key_seq. */

   /* Nested duplicates are the application's business, not the wire's. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"find\": \"c\", \"filter\": {\"a\": 1, \"a\": 2}}");
   tu_msg_end(&b);
   assert_accepts(&b, 0);
   tu_buf_free(&b);

   /* Many keys (past the stack table), with one repeat at the very end. */
   bson_t *big = bson_new();
   char key[16];
   for (int i = 0; i < 5000; i++) {
      snprintf(key, sizeof key, "k%d", i);
      BSON_APPEND_INT32(big, key, i);
   }
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   tu_put_bson(&b, big);
   tu_msg_end(&b);
   assert_accepts(&b, 0);
   tu_buf_free(&b);
   BSON_APPEND_INT32(big, "k4321", 0);
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   tu_put_bson(&b, big);
   tu_msg_end(&b);
   tu_assert_rejects_from(b.data, b.len, 0, OPMSG_ERR_DUPLICATE_KEY, OPMSG_CHECK_TOP_LEVEL);
   tu_buf_free(&b);
   bson_destroy(big);
}

/* --- documents ---------------------------------------------------------- */

/* Body lengths -1, 0, 4, 1000 and INT32_MAX, and a body without its
 * terminator: rules/cases.tsv doc_body_length_*, doc_body_no_terminator. */

/* Body {"k": <value>} with a raw value of the given type. */
static void
build_raw_body(tu_buf_t *b, uint8_t type, const uint8_t *value, size_t value_len)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_put_u8(b, 0);
   tu_put_i32(b, (int32_t) (4 + 1 + 2 + value_len + 1));
   tu_put_u8(b, type);
   tu_put_cstr(b, "k");
   tu_put(b, value, value_len);
   tu_put_u8(b, 0);
   tu_msg_end(b);
}

/* The same element as the second and last document of a sequence (the
 * sequence documents take their own, faster walk), the bytes after it
 * being the end of the message. */
static void
build_raw_seq(tu_buf_t *b, uint8_t type, const uint8_t *value, size_t value_len)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_msg_body(b, "{\"insert\": \"c\"}");
   size_t m = tu_msg_seq_begin(b, "documents");
   tu_put_json_doc(b, "{\"a\": 1}");
   tu_put_i32(b, (int32_t) (4 + 1 + 2 + value_len + 1));
   tu_put_u8(b, type);
   tu_put_cstr(b, "k");
   tu_put(b, value, value_len);
   tu_put_u8(b, 0);
   tu_msg_seq_end(b, m);
   tu_msg_end(b);
}

/* The body {"k": <raw value>} beside a sequence: the identifier is looked
 * for among the body's keys, at every level. */
static void
build_raw_body_seq(tu_buf_t *b, uint8_t type, const uint8_t *value, size_t value_len)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_put_u8(b, 0);
   tu_put_i32(b, (int32_t) (4 + 1 + 2 + value_len + 1));
   tu_put_u8(b, type);
   tu_put_cstr(b, "k");
   tu_put(b, value, value_len);
   tu_put_u8(b, 0);
   size_t m = tu_msg_seq_begin(b, "documents");
   tu_put_json_doc(b, "{\"a\": 1}");
   tu_msg_seq_end(b, m);
   tu_msg_end(b);
}

/* {"k": <raw value>} as a body alone, as a sequence document and as a body
 * beside a sequence: rejected with code under flags, or accepted when code
 * is 0. An element's rule holds from the top-level level up in a body alone
 * and in a sequence document, which the spec level only frames;
 * in a body beside a sequence at every level, since its keys are read. */
static void
check_raw_full(uint8_t type, const uint8_t *value, size_t value_len, uint32_t flags, int code, int full_code)
{
   tu_buf_t b;
   for (int kind = 0; kind < 3; kind++) {
      if (kind == 1) {
         build_raw_seq(&b, type, value, value_len);
      } else if (kind == 2) {
         build_raw_body_seq(&b, type, value, value_len);
      } else {
         build_raw_body(&b, type, value, value_len);
      }
      bool every_level = kind == 2 || (flags & OPMSG_PARSE_FULL_VALIDATE);
      if (code) {
         tu_assert_rejects_from(b.data, b.len, flags, (opmsg_error_code_t) code,
                                every_level ? OPMSG_CHECK_SPEC : OPMSG_CHECK_TOP_LEVEL);
      } else if (full_code) {
         /* Nested: a rule of the full level alone. */
         tu_assert_rejects_from(b.data, b.len, flags, (opmsg_error_code_t) full_code, OPMSG_CHECK_FULL);
      } else {
         assert_accepts(&b, flags);
      }
      tu_buf_free(&b);
   }
}

static void
check_raw(uint8_t type, const uint8_t *value, size_t value_len, uint32_t flags, int code)
{
   check_raw_full(type, value, value_len, flags, code, code);
}

static void
test_top_level_elements(void **state)
{
   (void) state;
   /* The faults, each as a body alone, a sequence document and a body
    * beside a sequence (unknown types, a double cut short, string lengths,
    * a boolean 2, nested lengths and terminators, binary lengths, a 0 type
    * byte early, a key into the terminator, an element nested in a
    * document): rules/cases.tsv elem_* (and lvl_body_bad_bool,
    * lvl_body_string_len, lvl_body_nested_bad_type). Here: what passes. */
   uint8_t eight[8] = {0};
   check_raw(BSON_TYPE_DOUBLE, eight, 8, 0, 0);
   uint8_t ok[] = {2, 0, 0, 0, 'a', 0};
   check_raw(BSON_TYPE_UTF8, ok, 6, 0, 0);
   uint8_t one = 1;
   check_raw(BSON_TYPE_BOOL, &one, 1, 0, 0);
   uint8_t bin_ok[] = {2, 0, 0, 0, 0, 0xAA, 0xBB};
   check_raw(BSON_TYPE_BINARY, bin_ok, sizeof bin_ok, 0, 0);
   /* Old binary (subtype 2) must repeat its length exactly: libbson's
    * iterator stops at a wrong one, so a merged document would end there. */
   uint8_t old_ok[] = {6, 0, 0, 0, 2, 2, 0, 0, 0, 0xAA, 0xBB};
   check_raw(BSON_TYPE_BINARY, old_ok, sizeof old_ok, 0, 0);
   /* The flag asks for the full level: a nested fault at every level. */
   uint8_t nested_garbage[] = {8, 0, 0, 0, 0x99, 'x', 0, 0};
   check_raw(BSON_TYPE_DOCUMENT, nested_garbage, 8, OPMSG_PARSE_FULL_VALIDATE, OPMSG_ERR_DOCUMENT_ELEMENT);
   /* A nested document whose last byte is 1, in a body beside a sequence,
    * is refused at every level (the body's top level is read to place the
    * sequence). Not a row: the patched libmongoc (the fork's conformance
    * program) takes it. In a body alone or a sequence document:
    * elem_body_doc_no_terminator, elem_seq_doc_no_terminator. */
   uint8_t nested_open[] = {5, 0, 0, 0, 1};
   tu_buf_t open_doc;
   build_raw_body_seq(&open_doc, BSON_TYPE_DOCUMENT, nested_open, 5);
   tu_assert_rejects_from(open_doc.data, open_doc.len, 0, OPMSG_ERR_DOCUMENT_ELEMENT, OPMSG_CHECK_SPEC);
   tu_buf_free(&open_doc);
   /* Keys of every length around the 16 bytes searched at a time. */
   for (size_t n = 1; n <= 40; n++) {
      char json[200];
      char key[41];
      memset(key, 'k', n);
      key[n] = '\0';
      tu_buf_t b;
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      snprintf(json, sizeof json, "{\"insert\": \"c\", \"%s\": 1, \"z\": true}", key);
      tu_msg_body(&b, json);
      size_t m = tu_msg_seq_begin(&b, "documents");
      snprintf(json, sizeof json, "{\"%s\": null}", key);
      tu_put_json_doc(&b, json);
      tu_put_json_doc(&b, json);
      tu_msg_seq_end(&b, m);
      tu_msg_end(&b);
      assert_accepts(&b, 0);
      tu_buf_free(&b);
   }
}

static void
test_document_size_limits(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   build_insert(&b, 0);
   uint32_t body = opmsg_read_u32(b.data + 21);
   opmsg_options_init(&opts);
   /* A body may exceed max_bson_size by the 16 KiB allowance... */
   opts.max_bson_size = 16;
   assert_true(body > 16 && body <= 16 + OPMSG_BODY_ALLOWANCE);
   assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   /* ...a sequence document may not exceed it at all. */
   opts.max_bson_size = 12;
   assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   assert_int_equal(error.code, OPMSG_ERR_DOCUMENT_TOO_LARGE);
   tu_buf_free(&b);
}

static void
test_request_db(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"ping\": 1}");
   tu_msg_end(&b);
   assert_accepts(&b, 0); /* a reply needs no $db */
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_REQUEST, OPMSG_ERR_MISSING_DB);
   tu_buf_free(&b);
   build_insert(&b, 0);
   assert_accepts(&b, OPMSG_PARSE_REQUEST);
   tu_buf_free(&b);
}

/* A header and a body for opcodes other than OP_MSG: header, then the bytes. */
static void
put_message(tu_buf_t *b, int32_t opcode, const uint8_t *rest, size_t n)
{
   tu_put_i32(b, (int32_t) (OPMSG_HEADER_SIZE + n));
   tu_put_i32(b, 7);
   tu_put_i32(b, 0);
   tu_put_i32(b, opcode);
   tu_put(b, rest, n);
}

static void
test_reply_only(void **state)
{
   (void) state;
   opmsg_msg_t msg;
   bson_error_t error;
   tu_buf_t b;
   /* OP_INSERT: flags, "a.b", one empty document. */
   static const uint8_t insert[] = {0, 0, 0, 0, 'a', '.', 'b', 0, 5, 0, 0, 0, 0};
   /* OP_QUERY: flags, "a.$cmd", skip, return, {}. */
   static const uint8_t query[] = {0, 0, 0, 0, 'a', '.', '$', 'c', 'm', 'd', 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0};
   /* OP_REPLY: flags, cursorID, startingFrom, numberReturned 1, {}. */
   static const uint8_t reply[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0};
   /* OP_COMPRESSED (noop) around OP_QUERY's bytes, then around an OP_MSG's. */
   uint8_t compressed[9 + sizeof query];
   static const uint8_t msg_payload[] = {0, 0, 0, 0, 0, 5, 0, 0, 0, 0};
   uint8_t compressed_msg[9 + sizeof msg_payload];

   /* Replies pass with or without the flag. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"ok\": 1}");
   tu_msg_end(&b);
   assert_accepts(&b, OPMSG_PARSE_REPLY);
   tu_buf_free(&b);
   put_message(&b, OPMSG_OP_REPLY, reply, sizeof reply);
   assert_accepts(&b, OPMSG_PARSE_REPLY);
   tu_buf_free(&b);

   /* Requests pass without it and fail with it, by name. */
   put_message(&b, OPMSG_OP_INSERT, insert, sizeof insert);
   assert_accepts(&b, 0);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_REPLY, OPMSG_ERR_NOT_A_REPLY);
   tu_buf_free(&b);
   put_message(&b, OPMSG_OP_QUERY, query, sizeof query);
   assert_accepts(&b, 0);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_REPLY, OPMSG_ERR_NOT_A_REPLY);
   /* The stream framer says so from the header alone. */
   {
      opmsg_options_t opts;
      size_t length;
      opmsg_options_init(&opts);
      opts.flags = OPMSG_PARSE_REPLY;
      assert_false(opmsg_frame_length(b.data, OPMSG_HEADER_SIZE, &opts, &length, &error));
      assert_int_equal(error.code, OPMSG_ERR_NOT_A_REPLY);
      assert_string_equal(opmsg_error_name(error.code), "not-a-reply");
   }
   tu_buf_free(&b);

   /* An OP_COMPRESSED reply must carry a reply (the wire's integers are
    * little-endian on every machine: opmsg_write_u32). */
   opmsg_write_u32(compressed, OPMSG_OP_QUERY);
   opmsg_write_u32(compressed + 4, (uint32_t) sizeof query);
   compressed[8] = OPMSG_COMPRESSOR_NOOP;
   memcpy(compressed + 9, query, sizeof query);
   put_message(&b, OPMSG_OP_COMPRESSED, compressed, sizeof compressed);
   assert_accepts(&b, 0);
   tu_assert_rejects(b.data, b.len, OPMSG_PARSE_REPLY, OPMSG_ERR_NOT_A_REPLY);
   tu_buf_free(&b);
   opmsg_write_u32(compressed_msg, OPMSG_OP_MSG);
   opmsg_write_u32(compressed_msg + 4, (uint32_t) sizeof msg_payload);
   compressed_msg[8] = OPMSG_COMPRESSOR_NOOP;
   memcpy(compressed_msg + 9, msg_payload, sizeof msg_payload);
   put_message(&b, OPMSG_OP_COMPRESSED, compressed_msg, sizeof compressed_msg);
   assert_accepts(&b, OPMSG_PARSE_REPLY);
   (void) msg;
   tu_buf_free(&b);
}

static void
test_error_messages(void **state)
{
   (void) state;
   bson_error_t error;
   opmsg_msg_t msg;
   tu_buf_t b;
   build_insert(&b, 1u << 5);
   assert_false(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_non_null(strstr(error.message, "offset 16"));
   assert_string_equal(opmsg_error_name(error.code), "required-flags");
   tu_buf_free(&b);
   /* Every code has a distinct name. */
   for (uint32_t i = 0; i < OPMSG_ERR_COUNT_; i++) {
      assert_string_not_equal(opmsg_error_name(i), "unknown");
      for (uint32_t j = 0; j < i; j++) {
         assert_string_not_equal(opmsg_error_name(i), opmsg_error_name(j));
      }
   }
   assert_string_equal(opmsg_error_name(OPMSG_ERR_COUNT_), "unknown");
   /* NULL arguments are refused, not dereferenced. */
   assert_false(opmsg_parse(NULL, 0, NULL, &msg, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
}

/* The section walkers (opmsg-msg.h) over a parsed message: the trusted
 * walk and the bounded step agree on every section, in wire order, with
 * the body among the sequences; the bounded step refuses a bad kind, a
 * size below 5 and one past the bytes. */
static void
test_section_walk(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;

   tu_buf_init(&b);
   tu_msg_begin(&b, OPMSG_FLAG_CHECKSUM_PRESENT);
   size_t mark = tu_msg_seq_begin(&b, "documents");
   tu_put_json_doc(&b, "{\"_id\": 1}");
   tu_put_json_doc(&b, "{\"_id\": 2}");
   tu_msg_seq_end(&b, mark);
   tu_msg_body(&b, "{\"insert\": \"c\", \"$db\": \"d\"}");
   mark = tu_msg_seq_begin(&b, "more");
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));

   const opmsg_op_msg_t *m = opmsg_msg_ccore(&msg);
   const uint8_t *p = opmsg_op_msg_sections(m);
   const uint8_t *end = m->data + m->sections_end;
   opmsg_section_t s[3];
   int n = 0;
   while (p < end) {
      assert_true(n < 3);
      size_t step = opmsg_section_frame(p, (size_t) (end - p));
      const uint8_t *next = opmsg_section_next(p, &s[n], OPMSG_SECTION_ANY);
      assert_int_equal(step, (size_t) (next - p));
      assert_ptr_equal(s[n].start, p);
      assert_ptr_equal(s[n].end, next);
      p = next;
      n++;
   }
   assert_int_equal(n, 3);
   assert_int_equal(s[0].kind, 1);
   assert_string_equal(s[0].identifier, "documents");
   assert_int_equal(s[0].identifier_len, 9);
   assert_ptr_equal(s[0].documents + s[0].documents_len, s[0].end);
   assert_int_equal(s[1].kind, 0);
   assert_ptr_equal(s[1].body, msg.body);
   assert_int_equal(s[1].body_len, msg.body_len);
   assert_int_equal(s[2].kind, 1);
   assert_string_equal(s[2].identifier, "more");
   assert_int_equal(s[2].documents_len, 0);
   /* The core's walk over the sequences alone: the body is skipped. */
   p = opmsg_op_msg_sections(m);
   assert_true(opmsg_op_msg_next_seq(m, &p, &s[0]));
   assert_string_equal(s[0].identifier, "documents");
   assert_int_equal(opmsg_op_msg_offset(m, &s[0]), 20);
   assert_true(opmsg_op_msg_next_seq(m, &p, &s[0]));
   assert_string_equal(s[0].identifier, "more");
   assert_false(opmsg_op_msg_next_seq(m, &p, &s[0]));

   /* The bounded step on bytes nobody checked. */
   uint8_t bad[8] = {2, 5, 0, 0, 0, 0, 0, 0};
   assert_int_equal(opmsg_section_frame(bad, sizeof bad), 0); /* kind 2 */
   bad[0] = 1;
   assert_int_equal(opmsg_section_frame(bad, sizeof bad), 6);
   assert_int_equal(opmsg_section_frame(bad, 5), 0); /* size past the bytes */
   assert_int_equal(opmsg_section_frame(bad, 4), 0); /* no room for a size */
   bad[1] = 4;
   assert_int_equal(opmsg_section_frame(bad, sizeof bad), 0); /* below 5 */
   tu_buf_free(&b);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_insert),
      cmocka_unit_test(test_header_bounds),
      cmocka_unit_test(test_flags),
      cmocka_unit_test(test_checksum),
      cmocka_unit_test(test_section_order),
      cmocka_unit_test(test_unknown_kind),
      cmocka_unit_test(test_identifier_clash),
      cmocka_unit_test(test_trailing_bytes),
      cmocka_unit_test(test_duplicate_keys),
      cmocka_unit_test(test_top_level_elements),
      /* Limits the caller sets, the direction, error names, section walkers. */
      cmocka_unit_test(test_size_limit),
      cmocka_unit_test(test_document_size_limits),
      cmocka_unit_test(test_request_db),
      cmocka_unit_test(test_reply_only),
      cmocka_unit_test(test_error_messages),
      cmocka_unit_test(test_section_walk),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
