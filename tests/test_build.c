/* test_build.c - the OP_MSG encoder and batch splitter (opmsg/build.h). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

/* {_id: i, pad: "xxx..."} of exactly `size` bytes (size >= 24): 4 (length)
 * + 9 (int32 "_id") + 10 + L (string "pad" of L chars) + 1 (terminator). */
static bson_t *
make_doc(int32_t i, size_t size)
{
   assert_true(size >= 24);
   size_t l = size - 24;
   char *pad = malloc(l + 1);
   assert_non_null(pad);
   memset(pad, 'a' + (char) (i % 26), l);
   pad[l] = '\0';
   bson_t *doc = bson_new();
   BSON_APPEND_INT32(doc, "_id", i);
   BSON_APPEND_UTF8(doc, "pad", pad);
   free(pad);
   assert_int_equal(doc->len, size);
   return doc;
}

typedef struct {
   bson_t **docs;
   size_t n;
   uint8_t *raw; /* the same documents back to back */
   size_t raw_len;
} docset_t;

/* n documents; sizes from size_of(i) (NULL: 24 + i % 50). */
static void
docset_init(docset_t *s, size_t n, size_t (*size_of)(size_t))
{
   tu_buf_t raw;
   tu_buf_init(&raw);
   s->docs = calloc(n ? n : 1, sizeof *s->docs);
   assert_non_null(s->docs);
   s->n = n;
   for (size_t i = 0; i < n; i++) {
      s->docs[i] = make_doc((int32_t) i, size_of ? size_of(i) : 24 + i % 50);
      tu_put_bson(&raw, s->docs[i]);
   }
   s->raw = raw.data;
   s->raw_len = raw.len;
}

static void
docset_free(docset_t *s)
{
   for (size_t i = 0; i < s->n; i++) {
      bson_destroy(s->docs[i]);
   }
   free(s->docs);
   free(s->raw);
}

static bson_t *
json(const char *text)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *) text, -1, &error);
   if (!doc) {
      fail_msg("bad test JSON %s: %s", text, error.message);
   }
   return doc;
}

static const bson_t *const *
list(const docset_t *s)
{
   return (const bson_t *const *) s->docs;
}

/* Appends field `key` = array of the documents. */
static void
append_array(bson_t *out, const char *key, const docset_t *s, size_t first, size_t count)
{
   bson_t arr;
   char idx[24];
   assert_true(opmsg_append_array_begin(out, key, -1, &arr));
   for (size_t i = 0; i < count; i++) {
      snprintf(idx, sizeof idx, "%zu", i);
      assert_true(bson_append_document(&arr, idx, -1, s->docs[first + i]));
   }
   assert_true(bson_append_array_end(out, &arr));
}

static void
parse_ok(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg)
{
   bson_error_t error;
   if (!opmsg_parse(data, len, opts, msg, &error)) {
      fail_msg("parse failed: %s: %s", opmsg_error_name(error.code), error.message);
   }
}

static void
assert_error(const bson_error_t *error, opmsg_error_code_t code)
{
   if (error->domain != OPMSG_ERROR_DOMAIN || error->code != (uint32_t) code) {
      fail_msg("expected %s, got %s (%u): %s", opmsg_error_name(code), opmsg_error_name(error->code), error->code,
               error->message);
   }
   assert_true(strlen(error->message) > 0);
}

/* Builds b, expecting a failure with code (through every entry point). */
static void
assert_build_fails(const opmsg_build_t *b, opmsg_error_code_t code)
{
   bson_error_t error;
   size_t size = 0;
   uint8_t buf[4096];
   uint8_t scratch[256];
   struct iovec iov[64];
   size_t n;

   memset(&error, 0, sizeof error);
   assert_false(opmsg_build_size(b, &size, &error));
   assert_error(&error, code);
   memset(&error, 0, sizeof error);
   assert_false(opmsg_build_into(b, buf, sizeof buf, &n, &error));
   assert_error(&error, code);
   memset(&error, 0, sizeof error);
   assert_false(opmsg_build_iovec(b, scratch, sizeof scratch, iov, 64, &n, NULL, &error));
   assert_error(&error, code);
}

/* Builds b into a new buffer (asserting success). */
static uint8_t *
build_ok(const opmsg_build_t *b, size_t *len)
{
   bson_error_t error;
   size_t size;
   if (!opmsg_build_size(b, &size, &error)) {
      fail_msg("build_size failed: %s: %s", opmsg_error_name(error.code), error.message);
   }
   uint8_t *buf = bson_malloc(size + 16);
   memset(buf, 0xEE, size + 16);
   if (!opmsg_build_into(b, buf, size + 16, len, &error)) {
      fail_msg("build failed: %s: %s", opmsg_error_name(error.code), error.message);
   }
   assert_int_equal(*len, size);
   /* Nothing written past the message. */
   for (size_t i = size; i < size + 16; i++) {
      assert_int_equal(buf[i], 0xEE);
   }
   return buf;
}

/* The iovec form, concatenated. */
static uint8_t *
build_iovec_flat(const opmsg_build_t *b, size_t *len)
{
   bson_error_t error;
   size_t count = opmsg_build_iovec_count(b);
   size_t scratch_len = OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences);
   uint8_t *scratch = malloc(scratch_len);
   struct iovec *iov = malloc(count * sizeof *iov);
   size_t n = 0, total = 0;
   assert_non_null(scratch);
   assert_non_null(iov);
   if (!opmsg_build_iovec(b, scratch, scratch_len, iov, count, &n, &total, &error)) {
      fail_msg("build_iovec failed: %s: %s", opmsg_error_name(error.code), error.message);
   }
   assert_int_equal(n, count);
   uint8_t *flat = malloc(total);
   size_t at = 0;
   assert_non_null(flat);
   for (size_t i = 0; i < n; i++) {
      memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
      at += iov[i].iov_len;
   }
   assert_int_equal(at, total);
   *len = total;
   free(scratch);
   free(iov);
   return flat;
}

/* ---------------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------------- */

static void
round_trip(size_t n_docs, uint32_t flags, bool raw)
{
   docset_t s;
   bson_t *cmd = json("{\"insert\": \"coll\", \"ordered\": true, \"$db\": \"test\"}");
   opmsg_sequence_in_t seq = {"documents", NULL, 0, NULL, 0};
   opmsg_build_t b;
   opmsg_msg_t msg;
   bson_error_t error;
   size_t len;

   docset_init(&s, n_docs, NULL);
   if (raw) {
      seq.raw = s.raw;
      seq.raw_len = s.raw_len;
   } else {
      seq.docs = list(&s);
      seq.n_docs = s.n;
   }
   opmsg_build_init(&b, cmd);
   b.sequences = &seq;
   b.n_sequences = 1;
   b.request_id = 4242;
   b.response_to = 17;
   b.flags = flags;

   uint8_t *buf = build_ok(&b, &len);
   /* Framing by hand: header, flags, body section, one sequence section. */
   size_t expect = 16 + 4 + 1 + cmd->len + 1 + 4 + strlen("documents") + 1 + s.raw_len +
                   ((flags & OPMSG_FLAG_CHECKSUM_PRESENT) ? 4 : 0);
   assert_int_equal(len, expect);

   opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.flags = OPMSG_PARSE_REQUEST | OPMSG_PARSE_FULL_VALIDATE;
   parse_ok(buf, len, &opts, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_MSG);
   assert_int_equal(msg.request_id, 4242);
   assert_int_equal(msg.response_to, 17);
   assert_int_equal(msg.flags, flags);
   assert_int_equal(msg.checksum_present, (flags & OPMSG_FLAG_CHECKSUM_PRESENT) != 0);
   assert_int_equal(msg.n_sequences, 1);

   bson_t *merged = opmsg_merge_bson(&msg, &error);
   assert_non_null(merged);
   bson_t expected;
   bson_init(&expected);
   assert_true(bson_concat(&expected, cmd));
   append_array(&expected, "documents", &s, 0, s.n);
   assert_true(bson_equal(merged, &expected));
   bson_destroy(&expected);
   bson_destroy(merged);

   if (flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      /* The parser really checks it: one flipped bit is refused. */
      buf[len / 2] ^= 0x10;
      tu_assert_rejects(buf, len, 0, OPMSG_ERR_CHECKSUM_MISMATCH);
      buf[len / 2] ^= 0x10;
   }
   bson_free(buf);
   bson_destroy(cmd);
   docset_free(&s);
}

static void
test_round_trip_one(void **state)
{
   (void) state;
   round_trip(1, 0, false);
   round_trip(1, 0, true);
   round_trip(1, OPMSG_FLAG_CHECKSUM_PRESENT, false);
   round_trip(1, OPMSG_FLAG_CHECKSUM_PRESENT, true);
}

static void
test_round_trip_flags(void **state)
{
   (void) state;
   round_trip(3, OPMSG_FLAG_MORE_TO_COME, false);
   round_trip(3, OPMSG_FLAG_EXHAUST_ALLOWED, false);
   round_trip(3, OPMSG_FLAG_EXHAUST_ALLOWED | OPMSG_FLAG_CHECKSUM_PRESENT, true);
   round_trip(2, OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED, false);
   round_trip(0, OPMSG_FLAG_MORE_TO_COME | OPMSG_FLAG_CHECKSUM_PRESENT, false);
}

static void
test_round_trip_100000(void **state)
{
   (void) state;
   round_trip(100000, 0, false);
   round_trip(100000, OPMSG_FLAG_CHECKSUM_PRESENT, true);
}

/* The checksum covers messageLength with the 4 checksum bytes counted. */
static void
test_checksum_coverage(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"ping\": 1, \"$db\": \"admin\"}");
   opmsg_build_t b;
   size_t len;
   opmsg_build_init(&b, cmd);
   b.flags = OPMSG_FLAG_CHECKSUM_PRESENT;
   uint8_t *buf = build_ok(&b, &len);
   assert_int_equal(opmsg_read_u32(buf), len);
   assert_int_equal(opmsg_read_u32(buf + len - 4), opmsg_crc32c(0, buf, len - 4));
   /* Same message built by the test utilities' independent encoder. */
   tu_buf_t t;
   tu_buf_init(&t);
   tu_msg_begin(&t, OPMSG_FLAG_CHECKSUM_PRESENT);
   opmsg_write_u32(t.data + 4, 0); /* the helper's requestID is 7 */
   tu_msg_body(&t, "{\"ping\": 1, \"$db\": \"admin\"}");
   tu_msg_end(&t);
   assert_int_equal(t.len, len);
   assert_memory_equal(t.data, buf, len);
   tu_buf_free(&t);
   bson_free(buf);
   bson_destroy(cmd);
}

/* Two sequences, one empty, and a dotted one next to its body document. */
static void
test_several_sequences(void **state)
{
   (void) state;
   docset_t a, c;
   bson_t *cmd = json("{\"bulkWrite\": 1, \"cursor\": {\"batchSize\": 5}, \"$db\": \"admin\"}");
   docset_init(&a, 4, NULL);
   docset_init(&c, 2, NULL);
   opmsg_sequence_in_t seqs[3] = {
      {"ops", list(&a), a.n, NULL, 0},
      {"nsInfo", NULL, 0, NULL, 0},
      {"cursor.firstBatch", NULL, 0, c.raw, c.raw_len},
   };
   opmsg_build_t b;
   size_t len, flat_len;
   opmsg_msg_t msg;
   bson_error_t error;

   opmsg_build_init(&b, cmd);
   b.sequences = seqs;
   b.n_sequences = 3;
   b.flags = OPMSG_FLAG_CHECKSUM_PRESENT;
   uint8_t *buf = build_ok(&b, &len);
   uint8_t *flat = build_iovec_flat(&b, &flat_len);
   assert_int_equal(len, flat_len);
   assert_memory_equal(buf, flat, len);
   parse_ok(buf, len, NULL, &msg);
   assert_int_equal(msg.n_sequences, 3);

   bson_t *merged = opmsg_merge_bson(&msg, &error);
   assert_non_null(merged);
   bson_t expected, cursor, empty;
   bson_init(&expected);
   BSON_APPEND_INT32(&expected, "bulkWrite", 1);
   BSON_APPEND_DOCUMENT_BEGIN(&expected, "cursor", &cursor);
   BSON_APPEND_INT32(&cursor, "batchSize", 5);
   append_array(&cursor, "firstBatch", &c, 0, c.n);
   bson_append_document_end(&expected, &cursor);
   BSON_APPEND_UTF8(&expected, "$db", "admin");
   append_array(&expected, "ops", &a, 0, a.n);
   opmsg_append_array_begin(&expected, "nsInfo", -1, &empty);
   bson_append_array_end(&expected, &empty);
   if (!bson_equal(merged, &expected)) {
      char *got = bson_as_relaxed_extended_json(merged, NULL);
      char *want = bson_as_relaxed_extended_json(&expected, NULL);
      fail_msg("merged %s, expected %s", got, want);
   }
   bson_destroy(&expected);
   bson_destroy(merged);
   bson_free(buf);
   free(flat);
   bson_destroy(cmd);
   docset_free(&a);
   docset_free(&c);
}

/* A list and a raw run of the same documents give the same bytes; the iovec
 * form gives the buffer form's bytes. */
static void
test_raw_list_iovec_identical(void **state)
{
   (void) state;
   uint32_t flag_sets[2] = {0, OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_EXHAUST_ALLOWED};
   size_t counts[3] = {0, 1, 1000};
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\"}");

   for (size_t f = 0; f < 2; f++) {
      for (size_t k = 0; k < 3; k++) {
         docset_t s;
         docset_init(&s, counts[k], NULL);
         opmsg_sequence_in_t as_list = {"documents", list(&s), s.n, NULL, 0};
         opmsg_sequence_in_t as_raw = {"documents", NULL, 0, s.raw, s.raw_len};
         opmsg_build_t b;
         size_t l1, l2, l3, l4;
         opmsg_build_init(&b, cmd);
         b.flags = flag_sets[f];
         b.request_id = -5;
         b.n_sequences = 1;
         b.sequences = &as_list;
         uint8_t *m1 = build_ok(&b, &l1);
         uint8_t *m3 = build_iovec_flat(&b, &l3);
         b.sequences = &as_raw;
         uint8_t *m2 = build_ok(&b, &l2);
         uint8_t *m4 = build_iovec_flat(&b, &l4);
         assert_int_equal(l1, l2);
         assert_int_equal(l1, l3);
         assert_int_equal(l1, l4);
         assert_memory_equal(m1, m2, l1);
         assert_memory_equal(m1, m3, l1);
         assert_memory_equal(m1, m4, l1);
         /* opmsg_build_new() too. */
         bson_error_t error;
         size_t l5;
         uint8_t *m5 = opmsg_build_new(&b, &l5, &error);
         assert_non_null(m5);
         assert_int_equal(l5, l1);
         assert_memory_equal(m1, m5, l1);
         bson_free(m1);
         bson_free(m2);
         free(m3);
         free(m4);
         bson_free(m5);
         docset_free(&s);
      }
   }
   bson_destroy(cmd);
}

/* The iovec list points at the caller's documents: nothing is copied. */
static void
test_iovec_no_copy(void **state)
{
   (void) state;
   docset_t s;
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\"}");
   docset_init(&s, 3, NULL);
   opmsg_sequence_in_t seqs[2] = {{"documents", list(&s), s.n, NULL, 0}, {"more", NULL, 0, s.raw, s.raw_len}};
   opmsg_build_t b;
   uint8_t scratch[OPMSG_BUILD_SCRATCH_SIZE(2)];
   struct iovec iov[16];
   size_t n, total;
   bson_error_t error;

   opmsg_build_init(&b, cmd);
   b.sequences = seqs;
   b.n_sequences = 2;
   b.flags = OPMSG_FLAG_CHECKSUM_PRESENT;
   assert_int_equal(opmsg_build_iovec_count(&b), 2 + (2 + 3) + (2 + 1) + 1);
   assert_true(opmsg_build_iovec(&b, scratch, sizeof scratch, iov, 16, &n, &total, &error));
   assert_int_equal(n, 11);
   assert_ptr_equal(iov[1].iov_base, bson_get_data(cmd));
   assert_ptr_equal(iov[3].iov_base, seqs[0].identifier);
   for (size_t i = 0; i < 3; i++) {
      assert_ptr_equal(iov[4 + i].iov_base, bson_get_data(s.docs[i]));
   }
   assert_ptr_equal(iov[8].iov_base, seqs[1].identifier);
   assert_ptr_equal(iov[9].iov_base, s.raw);
   /* Every framing byte lives in the scratch area. */
   size_t in_scratch = 0;
   for (size_t i = 0; i < n; i++) {
      const uint8_t *p = iov[i].iov_base;
      if (p >= scratch && p < scratch + sizeof scratch) {
         in_scratch += iov[i].iov_len;
      }
   }
   assert_int_equal(in_scratch, sizeof scratch);

   /* Too few entries or too little scratch. */
   assert_false(opmsg_build_iovec(&b, scratch, sizeof scratch, iov, 10, &n, &total, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_false(opmsg_build_iovec(&b, scratch, sizeof scratch - 1, iov, 16, &n, &total, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   bson_destroy(cmd);
   docset_free(&s);
}

/* ---------------------------------------------------------------------------
 * What the encoder refuses
 * ------------------------------------------------------------------------- */

static void
test_refuses_bad_command(void **state)
{
   (void) state;
   opmsg_build_t b;
   bson_t empty = BSON_INITIALIZER;

   opmsg_build_init(&b, NULL);
   assert_build_fails(&b, OPMSG_ERR_BAD_COMMAND);
   opmsg_build_init(&b, &empty);
   assert_build_fails(&b, OPMSG_ERR_BAD_COMMAND);

   /* Duplicate top-level key (bson_append does not prevent it). */
   bson_t dup = BSON_INITIALIZER;
   BSON_APPEND_INT32(&dup, "find", 1);
   BSON_APPEND_INT32(&dup, "x", 1);
   BSON_APPEND_INT32(&dup, "find", 2);
   opmsg_build_init(&b, &dup);
   assert_build_fails(&b, OPMSG_ERR_BAD_COMMAND);
   bson_destroy(&dup);

   /* Over 512 keys (the heap table), one duplicate at the very end. */
   bson_t many = BSON_INITIALIZER;
   char key[16];
   for (int i = 0; i < 1000; i++) {
      snprintf(key, sizeof key, "k%d", i);
      BSON_APPEND_INT32(&many, key, i);
   }
   opmsg_build_init(&b, &many);
   size_t size;
   bson_error_t error;
   assert_true(opmsg_build_size(&b, &size, &error));
   BSON_APPEND_INT32(&many, "k999", 0);
   assert_build_fails(&b, OPMSG_ERR_BAD_COMMAND);
   bson_destroy(&many);

   /* A malformed command: bad element type inside a static bson_t. */
   uint8_t bad[] = {12, 0, 0, 0, 0x7E, 'a', 0, 1, 2, 3, 4, 0};
   bson_t bad_doc;
   assert_true(bson_init_static(&bad_doc, bad, sizeof bad));
   opmsg_build_init(&b, &bad_doc);
   assert_build_fails(&b, OPMSG_ERR_BAD_COMMAND);

   /* A body above 16 MiB + 16 KiB. */
   bson_t *big = make_doc(0, 1024);
   opmsg_build_init(&b, big);
   b.max_bson_size = 100;
   b.max_message_size = 1 << 20;
   /* 100 + 16384 allows 1024: fine. */
   assert_true(opmsg_build_size(&b, &size, &error));
   bson_destroy(big);
   big = make_doc(0, 100 + OPMSG_BODY_ALLOWANCE + 1);
   opmsg_build_init(&b, big);
   b.max_bson_size = 100;
   b.max_message_size = 1 << 20;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_TOO_LARGE);
   bson_destroy(big);
}

static void
test_refuses_bad_flags(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"ping\": 1}");
   opmsg_build_t b;
   opmsg_build_init(&b, cmd);
   b.flags = 0x4;
   assert_build_fails(&b, OPMSG_ERR_REQUIRED_FLAGS);
   b.flags = 0x8000;
   assert_build_fails(&b, OPMSG_ERR_REQUIRED_FLAGS);
   b.flags = 0x40000; /* bit 18: optional, and no name */
   assert_build_fails(&b, OPMSG_ERR_INVALID_ARGUMENT);
   bson_destroy(cmd);
}

/* ---------------------------------------------------------------------------
 * The encoder refuses what the parser rejects (the rules of rules.c)
 * ------------------------------------------------------------------------- */

/* One message described twice: to the encoder, and written by hand for the
 * parser (the command's bytes as the body, then each identifier with the
 * same documents). */
typedef struct {
   const bson_t *cmd;
   const char *const *ids;
   size_t n_ids;
   const uint8_t *raw; /* each sequence's documents; NULL: one {x: 1} */
   size_t raw_len;
   uint32_t flags;
   size_t max_bson; /* 0: the default */
} agree_t;

/* The parser's verdict on c written by hand: OPMSG_OK or the error code,
 * whose message goes to *error. */
static opmsg_error_code_t
hand_made_verdict(const agree_t *c, const uint8_t *raw, size_t raw_len, bson_error_t *error)
{
   tu_buf_t t;
   opmsg_options_t opts;
   opmsg_msg_t msg;

   tu_buf_init(&t);
   tu_msg_begin(&t, c->flags);
   tu_put_u8(&t, 0);
   tu_put_bson(&t, c->cmd);
   for (size_t i = 0; i < c->n_ids; i++) {
      size_t mark = tu_msg_seq_begin(&t, c->ids[i]);
      tu_put(&t, raw, raw_len);
      tu_msg_seq_end(&t, mark);
   }
   tu_msg_end(&t);
   /* At the level the encoder checks a command at: its top-level elements,
    * no key twice. */
   opmsg_options_init(&opts);
   opts.check = OPMSG_CHECK_TOP_LEVEL;
   opts.max_bson_size = c->max_bson;
   memset(error, 0, sizeof *error);
   bool ok = opmsg_parse(t.data, t.len, &opts, &msg, error);
   tu_buf_free(&t);
   if (ok) {
      return OPMSG_OK;
   }
   assert_int_equal(error->domain, OPMSG_ERROR_DOMAIN);
   return (opmsg_error_code_t) error->code;
}

/* c for the encoder, in *b, with seqs (c->n_ids of them) pointing at the
 * documents raw[0..raw_len). */
static void
describe(const agree_t *c, opmsg_build_t *b, opmsg_sequence_in_t *seqs, const uint8_t *raw, size_t raw_len)
{
   for (size_t i = 0; i < c->n_ids; i++) {
      seqs[i].identifier = c->ids[i];
      seqs[i].docs = NULL;
      seqs[i].n_docs = 0;
      seqs[i].raw = raw;
      seqs[i].raw_len = raw_len;
   }
   opmsg_build_init(b, c->cmd);
   b->sequences = seqs;
   b->n_sequences = c->n_ids;
   b->flags = c->flags;
   b->max_bson_size = c->max_bson;
}

/* The encoder's verdict on c is build_code and the parser's parse_code.
 * When the encoder builds, the parser must accept and merge the result;
 * when it refuses (through every entry point), the parser must reject the
 * same message made by hand, with the same rule. The codes differ only where
 * build.h says so: a fault in the command is OPMSG_ERR_BAD_COMMAND, a
 * document above the limit OPMSG_ERR_DOCUMENT_OVER_LIMIT, an unknown
 * optional flag bit (which a receiver ignores) OPMSG_ERR_INVALID_ARGUMENT. */
static void
check_agree(const agree_t *c, opmsg_error_code_t build_code, opmsg_error_code_t parse_code)
{
   bson_t *x = json("{\"x\": 1}");
   const uint8_t *raw = c->raw ? c->raw : bson_get_data(x);
   size_t raw_len = c->raw ? c->raw_len : x->len;
   opmsg_sequence_in_t *seqs = calloc(c->n_ids + 1, sizeof *seqs);
   opmsg_build_t b;
   bson_error_t error;

   assert_non_null(seqs);
   describe(c, &b, seqs, raw, raw_len);
   if (build_code == OPMSG_OK) {
      size_t len;
      opmsg_msg_t msg;
      opmsg_options_t opts;
      uint8_t *buf = build_ok(&b, &len);
      opmsg_options_init(&opts);
      opts.max_bson_size = c->max_bson;
      parse_ok(buf, len, &opts, &msg);
      bson_t *merged = opmsg_merge_bson(&msg, &error);
      assert_non_null(merged);
      bson_destroy(merged);
      bson_free(buf);
      assert_int_equal(parse_code, OPMSG_OK);
   } else {
      assert_build_fails(&b, build_code);
   }
   opmsg_error_code_t got = hand_made_verdict(c, raw, raw_len, &error);
   if (got != parse_code) {
      fail_msg("the parser says %s, expected %s: %s", opmsg_error_name(got), opmsg_error_name(parse_code),
               error.message);
   }
   free(seqs);
   bson_destroy(x);
}

/* One identifier against a body: the builder's verdict, and when it builds,
 * the parser must accept the result. */
static void
check_identifier_case(const char *body, const char *id1, const char *id2, opmsg_error_code_t expect)
{
   bson_t *cmd = json(body);
   const char *ids[2] = {id1, id2};
   agree_t c = {cmd, ids, id2 ? 2 : 1, NULL, 0, 0, 0};
   check_agree(&c, expect, expect);
   bson_destroy(cmd);
}

static void
test_identifiers(void **state)
{
   (void) state;
   const char *body = "{\"cmd\": 1, \"a\": {\"b\": 1, \"d\": {\"e\": 2}}, \"n\": 5}";
   check_identifier_case(body, "documents", NULL, OPMSG_OK);
   check_identifier_case(body, "a.c", NULL, OPMSG_OK);                       /* adds a.c */
   check_identifier_case(body, "a.d.f", NULL, OPMSG_OK);                     /* adds a.d.f */
   check_identifier_case(body, "z.y", NULL, OPMSG_ERR_IDENTIFIER_CLASH);     /* no z: never created */
   check_identifier_case(body, "a.d.f.g", NULL, OPMSG_ERR_IDENTIFIER_CLASH); /* no a.d.f */
   check_identifier_case(body, "docs", "more", OPMSG_OK);
   check_identifier_case(body, "a.y", "a.z", OPMSG_OK); /* siblings */
   check_identifier_case(body, "x", "xy", OPMSG_OK);    /* not a path prefix */
   check_identifier_case(body, "", NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   check_identifier_case(body, ".a", NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   check_identifier_case(body, "q.", NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   check_identifier_case(body, "q..r", NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   check_identifier_case(body, "bad\xff", NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   check_identifier_case(body, "docs", "docs", OPMSG_ERR_DUPLICATE_IDENTIFIER);
   check_identifier_case(body, "x", "x.y", OPMSG_ERR_DUPLICATE_IDENTIFIER);
   check_identifier_case(body, "x.y.z", "x.y", OPMSG_ERR_DUPLICATE_IDENTIFIER);
   check_identifier_case(body, "cmd", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   check_identifier_case(body, "a", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   check_identifier_case(body, "a.b", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   check_identifier_case(body, "a.d.e", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   check_identifier_case(body, "n.m", NULL, OPMSG_ERR_IDENTIFIER_CLASH); /* 5 takes no field */
   check_identifier_case(body, "a.b.c", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   /* The encoder applies the parser's rule: no component twice on a path. */
   const char *twice = "{\"cmd\": 1, \"p\": {\"q\": {}, \"q\": {}}}";
   check_identifier_case(twice, "p.q.r", NULL, OPMSG_ERR_IDENTIFIER_CLASH);
   check_identifier_case(twice, "p.s", NULL, OPMSG_OK);

   /* 101 path components: deeper than the parser follows. */
   char deep[256];
   size_t at = 0;
   for (int i = 0; i < 101; i++) {
      deep[at++] = 'p';
      deep[at++] = '.';
   }
   deep[at - 1] = '\0';
   check_identifier_case(body, deep, NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   deep[2 * 100 - 1] = '\0'; /* 100 components: fine, in a body that holds the path */
   /* {p: {p: ... {}}}, 99 documents deep: the JSON parser stops short of
    * that, so it is built from the inside out. */
   bson_t *nested = bson_new();
   for (int i = 0; i < 99; i++) {
      bson_t *outer = bson_new();
      assert_true(BSON_APPEND_DOCUMENT(outer, "p", nested));
      bson_destroy(nested);
      nested = outer;
   }
   const char *deep_ids[1] = {deep};
   agree_t c = {nested, deep_ids, 1, NULL, 0, 0, 0};
   check_agree(&c, OPMSG_OK, OPMSG_OK);
   bson_destroy(nested);
}

/* Every flag bit: a required bit opmsg does not know is refused by both
 * sides; an unknown optional bit is ignored by the parser and never set by
 * the encoder. */
static void
test_flags_agree(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\"}");
   const char *ids[1] = {"documents"};
   const uint32_t known = OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME | OPMSG_FLAG_EXHAUST_ALLOWED |
                          OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED;
   for (unsigned bit = 0; bit < 32; bit++) {
      uint32_t flag = 1u << bit;
      agree_t c = {cmd, ids, 1, NULL, 0, flag, 0};
      if (flag & known) {
         check_agree(&c, OPMSG_OK, OPMSG_OK);
      } else if (bit < 16) {
         check_agree(&c, OPMSG_ERR_REQUIRED_FLAGS, OPMSG_ERR_REQUIRED_FLAGS);
      } else {
         check_agree(&c, OPMSG_ERR_INVALID_ARGUMENT, OPMSG_OK);
      }
   }
   bson_destroy(cmd);
}

/* Duplicate keys: one key set, one hash, on both sides. Keys the hash
 * cannot tell apart are still different keys. */
static void
test_duplicate_keys_agree(void **state)
{
   (void) state;
   const char *ids[1] = {"documents"};
   struct {
      const char *json;
      bool dup;
   } cases[] = {
      {"{\"find\": 1, \"filter\": {}, \"find\": 2}", true},
      {"{\"find\": 1, \"\": 1, \"\": 2}", true},
      {"{\"find\": 1, \"ab\": 1, \"abc\": 2, \"abcd\": 3, \"a\": 4}", false},
      /* Same length, same first and last 8 bytes: the same hash. */
      {"{\"find\": 1, \"aaaaaaaaXaaaaaaaa\": 1, \"aaaaaaaaYaaaaaaaa\": 2}", false},
      {"{\"find\": 1, \"aaaaaaaaXaaaaaaaa\": 1, \"aaaaaaaaXaaaaaaaa\": 2}", true},
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      bson_t *cmd = json(cases[i].json);
      agree_t c = {cmd, ids, 1, NULL, 0, 0, 0};
      if (cases[i].dup) {
         check_agree(&c, OPMSG_ERR_BAD_COMMAND, OPMSG_ERR_DUPLICATE_KEY);
      } else {
         check_agree(&c, OPMSG_OK, OPMSG_OK);
      }
      bson_destroy(cmd);
   }
   /* 600 keys: past the stack tables of both (256 and 512 keys). */
   bson_t many = BSON_INITIALIZER;
   char key[16];
   for (int i = 0; i < 600; i++) {
      snprintf(key, sizeof key, "k%d", i);
      BSON_APPEND_INT32(&many, key, i);
   }
   agree_t c = {&many, ids, 1, NULL, 0, 0, 0};
   check_agree(&c, OPMSG_OK, OPMSG_OK);
   BSON_APPEND_INT32(&many, "k17", 0);
   check_agree(&c, OPMSG_ERR_BAD_COMMAND, OPMSG_ERR_DUPLICATE_KEY);
   bson_destroy(&many);
}

/* A sub-document that a dotted identifier enters is rewritten by the merge
 * field by field, so all of it is checked, not only the fields on the way:
 * here "b" is sound and the field after it is not. Elsewhere nested
 * documents are the application's business. */
static void
test_path_subdocument_agrees(void **state)
{
   (void) state;
   tu_buf_t d;
   tu_buf_init(&d);
   /* {cmd: 1, a: {b: {}, z: <unknown type 0x42>}} */
   tu_put_i32(&d, 4 + (1 + 4 + 4) + (1 + 2 + 20) + 1);
   tu_put_u8(&d, BSON_TYPE_INT32);
   tu_put_cstr(&d, "cmd");
   tu_put_i32(&d, 1);
   tu_put_u8(&d, BSON_TYPE_DOCUMENT);
   tu_put_cstr(&d, "a");
   tu_put_i32(&d, 4 + (1 + 2 + 5) + (1 + 2 + 4) + 1);
   tu_put_u8(&d, BSON_TYPE_DOCUMENT);
   tu_put_cstr(&d, "b");
   tu_put_i32(&d, 5);
   tu_put_u8(&d, 0);
   tu_put_u8(&d, 0x42);
   tu_put_cstr(&d, "z");
   tu_put_i32(&d, 0);
   tu_put_u8(&d, 0);
   tu_put_u8(&d, 0);
   bson_t cmd;
   assert_true(bson_init_static(&cmd, d.data, d.len));

   const char *deep[1] = {"a.b.c"};
   const char *other[1] = {"a.q"};
   const char *elsewhere[1] = {"documents"};
   agree_t c = {&cmd, deep, 1, NULL, 0, 0, 0};
   check_agree(&c, OPMSG_ERR_BAD_COMMAND, OPMSG_ERR_DOCUMENT_ELEMENT);
   c.ids = other;
   check_agree(&c, OPMSG_ERR_BAD_COMMAND, OPMSG_ERR_DOCUMENT_ELEMENT);
   c.ids = elsewhere;
   check_agree(&c, OPMSG_OK, OPMSG_OK);
   tu_buf_free(&d);
}

/* More than OPMSG_MAX_DOTTED_SEQUENCES sequences with a dotted identifier
 * among them: both refuse; at the limit both accept. */
static void
test_dotted_count_agrees(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\", \"z\": {}}");
   char names[OPMSG_MAX_DOTTED_SEQUENCES + 1][16];
   const char *ids[OPMSG_MAX_DOTTED_SEQUENCES + 1];
   snprintf(names[0], sizeof names[0], "z.a");
   ids[0] = names[0];
   for (int i = 1; i <= OPMSG_MAX_DOTTED_SEQUENCES; i++) {
      snprintf(names[i], sizeof names[i], "s%d", i);
      ids[i] = names[i];
   }
   agree_t c = {cmd, ids, OPMSG_MAX_DOTTED_SEQUENCES + 1, NULL, 0, 0, 0};
   check_agree(&c, OPMSG_ERR_SEQUENCE_IDENTIFIER, OPMSG_ERR_SEQUENCE_IDENTIFIER);
   c.n_ids = OPMSG_MAX_DOTTED_SEQUENCES;
   check_agree(&c, OPMSG_OK, OPMSG_OK);
   bson_destroy(cmd);
}

/* Faulty sequence documents: the same rule on both sides. Two codes differ
 * by design: a document above the limit is one the encoder's caller must
 * send elsewhere (OPMSG_ERR_DOCUMENT_OVER_LIMIT), and a raw run cut short
 * is the section's overrun to the parser, which reads the section's frame
 * where the encoder writes it. */
static void
test_documents_agree(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\"}");
   const char *ids[1] = {"documents"};
   docset_t s;
   docset_init(&s, 3, NULL);
   size_t first = s.docs[0]->len;
   uint8_t *copy = malloc(s.raw_len);
   assert_non_null(copy);
   agree_t c = {cmd, ids, 1, copy, s.raw_len, 0, 0};

   memcpy(copy, s.raw, s.raw_len);
   check_agree(&c, OPMSG_OK, OPMSG_OK);
   copy[first + s.docs[1]->len - 1] = 7; /* document 1's terminator */
   check_agree(&c, OPMSG_ERR_DOCUMENT_TERMINATOR, OPMSG_ERR_DOCUMENT_TERMINATOR);
   memcpy(copy, s.raw, s.raw_len);
   copy[first + 4] = 0x42; /* document 1's first element's type */
   check_agree(&c, OPMSG_ERR_DOCUMENT_ELEMENT, OPMSG_ERR_DOCUMENT_ELEMENT);
   memcpy(copy, s.raw, s.raw_len);
   opmsg_write_u32(copy + first, 4); /* below the minimum length */
   check_agree(&c, OPMSG_ERR_DOCUMENT_LENGTH, OPMSG_ERR_DOCUMENT_LENGTH);
   memcpy(copy, s.raw, s.raw_len);
   c.max_bson = s.docs[1]->len - 1;
   check_agree(&c, OPMSG_ERR_DOCUMENT_OVER_LIMIT, OPMSG_ERR_DOCUMENT_TOO_LARGE);
   c.max_bson = 0;
   c.raw_len = s.raw_len - 1;
   check_agree(&c, OPMSG_ERR_DOCUMENT_LENGTH, OPMSG_ERR_SEQUENCE_OVERRUN);

   /* A boolean byte other than 0 or 1. */
   bson_t *flag = json("{\"f\": true}");
   uint8_t bad[16];
   assert_true(flag->len <= sizeof bad);
   memcpy(bad, bson_get_data(flag), flag->len);
   bad[flag->len - 2] = 2;
   agree_t b = {cmd, ids, 1, bad, flag->len, 0, 0};
   check_agree(&b, OPMSG_ERR_INVALID_BOOLEAN, OPMSG_ERR_INVALID_BOOLEAN);

   bson_destroy(flag);
   free(copy);
   docset_free(&s);
   bson_destroy(cmd);
}

/* The messages name the rule in the same words on both sides, and the
 * same offsets; the encoder names a sequence by its index, the parser by
 * its offset, and the encoder's caller calls the body its command. */
static void
test_messages_agree(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\", \"n\": 5}");
   const char *cases[][3] = {
      /* identifier, the encoder's words, the parser's */
      {"q..r", ": the identifier has an empty path component", ": the identifier has an empty path component"},
      {"n.m", ": command field \"n\" is not a document", ": body field \"n\" is not a document"},
      {"insert", ": the command already has that field (at offset 25)",
       ": the body already has that field (at offset 25)"},
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      agree_t c = {cmd, &cases[i][0], 1, NULL, 0, 0, 0};
      opmsg_sequence_in_t seq;
      opmsg_build_t b;
      bson_error_t error;
      size_t size;
      describe(&c, &b, &seq, NULL, 0);
      assert_false(opmsg_build_size(&b, &size, &error));
      assert_non_null(strstr(error.message, "sequence 0 \""));
      assert_non_null(strstr(error.message, cases[i][1]));
      assert_int_not_equal(hand_made_verdict(&c, NULL, 0, &error), OPMSG_OK);
      assert_non_null(strstr(error.message, "\" at offset "));
      assert_non_null(strstr(error.message, cases[i][2]));
   }
   bson_destroy(cmd);
}

/* The limits: one function for both sides. Defaults for 0; messageLength
 * and a body (max_bson_size + OPMSG_BODY_ALLOWANCE) fit an int32. */
static void
test_limits_rule(void **state)
{
   (void) state;
   opmsg_limits_t l;
   opmsg_options_t opts;
   opmsg_limits_set(&l, 0, 0, 0);
   assert_int_equal(l.max_message_size, OPMSG_DEFAULT_MAX_MESSAGE_SIZE);
   assert_int_equal(l.max_bson_size, OPMSG_DEFAULT_MAX_BSON_SIZE);
   opmsg_limits_set(&l, 1000, 100, OPMSG_PARSE_REQUEST);
   assert_int_equal(l.max_message_size, 1000);
   assert_int_equal(l.max_bson_size, 100);
   assert_int_equal(l.flags, OPMSG_PARSE_REQUEST);
   opmsg_limits_set(&l, SIZE_MAX, SIZE_MAX, 0);
   assert_int_equal(l.max_message_size, INT32_MAX);
   assert_int_equal(opmsg_body_limit(&l), INT32_MAX);
   opmsg_options_init(&opts);
   opts.max_bson_size = (size_t) INT32_MAX;
   opmsg_limits_from(&opts, &l);
   assert_int_equal(opmsg_body_limit(&l), INT32_MAX);
   opmsg_limits_from(NULL, &l);
   assert_int_equal(l.max_bson_size, OPMSG_DEFAULT_MAX_BSON_SIZE);
}

static void
test_refuses_bad_documents(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\"}");
   docset_t s;
   docset_init(&s, 5, NULL);
   opmsg_sequence_in_t seq = {"documents", NULL, 0, NULL, 0};
   opmsg_build_t b;
   bson_error_t error;
   size_t size;
   opmsg_build_init(&b, cmd);
   b.sequences = &seq;
   b.n_sequences = 1;

   /* A raw run cut short inside its last document. */
   seq.raw = s.raw;
   seq.raw_len = s.raw_len - 1;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_LENGTH);
   assert_false(opmsg_build_size(&b, &size, &error));
   assert_non_null(strstr(error.message, "document 4"));

   /* A run whose document lost its terminator. */
   uint8_t *copy = malloc(s.raw_len);
   memcpy(copy, s.raw, s.raw_len);
   size_t off2 = s.docs[0]->len + s.docs[1]->len;
   copy[off2 + s.docs[2]->len - 1] = 7;
   seq.raw = copy;
   seq.raw_len = s.raw_len;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_TERMINATOR);
   assert_false(opmsg_build_size(&b, &size, &error));
   assert_non_null(strstr(error.message, "document 2"));

   /* A run with a stray byte after the last document. */
   uint8_t *longer = malloc(s.raw_len + 1);
   memcpy(longer, s.raw, s.raw_len);
   longer[s.raw_len] = 0;
   seq.raw = longer;
   seq.raw_len = s.raw_len + 1;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_LENGTH);

   /* Both forms at once; a NULL list entry. */
   seq.raw = s.raw;
   seq.raw_len = s.raw_len;
   seq.docs = list(&s);
   seq.n_docs = s.n;
   assert_build_fails(&b, OPMSG_ERR_INVALID_ARGUMENT);
   seq.raw = NULL;
   seq.raw_len = 0;
   const bson_t *with_null[2] = {s.docs[0], NULL};
   seq.docs = with_null;
   seq.n_docs = 2;
   assert_build_fails(&b, OPMSG_ERR_INVALID_ARGUMENT);

   /* A list document above maxBsonObjectSize, named by its index. */
   bson_t *big = make_doc(9, 300);
   const bson_t *three[3] = {s.docs[0], s.docs[1], big};
   seq.docs = three;
   seq.n_docs = 3;
   b.max_bson_size = 299;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_OVER_LIMIT);
   assert_false(opmsg_build_size(&b, &size, &error));
   assert_non_null(strstr(error.message, "document 2"));
   b.max_bson_size = 300;
   assert_true(opmsg_build_size(&b, &size, &error));

   /* The whole message above max_message_size. */
   b.max_message_size = size - 1;
   assert_build_fails(&b, OPMSG_ERR_OUTPUT_TOO_LARGE);
   b.max_message_size = size;
   assert_true(opmsg_build_size(&b, &size, &error));

   /* Buffer one byte short. */
   uint8_t *buf = malloc(size);
   assert_false(opmsg_build_into(&b, buf, size - 1, NULL, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_true(opmsg_build_into(&b, buf, size, NULL, &error));
   free(buf);

   free(copy);
   free(longer);
   bson_destroy(big);
   bson_destroy(cmd);
   docset_free(&s);
}

/* ---------------------------------------------------------------------------
 * Splitting
 * ------------------------------------------------------------------------- */

/* Bytes of a message for `cmd` with an empty sequence `id`, counted by hand
 * from the wire format. */
static size_t
framing_size(const bson_t *cmd, const char *id, bool checksum)
{
   return 16 + 4 + 1 + cmd->len + 1 + 4 + strlen(id) + 1 + (checksum ? 4 : 0);
}

typedef struct {
   size_t n_messages;
   size_t counts[64];
} split_result_t;

/* Splits, builds every batch, parses it with the same limits, checks each
 * message's size and fullness, and reassembles: the merged sequences in
 * order must be the original documents. */
static void
split_and_check(const bson_t *cmd, const docset_t *s, bool raw, uint32_t flags, const opmsg_split_limits_t *limits,
                split_result_t *out)
{
   opmsg_sequence_in_t seq = {"documents", NULL, 0, NULL, 0};
   opmsg_build_t tmpl;
   opmsg_splitter_t sp;
   opmsg_batch_t batch;
   bson_error_t error;
   size_t next_doc = 0;
   size_t max_msg = limits->max_message_size ? limits->max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   size_t max_batch = limits->max_write_batch ? limits->max_write_batch : OPMSG_DEFAULT_MAX_WRITE_BATCH;
   size_t fixed = framing_size(cmd, "documents", flags & OPMSG_FLAG_CHECKSUM_PRESENT);
   opmsg_options_t opts;

   opmsg_options_init(&opts);
   opts.max_message_size = max_msg;
   opts.max_bson_size = limits->max_bson_size;
   if (raw) {
      seq.raw = s->raw;
      seq.raw_len = s->raw_len;
   } else {
      seq.docs = list(s);
      seq.n_docs = s->n;
   }
   opmsg_build_init(&tmpl, cmd);
   tmpl.flags = flags;
   tmpl.request_id = 100;
   if (!opmsg_splitter_init(&sp, &tmpl, &seq, limits, &error)) {
      fail_msg("splitter_init: %s: %s", opmsg_error_name(error.code), error.message);
   }
   out->n_messages = 0;
   while (opmsg_splitter_next(&sp, &batch)) {
      size_t len;
      opmsg_msg_t msg;
      assert_int_equal(batch.index, out->n_messages);
      assert_int_equal(batch.first_index, next_doc);
      if (out->n_messages < 64) {
         out->counts[out->n_messages] = batch.count;
      }
      out->n_messages++;

      uint8_t *buf = build_ok(batch.build, &len);
      assert_int_equal(len, batch.message_size);
      assert_true(len <= max_msg);
      assert_true(batch.count <= max_batch);
      /* Each batch as full as it may be: the next document would break a
       * limit. */
      if (next_doc + batch.count < s->n) {
         assert_true(batch.count == max_batch || len + s->docs[next_doc + batch.count]->len > max_msg);
      }
      /* The iovec form agrees. */
      size_t flat_len;
      uint8_t *flat = build_iovec_flat(batch.build, &flat_len);
      assert_int_equal(flat_len, len);
      assert_memory_equal(flat, buf, len);
      free(flat);

      parse_ok(buf, len, &opts, &msg);
      assert_int_equal(msg.request_id, 100 + (int32_t) batch.index);
      assert_int_equal(msg.flags, flags);
      bson_t *merged = opmsg_merge_bson(&msg, &error);
      assert_non_null(merged);
      bson_t expected;
      bson_init(&expected);
      assert_true(bson_concat(&expected, cmd));
      append_array(&expected, "documents", s, next_doc, batch.count);
      assert_true(bson_equal(merged, &expected));
      bson_destroy(&expected);
      bson_destroy(merged);
      size_t doc_bytes = 0;
      for (size_t i = 0; i < batch.count; i++) {
         doc_bytes += s->docs[next_doc + i]->len;
      }
      assert_int_equal(len, fixed + doc_bytes);
      next_doc += batch.count;
      bson_free(buf);
   }
   assert_int_equal(next_doc, s->n);
   assert_false(opmsg_splitter_next(&sp, &batch));
}

static size_t
size_100(size_t i)
{
   (void) i;
   return 100;
}

static void
test_split_exact_byte_boundary(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"coll\", \"$db\": \"db\"}");
   docset_t s;
   split_result_t r;
   docset_init(&s, 10, size_100);

   for (int crc = 0; crc < 2; crc++) {
      uint32_t flags = crc ? OPMSG_FLAG_CHECKSUM_PRESENT : 0;
      size_t fixed = framing_size(cmd, "documents", crc);
      for (int raw = 0; raw < 2; raw++) {
         /* Exactly 10 documents' room: one message, full to the byte. */
         opmsg_split_limits_t l = {fixed + 10 * 100, 0, 0};
         split_and_check(cmd, &s, raw, flags, &l, &r);
         assert_int_equal(r.n_messages, 1);
         assert_int_equal(r.counts[0], 10);
         /* One byte less: one more message. */
         l.max_message_size--;
         split_and_check(cmd, &s, raw, flags, &l, &r);
         assert_int_equal(r.n_messages, 2);
         assert_int_equal(r.counts[0], 9);
         assert_int_equal(r.counts[1], 1);
         /* Room for exactly 3: 3, 3, 3, 1. */
         l.max_message_size = fixed + 300;
         split_and_check(cmd, &s, raw, flags, &l, &r);
         assert_int_equal(r.n_messages, 4);
         assert_int_equal(r.counts[0], 3);
         assert_int_equal(r.counts[3], 1);
         /* Room for one document only (to the byte). */
         l.max_message_size = fixed + 100;
         split_and_check(cmd, &s, raw, flags, &l, &r);
         assert_int_equal(r.n_messages, 10);
      }
   }
   bson_destroy(cmd);
   docset_free(&s);
}

static void
test_split_write_batch_boundary(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"coll\", \"$db\": \"db\"}");
   docset_t s;
   split_result_t r;
   opmsg_split_limits_t l = {0, 7, 0};

   docset_init(&s, 7, NULL);
   split_and_check(cmd, &s, false, 0, &l, &r);
   assert_int_equal(r.n_messages, 1);
   assert_int_equal(r.counts[0], 7);
   docset_free(&s);

   docset_init(&s, 8, NULL);
   split_and_check(cmd, &s, true, 0, &l, &r);
   assert_int_equal(r.n_messages, 2);
   assert_int_equal(r.counts[0], 7);
   assert_int_equal(r.counts[1], 1);
   docset_free(&s);

   /* The defaults: 100,000 exactly, then 100,001. */
   opmsg_split_limits_t d = {0, 0, 0};
   docset_init(&s, 100001, size_100);
   opmsg_sequence_in_t seq = {"documents", list(&s), 100000, NULL, 0};
   opmsg_build_t tmpl;
   opmsg_splitter_t sp;
   opmsg_batch_t batch;
   bson_error_t error;
   opmsg_build_init(&tmpl, cmd);
   assert_true(opmsg_splitter_init(&sp, &tmpl, &seq, &d, &error));
   assert_true(opmsg_splitter_next(&sp, &batch));
   assert_int_equal(batch.count, 100000);
   assert_false(opmsg_splitter_next(&sp, &batch));
   seq.n_docs = 100001;
   split_and_check(cmd, &s, false, OPMSG_FLAG_CHECKSUM_PRESENT, &d, &r);
   assert_int_equal(r.n_messages, 2);
   assert_int_equal(r.counts[0], 100000);
   assert_int_equal(r.counts[1], 1);
   docset_free(&s);
   bson_destroy(cmd);
}

static size_t
varied(size_t i)
{
   /* Deterministic spread of sizes from 24 to 1,000 bytes. */
   return 24 + (i * 7919u) % 977u;
}

/* Many documents of varied sizes under a tight limit: reassembly gives the
 * original order, every message full, list and raw runs identical. */
static void
test_split_reassembly(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"coll\", \"ordered\": false, \"$db\": \"db\"}");
   docset_t s;
   split_result_t r1, r2;
   opmsg_split_limits_t l = {4096, 0, 1000};
   docset_init(&s, 3000, varied);
   split_and_check(cmd, &s, false, OPMSG_FLAG_CHECKSUM_PRESENT, &l, &r1);
   split_and_check(cmd, &s, true, OPMSG_FLAG_CHECKSUM_PRESENT, &l, &r2);
   assert_true(r1.n_messages > 100);
   assert_int_equal(r1.n_messages, r2.n_messages);
   l.max_write_batch = 5;
   split_and_check(cmd, &s, true, 0, &l, &r1);
   assert_int_equal(r1.n_messages, 600);
   docset_free(&s);

   /* An empty sequence: one message with an empty array. */
   docset_init(&s, 0, NULL);
   split_and_check(cmd, &s, false, 0, &l, &r1);
   assert_int_equal(r1.n_messages, 1);
   assert_int_equal(r1.counts[0], 0);
   docset_free(&s);
   bson_destroy(cmd);
}

static void
test_split_document_over_limit(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"coll\", \"$db\": \"db\"}");
   docset_t s;
   opmsg_build_t tmpl;
   opmsg_splitter_t sp;
   bson_error_t error;
   opmsg_build_init(&tmpl, cmd);
   docset_init(&s, 20, NULL); /* sizes 24..43 */

   for (int raw = 0; raw < 2; raw++) {
      opmsg_sequence_in_t seq = {"documents", NULL, 0, NULL, 0};
      if (raw) {
         seq.raw = s.raw;
         seq.raw_len = s.raw_len;
      } else {
         seq.docs = list(&s);
         seq.n_docs = s.n;
      }
      /* maxBsonObjectSize 40: document 16 (40 bytes) fits, 17 (41) does not. */
      opmsg_split_limits_t l = {0, 0, 40};
      assert_false(opmsg_splitter_init(&sp, &tmpl, &seq, &l, &error));
      assert_error(&error, OPMSG_ERR_DOCUMENT_OVER_LIMIT);
      assert_non_null(strstr(error.message, "document 17 "));

      /* Fits maxBsonObjectSize but not a message with the command. */
      size_t fixed = framing_size(cmd, "documents", false);
      opmsg_split_limits_t m = {fixed + 30, 0, 0};
      assert_false(opmsg_splitter_init(&sp, &tmpl, &seq, &m, &error));
      assert_error(&error, OPMSG_ERR_DOCUMENT_OVER_LIMIT);
      assert_non_null(strstr(error.message, "document 7 "));
      /* With the checksum's 4 bytes the limit bites 4 documents earlier. */
      tmpl.flags = OPMSG_FLAG_CHECKSUM_PRESENT;
      assert_false(opmsg_splitter_init(&sp, &tmpl, &seq, &m, &error));
      assert_non_null(strstr(error.message, "document 3 "));
      tmpl.flags = 0;

      /* The command alone is too large for a message. */
      opmsg_split_limits_t tiny = {fixed - 1, 0, 0};
      assert_false(opmsg_splitter_init(&sp, &tmpl, &seq, &tiny, &error));
      assert_error(&error, OPMSG_ERR_OUTPUT_TOO_LARGE);
   }

   /* A malformed document is found before the first batch. */
   uint8_t *copy = malloc(s.raw_len);
   memcpy(copy, s.raw, s.raw_len);
   copy[s.raw_len - 1] = 1;
   opmsg_sequence_in_t bad = {"documents", NULL, 0, copy, s.raw_len};
   assert_false(opmsg_splitter_init(&sp, &tmpl, &bad, NULL, &error));
   assert_error(&error, OPMSG_ERR_DOCUMENT_TERMINATOR);
   assert_non_null(strstr(error.message, "document 19"));
   free(copy);

   /* The template must not carry sequences of its own; the identifier is
    * checked against the command. */
   opmsg_sequence_in_t clash = {"insert", list(&s), s.n, NULL, 0};
   assert_false(opmsg_splitter_init(&sp, &tmpl, &clash, NULL, &error));
   assert_error(&error, OPMSG_ERR_IDENTIFIER_CLASH);
   tmpl.sequences = &clash;
   tmpl.n_sequences = 1;
   opmsg_sequence_in_t ok = {"documents", list(&s), s.n, NULL, 0};
   assert_false(opmsg_splitter_init(&sp, &tmpl, &ok, NULL, &error));
   assert_error(&error, OPMSG_ERR_INVALID_ARGUMENT);

   docset_free(&s);
   bson_destroy(cmd);
}

/* trust_documents skips the element walk, not the frame checks. */
static void
test_trust_documents(void **state)
{
   (void) state;
   bson_t *cmd = json("{\"insert\": \"c\", \"$db\": \"d\"}");
   docset_t s;
   docset_init(&s, 50, NULL);
   opmsg_sequence_in_t seq = {"documents", NULL, 0, s.raw, s.raw_len};
   opmsg_build_t b;
   size_t l1, l2;
   opmsg_build_init(&b, cmd);
   b.sequences = &seq;
   b.n_sequences = 1;
   uint8_t *m1 = build_ok(&b, &l1);
   b.trust_documents = true;
   uint8_t *m2 = build_ok(&b, &l2);
   assert_int_equal(l1, l2);
   assert_memory_equal(m1, m2, l1);

   /* Document 3's first element gets an unknown type byte. */
   uint8_t *copy = malloc(s.raw_len);
   memcpy(copy, s.raw, s.raw_len);
   size_t off3 = s.docs[0]->len + s.docs[1]->len + s.docs[2]->len;
   copy[off3 + 4] = 0x77;
   seq.raw = copy;
   b.trust_documents = false;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_ELEMENT);
   opmsg_splitter_t sp;
   bson_error_t error;
   b.sequences = NULL;
   b.n_sequences = 0;
   assert_false(opmsg_splitter_init(&sp, &b, &seq, NULL, &error));
   assert_error(&error, OPMSG_ERR_DOCUMENT_ELEMENT);
   assert_non_null(strstr(error.message, "document 3"));
   /* Vouched for: built as given (the parser would refuse it, which is the
    * caller's promise broken). */
   b.trust_documents = true;
   assert_true(opmsg_splitter_init(&sp, &b, &seq, NULL, &error));
   b.sequences = &seq;
   b.n_sequences = 1;
   size_t size;
   assert_true(opmsg_build_size(&b, &size, &error));
   /* Frames are still checked. */
   seq.raw_len--;
   assert_build_fails(&b, OPMSG_ERR_DOCUMENT_LENGTH);
   b.sequences = NULL;
   b.n_sequences = 0;
   assert_false(opmsg_splitter_init(&sp, &b, &seq, NULL, &error));
   assert_error(&error, OPMSG_ERR_DOCUMENT_LENGTH);
   free(copy);
   bson_free(m1);
   bson_free(m2);
   bson_destroy(cmd);
   docset_free(&s);
}

/* Building into a buffer, as an iovec list, and splitting allocate
 * nothing. */
static void
test_no_allocations(void **state)
{
   (void) state;
   docset_t s;
   bson_t *cmd = json("{\"insert\": \"c\", \"cursor\": {}, \"$db\": \"d\"}");
   docset_init(&s, 500, NULL);
   opmsg_sequence_in_t seqs[2] = {{"documents", list(&s), s.n, NULL, 0}, {"cursor.x", NULL, 0, s.raw, s.raw_len}};
   opmsg_build_t b;
   size_t size, n, total;
   bson_error_t error;
   opmsg_build_init(&b, cmd);
   b.sequences = seqs;
   b.n_sequences = 2;
   b.flags = OPMSG_FLAG_CHECKSUM_PRESENT;
   size_t iov_n = opmsg_build_iovec_count(&b);
   struct iovec *iov = malloc(iov_n * sizeof *iov);
   uint8_t scratch[OPMSG_BUILD_SCRATCH_SIZE(2)];
   assert_true(opmsg_build_size(&b, &size, &error));
   uint8_t *buf = malloc(size);

   tu_count_allocs_begin();
   bool ok = opmsg_build_size(&b, &size, &error) && opmsg_build_into(&b, buf, size, &n, &error) &&
             opmsg_build_iovec(&b, scratch, sizeof scratch, iov, iov_n, &n, &total, &error);
   opmsg_splitter_t sp;
   opmsg_batch_t batch;
   opmsg_split_limits_t l = {2000, 0, 0};
   size_t batches = 0;
   b.sequences = NULL;
   b.n_sequences = 0;
   ok = ok && opmsg_splitter_init(&sp, &b, &seqs[0], &l, &error);
   while (ok && opmsg_splitter_next(&sp, &batch)) {
      ok = opmsg_build_into(batch.build, buf, size, &n, &error);
      batches++;
   }
   size_t allocs = tu_count_allocs_end();
   assert_true(ok);
   assert_true(batches > 10);
   assert_int_equal(allocs, 0);
   free(iov);
   free(buf);
   bson_destroy(cmd);
   docset_free(&s);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_one),
      cmocka_unit_test(test_round_trip_flags),
      cmocka_unit_test(test_round_trip_100000),
      cmocka_unit_test(test_checksum_coverage),
      cmocka_unit_test(test_several_sequences),
      cmocka_unit_test(test_raw_list_iovec_identical),
      cmocka_unit_test(test_iovec_no_copy),
      cmocka_unit_test(test_refuses_bad_command),
      cmocka_unit_test(test_refuses_bad_flags),
      cmocka_unit_test(test_identifiers),
      cmocka_unit_test(test_flags_agree),
      cmocka_unit_test(test_duplicate_keys_agree),
      cmocka_unit_test(test_path_subdocument_agrees),
      cmocka_unit_test(test_dotted_count_agrees),
      cmocka_unit_test(test_documents_agree),
      cmocka_unit_test(test_messages_agree),
      cmocka_unit_test(test_limits_rule),
      cmocka_unit_test(test_refuses_bad_documents),
      cmocka_unit_test(test_split_exact_byte_boundary),
      cmocka_unit_test(test_split_write_batch_boundary),
      cmocka_unit_test(test_split_reassembly),
      cmocka_unit_test(test_split_document_over_limit),
      cmocka_unit_test(test_trust_documents),
      cmocka_unit_test(test_no_allocations),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
