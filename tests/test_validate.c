/*
 * test_validate.c - full validation (OPMSG_PARSE_FULL_VALIDATE), rule by rule.
 *
 * Each rule has documents that pass, here, at full validation and by
 * default. The documents that fail, one defect each inside a sub-document
 * (so that only the deep walk sees it: the top-level checks keep nested
 * documents opaque), are rows of tests/data/rules/cases.tsv, bson_* (their
 * code and offset at each check level: test_offsets.c). Here too: depth,
 * which a loop writes at length, the deep walk called directly, and the
 * documents of a sequence and of OP_QUERY. Documents are written as hex so
 * every byte is visible.
 */
#include "testutil.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Offset of the body document in a message built by msg_with_body(). */
#define BODY_OFFSET (OPMSG_HEADER_SIZE + 4 + 1)

/* Appends the bytes written as hex digits; spaces are ignored. */
static void
put_hex(tu_buf_t *b, const char *hex)
{
   int hi = -1;
   for (const char *s = hex; *s; s++) {
      if (isspace((unsigned char) *s)) {
         continue;
      }
      assert_true(isxdigit((unsigned char) *s));
      int v = isdigit((unsigned char) *s) ? *s - '0' : (tolower((unsigned char) *s) - 'a' + 10);
      if (hi < 0) {
         hi = v;
      } else {
         tu_put_u8(b, (uint8_t) (hi * 16 + v));
         hi = -1;
      }
   }
   assert_int_equal(hi, -1);
}

/* Writes a document holding the elements given as hex, with its length and
 * terminator filled in. */
static void
put_doc_hex(tu_buf_t *b, const char *elements_hex)
{
   size_t mark = b->len;
   tu_put_i32(b, 0);
   put_hex(b, elements_hex);
   tu_put_u8(b, 0);
   opmsg_write_u32(b->data + mark, (uint32_t) (b->len - mark));
}

/*
 * Builds {"ok": 1, "d": {<elements>}} in *doc: a body whose top level is
 * valid whatever the elements are, as long as their bytes fill the
 * sub-document (its length covers them exactly).
 */
static void
nested_doc(tu_buf_t *doc, const char *elements_hex)
{
   tu_buf_t inner;
   tu_buf_init(&inner);
   put_doc_hex(&inner, elements_hex);

   size_t mark = doc->len;
   tu_put_i32(doc, 0);
   put_hex(doc, "10 6F6B00 01000000"); /* "ok": int32 1 */
   put_hex(doc, "03 6400");            /* "d": document */
   tu_put(doc, inner.data, inner.len);
   tu_put_u8(doc, 0);
   opmsg_write_u32(doc->data + mark, (uint32_t) (doc->len - mark));
   tu_buf_free(&inner);
}

/* Wraps doc as the body of an OP_MSG. */
static void
msg_with_body(tu_buf_t *msg, const uint8_t *doc, size_t len)
{
   tu_msg_begin(msg, 0);
   tu_put_u8(msg, 0);
   tu_put(msg, doc, len);
   tu_msg_end(msg);
}

static bool
parse_doc(const uint8_t *doc, size_t len, uint32_t flags, bson_error_t *error)
{
   tu_buf_t msg;
   opmsg_options_t opts;
   opmsg_msg_t parsed;
   tu_buf_init(&msg);
   msg_with_body(&msg, doc, len);
   opmsg_options_init(&opts);
   opts.flags = flags;
   memset(error, 0, sizeof *error);
   bool ok = opmsg_parse(msg.data, msg.len, &opts, &parsed, error);
   tu_buf_free(&msg);
   return ok;
}

/* The nested elements pass full validation (and the default mode). */
static void
assert_nested_ok(const char *elements_hex)
{
   tu_buf_t doc;
   bson_error_t error;
   tu_buf_init(&doc);
   nested_doc(&doc, elements_hex);
   if (!parse_doc(doc.data, doc.len, OPMSG_PARSE_FULL_VALIDATE, &error)) {
      fail_msg("full validation rejected %s: %s", elements_hex, error.message);
   }
   assert_true(parse_doc(doc.data, doc.len, 0, &error));
   tu_buf_free(&doc);
}

/* ---------------------------------------------------------------------------
 * UTF-8
 * ------------------------------------------------------------------------- */

static void
test_utf8_strings(void **state)
{
   (void) state;
   /* "é" (2 bytes), U+20AC (3), U+1F600 (4), U+10FFFF, embedded NUL. */
   assert_nested_ok("02 6100 03000000 C3A9 00");
   assert_nested_ok("02 6100 04000000 E282AC 00");
   assert_nested_ok("02 6100 05000000 F09F9880 00");
   assert_nested_ok("02 6100 05000000 F48FBFBF 00");
   assert_nested_ok("02 6100 04000000 610062 00");
   /* Long ASCII (the 8-byte fast path); with a bad byte at its end, a lone
    * byte, overlong NUL and "/", surrogate, above U+10FFFF, continuation as
    * lead, truncated sequence, F5 lead: rules/cases.tsv bson_utf8_string_*. */
   assert_nested_ok("02 6100 12000000 6162636465666768696A6B6C6D6E6F7071 00");

   /* Code and symbol follow the string rules (bson_utf8_code, _symbol). */
   assert_nested_ok("0D 6100 03000000 C3A9 00");
   assert_nested_ok("0E 6100 03000000 C3A9 00");
}

/* Keys, nested and top-level, not UTF-8: bson_utf8_key_*. */
static void
test_utf8_keys(void **state)
{
   (void) state;
   assert_nested_ok("10 C3A900 01000000");
}

/* A pattern, options or namespace not UTF-8: bson_utf8_regex_*,
 * bson_utf8_dbpointer. */
static void
test_utf8_regex_and_dbpointer(void **state)
{
   (void) state;
   assert_nested_ok("0B 6100 C3A900 6900");
   assert_nested_ok("0C 6100 03000000 C3A900 56E1FC72E0C917E9C4714161");
}

/* ---------------------------------------------------------------------------
 * Booleans (2, ff, 80 in an array: bson_bool_*)
 * ------------------------------------------------------------------------- */

static void
test_boolean(void **state)
{
   (void) state;
   assert_nested_ok("08 6200 00");
   assert_nested_ok("08 6200 01");
   /* Inside an array too. */
   assert_nested_ok("04 6100 09000000 08 3000 01 00");
}

/* ---------------------------------------------------------------------------
 * Strings: lengths and terminator (0, -1, near INT32_MAX and INT32_MIN, the
 * last byte not 0, for strings, code and symbols: bson_string_*,
 * bson_code_no_nul, bson_symbol_no_nul)
 * ------------------------------------------------------------------------- */

static void
test_string_lengths(void **state)
{
   (void) state;
   assert_nested_ok("02 6100 01000000 00"); /* "" */
}

/* ---------------------------------------------------------------------------
 * Binary (a negative length, and subtype 2's inner length above, below,
 * negative or without room: bson_binary_*)
 * ------------------------------------------------------------------------- */

static void
test_binary(void **state)
{
   (void) state;
   assert_nested_ok("05 7800 00000000 00");
   assert_nested_ok("05 7800 03000000 80 616263");
   /* Subtype 2 repeats the length: it must be the outer length - 4. The
    * element walk itself refuses a wrong one (libbson's iterator stops at
    * it, so a merge would otherwise lose what follows), hence the framing
    * code rather than a value rule. */
   assert_nested_ok("05 7800 06000000 02 02000000 FFFF");
   assert_nested_ok("05 7800 04000000 02 00000000");
}

/* ---------------------------------------------------------------------------
 * code_w_scope (below the minimum of 14, the code's length too long or its
 * last byte not 0, the scope's length or terminator wrong, and the scope
 * validated like any document: bson_cws_*)
 * ------------------------------------------------------------------------- */

static void
test_code_w_scope(void **state)
{
   (void) state;
   /* total 14: int32, "" (5 bytes), {} (5 bytes). */
   assert_nested_ok("0F 6100 0E000000 01000000 00 05000000 00");
   assert_nested_ok("0F 6100 13000000 02000000 6100 09000000 08 7800 01 00");
}

/* ---------------------------------------------------------------------------
 * Regex, DBPointer, fixed sizes, unknown types (a DBPointer's namespace
 * without its NUL or its ObjectId cut short, types 0x14 and 0x80, a key
 * running into the terminator, a 0 type byte early: bson_dbpointer_*,
 * bson_type_*, bson_key_into_terminator)
 * ------------------------------------------------------------------------- */

static void
test_other_types(void **state)
{
   (void) state;
   /* Every fixed-size and empty type once. */
   assert_nested_ok("01 6100 000000000000F03F"
                    "06 6200"
                    "07 6300 56E1FC72E0C917E9C4714161"
                    "09 6400 0000000000000000"
                    "0A 6500"
                    "10 6600 01000000"
                    "11 6700 0100000002000000"
                    "12 6800 0100000000000000"
                    "13 6900 00000000000000000000000000004030"
                    "7F 6A00"
                    "FF 6B00");
   assert_nested_ok("0B 6100 616263 00 696D00");
   assert_nested_ok("0B 6100 00 00");
   assert_nested_ok("0C 6100 02000000 6200 56E1FC72E0C917E9C4714161");
}

/* ---------------------------------------------------------------------------
 * Nested documents' frames (a grandchild past its parent, of length
 * INT32_MAX or 4, an element leaking over its terminator, a last byte not 0:
 * bson_doc_child_*)
 * ------------------------------------------------------------------------- */

static void
test_nested_frames(void **state)
{
   (void) state;
   assert_nested_ok("03 6100 05000000 00");
   assert_nested_ok("04 6100 0C000000 10 3000 01000000 00");
}

/* ---------------------------------------------------------------------------
 * Depth
 * ------------------------------------------------------------------------- */

/* {"a": {"a": ... {} ...}} with `levels` nested documents (arrays when
 * use_array) below the top level. */
static void
deep_doc(tu_buf_t *out, unsigned levels, bool use_array)
{
   /* Document i (0 = the top) starts at 7 * i: its length, then the element
    * header of its only child (type, 1-byte key, NUL); the innermost empty
    * document follows, then every level's terminator (zeros from calloc). */
   size_t total = 5 + (size_t) levels * 8;
   uint8_t *buf = calloc(1, total);
   assert_non_null(buf);
   for (size_t i = 0; i < levels; i++) {
      uint8_t *d = buf + 7 * i;
      opmsg_write_u32(d, (uint32_t) (5 + 8 * (levels - i)));
      d[4] = use_array ? 0x04 : 0x03;
      d[5] = use_array ? '0' : 'a';
   }
   opmsg_write_u32(buf + 7 * (size_t) levels, 5);
   tu_put(out, buf, total);
   free(buf);
}

static void
test_depth(void **state)
{
   (void) state;
   bson_error_t error;
   for (int arr = 0; arr < 2; arr++) {
      tu_buf_t ok, bad;
      tu_buf_init(&ok);
      tu_buf_init(&bad);
      deep_doc(&ok, OPMSG_MAX_DEPTH, arr);
      deep_doc(&bad, OPMSG_MAX_DEPTH + 1, arr);

      /* libbson agrees that both are well-formed BSON. */
      bson_t b;
      assert_true(bson_init_static(&b, ok.data, ok.len));
      assert_true(bson_validate(&b, BSON_VALIDATE_NONE, NULL));

      if (!parse_doc(ok.data, ok.len, OPMSG_PARSE_FULL_VALIDATE, &error)) {
         fail_msg("depth %d rejected: %s", OPMSG_MAX_DEPTH, error.message);
      }
      assert_false(parse_doc(bad.data, bad.len, OPMSG_PARSE_FULL_VALIDATE, &error));
      assert_int_equal(error.code, OPMSG_ERR_NESTING_TOO_DEEP);
      /* The 101st document starts 7 bytes per level into the body. */
      char want[48];
      snprintf(want, sizeof want, "offset %d", BODY_OFFSET + 7 * (OPMSG_MAX_DEPTH + 1));
      if (!strstr(error.message, want)) {
         fail_msg("message \"%s\" lacks \"%s\"", error.message, want);
      }
      /* The default mode does not descend. */
      assert_true(parse_doc(bad.data, bad.len, 0, &error));
      tu_buf_free(&ok);
      tu_buf_free(&bad);
   }

   /* Hostile depth: 100,000 levels, rejected without recursion. */
   tu_buf_t huge;
   tu_buf_init(&huge);
   deep_doc(&huge, 100000, false);
   assert_false(parse_doc(huge.data, huge.len, OPMSG_PARSE_FULL_VALIDATE, &error));
   assert_int_equal(error.code, OPMSG_ERR_NESTING_TOO_DEEP);
   tu_buf_free(&huge);
}

/* A code_w_scope's scope is one more level. */
static void
test_depth_code_w_scope(void **state)
{
   (void) state;
   for (unsigned extra = 0; extra < 2; extra++) {
      /* The scope at level L holds a document chain of OPMSG_MAX_DEPTH - L
       * (+ extra) levels; L = 1 (the scope is inside the body). */
      tu_buf_t chain, doc;
      tu_buf_init(&chain);
      tu_buf_init(&doc);
      deep_doc(&chain, OPMSG_MAX_DEPTH - 1 + extra, false);
      size_t mark = doc.len;
      tu_put_i32(&doc, 0);
      put_hex(&doc, "0F 6300");
      tu_put_i32(&doc, (int32_t) (4 + 5 + chain.len));
      put_hex(&doc, "01000000 00");
      tu_put(&doc, chain.data, chain.len);
      tu_put_u8(&doc, 0);
      opmsg_write_u32(doc.data + mark, (uint32_t) (doc.len - mark));

      bson_error_t error;
      bool ok = parse_doc(doc.data, doc.len, OPMSG_PARSE_FULL_VALIDATE, &error);
      if (extra == 0 && !ok) {
         fail_msg("scope at depth %d rejected: %s", OPMSG_MAX_DEPTH, error.message);
      }
      if (extra == 1) {
         assert_false(ok);
         assert_int_equal(error.code, OPMSG_ERR_NESTING_TOO_DEEP);
      }
      tu_buf_free(&chain);
      tu_buf_free(&doc);
   }
}

/* ---------------------------------------------------------------------------
 * The internal entry point, and every kind of document the parser hands it
 * ------------------------------------------------------------------------- */

static void
test_direct_call(void **state)
{
   (void) state;
   tu_buf_t doc;
   bson_error_t error;
   opmsg_report_t r;
   tu_buf_init(&doc);
   put_doc_hex(&doc, "03 6400 09000000 08 6200 02 00");
   /* The report's start offset shifts every offset in the message. */
   opmsg_report_init(&r, &error, doc.data, 1000, &opmsg_parser_side);
   assert_false(opmsg_doc_validate_deep(&r, doc.data, (uint32_t) doc.len, "test document"));
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_int_equal(error.code, OPMSG_ERR_INVALID_BOOLEAN);
   assert_int_equal(r.code, OPMSG_ERR_INVALID_BOOLEAN);
   assert_int_equal(r.offset, 1011);
   assert_non_null(strstr(error.message, "test document"));
   assert_non_null(strstr(error.message, "offset 1011"));
   /* A NULL error is allowed: the fault is still data. */
   opmsg_report_init(&r, NULL, doc.data, 0, &opmsg_parser_side);
   assert_false(opmsg_doc_validate_deep(&r, doc.data, (uint32_t) doc.len, "x"));
   assert_int_equal(r.code, OPMSG_ERR_INVALID_BOOLEAN);
   assert_int_equal(r.offset, 11);
   tu_buf_free(&doc);

   tu_buf_init(&doc);
   put_doc_hex(&doc, "");
   opmsg_report_init(&r, &error, doc.data, 0, &opmsg_parser_side);
   assert_true(opmsg_doc_validate_deep(&r, doc.data, (uint32_t) doc.len, "x"));
   /* Fewer bytes than any document (the parser never passes this). */
   assert_false(opmsg_doc_validate_deep(&r, doc.data, 4, "x"));
   assert_int_equal(error.code, OPMSG_ERR_DOCUMENT_LENGTH);
   /* No terminator (nor does it): the walk would have no end mark. */
   doc.data[4] = 1;
   assert_false(opmsg_doc_validate_deep(&r, doc.data, 5, "x"));
   assert_int_equal(error.code, OPMSG_ERR_DOCUMENT_TERMINATOR);
   assert_int_equal(r.offset, 4);
   tu_buf_free(&doc);
}

/* Sequence documents are validated in full mode too. */
static void
test_sequence_documents(void **state)
{
   (void) state;
   /* A nested boolean 7 in a sequence document: rules/cases.tsv
    * lvl_seq_nested_bool. Its 1 passes, and merges. */
   tu_buf_t msg;
   tu_buf_init(&msg);
   tu_msg_begin(&msg, 0);
   tu_msg_body(&msg, "{\"insert\": \"c\", \"$db\": \"d\"}");
   size_t mark = tu_msg_seq_begin(&msg, "documents");
   tu_put_json_doc(&msg, "{\"x\": 1}");
   put_doc_hex(&msg, "03 6100 09000000 08 6200 01 00");
   tu_msg_seq_end(&msg, mark);
   tu_msg_end(&msg);
   char *json = tu_merge_json(msg.data, msg.len, OPMSG_PARSE_FULL_VALIDATE);
   bson_free(json);
   /* The default mode too. */
   opmsg_options_t opts;
   opmsg_msg_t parsed;
   bson_error_t error;
   opmsg_options_init(&opts);
   assert_true(opmsg_parse(msg.data, msg.len, &opts, &parsed, &error));
   assert_int_equal(parsed.n_sequences, 1);
   tu_buf_free(&msg);
}

/* An OP_QUERY's query document is validated in full mode too. */
static void
test_legacy_query_document(void **state)
{
   (void) state;
   for (int bad = 0; bad < 2; bad++) {
      tu_buf_t msg;
      tu_buf_init(&msg);
      tu_put_i32(&msg, 0);
      tu_put_i32(&msg, 1);
      tu_put_i32(&msg, 0);
      tu_put_i32(&msg, OPMSG_OP_QUERY);
      tu_put_i32(&msg, 0);
      tu_put_cstr(&msg, "admin.$cmd");
      tu_put_i32(&msg, 0);
      tu_put_i32(&msg, -1);
      put_doc_hex(&msg, bad ? "10 69734D617374657200 01000000"
                              "03 6100 09000000 08 6200 07 00"
                            : "10 69734D617374657200 01000000"
                              "03 6100 09000000 08 6200 01 00");
      opmsg_write_u32(msg.data, (uint32_t) msg.len);

      opmsg_options_t opts;
      opmsg_msg_t parsed;
      bson_error_t error;
      opmsg_options_init(&opts);
      assert_true(opmsg_parse(msg.data, msg.len, &opts, &parsed, &error));
      opts.flags = OPMSG_PARSE_FULL_VALIDATE;
      bool ok = opmsg_parse(msg.data, msg.len, &opts, &parsed, &error);
      if (bad) {
         assert_false(ok);
         assert_int_equal(error.code, OPMSG_ERR_INVALID_BOOLEAN);
      } else if (!ok) {
         fail_msg("valid OP_QUERY rejected: %s", error.message);
      }
      tu_buf_free(&msg);
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_utf8_strings),
      cmocka_unit_test(test_utf8_keys),
      cmocka_unit_test(test_utf8_regex_and_dbpointer),
      cmocka_unit_test(test_boolean),
      cmocka_unit_test(test_string_lengths),
      cmocka_unit_test(test_binary),
      cmocka_unit_test(test_code_w_scope),
      cmocka_unit_test(test_other_types),
      cmocka_unit_test(test_nested_frames),
      cmocka_unit_test(test_depth),
      cmocka_unit_test(test_depth_code_w_scope),
      cmocka_unit_test(test_direct_call),
      cmocka_unit_test(test_sequence_documents),
      cmocka_unit_test(test_legacy_query_document),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
