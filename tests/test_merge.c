/*
 * test_merge.c - the flat merger and the zero-copy view.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* Parses data, merges it three ways (bson_t, caller buffer, view) and
 * checks that all agree and pass bson_validate. Returns the bson_t. */
static bson_t *
merge_all_ways(const uint8_t *data, size_t len)
{
   opmsg_msg_t msg;
   bson_error_t error;
   if (!opmsg_parse(data, len, NULL, &msg, &error)) {
      fail_msg("parse: %s: %s", opmsg_error_name(error.code), error.message);
   }
   size_t size = opmsg_merged_size(&msg);
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   assert_non_null(merged);
   assert_int_equal(merged->len, size);
   size_t off;
   assert_true(bson_validate(merged, BSON_VALIDATE_NONE, &off));

   uint8_t *buf = malloc(size + 1);
   size_t written = 0;
   assert_false(opmsg_merge_into(&msg, buf, size - 1, &written, &error));
   assert_int_equal(error.code, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_true(opmsg_merge_into(&msg, buf, size + 1, &written, &error));
   assert_int_equal(written, size);
   assert_memory_equal(buf, bson_get_data(merged), size);
   free(buf);

   if (msg.opcode == OPMSG_OP_MSG) {
      bson_t rebuilt;
      tu_view_to_bson(&msg, &rebuilt);
      assert_int_equal(rebuilt.len, merged->len);
      assert_memory_equal(bson_get_data(&rebuilt), bson_get_data(merged), merged->len);
      bson_destroy(&rebuilt);
   }
   return merged;
}

static void
test_seed_vectors(void **state)
{
   (void) state;
   const char *names[] = {"flat", "deep", "seq"};
   for (size_t i = 0; i < 3; i++) {
      char path[64];
      size_t len, want_len;
      snprintf(path, sizeof path, "seed/%s.bin", names[i]);
      uint8_t *data = tu_read_file(path, &len);
      snprintf(path, sizeof path, "seed/%s.merged.bson", names[i]);
      uint8_t *want = tu_read_file(path, &want_len);
      bson_t *merged = merge_all_ways(data, len);
      assert_int_equal(merged->len, want_len);
      assert_memory_equal(bson_get_data(merged), want, want_len);
      bson_destroy(merged);
      free(data);
      free(want);
   }
}

/* Builds body + sequences given as (identifier, JSON docs separated by |). */
static void
build(tu_buf_t *b, const char *body, const char *const *seqs, size_t n)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_msg_body(b, body);
   for (size_t i = 0; i < n; i += 2) {
      size_t m = tu_msg_seq_begin(b, seqs[i]);
      char *docs = bson_strdup(seqs[i + 1]);
      char *d = docs;
      while (*d) {
         char *bar = strchr(d, '|');
         if (bar) {
            *bar = '\0';
         }
         tu_put_json_doc(b, d);
         d = bar ? bar + 1 : d + strlen(d);
      }
      bson_free(docs);
      tu_msg_seq_end(b, m);
   }
   tu_msg_end(b);
}

static void
assert_merges_to(const char *body, const char *const *seqs, size_t n, const char *want_json)
{
   tu_buf_t b;
   bson_error_t error;
   build(&b, body, seqs, n);
   bson_t *merged = merge_all_ways(b.data, b.len);
   bson_t *want = bson_new_from_json((const uint8_t *) want_json, -1, &error);
   assert_non_null(want);
   if (!bson_equal(merged, want)) {
      char *got = bson_as_relaxed_extended_json(merged, NULL);
      fail_msg("merged to %s, want %s", got, want_json);
   }
   bson_destroy(want);
   bson_destroy(merged);
   tu_buf_free(&b);
}

static void
test_top_level_sequences(void **state)
{
   (void) state;
   const char *s1[] = {"documents", "{\"a\": 1}|{\"b\": {\"c\": [1, 2]}}"};
   assert_merges_to("{\"insert\": \"c\", \"$db\": \"d\"}", s1, 2,
                    "{\"insert\": \"c\", \"$db\": \"d\", \"documents\": [{\"a\": 1}, {\"b\": {\"c\": [1, 2]}}]}");
   /* Several sequences keep wire order; an empty one is an empty array. */
   const char *s2[] = {"ops", "{\"i\": 1}", "nsInfo", "{\"ns\": \"d.c\"}", "empty", ""};
   assert_merges_to("{\"bulkWrite\": 1}", s2, 6,
                    "{\"bulkWrite\": 1, \"ops\": [{\"i\": 1}], \"nsInfo\": [{\"ns\": \"d.c\"}], \"empty\": []}");
}

static void
test_dotted_paths(void **state)
{
   (void) state;
   /* cursor.firstBatch goes inside the body's cursor, after its fields. */
   const char *s1[] = {"cursor.firstBatch", "{\"_id\": 1}|{\"_id\": 2}"};
   assert_merges_to(
      "{\"cursor\": {\"id\": 0, \"ns\": \"d.c\"}, \"ok\": 1}", s1, 2,
      "{\"cursor\": {\"id\": 0, \"ns\": \"d.c\", \"firstBatch\": [{\"_id\": 1}, {\"_id\": 2}]}, \"ok\": 1}");
   /* Two paths into one body sub-document, in wire order; a top-level
    * sequence between them goes to the top. (A path whose parent the body
    * lacks is refused: test_parse.c test_identifier_clash.) */
   const char *s2[] = {"a.x", "{\"i\": 1}", "top", "{\"t\": 1}", "a.y", "{\"i\": 2}"};
   assert_merges_to("{\"cmd\": 1, \"a\": {}}", s2, 6,
                    "{\"cmd\": 1, \"a\": {\"x\": [{\"i\": 1}], \"y\": [{\"i\": 2}]}, \"top\": [{\"t\": 1}]}");
   /* Deeper: each array at the end of its own sub-document. */
   const char *s3[] = {"a.b.c.d", "{}", "a.e", "{\"z\": 0}"};
   assert_merges_to("{\"a\": {\"k\": 1, \"b\": {\"m\": 2, \"c\": {}}}, \"n\": 3}", s3, 4,
                    "{\"a\": {\"k\": 1, \"b\": {\"m\": 2, \"c\": {\"d\": [{}]}}, \"e\": [{\"z\": 0}]}, \"n\": 3}");
   /* A body key with a dot in it is one name, not a path: "a.b.c" goes
    * under the body's "a", and the body's "a.b" stays as it was (found by
    * fuzz_parse: the view took "a.b" for the path and rewrote it). */
   const char *s4[] = {"a.b.c", "{\"i\": 1}"};
   assert_merges_to("{\"a.b\": {\"k\": 1}, \"n\": 2, \"a\": {\"b\": {}}}", s4, 2,
                    "{\"a.b\": {\"k\": 1}, \"n\": 2, \"a\": {\"b\": {\"c\": [{\"i\": 1}]}}}");
   const char *s5[] = {"x.a.b.c", "{}"};
   assert_merges_to("{\"x\": {\"a.b\": {}, \"a\": {\"q\": 1, \"b\": {}}}}", s5, 2,
                    "{\"x\": {\"a.b\": {}, \"a\": {\"q\": 1, \"b\": {\"c\": [{}]}}}}");
   /* The merge never writes a literal dotted key. */
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;
   build(&b, "{\"cursor\": {\"id\": 0}}", s1, 2);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   bson_iter_t it;
   assert_false(bson_iter_init_find(&it, merged, "cursor.firstBatch"));
   assert_true(bson_iter_init(&it, merged));
   assert_true(bson_iter_find_descendant(&it, "cursor.firstBatch.1._id", &it));
   assert_int_equal(bson_iter_int32(&it), 2);
   bson_destroy(merged);
   tu_buf_free(&b);
}

static void
test_array_keys(void **state)
{
   (void) state;
   /* Keys must match libbson's own across digit boundaries. */
   uint8_t key[16];
   char buf[16];
   const char *str;
   uint32_t samples[] = {0, 9, 10, 99, 100, 999, 1000, 12345, 99999, 100000, 4294967295u};
   for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
      size_t n = opmsg_write_index_key(key, samples[i]);
      size_t m = bson_uint32_to_string(samples[i], &str, buf, sizeof buf);
      assert_int_equal(n, m + 1);
      assert_string_equal((char *) key, str);
   }
   size_t total = 0;
   for (uint32_t i = 0; i < 12345; i++) {
      total += opmsg_write_index_key(key, i);
      if (i == 0 || i == 9 || i == 10 || i == 1000 || i == 12344) {
         assert_int_equal(opmsg_array_keys_size(i + 1), total);
      }
   }
   assert_int_equal(opmsg_array_keys_size(0), 0);

   /* 1,001 documents: the merged keys are exactly "0".."1000". */
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"insert\": \"c\"}");
   size_t m = tu_msg_seq_begin(&b, "documents");
   for (int i = 0; i <= 1000; i++) {
      tu_put_json_doc(&b, "{\"v\": 1}");
   }
   tu_msg_seq_end(&b, m);
   tu_msg_end(&b);
   bson_t *merged = merge_all_ways(b.data, b.len);
   bson_iter_t it, arr;
   assert_true(bson_iter_init_find(&it, merged, "documents"));
   assert_true(bson_iter_recurse(&it, &arr));
   uint32_t i = 0;
   while (bson_iter_next(&arr)) {
      bson_uint32_to_string(i++, &str, buf, sizeof buf);
      assert_string_equal(bson_iter_key(&arr), str);
   }
   assert_int_equal(i, 1001);
   bson_destroy(merged);
   tu_buf_free(&b);
}

/* The merger counts keys up in a register for up to 7 digits and writes
 * longer ones another way: 10,000,001 empty documents (a 50 MB message,
 * above the default limit, so the limit is raised) cross from "9999999" to
 * "10000000" and every digit boundary before it. */
static void
test_array_keys_past_ten_million(void **state)
{
   (void) state;
   const uint32_t count = 10000001;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"insert\": \"c\"}");
   size_t m = tu_msg_seq_begin(&b, "documents");
   tu_put_empty_docs(&b, count);
   tu_msg_seq_end(&b, m);
   tu_msg_end(&b);

   opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.max_message_size = 64u * 1024 * 1024;
   opmsg_msg_t msg;
   bson_error_t error;
   assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   size_t size = opmsg_merged_size(&msg);
   uint8_t *out = malloc(size);
   size_t written = 0;
   assert_true(opmsg_merge_into(&msg, out, size, &written, &error));
   assert_int_equal(written, size);
   bson_t merged;
   assert_true(bson_init_static(&merged, out, size));

   bson_iter_t it, arr;
   assert_true(bson_iter_init_find(&it, &merged, "documents"));
   assert_true(bson_iter_recurse(&it, &arr));
   uint32_t i = 0;
   char buf[16];
   const char *str;
   while (bson_iter_next(&arr)) {
      /* Every key is checked near each boundary, a sample elsewhere. */
      bool near = false;
      for (uint32_t p = 10; p <= 10000000; p *= 10) {
         near = near || (i + 3 >= p && i <= p + 3);
      }
      if (near || i % 9973 == 0 || i + 1 == count) {
         bson_uint32_to_string(i, &str, buf, sizeof buf);
         assert_string_equal(bson_iter_key(&arr), str);
         assert_int_equal(bson_iter_type(&arr), BSON_TYPE_DOCUMENT);
      }
      i++;
   }
   assert_int_equal(i, count);
   size_t off;
   assert_true(bson_validate(&merged, BSON_VALIDATE_NONE, &off));
   free(out);
   tu_buf_free(&b);
}

static void
test_allocations(void **state)
{
   (void) state;
   size_t len;
   uint8_t *data = tu_read_file("seed/seq.bin", &len);
   opmsg_msg_t msg;
   bson_error_t error;
   uint8_t *out = malloc(len * 2);

   tu_count_allocs_begin();
   assert_true(opmsg_parse(data, len, NULL, &msg, &error));
   assert_true(opmsg_merge_into(&msg, out, len * 2, NULL, &error));
   size_t into = tu_count_allocs_end();
   assert_int_equal(into, 0);

   tu_count_allocs_begin();
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   size_t two = tu_count_allocs_end();
   assert_int_equal(two, 2); /* the bson_t, its bytes (test_merge_bson_public) */
   bson_destroy(merged);     /* frees both (ASan/valgrind check) */

   tu_count_allocs_begin();
   opmsg_view_t v;
   opmsg_field_t f;
   size_t docs = 0;
   assert_true(opmsg_view_init(&v, &msg));
   while (opmsg_view_next(&v, &f)) {
      if (f.kind == OPMSG_FIELD_SEQUENCE) {
         opmsg_document_iter_t it;
         bson_t doc;
         opmsg_document_iter_init(&it, &f.seq);
         while (opmsg_document_iter_next(&it, &doc)) {
            docs++;
         }
      }
   }
   assert_string_equal(opmsg_command_name(&msg), "insert");
   assert_non_null(opmsg_db(&msg, NULL));
   assert_int_equal(tu_count_allocs_end(), 0);
   assert_int_equal(docs, 100);
   free(out);
   free(data);
}

/* The test vector rel, parsed into *msg (which points into the bytes
 * returned: free() them). */
static uint8_t *
read_parsed(const char *rel, opmsg_msg_t *msg)
{
   size_t len;
   bson_error_t error;
   uint8_t *data = tu_read_file(rel, &len);
   if (!opmsg_parse(data, len, NULL, msg, &error)) {
      fail_msg("%s: %s", rel, error.message);
   }
   return data;
}

static void
test_merged_forms(void **state)
{
   (void) state;
   opmsg_msg_t msg;
   bson_error_t error;
   uint8_t *data = read_parsed("seed/flat.bin", &msg);
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   bson_t *copy = bson_copy(merged);
   assert_true(BSON_APPEND_INT32(copy, "x", 1));
   bson_destroy(copy);

   /* The writable form: same bytes, one allocation, extensible. */
   bson_t doc;
   tu_count_allocs_begin();
   assert_true(opmsg_merge_init(&msg, &doc, &error));
   assert_int_equal(tu_count_allocs_end(), 1);
   assert_true(bson_equal(&doc, merged));
   assert_true(BSON_APPEND_INT32(&doc, "x", 1));
   assert_true(bson_validate(&doc, BSON_VALIDATE_NONE, NULL));
   bson_destroy(&doc);
   bson_destroy(merged);
   free(data);
}

/* ---------------------------------------------------------------------------
 * opmsg_merge_bson(): libbson's public API only (bson_sized_new(),
 * bson_reserve_buffer()), no private flag. Run on every libbson the
 * project builds with (Debian 12's 1.23 here, 13's 1.30 and sid's 2.5 in
 * make check-distros).
 * ------------------------------------------------------------------------- */

/* Merges data with opmsg_merge_bson() and with opmsg_merge_into(): the same
 * bytes. Returns the bson_t; *allocs is how many allocations it took. */
static bson_t *
merge_bson_counted(const uint8_t *data, size_t len, size_t *allocs)
{
   opmsg_msg_t msg;
   bson_error_t error;
   assert_true(opmsg_parse(data, len, NULL, &msg, &error));
   size_t size = opmsg_merged_size(&msg);
   uint8_t *want = malloc(size);
   assert_true(opmsg_merge_into(&msg, want, size, NULL, &error));
   tu_count_allocs_begin();
   bson_t *b = opmsg_merge_bson(&msg, &error);
   *allocs = tu_count_allocs_end();
   assert_non_null(b);
   assert_int_equal(b->len, size);
   assert_memory_equal(bson_get_data(b), want, size);
   free(want);
   return b;
}

/* The document is written once, in place, into a bson_t libbson made: one
 * allocation where it fits inside the bson_t (up to 115 bytes: libbson's
 * 120 inline bytes hold the empty document's 5 and the reserve), two above
 * (the bson_t and its bytes, of exactly the size). An ordinary bson_t: not
 * read-only, it takes appends; bson_destroy() frees all of it (ASan and
 * valgrind see the rest). */
static void
test_merge_bson_public(void **state)
{
   (void) state;
   const char *files[] = {"seed/flat.bin", "seed/seq.bin"};
   for (size_t i = 0; i < 2; i++) {
      size_t len, allocs;
      uint8_t *data = tu_read_file(files[i], &len);
      bson_t *b = merge_bson_counted(data, len, &allocs);
      assert_true(b->len > 115);
      assert_int_equal(allocs, 2);
      uint32_t was = b->len;
      assert_true(BSON_APPEND_INT32(b, "appended", 1));
      assert_true(b->len > was);
      bson_destroy(b);
      free(data);
   }
   tu_buf_t small;
   size_t allocs;
   tu_buf_init(&small);
   tu_msg_begin(&small, 0);
   tu_msg_body(&small, "{\"ok\": 1.0}");
   tu_msg_end(&small);
   bson_t *b = merge_bson_counted(small.data, small.len, &allocs);
   assert_int_equal(allocs, 1);
   assert_true(BSON_APPEND_INT32(b, "appended", 1));
   bson_destroy(b);
   tu_buf_free(&small);

   /* A merge with sequences takes the same way. */
   tu_buf_t seq;
   const char *s[] = {"a", "{\"i\": 1}|{\"i\": 2}"};
   build(&seq, "{\"cmd\": 1}", s, 2);
   b = merge_bson_counted(seq.data, seq.len, &allocs);
   assert_int_equal(allocs, 1);
   bson_destroy(b);
   tu_buf_free(&seq);
}

static void
test_sequence_api(void **state)
{
   (void) state;
   const char *s[] = {"a", "{\"i\": 1}|{\"i\": 2}|{\"i\": 3}", "b", ""};
   tu_buf_t b;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_sequence_t seq;
   build(&b, "{\"cmd\": 1}", s, 4);
   assert_true(opmsg_parse(b.data, b.len, NULL, &msg, &error));
   assert_true(opmsg_sequence_find(&msg, "a", &seq));
   assert_int_equal(seq.count, 3);
   assert_string_equal(seq.identifier, "a");
   assert_true(opmsg_sequence_find(&msg, "b", &seq));
   assert_int_equal(seq.count, 0);
   assert_int_equal(seq.documents_len, 0);
   assert_false(opmsg_sequence_find(&msg, "c", &seq));
   bson_t body;
   assert_true(opmsg_body(&msg, &body));
   assert_true(bson_has_field(&body, "cmd"));
   tu_buf_free(&b);
}

static void
test_not_mergeable(void **state)
{
   (void) state;
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_reply.bin", &len);
   opmsg_msg_t msg;
   bson_error_t error;
   uint8_t out[256];
   assert_true(opmsg_parse(data, len, NULL, &msg, &error));
   assert_int_equal(opmsg_merged_size(&msg), 0);
   assert_false(opmsg_merge_into(&msg, out, sizeof out, NULL, &error));
   assert_int_equal(error.code, OPMSG_ERR_WRONG_OPCODE);
   assert_null(opmsg_merge_bson(&msg, &error));
   free(data);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seed_vectors),
      cmocka_unit_test(test_top_level_sequences),
      cmocka_unit_test(test_dotted_paths),
      cmocka_unit_test(test_array_keys),
      cmocka_unit_test(test_array_keys_past_ten_million),
      cmocka_unit_test(test_allocations),
      cmocka_unit_test(test_merged_forms),
      cmocka_unit_test(test_merge_bson_public),
      cmocka_unit_test(test_sequence_api),
      cmocka_unit_test(test_not_mergeable),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
