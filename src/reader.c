/*
 * reader.c - the stream reader: framing messages from bytes that arrive in
 * pieces, with bounded memory, and following moreToCome reply sequences.
 *
 * One buffer holds buf[start..end): the unread part of the stream. A message
 * is given out in place (no copy); the bytes before `start` are reclaimed by
 * moving the rest to the front when the next feed needs room. The buffer
 * grows (doubling) only as bytes arrive, and only up to the length of a
 * header that opmsg_frame_length() accepted: a peer must send the bytes of a
 * large message to make the reader hold it, not just claim its length.
 */
#include "opmsg-parse.h"

#include <errno.h>
#include <unistd.h>

struct opmsg_reader_t {
   opmsg_options_t opts;
   size_t limit; /* max_message_size in force */
   uint8_t *buf;
   size_t cap;
   size_t start;     /* first byte not given out */
   size_t end;       /* one past the last byte fed */
   size_t frame_len; /* the current message's length; 0: header incomplete */
   uint64_t offset;  /* stream offset of buf[start] */
   bool ended;       /* opmsg_reader_end() or EOF */
   bool failed;
   bson_error_t failure; /* given again by every later call */
   uint8_t *aux;         /* decompressed OP_COMPRESSED replies */
   size_t aux_cap;
};

opmsg_reader_t *
opmsg_reader_new(const opmsg_options_t *opts)
{
   opmsg_reader_t *r = bson_malloc0(sizeof *r);
   opmsg_limits_t limits;

   if (opts) {
      r->opts = *opts;
   } else {
      opmsg_options_init(&r->opts);
   }
   opmsg_limits_from(&r->opts, &limits);
   r->limit = limits.max_message_size;
   return r;
}

void
opmsg_reader_destroy(opmsg_reader_t *r)
{
   if (!r) {
      return;
   }
   bson_free(r->buf);
   bson_free(r->aux);
   bson_free(r);
}

/* Records a failure: the stream's framing is lost, so it sticks. */
static void
fail_sticky(opmsg_reader_t *r, const bson_error_t *error)
{
   r->failed = true;
   r->failure = *error;
}

/* Checks the current message's header once it is complete. */
static void
update_frame(opmsg_reader_t *r)
{
   bson_error_t error;
   size_t len;

   if (r->failed || r->frame_len || r->end - r->start < OPMSG_HEADER_SIZE) {
      return;
   }
   if (!opmsg_frame_length(r->buf + r->start, r->end - r->start, &r->opts, &len, &error)) {
      char inner[sizeof error.message];
      memcpy(inner, error.message, sizeof inner);
      inner[sizeof inner - 1] = '\0';
      bson_snprintf(error.message, sizeof error.message, "message at stream offset %" PRIu64 ": %s", r->offset, inner);
      fail_sticky(r, &error);
      return;
   }
   r->frame_len = len;
}

/* How many bytes the buffer may hold now: the current message when its
 * length is known, and a chunk for small messages or an incomplete header. */
static size_t
target_size(const opmsg_reader_t *r)
{
   size_t chunk = OPMSG_READER_CHUNK < r->limit ? OPMSG_READER_CHUNK : r->limit;
   size_t t = r->frame_len > chunk ? r->frame_len : chunk;
   return t < OPMSG_HEADER_SIZE ? OPMSG_HEADER_SIZE : t;
}

/* Bytes a feed may take now (within target_size()). */
static size_t
room(const opmsg_reader_t *r)
{
   size_t buffered = r->end - r->start;
   size_t t = target_size(r);
   return buffered < t ? t - buffered : 0;
}

/* Makes buf[end..end+n) writable, within target_size(). */
static void
reserve(opmsg_reader_t *r, size_t n)
{
   if (r->end + n <= r->cap) {
      return;
   }
   if (r->start) {
      /* Reclaim what was given out; only the unread tail moves. */
      memmove(r->buf, r->buf + r->start, r->end - r->start);
      r->end -= r->start;
      r->start = 0;
   }
   if (r->end + n > r->cap) {
      size_t t = target_size(r);
      size_t cap = r->cap ? r->cap * 2 : 4096;
      if (cap < r->end + n) {
         cap = r->end + n;
      }
      if (cap > t) {
         cap = t;
      }
      r->buf = bson_realloc(r->buf, cap);
      r->cap = cap;
   }
}

size_t
opmsg_reader_feed(opmsg_reader_t *r, const void *data, size_t len)
{
   const uint8_t *p = data;
   size_t taken = 0;

   if (!r || !data || r->failed || r->ended) {
      return 0;
   }
   while (taken < len && !r->failed) {
      size_t n;
      /* A header completed by an earlier feed but not looked at yet (the
       * message before it was still being given out) decides the room. */
      update_frame(r);
      if (r->failed) {
         break;
      }
      n = room(r);
      if (n == 0) {
         break;
      }
      if (n > len - taken) {
         n = len - taken;
      }
      reserve(r, n);
      memcpy(r->buf + r->end, p + taken, n);
      r->end += n;
      taken += n;
      update_frame(r);
   }
   return taken;
}

void
opmsg_reader_end(opmsg_reader_t *r)
{
   if (r) {
      r->ended = true;
   }
}

size_t
opmsg_reader_buffered(const opmsg_reader_t *r)
{
   return r ? r->end - r->start : 0;
}

uint64_t
opmsg_reader_offset(const opmsg_reader_t *r)
{
   return r ? r->offset : 0;
}

opmsg_reader_status_t
opmsg_reader_next(opmsg_reader_t *r, const uint8_t **data, size_t *len, bson_error_t *error)
{
   if (!r || !data || !len) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "reader, data and len must not be NULL");
      return OPMSG_READER_ERROR;
   }
   update_frame(r);
   if (r->failed) {
      if (error) {
         *error = r->failure;
      }
      return OPMSG_READER_ERROR;
   }
   if (r->frame_len && r->end - r->start >= r->frame_len) {
      *data = r->buf + r->start;
      *len = r->frame_len;
      r->start += r->frame_len;
      r->offset += r->frame_len;
      r->frame_len = 0;
      if (r->start == r->end) {
         /* Empty: the next bytes go to the front (no move needed). The
          * message just given stays intact until the next call. */
         r->start = r->end = 0;
      }
      return OPMSG_READER_MESSAGE;
   }
   if (!r->ended) {
      return OPMSG_READER_NEED_MORE;
   }
   if (r->end == r->start) {
      return OPMSG_READER_END;
   }
   bson_error_t e;
   if (r->frame_len) {
      opmsg_fail(&e, OPMSG_ERR_STREAM_TRUNCATED,
                 "the stream ended %zu bytes into the %zu-byte message at "
                 "stream offset %" PRIu64,
                 r->end - r->start, r->frame_len, r->offset);
   } else {
      opmsg_fail(&e, OPMSG_ERR_STREAM_TRUNCATED,
                 "the stream ended %zu bytes into the header of the message "
                 "at stream offset %" PRIu64,
                 r->end - r->start, r->offset);
   }
   fail_sticky(r, &e);
   if (error) {
      *error = e;
   }
   return OPMSG_READER_ERROR;
}

/* ---------------------------------------------------------------------------
 * File descriptors
 * ------------------------------------------------------------------------- */

bool
opmsg_reader_fill_fd(opmsg_reader_t *r, int fd, size_t *n_read, bson_error_t *error)
{
   size_t n;
   ssize_t got;

   if (n_read) {
      *n_read = 0;
   }
   if (!r || fd < 0) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "a reader and a valid fd are needed");
   }
   update_frame(r);
   if (r->failed || r->ended) {
      return true;
   }
   n = room(r);
   if (n == 0) {
      return true;
   }
   reserve(r, n);
   do {
      got = read(fd, r->buf + r->end, n);
   } while (got < 0 && errno == EINTR);
   if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
         return true;
      }
      return opmsg_fail(error, OPMSG_ERR_IO, "read() from fd %d failed: %s (errno %d)", fd, strerror(errno), errno);
   }
   if (got == 0) {
      r->ended = true;
      return true;
   }
   r->end += (size_t) got;
   if (n_read) {
      *n_read = (size_t) got;
   }
   update_frame(r);
   return true;
}

opmsg_reader_status_t
opmsg_reader_read_fd(opmsg_reader_t *r, int fd, const uint8_t **data, size_t *len, bson_error_t *error)
{
   for (;;) {
      size_t got;
      opmsg_reader_status_t st = opmsg_reader_next(r, data, len, error);
      if (st != OPMSG_READER_NEED_MORE) {
         return st;
      }
      if (!opmsg_reader_fill_fd(r, fd, &got, error)) {
         return OPMSG_READER_ERROR;
      }
      if (got == 0 && !r->ended && !r->failed) {
         return OPMSG_READER_NEED_MORE; /* non-blocking fd, nothing ready */
      }
   }
}

/* ---------------------------------------------------------------------------
 * Reply sequences
 * ------------------------------------------------------------------------- */

void
opmsg_exhaust_init(opmsg_exhaust_t *x, int32_t request_id)
{
   if (x) {
      memset(x, 0, sizeof *x);
      x->expected_response_to = request_id;
   }
}

/* Replaces an OP_COMPRESSED reply by its rebuilt original, in r->aux. */
static bool
decompress_reply(opmsg_reader_t *r, const uint8_t **data, size_t *len, bson_error_t *error)
{
   opmsg_msg_t msg;
   size_t size;

   /* Framing only (uncompressedSize vetted against the limit here). */
   if (!opmsg_parse(*data, *len, &r->opts, &msg, error)) {
      return false;
   }
   size = opmsg_decompressed_size(&msg);
   if (size > r->aux_cap) {
      r->aux = bson_realloc(r->aux, size);
      r->aux_cap = size;
   }
   if (!opmsg_decompress_into(&msg, r->aux, r->aux_cap, &size, error)) {
      return false;
   }
   *data = r->aux;
   *len = size;
   return true;
}

opmsg_reader_status_t
opmsg_reader_next_reply(opmsg_reader_t *r, opmsg_exhaust_t *x, const uint8_t **data, size_t *len, bson_error_t *error)
{
   opmsg_reader_status_t st;
   int32_t response_to, opcode;
   bson_error_t e;

   if (!x) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "no exhaust state");
      return OPMSG_READER_ERROR;
   }
   if (x->priv_done) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                 "the reply sequence ended with reply %u (no moreToCome): "
                 "start a new one with opmsg_exhaust_init()",
                 x->replies);
      return OPMSG_READER_ERROR;
   }
   st = opmsg_reader_next(r, data, len, error);
   if (st != OPMSG_READER_MESSAGE) {
      return st;
   }
   response_to = opmsg_read_i32(*data + OPMSG_OFF_RESPONSE_TO);
   if (response_to != x->expected_response_to) {
      opmsg_fail(&e, OPMSG_ERR_EXHAUST_SEQUENCE,
                 "reply %u at stream offset %" PRIu64 " has responseTo %d, "
                 "expected %d (%s)",
                 x->replies + 1, r->offset - *len, response_to, x->expected_response_to,
                 x->replies ? "the requestID of the previous moreToCome reply" : "the request's requestID");
      /* The connection no longer follows the protocol: stop here. */
      fail_sticky(r, &e);
      if (error) {
         *error = e;
      }
      return OPMSG_READER_ERROR;
   }
   opcode = opmsg_read_i32(*data + OPMSG_OFF_OPCODE);
   if (opcode == OPMSG_OP_COMPRESSED && !decompress_reply(r, data, len, error)) {
      return OPMSG_READER_ERROR;
   }
   opcode = opmsg_read_i32(*data + OPMSG_OFF_OPCODE);
   /* opmsg_frame_length() guaranteed an OP_MSG has its flagBits. */
   x->more_to_come = opcode == OPMSG_OP_MSG && (opmsg_read_u32(*data + OPMSG_OFF_FLAG_BITS) & OPMSG_FLAG_MORE_TO_COME);
   x->replies++;
   if (x->more_to_come) {
      x->expected_response_to = opmsg_read_i32(*data + OPMSG_OFF_REQUEST_ID);
   } else {
      x->priv_done = true;
   }
   return OPMSG_READER_MESSAGE;
}

opmsg_reader_status_t
opmsg_reader_read_reply_fd(opmsg_reader_t *r, int fd, opmsg_exhaust_t *x, const uint8_t **data, size_t *len,
                           bson_error_t *error)
{
   for (;;) {
      size_t got;
      opmsg_reader_status_t st = opmsg_reader_next_reply(r, x, data, len, error);
      if (st != OPMSG_READER_NEED_MORE) {
         return st;
      }
      if (!opmsg_reader_fill_fd(r, fd, &got, error)) {
         return OPMSG_READER_ERROR;
      }
      if (got == 0 && !r->ended && !r->failed) {
         return OPMSG_READER_NEED_MORE;
      }
   }
}
