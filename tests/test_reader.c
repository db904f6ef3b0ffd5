/* test_reader.c - the stream reader (opmsg/reader.h). */
#define _POSIX_C_SOURCE 200809L /* fileno, ftruncate, pipe */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * An allocator that tracks the bytes libbson-routed code holds, to check the
 * reader's memory bound.
 * ------------------------------------------------------------------------- */

typedef struct {
   size_t size;
   size_t pad; /* keeps the payload 16-byte aligned */
} mem_head_t;

static size_t mem_now;
static size_t mem_peak;
static size_t mem_largest;

static void
mem_track(size_t add, size_t sub)
{
   mem_now = mem_now + add - sub;
   if (mem_now > mem_peak) {
      mem_peak = mem_now;
   }
   if (add > mem_largest) {
      mem_largest = add;
   }
}

static void *
mem_malloc(size_t n)
{
   mem_head_t *h = malloc(sizeof *h + n);
   if (!h) {
      return NULL;
   }
   h->size = n;
   mem_track(n, 0);
   return h + 1;
}

static void *
mem_calloc(size_t n, size_t m)
{
   void *p = mem_malloc(n * m);
   if (p) {
      memset(p, 0, n * m);
   }
   return p;
}

static void *
mem_realloc(void *p, size_t n)
{
   if (!p) {
      return mem_malloc(n);
   }
   mem_head_t *h = (mem_head_t *) p - 1;
   size_t old = h->size;
   h = realloc(h, sizeof *h + n);
   if (!h) {
      return NULL;
   }
   h->size = n;
   mem_track(n, old);
   return h + 1;
}

static void
mem_free(void *p)
{
   if (p) {
      mem_head_t *h = (mem_head_t *) p - 1;
      mem_track(0, h->size);
      free(h);
   }
}

static void
mem_begin(void)
{
   static bson_mem_vtable_t vt = {.malloc = mem_malloc, .calloc = mem_calloc, .realloc = mem_realloc, .free = mem_free};
   mem_now = mem_peak = mem_largest = 0;
   bson_mem_set_vtable(&vt);
}

static void
mem_end(void)
{
   assert_int_equal(mem_now, 0); /* everything given back */
   bson_mem_restore_vtable();
}

/* ---------------------------------------------------------------------------
 * Test streams
 * ------------------------------------------------------------------------- */

/* A deterministic generator (fixed seed) for piece sizes. */
static uint32_t rng_state;
static uint32_t
rng(void)
{
   rng_state = rng_state * 1664525u + 1013904223u;
   return rng_state >> 8;
}

/* One OP_MSG with a body padded to about `pad` bytes. */
static void
put_message(tu_buf_t *out, int32_t request_id, int32_t response_to, uint32_t flags, size_t pad)
{
   bson_t cmd = BSON_INITIALIZER;
   char *s = malloc(pad + 1);
   assert_non_null(s);
   memset(s, 'p', pad);
   s[pad] = '\0';
   BSON_APPEND_INT32(&cmd, "ok", 1);
   BSON_APPEND_UTF8(&cmd, "pad", s);
   free(s);
   opmsg_build_t b;
   opmsg_build_init(&b, &cmd);
   b.request_id = request_id;
   b.response_to = response_to;
   b.flags = flags;
   bson_error_t error;
   size_t len;
   uint8_t *msg = opmsg_build_new(&b, &len, &error);
   assert_non_null(msg);
   tu_put(out, msg, len);
   bson_free(msg);
   bson_destroy(&cmd);
}

typedef struct {
   tu_buf_t stream;
   size_t offsets[128];
   size_t lengths[128];
   size_t n;
   size_t largest;
} stream_t;

/* 60 messages of varied sizes, three of them above OPMSG_READER_CHUNK. */
static void
stream_init(stream_t *s)
{
   tu_buf_init(&s->stream);
   s->n = 0;
   s->largest = 0;
   for (int i = 0; i < 60; i++) {
      size_t pad = (size_t) (i * 37) % 300;
      if (i == 10 || i == 11 || i == 40) {
         pad = 100000 + (size_t) i * 1000;
      }
      s->offsets[s->n] = s->stream.len;
      put_message(&s->stream, i + 1, 0, 0, pad);
      s->lengths[s->n] = s->stream.len - s->offsets[s->n];
      if (s->lengths[s->n] > s->largest) {
         s->largest = s->lengths[s->n];
      }
      s->n++;
   }
}

/* Feeds the stream in pieces from piece_size(), draining messages as they
 * come, and checks each against the original. Returns the messages seen. */
static size_t
feed_stream(opmsg_reader_t *r, const stream_t *s, size_t (*piece_size)(void))
{
   size_t off = 0, seen = 0;
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   opmsg_reader_status_t st;

   while (off < s->stream.len) {
      size_t n = piece_size();
      if (n > s->stream.len - off) {
         n = s->stream.len - off;
      }
      size_t taken = 0;
      while (taken < n) {
         size_t t = opmsg_reader_feed(r, s->stream.data + off + taken, n - taken);
         size_t seen_before = seen;
         taken += t;
         while ((st = opmsg_reader_next(r, &msg, &len, &error)) == OPMSG_READER_MESSAGE) {
            assert_true(seen < s->n);
            assert_int_equal(len, s->lengths[seen]);
            assert_memory_equal(msg, s->stream.data + s->offsets[seen], len);
            seen++;
         }
         if (st == OPMSG_READER_ERROR) {
            fail_msg("reader failed: %s", error.message);
         }
         /* No progress and no message would mean a stuck reader. */
         assert_true(t > 0 || seen > seen_before);
      }
      off += n;
   }
   opmsg_reader_end(r);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_END);
   assert_int_equal(opmsg_reader_buffered(r), 0);
   assert_int_equal(opmsg_reader_offset(r), s->stream.len);
   return seen;
}

static size_t
one_byte(void)
{
   return 1;
}

static size_t
random_piece(void)
{
   /* Mostly small pieces, sometimes large ones. */
   return (rng() % 8 == 0) ? 1 + rng() % 200000 : 1 + rng() % 700;
}

static size_t
everything(void)
{
   return SIZE_MAX;
}

static void
run_stream(size_t (*piece_size)(void))
{
   stream_t s;
   stream_init(&s);
   mem_begin();
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   assert_int_equal(feed_stream(r, &s, piece_size), s.n);
   /* The buffer never held more than the largest message (or one chunk). */
   size_t bound = s.largest > OPMSG_READER_CHUNK ? s.largest : OPMSG_READER_CHUNK;
   assert_true(mem_largest <= bound);
   opmsg_reader_destroy(r);
   mem_end();
   tu_buf_free(&s.stream);
}

static void
test_stream_one_byte_at_a_time(void **state)
{
   (void) state;
   run_stream(one_byte);
}

static void
test_stream_random_pieces(void **state)
{
   (void) state;
   for (uint32_t seed = 1; seed <= 5; seed++) {
      rng_state = seed;
      run_stream(random_piece);
   }
}

static void
test_stream_all_at_once(void **state)
{
   (void) state;
   run_stream(everything);
}

/* feed() takes no more than the bound and says so. */
static void
test_feed_is_bounded(void **state)
{
   (void) state;
   stream_t s;
   stream_init(&s);
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   size_t taken = opmsg_reader_feed(r, s.stream.data, s.stream.len);
   assert_true(taken < s.stream.len);
   assert_true(taken <= OPMSG_READER_CHUNK);
   assert_int_equal(opmsg_reader_buffered(r), taken);
   /* Nothing more fits until a message is taken out. */
   assert_int_equal(opmsg_reader_feed(r, s.stream.data + taken, 1), 0);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_int_equal(len, s.lengths[0]);
   assert_true(opmsg_reader_feed(r, s.stream.data + taken, 1) == 1);
   opmsg_reader_destroy(r);
   tu_buf_free(&s.stream);
}

/* After a small message is taken out, the large message behind it (whose
 * header is already buffered) gets room for all of itself at once. */
static void
test_feed_room_follows_next_header(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   put_message(&b, 1, 0, 0, 10);
   size_t first = b.len;
   put_message(&b, 2, 0, 0, 3 * OPMSG_READER_CHUNK);
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   size_t t1 = opmsg_reader_feed(r, b.data, b.len);
   assert_true(t1 > first && t1 <= OPMSG_READER_CHUNK);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_int_equal(len, first);
   size_t t2 = opmsg_reader_feed(r, b.data + t1, b.len - t1);
   assert_int_equal(t1 + t2, b.len);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_int_equal(len, b.len - first);
   assert_memory_equal(msg, b.data + first, len);
   opmsg_reader_destroy(r);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * Lying lengths and truncated streams
 * ------------------------------------------------------------------------- */

static void
lying_length(int32_t length, opmsg_error_code_t code, size_t limit)
{
   tu_buf_t b;
   tu_buf_init(&b);
   tu_put_i32(&b, length);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, OPMSG_OP_MSG);
   /* A megabyte of whatever follows. */
   for (int i = 0; i < 1 << 18; i++) {
      tu_put_i32(&b, 0x01010101);
   }
   opmsg_options_t opts;
   opmsg_options_init(&opts);
   opts.max_message_size = limit;

   mem_begin();
   opmsg_reader_t *r = opmsg_reader_new(&opts);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   size_t off = 0;
   opmsg_reader_status_t st;
   /* Fed 7 bytes at a time, as a slow peer would send it. */
   do {
      size_t n = b.len - off < 7 ? b.len - off : 7;
      off += opmsg_reader_feed(r, b.data + off, n);
      st = opmsg_reader_next(r, &msg, &len, &error);
   } while (st == OPMSG_READER_NEED_MORE && off < b.len);
   assert_int_equal(st, OPMSG_READER_ERROR);
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_int_equal(error.code, code);
   /* Refused from the header alone: at most the header's piece was taken. */
   assert_true(off <= 21);
   assert_true(mem_largest <= OPMSG_READER_CHUNK);
   assert_true(mem_peak <= OPMSG_READER_CHUNK + 4096);
   /* The failure sticks; nothing more is taken. */
   assert_int_equal(opmsg_reader_feed(r, b.data, 10), 0);
   bson_error_t again;
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &again), OPMSG_READER_ERROR);
   assert_int_equal(again.code, code);
   opmsg_reader_destroy(r);
   mem_end();
   tu_buf_free(&b);
}

static void
test_lying_lengths(void **state)
{
   (void) state;
   lying_length(INT32_MAX, OPMSG_ERR_LENGTH_TOO_LARGE, 0);
   lying_length(-1, OPMSG_ERR_LENGTH_TOO_SMALL, 0);
   lying_length(INT32_MIN, OPMSG_ERR_LENGTH_TOO_SMALL, 0);
   lying_length(3, OPMSG_ERR_LENGTH_TOO_SMALL, 0);
   lying_length(1000001, OPMSG_ERR_LENGTH_TOO_LARGE, 1000000);
}

/* A length within the limit but never delivered: memory follows the bytes
 * that actually arrive, not the claim. */
static void
test_claimed_length_not_trusted(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_put_i32(&b, 40000000);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, OPMSG_OP_MSG);
   for (int i = 0; i < 1000; i++) {
      tu_put_i32(&b, 0);
   }
   mem_begin();
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   assert_int_equal(opmsg_reader_feed(r, b.data, b.len), b.len);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_NEED_MORE);
   assert_true(mem_peak < 64 * 1024);
   opmsg_reader_end(r);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_ERROR);
   assert_int_equal(error.code, OPMSG_ERR_STREAM_TRUNCATED);
   opmsg_reader_destroy(r);
   mem_end();
   tu_buf_free(&b);
}

static void
test_truncated_stream(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   put_message(&b, 1, 0, 0, 10);
   size_t first = b.len;
   put_message(&b, 2, 0, 0, 10);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;

   /* Cut inside the second message's body, then inside its header. */
   size_t cuts[3] = {b.len - 1, first + 5, first + 16};
   for (int i = 0; i < 3; i++) {
      opmsg_reader_t *r = opmsg_reader_new(NULL);
      assert_int_equal(opmsg_reader_feed(r, b.data, cuts[i]), cuts[i]);
      assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_MESSAGE);
      assert_int_equal(len, first);
      assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_NEED_MORE);
      opmsg_reader_end(r);
      assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_ERROR);
      assert_int_equal(error.code, OPMSG_ERR_STREAM_TRUNCATED);
      assert_int_equal(opmsg_reader_feed(r, b.data, 1), 0);
      opmsg_reader_destroy(r);
   }
   /* An empty stream ends cleanly. */
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   opmsg_reader_end(r);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_END);
   opmsg_reader_destroy(r);
   tu_buf_free(&b);
}

static void
test_unknown_opcode(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   tu_put_i32(&b, 40);
   tu_put_i32(&b, 1);
   tu_put_i32(&b, 0);
   tu_put_i32(&b, 1234); /* no such opcode */
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   opmsg_reader_feed(r, b.data, b.len);
   assert_int_equal(opmsg_reader_next(r, &msg, &len, &error), OPMSG_READER_ERROR);
   assert_int_equal(error.code, OPMSG_ERR_UNKNOWN_OPCODE);
   assert_non_null(strstr(error.message, "stream offset 0"));
   opmsg_reader_destroy(r);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * File descriptors
 * ------------------------------------------------------------------------- */

static void
test_read_fd(void **state)
{
   (void) state;
   stream_t s;
   stream_init(&s);
   FILE *f = tmpfile();
   assert_non_null(f);
   assert_int_equal(fwrite(s.stream.data, 1, s.stream.len, f), s.stream.len);
   fflush(f);
   rewind(f);
   int fd = fileno(f);

   opmsg_reader_t *r = opmsg_reader_new(NULL);
   const uint8_t *msg;
   size_t len, seen = 0;
   bson_error_t error;
   opmsg_reader_status_t st;
   while ((st = opmsg_reader_read_fd(r, fd, &msg, &len, &error)) == OPMSG_READER_MESSAGE) {
      assert_int_equal(len, s.lengths[seen]);
      assert_memory_equal(msg, s.stream.data + s.offsets[seen], len);
      seen++;
   }
   assert_int_equal(st, OPMSG_READER_END);
   assert_int_equal(seen, s.n);
   opmsg_reader_destroy(r);

   /* The file cut short: the last message is reported truncated. */
   assert_int_equal(ftruncate(fd, (off_t) (s.stream.len - 3)), 0);
   rewind(f);
   r = opmsg_reader_new(NULL);
   seen = 0;
   while ((st = opmsg_reader_read_fd(r, fd, &msg, &len, &error)) == OPMSG_READER_MESSAGE) {
      seen++;
   }
   assert_int_equal(st, OPMSG_READER_ERROR);
   assert_int_equal(error.code, OPMSG_ERR_STREAM_TRUNCATED);
   assert_int_equal(seen, s.n - 1);
   opmsg_reader_destroy(r);

   /* A bad fd is an error, not a crash. */
   r = opmsg_reader_new(NULL);
   assert_int_equal(opmsg_reader_read_fd(r, -1, &msg, &len, &error), OPMSG_READER_ERROR);
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   opmsg_reader_destroy(r);
   fclose(f);
   tu_buf_free(&s.stream);
}

/* ---------------------------------------------------------------------------
 * Exhaust reply sequences
 * ------------------------------------------------------------------------- */

/* Three replies with moreToCome and a final one, each answering the one
 * before; the request had requestID 500. */
static void
put_exhaust_chain(tu_buf_t *b, int32_t break_at)
{
   int32_t prev = 500;
   for (int32_t i = 0; i < 4; i++) {
      int32_t id = 9000 + i;
      uint32_t flags = i < 3 ? OPMSG_FLAG_MORE_TO_COME : 0;
      put_message(b, id, i == break_at ? prev + 1 : prev, flags, 20);
      prev = id;
   }
}

static void
test_exhaust_sequence(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   put_exhaust_chain(&b, -1);
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   opmsg_exhaust_t x;
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   bool expect_more[4] = {true, true, true, false};

   opmsg_exhaust_init(&x, 500);
   /* Fed one byte at a time: NEED_MORE until each reply is whole. */
   size_t off = 0;
   int got = 0;
   while (got < 4) {
      opmsg_reader_status_t st = opmsg_reader_next_reply(r, &x, &msg, &len, &error);
      if (st == OPMSG_READER_NEED_MORE) {
         assert_true(off < b.len);
         assert_int_equal(opmsg_reader_feed(r, b.data + off, 1), 1);
         off++;
         continue;
      }
      assert_int_equal(st, OPMSG_READER_MESSAGE);
      opmsg_msg_t parsed;
      assert_true(opmsg_parse(msg, len, NULL, &parsed, &error));
      assert_int_equal(parsed.request_id, 9000 + got);
      assert_int_equal(x.more_to_come, expect_more[got]);
      got++;
      assert_int_equal(x.replies, (uint32_t) got);
   }
   assert_int_equal(off, b.len);
   /* The sequence is over: asking again is a caller error. */
   assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_ERROR);
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   /* A new request starts a new sequence: the stream has nothing more. */
   opmsg_exhaust_init(&x, 501);
   assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_NEED_MORE);
   opmsg_reader_destroy(r);
   tu_buf_free(&b);
}

static void
test_exhaust_wrong_response_to(void **state)
{
   (void) state;
   for (int32_t break_at = 0; break_at < 4; break_at++) {
      tu_buf_t b;
      tu_buf_init(&b);
      put_exhaust_chain(&b, break_at);
      opmsg_reader_t *r = opmsg_reader_new(NULL);
      opmsg_exhaust_t x;
      const uint8_t *msg;
      size_t len;
      bson_error_t error;
      opmsg_exhaust_init(&x, 500);
      assert_int_equal(opmsg_reader_feed(r, b.data, b.len), b.len);
      for (int32_t i = 0; i < break_at; i++) {
         assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_MESSAGE);
         assert_true(x.more_to_come);
      }
      assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_ERROR);
      assert_int_equal(error.code, OPMSG_ERR_EXHAUST_SEQUENCE);
      assert_int_equal(x.replies, (uint32_t) break_at);
      opmsg_reader_destroy(r);
      tu_buf_free(&b);
   }
}

/* The peer closes the connection in the middle of the sequence. */
static void
test_exhaust_ends_early(void **state)
{
   (void) state;
   tu_buf_t b;
   tu_buf_init(&b);
   put_message(&b, 9000, 500, OPMSG_FLAG_MORE_TO_COME, 5);
   int fds[2];
   assert_int_equal(pipe(fds), 0);
   assert_int_equal(write(fds[1], b.data, b.len), (ssize_t) b.len);
   close(fds[1]);
   opmsg_reader_t *r = opmsg_reader_new(NULL);
   opmsg_exhaust_t x;
   const uint8_t *msg;
   size_t len;
   bson_error_t error;
   opmsg_exhaust_init(&x, 500);
   assert_int_equal(opmsg_reader_read_reply_fd(r, fds[0], &x, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_true(x.more_to_come);
   assert_int_equal(opmsg_reader_read_reply_fd(r, fds[0], &x, &msg, &len, &error), OPMSG_READER_END);
   close(fds[0]);
   opmsg_reader_destroy(r);
   tu_buf_free(&b);
}

/* A compressed reply in the middle of the sequence is given decompressed,
 * and its moreToCome bit (inside the compressed payload) is honoured. */
static void
test_exhaust_compressed(void **state)
{
   (void) state;
   tu_buf_t plain, b;
   tu_buf_init(&plain);
   tu_buf_init(&b);
   put_message(&b, 9000, 500, OPMSG_FLAG_MORE_TO_COME, 30);
   put_message(&plain, 9001, 9000, OPMSG_FLAG_MORE_TO_COME, 3000);
   bson_error_t error;
   size_t clen;
   /* zlib, or noop in a build without it (test_compress.c holds the
    * build to its codecs): the reader's path is the same. */
   int codec = opmsg_compressor_available(OPMSG_COMPRESSOR_ZLIB) ? OPMSG_COMPRESSOR_ZLIB : OPMSG_COMPRESSOR_NOOP;
   uint8_t *compressed = opmsg_compress(plain.data, plain.len, codec, OPMSG_COMPRESS_DEFAULT_LEVEL, &clen, &error);
   if (!compressed) {
      fail_msg("compress: %s", error.message);
   }
   assert_true(codec == OPMSG_COMPRESSOR_NOOP || clen < plain.len);
   tu_put(&b, compressed, clen);
   put_message(&b, 9002, 9001, 0, 30);

   opmsg_reader_t *r = opmsg_reader_new(NULL);
   opmsg_exhaust_t x;
   const uint8_t *msg;
   size_t len;
   opmsg_exhaust_init(&x, 500);
   assert_int_equal(opmsg_reader_feed(r, b.data, b.len), b.len);
   assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_true(x.more_to_come);
   assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_true(x.more_to_come);
   assert_int_equal(len, plain.len);
   assert_memory_equal(msg, plain.data, len);
   assert_int_equal(opmsg_reader_next_reply(r, &x, &msg, &len, &error), OPMSG_READER_MESSAGE);
   assert_false(x.more_to_come);
   assert_int_equal(x.replies, 3);
   opmsg_reader_destroy(r);
   bson_free(compressed);
   tu_buf_free(&plain);
   tu_buf_free(&b);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stream_one_byte_at_a_time),
      cmocka_unit_test(test_stream_random_pieces),
      cmocka_unit_test(test_stream_all_at_once),
      cmocka_unit_test(test_feed_is_bounded),
      cmocka_unit_test(test_feed_room_follows_next_header),
      cmocka_unit_test(test_lying_lengths),
      cmocka_unit_test(test_claimed_length_not_trusted),
      cmocka_unit_test(test_truncated_stream),
      cmocka_unit_test(test_unknown_opcode),
      cmocka_unit_test(test_read_fd),
      cmocka_unit_test(test_exhaust_sequence),
      cmocka_unit_test(test_exhaust_wrong_response_to),
      cmocka_unit_test(test_exhaust_ends_early),
      cmocka_unit_test(test_exhaust_compressed),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
