/*
 * test_check.c - the check levels (opmsg_options_t.check): what each level
 * refuses, what it lets through, and what holds at every level.
 *
 * Each test builds one message with one fault and states, level by level,
 * whether opmsg_parse() accepts it and with which code it refuses it. What
 * a lower level lets through must still merge, view and iterate safely:
 * the merged document is framed, the view stops where libbson's iterator
 * stops, nothing is read out of bounds (the asan build runs this file too).
 * A fault's verdict per level alone, for one reply, is a row of
 * tests/data/rules/cases.tsv (test_offsets.c): the frame faults every level
 * refuses (seq_doc_overrun, seq_doc_no_terminator, doc_body_length_past,
 * id_clash_field) are there.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* In the order of what they check: spec frames the documents (the
 * default, 0), top-level reads their top-level elements, full every
 * element. */
static const opmsg_check_t levels[] = {OPMSG_CHECK_SPEC, OPMSG_CHECK_TOP_LEVEL, OPMSG_CHECK_FULL};
#define N_LEVELS (sizeof levels / sizeof levels[0])

/* Parses at a level; returns the error code (OPMSG_OK on success). */
static uint32_t
parse_at(const tu_buf_t *b, opmsg_check_t check, uint32_t flags, opmsg_msg_t *msg)
{
   opmsg_options_t opts;
   bson_error_t error;
   opmsg_msg_t local;
   opmsg_options_init(&opts);
   opts.check = check;
   opts.flags = flags;
   if (opmsg_parse(b->data, b->len, &opts, msg ? msg : &local, &error)) {
      return OPMSG_OK;
   }
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   return error.code;
}

/* Parses at the level that only frames documents, spec, given as
 * opmsg_options_init() gives it and as a zeroed opmsg_options_t gives it:
 * asserts the two agree, and returns their code (msg, when not NULL, from
 * the first). */
static uint32_t
parse_low(const tu_buf_t *b, uint32_t flags, opmsg_msg_t *msg)
{
   uint32_t spec = parse_at(b, OPMSG_CHECK_SPEC, flags, msg);
   opmsg_options_t zeroed;
   opmsg_msg_t local;
   bson_error_t error;
   memset(&zeroed, 0, sizeof zeroed);
   zeroed.flags = flags;
   uint32_t zero = opmsg_parse(b->data, b->len, &zeroed, &local, &error) ? OPMSG_OK : error.code;
   assert_int_equal(zero, spec);
   return spec;
}

/* What a level let through still merges to a framed document of the size
 * promised, with at most two allocations for merge_bson (the bson_t and its
 * bytes), and the view walks it. */
static void
assert_merges_framed(const opmsg_msg_t *msg)
{
   bson_error_t error;
   size_t size = opmsg_merged_size(msg);
   uint8_t *buf = bson_malloc(size);
   size_t written = 0;
   assert_true(opmsg_merge_into(msg, buf, size, &written, &error));
   assert_int_equal(written, size);
   assert_int_equal(opmsg_read_u32(buf), size);
   assert_int_equal(buf[size - 1], 0);

   tu_count_allocs_begin();
   bson_t *b = opmsg_merge_bson(msg, &error);
   size_t allocs = tu_count_allocs_end();
   assert_true(allocs >= 1 && allocs <= 2);
   assert_non_null(b);
   assert_int_equal(b->len, size);
   assert_memory_equal(bson_get_data(b), buf, size);
   bson_destroy(b);

   /* The view visits fields until libbson's iterator meets the fault. */
   opmsg_view_t v;
   opmsg_field_t f;
   assert_true(opmsg_view_init(&v, msg));
   int guard = 0;
   while (opmsg_view_next(&v, &f) && guard < 1000) {
      guard++;
   }
   bson_free(buf);
}

/* A document whose frame is sound but whose second element has the type
 * byte 0x42, which BSON does not define. */
static void
put_bad_element_doc(tu_buf_t *b)
{
   uint8_t doc[] = {0,    0,   0, 0,                /* length, set below */
                    0x10, 'a', 0, 1, 0, 0, 0,       /* a: int32 1 */
                    0x42, 'b', 0, 0, 0, 0, 0, 0, 0, /* b: type 0x42 */
                    0};
   opmsg_write_u32(doc, sizeof doc);
   tu_put(b, doc, sizeof doc);
}

/* {"s": "\xff"}: a string that is not UTF-8, nested one level down. */
static void
put_nested_bad_utf8_doc(tu_buf_t *b)
{
   uint8_t doc[] = {0,  0, 0, 0, 0x03, 'n', 0,                         /* n: { */
                    14, 0, 0, 0, 0x02, 's', 0, 2, 0, 0, 0, 0xff, 0, 0, /* s: "\xff" } */
                    0};
   opmsg_write_u32(doc, sizeof doc);
   tu_put(b, doc, sizeof doc);
}

/* An insert into d.c whose "documents" sequence the caller fills: returns
 * the mark for tu_msg_seq_end(). */
static size_t
insert_begin(tu_buf_t *b)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_msg_body(b, "{\"insert\": \"c\", \"$db\": \"d\"}");
   return tu_msg_seq_begin(b, "documents");
}

static void
test_names(void **state)
{
   (void) state;
   opmsg_check_t c = (opmsg_check_t) 99;
   assert_string_equal(opmsg_check_name(OPMSG_CHECK_SPEC), "spec");
   assert_string_equal(opmsg_check_name(OPMSG_CHECK_TOP_LEVEL), "top-level");
   assert_string_equal(opmsg_check_name(OPMSG_CHECK_FULL), "full");
   /* The values are the ABI (0.5.0): one value a level, in the order of
    * what they check, 0 the default. */
   assert_int_equal(OPMSG_CHECK_SPEC, 0);
   assert_int_equal(OPMSG_CHECK_TOP_LEVEL, 1);
   assert_int_equal(OPMSG_CHECK_FULL, 2);
   assert_null(opmsg_check_name((opmsg_check_t) 3));
   assert_null(opmsg_check_name((opmsg_check_t) -1));
   for (size_t i = 0; i < N_LEVELS; i++) {
      assert_true(opmsg_check_from_name(opmsg_check_name(levels[i]), &c));
      assert_int_equal(c, levels[i]);
   }
   c = OPMSG_CHECK_FULL;
   /* 0.4's second name for spec's checks is gone. */
   assert_false(opmsg_check_from_name("frames", &c));
   assert_false(opmsg_check_from_name("Frames", &c));
   assert_false(opmsg_check_from_name("top_level", &c));
   assert_false(opmsg_check_from_name("Spec", &c));
   assert_false(opmsg_check_from_name("", &c));
   assert_false(opmsg_check_from_name(NULL, &c));
   assert_int_equal(c, OPMSG_CHECK_FULL); /* unchanged on failure */

   opmsg_options_t opts;
   memset(&opts, 0xff, sizeof opts);
   opmsg_options_init(&opts);
   assert_int_equal(opts.check, OPMSG_CHECK_SPEC);
   /* What the default is, a zeroed opmsg_options_t is. */
   opmsg_options_t zeroed;
   memset(&zeroed, 0, sizeof zeroed);
   assert_memory_equal(&zeroed, &opts, sizeof opts);
}

static void
test_unknown_level_refused(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
   tu_msg_end(&b);
   assert_int_equal(parse_at(&b, (opmsg_check_t) 3, 0, NULL), OPMSG_ERR_INVALID_ARGUMENT);
   assert_int_equal(parse_at(&b, (opmsg_check_t) 4, 0, NULL), OPMSG_ERR_INVALID_ARGUMENT);
   assert_int_equal(parse_at(&b, (opmsg_check_t) -1, 0, NULL), OPMSG_ERR_INVALID_ARGUMENT);
   for (size_t i = 0; i < N_LEVELS; i++) {
      assert_int_equal(parse_at(&b, levels[i], 0, NULL), OPMSG_OK);
   }
   tu_buf_free(&b);
}

/* The level's central difference: a sequence document's top level. */
static void
test_sequence_document_element(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   size_t mark = insert_begin(&b);
   tu_put_json_doc(&b, "{\"_id\": 1}");
   put_bad_element_doc(&b);
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);

   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_FULL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_int_equal(parse_low(&b, 0, NULL), OPMSG_OK);
   assert_int_equal(parse_low(&b, OPMSG_PARSE_FULL_VALIDATE, NULL),
                    OPMSG_ERR_DOCUMENT_ELEMENT); /* the flag means full */

   assert_int_equal(parse_low(&b, OPMSG_PARSE_REQUEST, &msg), OPMSG_OK);
   assert_int_equal(msg.n_sequences, 1);
   assert_string_equal(opmsg_db(&msg, NULL), "d");
   assert_merges_framed(&msg);

   /* The sequence's documents are carried whole, the bad one included. */
   opmsg_sequence_t seq;
   assert_true(opmsg_sequence_find(&msg, "documents", &seq));
   assert_int_equal(seq.count, 2);
   tu_buf_free(&b);
}

/* A body alone is only framed at the spec level: a bad element and a
 * duplicate key pass, and what reads the body stays in bounds. */
static void
test_body_alone(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;

   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   put_bad_element_doc(&b);
   tu_msg_end(&b);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_FULL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_int_equal(parse_low(&b, 0, &msg), OPMSG_OK);
   assert_string_equal(opmsg_command_name(&msg), "a");
   assert_null(opmsg_db(&msg, NULL)); /* the iterator stops at the fault */
   assert_merges_framed(&msg);
   /* A request must name its database: the lookup works at this level. */
   assert_int_equal(parse_low(&b, OPMSG_PARSE_REQUEST, NULL), OPMSG_ERR_MISSING_DB);
   tu_buf_free(&b);

   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"find\": \"c\", \"find\": \"d\", \"$db\": \"x\"}");
   tu_msg_end(&b);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DUPLICATE_KEY);
   assert_int_equal(parse_low(&b, OPMSG_PARSE_REQUEST, &msg), OPMSG_OK);
   uint32_t len = 0;
   assert_string_equal(opmsg_db(&msg, &len), "x");
   assert_int_equal(len, 1);
   bson_t *m = opmsg_merge_bson(&msg, &error);
   assert_non_null(m);
   assert_int_equal(m->len, msg.body_len);
   bson_destroy(m);
   tu_buf_free(&b);
}

/* With sequences, the spec level walks the body's top level (checked) to
 * find the identifiers' fields, but does not look for duplicate keys except
 * on a dotted path, where a key twice would leave two places. With a few
 * identifiers the walk looks for each; with many, a key set holds the
 * body's keys: the answers are the same. */
static void
add_sequences(tu_buf_t *b, const char *first, int n)
{
   size_t mark = tu_msg_seq_begin(b, first);
   tu_put_json_doc(b, "{\"_id\": 1}");
   tu_msg_seq_end(b, mark);
   for (int i = 1; i < n; i++) {
      char id[16];
      snprintf(id, sizeof id, "extra%d", i);
      mark = tu_msg_seq_begin(b, id);
      tu_msg_seq_end(b, mark);
   }
}

static void
test_body_with_sequences(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;

   for (int n = 1; n <= 12; n += 11) {
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      tu_msg_body(&b, "{\"insert\": \"c\", \"insert\": \"d\", \"$db\": \"x\"}");
      add_sequences(&b, "documents", n);
      tu_msg_end(&b);
      assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DUPLICATE_KEY);
      assert_int_equal(parse_at(&b, OPMSG_CHECK_FULL, 0, NULL), OPMSG_ERR_DUPLICATE_KEY);
      assert_int_equal(parse_low(&b, OPMSG_PARSE_REQUEST, &msg), OPMSG_OK);
      assert_string_equal(opmsg_db(&msg, NULL), "x");
      assert_merges_framed(&msg);
      tu_buf_free(&b);

      /* The clash found past a duplicate, a dotted path's first component
       * twice (no single place), and a bad element with no clash before it,
       * with 1 and 12 sequences: rules/cases.tsv id_clash_past_dup,
       * id_clash_ambiguous_top, doc_body_bad_element_seq and their _keyset
       * rows. */

      /* Two faults, a clash on the first key and a bad element after it:
       * refused for one of them (the walk for one identifier stops at the
       * clash, the key set's walk at the element). */
      tu_buf_init(&b);
      tu_msg_begin(&b, 0);
      tu_put_u8(&b, 0);
      put_bad_element_doc(&b);
      add_sequences(&b, "a", n);
      tu_msg_end(&b);
      uint32_t code = parse_low(&b, 0, NULL);
      assert_true(code == OPMSG_ERR_IDENTIFIER_CLASH || code == OPMSG_ERR_DOCUMENT_ELEMENT);
      tu_buf_free(&b);
   }
   /* The sequence before the body, so the walk waits for the body:
    * rules/cases.tsv doc_body_bad_element_seq_first. */
}

/* The nested level: only full looks inside. */
static void
test_nested(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;

   size_t mark = insert_begin(&b);
   put_nested_bad_utf8_doc(&b);
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   assert_int_equal(parse_low(&b, 0, NULL), OPMSG_OK);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, &msg), OPMSG_OK);
   assert_merges_framed(&msg);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_FULL, 0, NULL), OPMSG_ERR_INVALID_UTF8);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, OPMSG_PARSE_FULL_VALIDATE, NULL), OPMSG_ERR_INVALID_UTF8);
   tu_buf_free(&b);
   /* In the body too: rules/cases.tsv lvl_body_nested_utf8. */
}

/* OP_QUERY and OP_REPLY check their documents to the same level. */
static void
test_legacy_levels(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;

   /* OP_QUERY: header, flags, namespace, skip, return, the query. */
   tu_buf_init(&b);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, OPMSG_OP_QUERY);
   tu_put_i32(&b, 0);
   tu_put_cstr(&b, "admin.$cmd");
   tu_put_i32(&b, 0);
   tu_put_i32(&b, -1);
   put_bad_element_doc(&b);
   opmsg_write_u32(b.data, (uint32_t) b.len);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_int_equal(parse_low(&b, 0, &msg), OPMSG_OK);
   assert_merges_framed(&msg);
   tu_buf_free(&b);

   /* OP_REPLY: header, responseFlags, cursorID, startingFrom,
    * numberReturned, the documents. */
   tu_buf_init(&b);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, OPMSG_OP_REPLY);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 1);
   put_nested_bad_utf8_doc(&b);
   opmsg_write_u32(b.data, (uint32_t) b.len);
   assert_int_equal(parse_low(&b, 0, NULL), OPMSG_OK);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_OK);
   assert_int_equal(parse_at(&b, OPMSG_CHECK_FULL, 0, NULL), OPMSG_ERR_INVALID_UTF8);
   tu_buf_free(&b);
}

/* The levels change what is checked, never the result of what passes: a
 * sound message merges to the same bytes at every level. */
static void
test_same_result(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"cursor\": {\"id\": 0, \"ns\": \"d.c\"}, \"ok\": 1}");
   size_t mark = tu_msg_seq_begin(&b, "cursor.firstBatch");
   tu_put_json_doc(&b, "{\"_id\": 1, \"s\": \"x\"}");
   tu_put_json_doc(&b, "{\"_id\": 2, \"n\": {\"a\": [1, 2]}}");
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   char *want = tu_merge_json(b.data, b.len, 0);
   for (size_t i = 0; i < N_LEVELS; i++) {
      opmsg_msg_t msg;
      bson_error_t error;
      assert_int_equal(parse_at(&b, levels[i], 0, &msg), OPMSG_OK);
      bson_t *m = opmsg_merge_bson(&msg, &error);
      assert_non_null(m);
      char *got = bson_as_canonical_extended_json(m, NULL);
      assert_string_equal(got, want);
      bson_free(got);
      bson_destroy(m);
   }
   bson_free(want);
   tu_buf_free(&b);
}

/* The default: NULL options, opmsg_options_init() and a zeroed
 * opmsg_options_t (0, since 0.5.0) are the spec level; top-level is asked
 * for. */
static void
test_default_is_spec(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_t zeroed;
   memset(&zeroed, 0, sizeof zeroed);

   /* A key twice in a body alone: allowed by the spec. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"find\": \"c\", \"find\": \"d\", \"$db\": \"x\"}");
   tu_msg_end(&b);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_int_equal(parse_at(&b, OPMSG_CHECK_SPEC, 0, NULL), OPMSG_OK);
   assert_true(opmsg_parse(b.data, b.len, &zeroed, &msg, &error));
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DUPLICATE_KEY);
   tu_buf_free(&b);

   /* Beside a sequence, the same; an identifier naming a body field is not. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"insert\": \"c\", \"insert\": \"d\", \"$db\": \"x\"}");
   add_sequences(&b, "documents", 1);
   tu_msg_end(&b);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   tu_buf_free(&b);
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"insert\": \"c\", \"documents\": [], \"$db\": \"x\"}");
   add_sequences(&b, "documents", 1);
   tu_msg_end(&b);
   assert_false(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_int_equal(error.code, OPMSG_ERR_IDENTIFIER_CLASH);
   tu_buf_free(&b);

   /* A sequence document's elements are not read by default. */
   size_t mark = insert_begin(&b);
   put_bad_element_doc(&b);
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_true(opmsg_parse(b.data, b.len, &zeroed, &msg, &error));
   assert_int_equal(parse_at(&b, OPMSG_CHECK_TOP_LEVEL, 0, NULL), OPMSG_ERR_DOCUMENT_ELEMENT);
   tu_buf_free(&b);
}

/* A body alone takes a short way at the spec level (header.c's
 * parse_alone()); a request (which must name its database) the whole one.
 * Both leave the same opmsg_msg_t, and the same merge. */
static void
test_body_alone_both_ways(void **state)
{
   (void) state;
   static const uint32_t flag_sets[] = {0, OPMSG_FLAG_MORE_TO_COME, OPMSG_FLAG_EXHAUST_ALLOWED, 0x00800000u};
   for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
      tu_buf_t b;
      opmsg_msg_t fast, whole;
      tu_buf_init(&b);
      tu_msg_begin(&b, flag_sets[f]);
      tu_msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
      tu_msg_end(&b);
      opmsg_write_u32(b.data + 4, 77);  /* requestID */
      opmsg_write_u32(b.data + 8, 909); /* responseTo */
      for (size_t l = 0; l < 2; l++) {
         assert_int_equal(parse_at(&b, levels[l], 0, &fast), OPMSG_OK);
         assert_int_equal(parse_at(&b, levels[l], OPMSG_PARSE_REQUEST, &whole), OPMSG_OK);
         assert_ptr_equal(fast.data, whole.data);
         assert_int_equal(fast.len, whole.len);
         assert_int_equal(fast.message_length, (int32_t) b.len);
         assert_int_equal(fast.request_id, 77);
         assert_int_equal(fast.response_to, 909);
         assert_int_equal(fast.opcode, OPMSG_OP_MSG);
         assert_int_equal(fast.flags, flag_sets[f]);
         assert_int_equal(fast.flags, whole.flags);
         assert_false(fast.checksum_present);
         assert_int_equal(fast.checksum, 0);
         assert_ptr_equal(fast.body, b.data + 21);
         assert_ptr_equal(fast.body, whole.body);
         assert_int_equal(fast.body_len, whole.body_len);
         assert_int_equal(fast.n_sequences, 0);
         /* The other opcodes' union is zero on both ways. */
         assert_memory_equal(&fast.op_reply, &whole.op_reply, sizeof fast.op_reply);
         assert_null(fast.op_reply.documents);
         assert_int_equal(fast.op_reply.cursor_id, 0);
         assert_memory_equal(fast.priv_, whole.priv_, sizeof fast.priv_);
         assert_string_equal(opmsg_db(&fast, NULL), "admin");
         assert_string_equal(opmsg_command_name(&fast), "ping");
         assert_merges_framed(&fast);
      }
      tu_buf_free(&b);
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_unknown_level_refused),
      cmocka_unit_test(test_sequence_document_element),
      cmocka_unit_test(test_body_alone),
      cmocka_unit_test(test_body_with_sequences),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_legacy_levels),
      cmocka_unit_test(test_same_result),
      cmocka_unit_test(test_default_is_spec),
      cmocka_unit_test(test_body_alone_both_ways),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
