/*
 * test_memory_bounds.c - lying lengths must not buy memory.
 *
 * Every allocation opmsg makes goes through libbson's bson_malloc() family,
 * so a counting bson_mem_vtable_t sees them all. For messages whose
 * messageLength, section sizes, document lengths or uncompressedSize lie
 * (up to 2^31 - 1, negative, just past the end), these tests check that:
 *  - no single allocation exceeds the configured limit
 *    (opmsg_options_t.max_message_size), and a refused message costs nothing;
 *  - peak memory stays proportional to the bytes really given (at most
 *    twice the input plus a constant, or the documented exact sizes);
 *  - nothing is left allocated afterwards.
 * For parse, merge (into a buffer and to a bson_t), decompression and the
 * stream reader.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <cmocka.h>

#include "testutil.h"

/* ---------------------------------------------------------------------------
 * Counting allocator. malloc_usable_size() gives each block's size on free,
 * so blocks from before the hook was installed are accounted correctly.
 * ------------------------------------------------------------------------- */

static size_t g_live, g_base, g_peak, g_largest, g_count;

static void
note_alloc(void *p, size_t requested)
{
   if (!p) {
      return;
   }
   g_count++;
   if (requested > g_largest) {
      g_largest = requested;
   }
   g_live += malloc_usable_size(p);
   if (g_live > g_base && g_live - g_base > g_peak) {
      g_peak = g_live - g_base;
   }
}

static void
note_free(void *p)
{
   if (p) {
      size_t n = malloc_usable_size(p);
      g_live = g_live >= n ? g_live - n : 0;
   }
}

static void *
hook_malloc(size_t n)
{
   void *p = malloc(n);
   note_alloc(p, n);
   return p;
}

static void *
hook_calloc(size_t count, size_t size)
{
   void *p = calloc(count, size);
   note_alloc(p, count * size);
   return p;
}

static void *
hook_realloc(void *mem, size_t n)
{
   size_t old = mem ? malloc_usable_size(mem) : 0;
   void *p = realloc(mem, n);
   if (p) {
      g_live = g_live >= old ? g_live - old : 0;
      note_alloc(p, n);
   }
   return p;
}

static void
hook_free(void *mem)
{
   note_free(mem);
   free(mem);
}

static void *
hook_aligned_alloc(size_t alignment, size_t n)
{
   void *p = aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
   note_alloc(p, n);
   return p;
}

/* Every test runs once per check level (main()): the bounds hold at each.
 * level_opts() is the defaults at the level of the current run. */
static opmsg_check_t g_check = OPMSG_CHECK_TOP_LEVEL;

static const opmsg_options_t *
level_opts(void)
{
   static opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.check = g_check;
   return &opts;
}

typedef struct {
   size_t largest;
   size_t peak;
   size_t count;
   size_t live;
} mem_t;

static void
mem_begin(void)
{
   g_base = g_live;
   g_peak = 0;
   g_largest = 0;
   g_count = 0;
}

static mem_t
mem_end(void)
{
   mem_t m = {g_largest, g_peak, g_count, g_live >= g_base ? g_live - g_base : 0};
   return m;
}

/* Some slack for allocator rounding in the peak figures. */
#define SLACK 4096u

/* ---------------------------------------------------------------------------
 * Message helpers
 * ------------------------------------------------------------------------- */

/* OP_MSG { insert: "c", $db: "d" } + kind-1 "documents" with n documents. */
static void
build_insert(tu_buf_t *b, int n)
{
   tu_buf_init(b);
   tu_msg_begin(b, 0);
   tu_msg_body(b, "{\"insert\": \"c\", \"$db\": \"d\"}");
   size_t mark = tu_msg_seq_begin(b, "documents");
   for (int i = 0; i < n; i++) {
      tu_put_json_doc(b, "{\"x\": 1}");
   }
   tu_msg_seq_end(b, mark);
   tu_msg_end(b);
}

static void
put_i32_at(uint8_t *p, int32_t v)
{
   opmsg_write_u32(p, (uint32_t) v);
}

static const int32_t LIES[] = {INT32_MAX, INT32_MAX - 15, 48000001, 16777217, -1, -16, INT32_MIN, 0, 4};
#define N_LIES (sizeof LIES / sizeof LIES[0])

/* Parses, expecting a refusal that allocates nothing. */
static void
assert_refused_free(const uint8_t *data, size_t len, const opmsg_options_t *opts)
{
   opmsg_msg_t msg;
   bson_error_t error;
   mem_begin();
   bool ok = opmsg_parse(data, len, opts, &msg, &error);
   mem_t m = mem_end();
   assert_false(ok);
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_int_equal(m.count, 0);
   assert_int_equal(m.live, 0);
}

/* ---------------------------------------------------------------------------
 * Parse
 * ------------------------------------------------------------------------- */

static void
test_parse_lying_message_length(void **state)
{
   (void) state;
   tu_buf_t b;
   build_insert(&b, 3);
   for (size_t i = 0; i < N_LIES; i++) {
      put_i32_at(b.data, LIES[i]);
      assert_refused_free(b.data, b.len, level_opts());
   }
   /* One more and one fewer than the bytes given. */
   put_i32_at(b.data, (int32_t) b.len + 1);
   assert_refused_free(b.data, b.len, level_opts());
   put_i32_at(b.data, (int32_t) b.len - 1);
   assert_refused_free(b.data, b.len, level_opts());
   tu_buf_free(&b);
}

static void
test_parse_lying_section_sizes(void **state)
{
   (void) state;
   tu_buf_t b;
   build_insert(&b, 3);
   /* header(16) flags(4) kind(1) body; then kind 1, its size. */
   size_t body = 21;
   size_t seq_size = body + opmsg_read_u32(b.data + body) + 1;
   assert_int_equal(b.data[seq_size - 1], 1);
   int32_t real = (int32_t) opmsg_read_u32(b.data + seq_size);
   for (size_t i = 0; i < N_LIES; i++) {
      put_i32_at(b.data + seq_size, LIES[i]);
      assert_refused_free(b.data, b.len, level_opts());
   }
   put_i32_at(b.data + seq_size, real + 1);
   assert_refused_free(b.data, b.len, level_opts());
   put_i32_at(b.data + seq_size, real - 1);
   assert_refused_free(b.data, b.len, level_opts());
   tu_buf_free(&b);
}

static void
test_parse_lying_document_lengths(void **state)
{
   (void) state;
   tu_buf_t b;
   build_insert(&b, 3);
   size_t body = 21;
   int32_t body_len = (int32_t) opmsg_read_u32(b.data + body);
   size_t first_doc = body + (size_t) body_len + 1 + 4 + strlen("documents") + 1;
   int32_t doc_len = (int32_t) opmsg_read_u32(b.data + first_doc);
   for (size_t i = 0; i < N_LIES; i++) {
      put_i32_at(b.data + body, LIES[i]);
      assert_refused_free(b.data, b.len, level_opts());
      put_i32_at(b.data + body, body_len);

      put_i32_at(b.data + first_doc, LIES[i]);
      assert_refused_free(b.data, b.len, level_opts());
      put_i32_at(b.data + first_doc, doc_len);
   }
   put_i32_at(b.data + first_doc, doc_len + 1);
   assert_refused_free(b.data, b.len, level_opts());
   tu_buf_free(&b);
}

/* A body with many keys borrows a duplicate-key table: bounded by the input. */
static void
test_parse_many_keys_bounded(void **state)
{
   (void) state;
   bson_t body = BSON_INITIALIZER;
   BSON_APPEND_UTF8(&body, "insert", "c");
   for (int i = 0; i < 20000; i++) {
      char key[16];
      snprintf(key, sizeof key, "k%d", i);
      BSON_APPEND_INT32(&body, key, i);
   }
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   tu_put_bson(&b, &body);
   tu_msg_end(&b);

   opmsg_msg_t msg;
   bson_error_t error;
   mem_begin();
   assert_true(opmsg_parse(b.data, b.len, level_opts(), &msg, &error));
   mem_t m = mem_end();
   assert_true(m.largest <= 2 * b.len + SLACK);
   assert_true(m.peak <= 2 * b.len + SLACK);
   assert_int_equal(m.live, 0);
   bson_destroy(&body);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * Merge
 * ------------------------------------------------------------------------- */

static void
check_merge_bounds(const uint8_t *data, size_t len, const opmsg_options_t *opts)
{
   opmsg_msg_t msg;
   bson_error_t error;
   assert_true(opmsg_parse(data, len, opts, &msg, &error));
   size_t merged = opmsg_merged_size(&msg);

   /* The merge adds to the input only the array keys and framing of the
    * sequences: at most 8 bytes per document ("99999" + type + NUL + slack)
    * and a few per sequence. Sequence documents are at least 5 bytes. */
   size_t docs = 0;
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   opmsg_sequence_iter_init(&it, &msg);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      docs += seq.count;
   }
   assert_true(merged <= len + 12 * docs + 64);

   uint8_t *buf = malloc(merged);
   assert_non_null(buf);
   mem_begin();
   assert_true(opmsg_merge_into(&msg, buf, merged, NULL, &error));
   mem_t m = mem_end();
   assert_int_equal(m.count, 0);
   free(buf);

   mem_begin();
   bson_t *doc = opmsg_merge_bson(&msg, &error);
   m = mem_end();
   assert_non_null(doc);
   /* The bson_t, and its bytes: exactly the size (and the 5 bytes libbson's
    * reserve counts from the empty document). */
   assert_int_equal(m.count, merged <= 115 ? 1 : 2);
   assert_true(m.largest <= sizeof(bson_t) + merged + 256);
   assert_true(m.peak <= 3 * len + SLACK);
   bson_destroy(doc);
}

static void
test_merge_bson_bounded(void **state)
{
   (void) state;
   size_t len;
   uint8_t *seq = tu_read_file("seed/seq.bin", &len);
   check_merge_bounds(seq, len, level_opts());
   free(seq);

   /* Many tiny documents: the worst ratio of array keys to input. */
   tu_buf_t b;
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{\"insert\": \"c\", \"$db\": \"d\"}");
   size_t mark = tu_msg_seq_begin(&b, "documents");
   tu_put_empty_docs(&b, 50000);
   tu_msg_seq_end(&b, mark);
   tu_msg_end(&b);
   check_merge_bounds(b.data, b.len, level_opts());

   /* At the size limit exactly: the merge may pass it only by the keys. */
   opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.check = g_check;
   opts.max_message_size = b.len;
   check_merge_bounds(b.data, b.len, &opts);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * OP_COMPRESSED
 * ------------------------------------------------------------------------- */

/* Offset of uncompressedSize in an OP_COMPRESSED message. */
#define USIZE_AT 20

static uint8_t *
compressed_insert(int codec, size_t *len)
{
   tu_buf_t b;
   build_insert(&b, 5);
   bson_error_t error;
   uint8_t *out = opmsg_compress(b.data, b.len, codec, OPMSG_COMPRESS_DEFAULT_LEVEL, len, &error);
   if (!out) {
      fail_msg("compress with %d: %s", codec, error.message);
   }
   tu_buf_free(&b);
   return out;
}

static void
test_compressed_lying_size_refused(void **state)
{
   (void) state;
   for (int codec = 0; codec <= 3; codec++) {
      size_t len;
      uint8_t *msg = compressed_insert(codec, &len);
      /* Above the default limit once the header is added, negative, or
       * below the smallest OP_MSG body. */
      static const int32_t lies[] = {INT32_MAX, INT32_MAX - 15, 48000000 - 15, -1, -16, INT32_MIN, 0, 4};
      for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
         put_i32_at(msg + USIZE_AT, lies[i]);
         assert_refused_free(msg, len, level_opts());
      }
      /* One past what a 4 KiB limit allows. */
      opmsg_options_t opts;
      opmsg_options_init(&opts);
      opts.check = g_check;
      opts.max_message_size = 4096;
      put_i32_at(msg + USIZE_AT, 4096 - 16 + 1);
      assert_refused_free(msg, len, &opts);
      bson_free(msg);
   }
}

/* uncompressedSize within the limit but far above what the stream holds:
 * decompression fails, and what it allocated is bounded by the limit (the
 * documented bound) and by the claimed size. */
static void
check_lying_within_limit(int codec, size_t limit)
{
   size_t len;
   uint8_t *data = compressed_insert(codec, &len);
   int32_t claim = (int32_t) (limit - 16);
   put_i32_at(data + USIZE_AT, claim);

   opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.check = g_check;
   opts.max_message_size = limit;
   opmsg_msg_t msg;
   bson_error_t error;
   mem_begin();
   assert_true(opmsg_parse(data, len, &opts, &msg, &error));
   mem_t m = mem_end();
   assert_int_equal(m.count, 0);

   mem_begin();
   uint8_t *out = opmsg_decompress(&msg, NULL, &error);
   m = mem_end();
   assert_null(out);
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_true(error.code == OPMSG_ERR_UNCOMPRESSED_SIZE || error.code == OPMSG_ERR_DECOMPRESS);
   assert_true(m.largest <= limit);
   assert_int_equal(m.live, 0);
   print_message("codec %d, uncompressedSize %d from %zu bytes: largest allocation %zu, "
                 "peak %zu\n",
                 codec, claim, len, m.largest, m.peak);

   opmsg_decompressed_t d;
   mem_begin();
   assert_false(opmsg_decompress_parse(&msg, &opts, &d, &error));
   m = mem_end();
   assert_true(m.largest <= limit);
   assert_int_equal(m.live, 0);

   mem_begin();
   assert_null(opmsg_merge_compressed(&msg, &opts, &error));
   m = mem_end();
   assert_true(m.largest <= limit);
   assert_int_equal(m.live, 0);
   bson_free(data);
}

static void
test_decompress_lying_size_within_limit(void **state)
{
   (void) state;
   for (int codec = 0; codec <= 3; codec++) {
      check_lying_within_limit(codec, OPMSG_DEFAULT_MAX_MESSAGE_SIZE);
      check_lying_within_limit(codec, 1u << 20);
   }
}

/* A lying uncompressedSize costs memory in proportion to the real input
 * only: the codecs that declare the size in the stream (noop: the payload
 * length; snappy: its varint; zstd: the frame's content size) are checked
 * against it before anything is allocated, and zlib's output is sized from
 * what the stream really gives. */
static void
test_decompress_declared_size_checked_first(void **state)
{
   (void) state;
   static const int codecs[] = {OPMSG_COMPRESSOR_NOOP, OPMSG_COMPRESSOR_SNAPPY, OPMSG_COMPRESSOR_ZLIB,
                                OPMSG_COMPRESSOR_ZSTD};
   for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
      size_t len;
      uint8_t *data = compressed_insert(codecs[i], &len);
      put_i32_at(data + USIZE_AT, 40000000);
      opmsg_msg_t msg;
      bson_error_t error;
      assert_true(opmsg_parse(data, len, NULL, &msg, &error));
      mem_begin();
      uint8_t *out = opmsg_decompress(&msg, NULL, &error);
      mem_t m = mem_end();
      bson_free(data);
      assert_null(out);
      assert_true(error.code == OPMSG_ERR_UNCOMPRESSED_SIZE ||
                  (codecs[i] == OPMSG_COMPRESSOR_ZLIB && error.code == OPMSG_ERR_DECOMPRESS));
      if (m.peak > 2 * len + 256 * 1024) {
         fail_msg("codec %d: a 40,000,000-byte uncompressedSize lie in a %zu-byte message "
                  "made decompression allocate %zu bytes",
                  codecs[i], len, m.peak);
      }
      assert_int_equal(m.live, 0);
   }
}

/* An honest message decompresses in one buffer of exactly its size. */
static void
test_decompress_honest_exact(void **state)
{
   (void) state;
   for (int codec = 0; codec <= 3; codec++) {
      size_t len;
      uint8_t *data = compressed_insert(codec, &len);
      opmsg_msg_t msg;
      bson_error_t error;
      assert_true(opmsg_parse(data, len, NULL, &msg, &error));
      size_t total = opmsg_decompressed_size(&msg);
      size_t out_len = 0;
      mem_begin();
      uint8_t *out = opmsg_decompress(&msg, &out_len, &error);
      mem_t m = mem_end();
      assert_non_null(out);
      assert_int_equal(out_len, total);
      /* The result, plus codec state that does not grow with the input. */
      assert_true(m.live <= total + 64);
      assert_true(m.peak <= total + 256 * 1024);
      bson_free(out);
      bson_free(data);
   }
}

/* ---------------------------------------------------------------------------
 * Stream reader
 * ------------------------------------------------------------------------- */

/* Feeds data in pieces of `piece` bytes, taking messages out as they come,
 * then ends the stream. Returns the last status; *error has its error. */
static opmsg_reader_status_t
read_all(opmsg_reader_t *r, const uint8_t *data, size_t len, size_t piece, size_t *messages, bson_error_t *error)
{
   size_t fed = 0;
   opmsg_reader_status_t st = OPMSG_READER_NEED_MORE;
   *messages = 0;
   for (;;) {
      if (fed < len) {
         size_t n = len - fed < piece ? len - fed : piece;
         fed += opmsg_reader_feed(r, data + fed, n);
      } else {
         opmsg_reader_end(r);
      }
      const uint8_t *msg;
      size_t msg_len;
      while ((st = opmsg_reader_next(r, &msg, &msg_len, error)) == OPMSG_READER_MESSAGE) {
         (*messages)++;
      }
      if (st != OPMSG_READER_NEED_MORE) {
         return st;
      }
   }
}

static void
check_reader_lie(int32_t claim, size_t following, uint32_t expect_code)
{
   size_t len = 16 + following;
   uint8_t *data = calloc(1, len);
   assert_non_null(data);
   put_i32_at(data, claim);
   put_i32_at(data + 12, OPMSG_OP_MSG);

   mem_begin();
   opmsg_reader_t *r = opmsg_reader_new(level_opts());
   size_t messages;
   bson_error_t error;
   opmsg_reader_status_t st = read_all(r, data, len, 4096, &messages, &error);
   opmsg_reader_destroy(r);
   mem_t m = mem_end();

   assert_int_equal(st, OPMSG_READER_ERROR);
   assert_int_equal(error.code, expect_code);
   assert_int_equal(messages, 0);
   /* A lying length costs nothing: what was allocated follows the bytes
    * that really came (and the reader's fixed chunk). */
   assert_true(m.largest <= OPMSG_READER_CHUNK + SLACK || m.largest <= 2 * len + SLACK);
   assert_true(m.peak <= OPMSG_READER_CHUNK + 2 * len + SLACK);
   assert_int_equal(m.live, 0);
   free(data);
}

static void
test_reader_lying_lengths(void **state)
{
   (void) state;
   check_reader_lie(INT32_MAX, 100, OPMSG_ERR_LENGTH_TOO_LARGE);
   check_reader_lie(48000001, 100, OPMSG_ERR_LENGTH_TOO_LARGE);
   check_reader_lie(-1, 100, OPMSG_ERR_LENGTH_TOO_SMALL);
   check_reader_lie(INT32_MIN, 100, OPMSG_ERR_LENGTH_TOO_SMALL);
   check_reader_lie(4, 100, OPMSG_ERR_LENGTH_TOO_SMALL);
   /* Within the limit: the stream simply ends inside the message. */
   check_reader_lie(47999999, 100, OPMSG_ERR_STREAM_TRUNCATED);
   check_reader_lie(47999999, 300000, OPMSG_ERR_STREAM_TRUNCATED);
   check_reader_lie(16777216, 0, OPMSG_ERR_STREAM_TRUNCATED);
}

/* Real large messages: the buffer grows to the message, not beyond twice. */
static void
test_reader_large_messages_bounded(void **state)
{
   (void) state;
   size_t big = 1u << 20;
   char *text = malloc(big + 1);
   assert_non_null(text);
   memset(text, 'x', big);
   text[big] = '\0';
   bson_t body = BSON_INITIALIZER;
   BSON_APPEND_UTF8(&body, "insert", "c");
   BSON_APPEND_UTF8(&body, "payload", text);
   free(text);
   tu_buf_t b;
   tu_buf_init(&b);
   for (int i = 0; i < 3; i++) {
      size_t start = b.len;
      tu_msg_begin(&b, 0);
      tu_put_u8(&b, 0);
      tu_put_bson(&b, &body);
      put_i32_at(b.data + start, (int32_t) (b.len - start));
   }
   bson_destroy(&body);

   mem_begin();
   opmsg_reader_t *r = opmsg_reader_new(level_opts());
   size_t messages;
   bson_error_t error;
   opmsg_reader_status_t st = read_all(r, b.data, b.len, 4096, &messages, &error);
   opmsg_reader_destroy(r);
   mem_t m = mem_end();
   assert_int_equal(st, OPMSG_READER_END);
   assert_int_equal(messages, 3);
   size_t one = b.len / 3;
   assert_true(m.largest <= one + OPMSG_READER_CHUNK + SLACK);
   assert_true(m.peak <= 2 * one + OPMSG_READER_CHUNK + SLACK);
   assert_int_equal(m.live, 0);
   tu_buf_free(&b);
}

int
main(void)
{
   static const bson_mem_vtable_t vtable = {hook_malloc, hook_calloc,        hook_realloc,
                                            hook_free,   hook_aligned_alloc, {NULL, NULL, NULL}};
   bson_mem_set_vtable(&vtable);
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_lying_message_length),
      cmocka_unit_test(test_parse_lying_section_sizes),
      cmocka_unit_test(test_parse_lying_document_lengths),
      cmocka_unit_test(test_parse_many_keys_bounded),
      cmocka_unit_test(test_merge_bson_bounded),
      cmocka_unit_test(test_compressed_lying_size_refused),
      cmocka_unit_test(test_decompress_lying_size_within_limit),
      cmocka_unit_test(test_decompress_declared_size_checked_first),
      cmocka_unit_test(test_decompress_honest_exact),
      cmocka_unit_test(test_reader_lying_lengths),
      cmocka_unit_test(test_reader_large_messages_bounded),
   };
   static const opmsg_check_t levels[] = {OPMSG_CHECK_SPEC, OPMSG_CHECK_TOP_LEVEL, OPMSG_CHECK_FULL};
   int failed = 0;
   for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
      g_check = levels[i];
      printf("check level: %s\n", opmsg_check_name(g_check));
      failed += cmocka_run_group_tests(tests, NULL, NULL);
   }
   return failed;
}
