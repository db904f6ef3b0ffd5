/*
 * fuzz_reader.c - the stream reader fed in pieces of fuzzer-chosen sizes.
 *
 * Input: one control byte (fuzz_options_from_byte(): the limits, and bit 5
 * for reply mode, bit 6 for a wrong first responseTo), one byte whose low 4 bits say how many piece-size bytes
 * follow (0: one byte at a time), those bytes, then the stream.
 * A piece-size byte b gives (b & 0x3f) + 1 bytes, times 32 when bit 6 is
 * set, times 1024 when bit 7 is set; the sizes are used in turn, cyclically.
 *
 * Properties:
 *  - the reader cuts exactly the messages that an independent framing of
 *    the whole stream gives (opmsg_frame_length() at each boundary), in
 *    order, and ends the same way (END, or the same error);
 *  - feeding in pieces gives the same result as feeding everything at once;
 *  - opmsg_reader_offset() and opmsg_reader_buffered() account for every
 *    byte fed; the reader never stalls (takes nothing and has nothing);
 *  - its largest allocation stays within max(stream size,
 *    min(OPMSG_READER_CHUNK, limit)) plus a small constant, whatever
 *    messageLength claims, and it leaks nothing.
 * Reply mode reads the stream with opmsg_reader_next_reply() as the
 * replies to a request whose requestID is the first message's responseTo
 * (or another one): every reply given is the stream's next message, or its
 * decompression when that is OP_COMPRESSED; pieces and all-at-once agree.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
   size_t *ends; /* stream offset just past each message */
   size_t n;
   size_t cap;
   opmsg_reader_status_t last; /* OPMSG_READER_END or OPMSG_READER_ERROR */
   uint32_t code;              /* the error code when last is ERROR */
} outcome_t;

static void
push(outcome_t *o, size_t end)
{
   if (o->n == o->cap) {
      o->cap = o->cap ? o->cap * 2 : 16;
      o->ends = realloc(o->ends, o->cap * sizeof *o->ends);
      FUZZ_CHECK(o->ends != NULL);
   }
   o->ends[o->n++] = end;
}

/* The framing the reader must reproduce, from the whole stream. */
static void
frame_whole(const uint8_t *s, size_t n, const opmsg_options_t *opts, outcome_t *o)
{
   size_t off = 0;
   for (;;) {
      size_t rest = n - off;
      if (rest == 0) {
         o->last = OPMSG_READER_END;
         return;
      }
      size_t len = 0;
      bson_error_t error;
      if (rest >= OPMSG_HEADER_SIZE && !opmsg_frame_length(s + off, rest, opts, &len, &error)) {
         o->last = OPMSG_READER_ERROR;
         o->code = error.code;
         return;
      }
      if (rest < OPMSG_HEADER_SIZE || len > rest) {
         o->last = OPMSG_READER_ERROR;
         o->code = OPMSG_ERR_STREAM_TRUNCATED;
         return;
      }
      off += len;
      push(o, off);
   }
}

static size_t
piece_size(uint8_t b)
{
   size_t n = (size_t) (b & 0x3f) + 1;
   if (b & 0x40) {
      n *= 32;
   }
   if (b & 0x80) {
      n *= 1024;
   }
   return n;
}

/* In reply mode: the reply given for the frame s[start..end) is the frame,
 * or its decompression. */
static void
check_reply(const uint8_t *frame, size_t frame_len, const uint8_t *msg, size_t len, const opmsg_options_t *opts)
{
   if (fuzz_u32(frame + 12) != OPMSG_OP_COMPRESSED) {
      FUZZ_CHECK(len == frame_len && memcmp(msg, frame, len) == 0);
      return;
   }
   opmsg_msg_t parsed;
   bson_error_t error;
   FUZZ_CHECK(opmsg_parse(frame, frame_len, opts, &parsed, &error));
   size_t plain_len = 0;
   uint8_t *plain = opmsg_decompress(&parsed, &plain_len, &error);
   FUZZ_CHECK_MSG(plain != NULL, "the reader decompressed what opmsg_decompress refuses");
   FUZZ_CHECK(plain_len == len && memcmp(plain, msg, len) == 0);
   bson_free(plain);
}

typedef struct {
   const opmsg_options_t *opts;
   opmsg_exhaust_t *x; /* reply mode when not NULL */
} read_mode_t;

/* Takes out every whole message; returns false once the reader is done
 * (END or ERROR, recorded in *o; in reply mode also the end of the reply
 * sequence). *took_any: a message was taken. */
static bool
drain(opmsg_reader_t *r, const uint8_t *s, size_t fed, outcome_t *o, bool *took_any, const read_mode_t *mode)
{
   for (;;) {
      const uint8_t *msg = NULL;
      size_t len = 0;
      bson_error_t error;
      opmsg_reader_status_t st =
         mode->x ? opmsg_reader_next_reply(r, mode->x, &msg, &len, &error) : opmsg_reader_next(r, &msg, &len, &error);
      switch (st) {
      case OPMSG_READER_MESSAGE: {
         size_t start = o->n ? o->ends[o->n - 1] : 0;
         size_t end = (size_t) opmsg_reader_offset(r);
         FUZZ_CHECK(end > start && end <= fed);
         FUZZ_CHECK(len >= OPMSG_HEADER_SIZE);
         if (mode->x) {
            check_reply(s + start, end - start, msg, len, mode->opts);
         } else {
            FUZZ_CHECK(end == start + len);
            FUZZ_CHECK_MSG(memcmp(msg, s + start, len) == 0, "message %zu is not the stream's bytes", o->n);
         }
         push(o, end);
         FUZZ_CHECK(opmsg_reader_buffered(r) == fed - end);
         *took_any = true;
         if (mode->x && !mode->x->more_to_come) {
            o->last = OPMSG_READER_END;
            return false; /* the sequence is over */
         }
         break;
      }
      case OPMSG_READER_NEED_MORE:
         return true;
      case OPMSG_READER_END:
         o->last = st;
         return false;
      case OPMSG_READER_ERROR:
         fuzz_check_error(&error);
         o->last = st;
         o->code = error.code;
         if (!mode->x) {
            /* A failed reader stays failed, with the same error. */
            FUZZ_CHECK(opmsg_reader_next(r, &msg, &len, &error) == OPMSG_READER_ERROR);
            FUZZ_CHECK(error.code == o->code);
            FUZZ_CHECK(opmsg_reader_feed(r, s, fed ? 1 : 0) == 0);
         }
         return false;
      default:
         fuzz_fail(__FILE__, __LINE__, "unknown reader status %d", (int) st);
      }
   }
}

/* Feeds s[0..n) in pieces (sizes[] cyclically; all at once when nsizes is
 * 0 and whole is true) and records what the reader gives. */
static void
run_reader(const uint8_t *s, size_t n, const opmsg_options_t *opts, const uint8_t *sizes, size_t nsizes, bool whole,
           outcome_t *o, const int32_t *reply_to)
{
   opmsg_reader_t *r = opmsg_reader_new(opts);
   FUZZ_CHECK(r != NULL);
   opmsg_exhaust_t x;
   read_mode_t mode = {opts, NULL};
   if (reply_to) {
      opmsg_exhaust_init(&x, *reply_to);
      mode.x = &x;
   }
   size_t fed = 0, k = 0;
   bool live = true;

   while (live && fed < n) {
      size_t piece = whole ? n : nsizes ? piece_size(sizes[k++ % nsizes]) : 1;
      if (piece > n - fed) {
         piece = n - fed;
      }
      size_t took = opmsg_reader_feed(r, s + fed, piece);
      FUZZ_CHECK(took <= piece);
      fed += took;
      FUZZ_CHECK(opmsg_reader_buffered(r) + opmsg_reader_offset(r) == fed);
      bool took_any = false;
      live = drain(r, s, fed, o, &took_any, &mode);
      FUZZ_CHECK_MSG(!live || took > 0 || took_any, "the reader stalls at offset %zu", fed);
   }
   if (live) {
      opmsg_reader_end(r);
      FUZZ_CHECK(opmsg_reader_feed(r, s, n ? 1 : 0) == 0);
      bool took_any = false;
      FUZZ_CHECK_MSG(!drain(r, s, fed, o, &took_any, &mode), "the reader wants more after the stream ended");
   }
   opmsg_reader_destroy(r);
}

static bool
same_outcome(const outcome_t *a, const outcome_t *b)
{
   return a->n == b->n && (a->n == 0 || memcmp(a->ends, b->ends, a->n * sizeof *a->ends) == 0) && a->last == b->last &&
          (a->last != OPMSG_READER_ERROR || a->code == b->code);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   fuzz_init();
   if (size < 2) {
      return 0;
   }
   opmsg_options_t opts;
   fuzz_options_from_byte(data[0], &opts);
   size_t nsizes = data[1] & 15u;
   if (size < 2 + nsizes) {
      return 0;
   }
   const uint8_t *sizes = data + 2;
   const uint8_t *stream = sizes + nsizes;
   size_t n = size - 2 - nsizes;
   size_t limit = opts.max_message_size ? opts.max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;

   outcome_t expect = {0}, whole = {0}, pieces = {0};
   bool reply_mode = data[0] & 0x20u;
   int32_t reply_to = n >= 12 ? (int32_t) fuzz_u32(stream + 8) : 0;
   if (data[0] & 0x40u) {
      reply_to ^= 1;
   }
   const int32_t *mode = reply_mode ? &reply_to : NULL;
   run_reader(stream, n, &opts, NULL, 0, true, &whole, mode);

   fuzz_mem_stats_t mem;
   fuzz_mem_begin();
   run_reader(stream, n, &opts, sizes, nsizes, false, &pieces, mode);
   fuzz_mem_end(&mem);

   if (reply_mode) {
      /* Decompressing a reply takes a second buffer of up to the limit,
       * and the codec its working memory (zlib: about 40 KiB). */
      FUZZ_CHECK_MSG(same_outcome(&whole, &pieces), "replies: %zu at once, %zu in pieces (end %d/%u vs %d/%u)", whole.n,
                     pieces.n, (int) whole.last, whole.code, (int) pieces.last, pieces.code);
      FUZZ_CHECK(mem.live_delta == 0);
      FUZZ_CHECK_MSG(mem.largest <= limit + 512 * 1024, "reply mode allocated %zu bytes at once (limit %zu)",
                     mem.largest, limit);
      free(whole.ends);
      free(pieces.ends);
      return 0;
   }
   frame_whole(stream, n, &opts, &expect);

   FUZZ_CHECK_MSG(same_outcome(&expect, &whole), "fed at once: %zu messages, end %d/%u; expected %zu, %d/%u", whole.n,
                  (int) whole.last, whole.code, expect.n, (int) expect.last, expect.code);
   FUZZ_CHECK_MSG(same_outcome(&expect, &pieces), "fed in pieces: %zu messages, end %d/%u; expected %zu, %d/%u",
                  pieces.n, (int) pieces.last, pieces.code, expect.n, (int) expect.last, expect.code);
   FUZZ_CHECK_MSG(mem.live_delta == 0, "the reader leaks %zu bytes", mem.live_delta);
   size_t chunk = OPMSG_READER_CHUNK < limit ? OPMSG_READER_CHUNK : limit;
   size_t bound = (n > chunk ? n : chunk) + 4096;
   FUZZ_CHECK_MSG(mem.largest <= bound, "the reader allocated %zu bytes at once for a %zu-byte stream", mem.largest, n);

   free(expect.ends);
   free(whole.ends);
   free(pieces.ends);
   return 0;
}
