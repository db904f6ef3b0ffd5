/*
 * tap.c - `opmsg tap`: a transparent TCP proxy that logs every MongoDB wire
 * message passing through it as one JSON line, or reads the same traffic from
 * a pcap capture. See docs/tap.md for the log format.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Design:
 *  - One forwarding thread and one poll() loop for every connection. Each
 *    read is written to the other side first; only then is a copy of it
 *    queued, with the time it was read, for a logging thread that frames
 *    (opmsg/reader.h), parses, merges and logs it. So logging never delays
 *    the bytes, not even the next request of a client that waits for the
 *    reply just forwarded.
 *  - Bytes are forwarded unchanged, whatever they contain: a message that
 *    breaks a rule is logged with the rule's name and still forwarded. When a
 *    stream cannot be framed any more (a length out of bounds) the tap logs it
 *    once and goes on forwarding that direction without logging it.
 *  - The pcap reader feeds the same per-direction framer, so both modes log
 *    the same lines for the same bytes (only times and latencies differ).
 */
#define _DEFAULT_SOURCE 1 /* u_char & co. for pcap.h; struct addrinfo */
#define _POSIX_C_SOURCE 200809L

#include "tap.h"

#include "../src/opmsg-bson-compat.h"

#include <opmsg/opmsg.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TAP_C2S 0
#define TAP_S2C 1
#define TAP_READ_SIZE (256u * 1024u)
#define TAP_MAX_PENDING 1024u   /* outstanding requests remembered per connection */
#define TAP_DEFAULT_MAX_ARRAY 100u
#define TAP_OOO_MAX_SEGMENTS 256u  /* pcap: out-of-order segments kept per direction */
/* The live proxy hands what it forwarded to a logging thread, which wakes
 * this often to frame, log and flush it: the forwarding thread then spends
 * no time on the log (nor a wake-up syscall per message). */
#define TAP_LOG_WAKE_MS 10
/* ...or at once when this much is waiting; and the forwarding thread waits
 * for the logger when the queue is this full (memory stays bounded). */
#define TAP_QUEUE_NUDGE (1u << 20)
#define TAP_QUEUE_MAX (64u << 20)

static const char *const tap_dir_name[2] = {"c2s", "s2c"};

static volatile sig_atomic_t tap_stop;

/* ---------------------------------------------------------------------------
 * Options and shared state
 * ------------------------------------------------------------------------- */

typedef struct {
   const char *listen;
   const char *upstream;
   const char *out_path;
   const char *raw_dir;
   const char *pcap_path;
   uint16_t port;
   uint32_t max_array; /* 0: no elision */
} tap_opts_t;

typedef struct {
   tap_opts_t o;
   FILE *out;
   opmsg_options_t parse;
   uint64_t raw_seq;   /* numbers the --raw files in the order logged */
   uint64_t next_conn; /* connection ids, from 1 */
   uint64_t lines;     /* log lines written (flushed or not) */
   struct tap_queue *queue; /* live proxy: the logging thread's input */
   bool raw_failed;    /* reported once */
} tap_t;

/* One direction of one connection: the stream reader (opmsg/reader.h) cuts
 * its bytes into messages. */
typedef struct {
   opmsg_reader_t *reader; /* created on the first bytes */
   bool broken;            /* framing lost: stop logging this direction */
   uint64_t bytes;         /* every byte seen (forwarded) */
   uint64_t messages;      /* messages framed and logged */
} tap_stream_t;

typedef struct {
   int32_t request_id;
   double t;
} tap_pending_t;

/* What the framer knows of one connection, live or from a capture. */
typedef struct {
   uint64_t id;
   tap_stream_t dir[2];
   tap_pending_t pending[TAP_MAX_PENDING];
   size_t n_pending;
} tap_session_t;

static void
tap_signal(int sig)
{
   (void) sig;
   tap_stop = 1;
}

/* ---------------------------------------------------------------------------
 * JSON output helpers
 * ------------------------------------------------------------------------- */

static void
tap_json_string(opmsg_strbuf_t *s, const char *text, size_t len)
{
   opmsg_strbuf_append_c(s, '"');
   for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char) text[i];

      if (c == '"' || c == '\\') {
         opmsg_strbuf_append_c(s, '\\');
         opmsg_strbuf_append_c(s, (char) c);
      } else if (c < 0x20 || c == 0x7f) {
         opmsg_strbuf_append_printf(s, "\\u%04x", c);
      } else {
         opmsg_strbuf_append_c(s, (char) c);
      }
   }
   opmsg_strbuf_append_c(s, '"');
}

/* Starts a line: {"t":"2026-01-01T00:00:00.000000Z","conn":N */
static opmsg_strbuf_t *
tap_line_start(double t, uint64_t conn)
{
   opmsg_strbuf_t *s = opmsg_strbuf_new("{\"t\":\"");
   time_t secs = (time_t) t;
   long usec = (long) ((t - (double) secs) * 1e6 + 0.5);
   struct tm tm;
   char buf[32];

   if (usec >= 1000000) {
      secs++;
      usec -= 1000000;
   }
   gmtime_r(&secs, &tm);
   strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
   opmsg_strbuf_append_printf(s, "%s.%06ldZ\",\"conn\":%" PRIu64, buf, usec,
                             conn);
   return s;
}

static void
tap_line_end(tap_t *tap, opmsg_strbuf_t *s)
{
   opmsg_strbuf_append(s, "}\n");
   fwrite(s->str, 1, s->len, tap->out);
   opmsg_strbuf_free(s, true);
   tap->lines++;
}

static double
tap_now(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_REALTIME, &ts);
   return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static const char *
tap_opcode_name(int32_t opcode)
{
   switch (opcode) {
   case OPMSG_OP_MSG: return "OP_MSG";
   case OPMSG_OP_COMPRESSED: return "OP_COMPRESSED";
   case OPMSG_OP_QUERY: return "OP_QUERY";
   case OPMSG_OP_REPLY: return "OP_REPLY";
   case 2001: return "OP_UPDATE";
   case 2002: return "OP_INSERT";
   case 2005: return "OP_GET_MORE";
   case 2006: return "OP_DELETE";
   case 2007: return "OP_KILL_CURSORS";
   default: return NULL;
   }
}

static void
tap_append_opcode(opmsg_strbuf_t *s, const char *key, int32_t opcode)
{
   const char *name = tap_opcode_name(opcode);

   if (name) {
      opmsg_strbuf_append_printf(s, ",\"%s\":\"%s\"", key, name);
   } else {
      opmsg_strbuf_append_printf(s, ",\"%s\":%" PRId32, key, opcode);
   }
}

/* Flag bits by name; unnamed bits as "bitN". */
static void
tap_append_flags(opmsg_strbuf_t *s, int32_t opcode, uint32_t flags)
{
   static const char *const msg_names[32] = {
      [0] = "checksumPresent", [1] = "moreToCome", [16] = "exhaustAllowed"};
   static const char *const query_names[32] = {
      [1] = "tailableCursor", [2] = "slaveOk", [3] = "oplogReplay",
      [4] = "noCursorTimeout", [5] = "awaitData", [6] = "exhaust",
      [7] = "partial"};
   static const char *const reply_names[32] = {
      [0] = "cursorNotFound", [1] = "queryFailure", [2] = "shardConfigStale",
      [3] = "awaitCapable"};
   const char *const *names = opcode == OPMSG_OP_MSG     ? msg_names
                              : opcode == OPMSG_OP_QUERY ? query_names
                                                         : reply_names;
   bool first = true;

   opmsg_strbuf_append(s, ",\"flags\":[");
   for (unsigned bit = 0; bit < 32; bit++) {
      if (!(flags & (1u << bit))) {
         continue;
      }
      if (!first) {
         opmsg_strbuf_append_c(s, ',');
      }
      first = false;
      if (names[bit]) {
         opmsg_strbuf_append_printf(s, "\"%s\"", names[bit]);
      } else {
         opmsg_strbuf_append_printf(s, "\"bit%u\"", bit);
      }
   }
   opmsg_strbuf_append_c(s, ']');
}

/* ---------------------------------------------------------------------------
 * Eliding long arrays for the log
 * ------------------------------------------------------------------------- */

static bool
tap_has_long_array(const bson_t *doc, uint32_t max, int depth)
{
   bson_iter_t it;

   if (depth > OPMSG_MAX_DEPTH || !bson_iter_init(&it, doc)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      bson_type_t type = bson_iter_type(&it);
      const uint8_t *data;
      uint32_t len;
      bson_t child;

      if (type != BSON_TYPE_ARRAY && type != BSON_TYPE_DOCUMENT) {
         continue;
      }
      if (type == BSON_TYPE_ARRAY) {
         bson_iter_array(&it, &len, &data);
      } else {
         bson_iter_document(&it, &len, &data);
      }
      if (!bson_init_static(&child, data, len)) {
         continue;
      }
      if (type == BSON_TYPE_ARRAY && bson_count_keys(&child) > max) {
         return true;
      }
      if (tap_has_long_array(&child, max, depth + 1)) {
         return true;
      }
   }
   return false;
}

/* Copies src into dst keeping the first max elements of every array and
 * ending a shortened array with {"$elided": <how many were left out>}. */
static void
tap_copy_elided(const bson_t *src, bson_t *dst, uint32_t max, bool is_array,
                int depth)
{
   bson_iter_t it;
   uint32_t index = 0, dropped = 0;

   if (!bson_iter_init(&it, src)) {
      return;
   }
   while (bson_iter_next(&it)) {
      bson_type_t type = bson_iter_type(&it);
      const char *key = bson_iter_key(&it);
      uint32_t key_len = bson_iter_key_len(&it);
      const uint8_t *data;
      uint32_t len;
      bson_t child, out;

      if (is_array && index >= max) {
         dropped++;
         continue;
      }
      index++;
      if ((type == BSON_TYPE_ARRAY || type == BSON_TYPE_DOCUMENT) &&
          depth < OPMSG_MAX_DEPTH) {
         if (type == BSON_TYPE_ARRAY) {
            bson_iter_array(&it, &len, &data);
         } else {
            bson_iter_document(&it, &len, &data);
         }
         if (bson_init_static(&child, data, len)) {
            if (type == BSON_TYPE_ARRAY) {
               opmsg_append_array_begin(dst, key, (int) key_len, &out);
               tap_copy_elided(&child, &out, max, true, depth + 1);
               bson_append_array_end(dst, &out);
            } else {
               bson_append_document_begin(dst, key, (int) key_len, &out);
               tap_copy_elided(&child, &out, max, false, depth + 1);
               bson_append_document_end(dst, &out);
            }
            continue;
         }
      }
      bson_append_iter(dst, key, (int) key_len, &it);
   }
   if (dropped) {
      char keybuf[16];
      const char *key;
      bson_t marker;

      bson_uint32_to_string(index, &key, keybuf, sizeof keybuf);
      bson_append_document_begin(dst, key, -1, &marker);
      BSON_APPEND_INT32(&marker, "$elided", (int32_t) dropped);
      bson_append_document_end(dst, &marker);
   }
}

/* Appends ,"doc":<relaxed Extended JSON> for doc. */
static void
tap_append_doc(tap_t *tap, opmsg_strbuf_t *s, const bson_t *doc)
{
   bson_t elided;
   const bson_t *shown = doc;
   char *json;

   if (tap->o.max_array && tap_has_long_array(doc, tap->o.max_array, 0)) {
      bson_init(&elided);
      tap_copy_elided(doc, &elided, tap->o.max_array, false, 0);
      shown = &elided;
   }
   json = bson_as_relaxed_extended_json(shown, NULL);
   if (json) {
      opmsg_strbuf_append(s, ",\"doc\":");
      opmsg_strbuf_append(s, json);
      bson_free(json);
   }
   if (shown == &elided) {
      bson_destroy(&elided);
   }
}

/* ---------------------------------------------------------------------------
 * Logging one message
 * ------------------------------------------------------------------------- */

static int32_t
tap_le32(const uint8_t *p)
{
   return (int32_t) ((uint32_t) p[0] | (uint32_t) p[1] << 8 |
                     (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24);
}

static void
tap_save_raw(tap_t *tap, const tap_session_t *ses, int dir,
             const uint8_t *data, size_t len)
{
   char path[4096];
   FILE *f;

   /* The sequence number first, so listing the directory replays the
    * conversation in the order it was logged. */
   bson_snprintf(path, sizeof path, "%s/%08" PRIu64 "-conn%" PRIu64 "-%s.bin",
                 tap->o.raw_dir, ++tap->raw_seq, ses->id, tap_dir_name[dir]);
   f = fopen(path, "wb");
   if (!f || fwrite(data, 1, len, f) != len) {
      if (!tap->raw_failed) {
         fprintf(stderr, "opmsg tap: cannot write %s: %s\n", path,
                 strerror(errno));
         tap->raw_failed = true;
      }
   }
   if (f) {
      fclose(f);
   }
}

/* Round-trip latency: requests are remembered by requestID until the reply
 * whose responseTo names them. */
static void
tap_remember(tap_session_t *ses, int32_t request_id, double t)
{
   if (ses->n_pending == TAP_MAX_PENDING) {
      /* Forget the oldest: a peer that never answers must not grow us. */
      memmove(ses->pending, ses->pending + 1,
              (TAP_MAX_PENDING - 1) * sizeof ses->pending[0]);
      ses->n_pending--;
   }
   ses->pending[ses->n_pending].request_id = request_id;
   ses->pending[ses->n_pending].t = t;
   ses->n_pending++;
}

static bool
tap_answer(tap_session_t *ses, int32_t response_to, double *t)
{
   for (size_t i = 0; i < ses->n_pending; i++) {
      if (ses->pending[i].request_id == response_to) {
         *t = ses->pending[i].t;
         ses->n_pending--;
         memmove(ses->pending + i, ses->pending + i + 1,
                 (ses->n_pending - i) * sizeof ses->pending[0]);
         return true;
      }
   }
   return false;
}

static void
tap_append_sequences(opmsg_strbuf_t *s, const opmsg_msg_t *msg)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   bool first = true;

   if (msg->opcode != OPMSG_OP_MSG || msg->n_sequences == 0) {
      return;
   }
   opmsg_strbuf_append(s, ",\"sequences\":[");
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      opmsg_strbuf_append(s, first ? "{\"id\":" : ",{\"id\":");
      first = false;
      tap_json_string(s, seq.identifier, seq.identifier_len);
      opmsg_strbuf_append_printf(s, ",\"count\":%" PRIu32 "}", seq.count);
   }
   opmsg_strbuf_append_c(s, ']');
}

static void
tap_append_error(opmsg_strbuf_t *s, const bson_error_t *error)
{
   const char *name = error->domain == OPMSG_ERROR_DOMAIN
                         ? opmsg_error_name(error->code)
                         : "error";

   opmsg_strbuf_append(s, ",\"error\":");
   tap_json_string(s, name, strlen(name));
   opmsg_strbuf_append(s, ",\"error_message\":");
   tap_json_string(s, error->message, strlen(error->message));
}

/* The command, $db and merged document of a parsed (inner) message. A
 * reply's first key is not a command: only requests name one. */
static void
tap_append_contents(tap_t *tap, opmsg_strbuf_t *s, const opmsg_msg_t *msg,
                    int dir)
{
   bson_error_t error;
   bson_t *merged;
   bson_t body;

   if (dir == TAP_C2S &&
       (msg->opcode == OPMSG_OP_MSG || msg->opcode == OPMSG_OP_QUERY)) {
      const char *cmd = opmsg_command_name(msg);
      uint32_t db_len = 0;
      const char *db = opmsg_db(msg, &db_len);

      if (cmd) {
         opmsg_strbuf_append(s, ",\"command\":");
         tap_json_string(s, cmd, strlen(cmd));
      }
      if (db) {
         opmsg_strbuf_append(s, ",\"db\":");
         tap_json_string(s, db, db_len);
      } else if (msg->opcode == OPMSG_OP_QUERY && msg->full_collection_name) {
         /* A legacy command names its database as "db.$cmd". */
         const char *ns = msg->full_collection_name;
         const char *dot = strchr(ns, '.');

         opmsg_strbuf_append(s, ",\"db\":");
         tap_json_string(s, ns, dot ? (size_t) (dot - ns) : strlen(ns));
      }
   }
   if (msg->opcode == OPMSG_OP_REPLY) {
      opmsg_strbuf_append_printf(s, ",\"numberReturned\":%" PRId32,
                                msg->number_returned);
      if (msg->number_returned != 1) {
         if (msg->body && opmsg_body(msg, &body)) {
            tap_append_doc(tap, s, &body);
         }
         return;
      }
   }
   tap_append_sequences(s, msg);
   merged = opmsg_merge_bson(msg, &error);
   if (merged) {
      tap_append_doc(tap, s, merged);
      bson_destroy(merged);
   } else {
      tap_append_error(s, &error);
   }
}

static void
tap_log_message(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data,
                size_t len, double now)
{
   opmsg_options_t opts = tap->parse;
   opmsg_decompressed_t dec = {0};
   const opmsg_msg_t *inner = NULL;
   bson_error_t error;
   opmsg_msg_t msg;
   opmsg_strbuf_t *s;
   int32_t request_id = tap_le32(data + 4);
   int32_t response_to = tap_le32(data + 8);
   int32_t opcode = tap_le32(data + 12);
   bool ok;
   double sent;

   if (tap->o.raw_dir) {
      tap_save_raw(tap, ses, dir, data, len);
   }
   s = tap_line_start(now, ses->id);
   opmsg_strbuf_append_printf(s,
                             ",\"dir\":\"%s\",\"len\":%zu,\"requestID\":%" PRId32
                             ",\"responseTo\":%" PRId32,
                             tap_dir_name[dir], len, request_id, response_to);
   tap_append_opcode(s, "opcode", opcode);

   if (dir == TAP_C2S && opcode == OPMSG_OP_MSG) {
      opts.flags |= OPMSG_PARSE_REQUEST;
   }
   ok = opmsg_parse(data, len, &opts, &msg, &error);
   if (ok && msg.opcode == OPMSG_OP_COMPRESSED) {
      const char *codec = opmsg_compressor_name(msg.compressor_id);

      opmsg_strbuf_append_printf(s, ",\"compressor\":\"%s\"",
                                codec ? codec : "reserved");
      tap_append_opcode(s, "originalOpcode", msg.original_opcode);
      if (dir == TAP_C2S && msg.original_opcode == OPMSG_OP_MSG) {
         opts.flags |= OPMSG_PARSE_REQUEST;
      }
      ok = opmsg_decompress_parse(&msg, &opts, &dec, &error);
      inner = ok ? &dec.inner : NULL;
   } else if (ok) {
      inner = &msg;
   }

   if (inner) {
      if (inner->opcode == OPMSG_OP_MSG || inner->opcode == OPMSG_OP_QUERY ||
          inner->opcode == OPMSG_OP_REPLY) {
         tap_append_flags(s, inner->opcode, inner->flags);
      }
      if (dir == TAP_C2S &&
          !(inner->opcode == OPMSG_OP_MSG &&
            (inner->flags & OPMSG_FLAG_MORE_TO_COME))) {
         tap_remember(ses, request_id, now);
      }
   } else if (dir == TAP_C2S) {
      /* Still a request the server may answer. */
      tap_remember(ses, request_id, now);
   }
   if (dir == TAP_S2C && tap_answer(ses, response_to, &sent)) {
      opmsg_strbuf_append_printf(s, ",\"latency_us\":%.1f", (now - sent) * 1e6);
      /* Exhaust: the next reply answers this one. */
      if (inner && inner->opcode == OPMSG_OP_MSG &&
          (inner->flags & OPMSG_FLAG_MORE_TO_COME)) {
         tap_remember(ses, request_id, now);
      }
   }
   if (inner) {
      tap_append_contents(tap, s, inner, dir);
   } else {
      tap_append_error(s, &error);
   }
   opmsg_decompressed_destroy(&dec);
   tap_line_end(tap, s);
}

/* ---------------------------------------------------------------------------
 * Framing: cuts each direction's bytes into messages
 * ------------------------------------------------------------------------- */

static void
tap_log_event(tap_t *tap, const tap_session_t *ses, double now,
              const char *event, const char *detail)
{
   opmsg_strbuf_t *s = tap_line_start(now, ses->id);

   opmsg_strbuf_append_printf(s, ",\"event\":\"%s\"", event);
   if (detail) {
      opmsg_strbuf_append(s, ",\"detail\":");
      tap_json_string(s, detail, strlen(detail));
   }
   tap_line_end(tap, s);
}

static void
tap_lost_framing(tap_t *tap, tap_session_t *ses, int dir, double now,
                 const bson_error_t *error)
{
   char detail[700];

   bson_snprintf(detail, sizeof detail,
                 "%s: %s: %s: not logging this direction any more",
                 tap_dir_name[dir],
                 opmsg_error_name(error->code), error->message);
   tap_log_event(tap, ses, now, "desync", detail);
   ses->dir[dir].broken = true;
}

/* Feeds bytes that went from one side to the other and logs every message
 * they complete. */
static void
tap_feed(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data,
         size_t len, double now)
{
   tap_stream_t *st = &ses->dir[dir];
   bson_error_t error;
   size_t used = 0;

   st->bytes += len;
   if (st->broken) {
      return;
   }
   if (!st->reader && !(st->reader = opmsg_reader_new(&tap->parse))) {
      bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_NO_MEMORY,
                     "cannot create a stream reader");
      tap_lost_framing(tap, ses, dir, now, &error);
      return;
   }
   while (used < len) {
      size_t took = opmsg_reader_feed(st->reader, data + used, len - used);
      const uint8_t *msg;
      size_t msg_len;
      opmsg_reader_status_t rs;
      bool progress = took > 0;

      used += took;
      while ((rs = opmsg_reader_next(st->reader, &msg, &msg_len, &error)) ==
             OPMSG_READER_MESSAGE) {
         tap_log_message(tap, ses, dir, msg, msg_len, now);
         st->messages++;
         progress = true;
      }
      if (rs == OPMSG_READER_ERROR) {
         tap_lost_framing(tap, ses, dir, now, &error);
         return;
      }
      if (!progress) { /* the reader takes nothing and gives nothing */
         bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_NO_MEMORY,
                        "the stream reader is stuck after %zu bytes", used);
         tap_lost_framing(tap, ses, dir, now, &error);
         return;
      }
   }
}

static void
tap_session_init(tap_t *tap, tap_session_t *ses)
{
   memset(ses, 0, sizeof *ses);
   ses->id = ++tap->next_conn;
}

/* Logs the close line with the byte counts and frees the buffers. */
static void
tap_session_close(tap_t *tap, tap_session_t *ses, double now, const char *why)
{
   opmsg_strbuf_t *s = tap_line_start(now, ses->id);

   opmsg_strbuf_append_printf(
      s,
      ",\"event\":\"close\",\"bytes_c2s\":%" PRIu64 ",\"bytes_s2c\":%" PRIu64
      ",\"messages_c2s\":%" PRIu64 ",\"messages_s2c\":%" PRIu64
      ",\"unframed_c2s\":%zu,\"unframed_s2c\":%zu",
      ses->dir[0].bytes, ses->dir[1].bytes, ses->dir[0].messages,
      ses->dir[1].messages, opmsg_reader_buffered(ses->dir[0].reader),
      opmsg_reader_buffered(ses->dir[1].reader));
   if (why) {
      opmsg_strbuf_append(s, ",\"detail\":");
      tap_json_string(s, why, strlen(why));
   }
   tap_line_end(tap, s);
   for (int d = 0; d < 2; d++) {
      opmsg_reader_destroy(ses->dir[d].reader);
      ses->dir[d].reader = NULL;
   }
}

/* ---------------------------------------------------------------------------
 * The logging thread (live proxy)
 *
 * The forwarding thread posts, in order, what happens on each connection:
 * open, the bytes of each read, close. The logging thread owns the sessions
 * from then on: it frames, logs and frees them. Times are taken when the
 * bytes are forwarded, so latencies do not depend on when they are logged.
 * ------------------------------------------------------------------------- */

enum { TAP_ITEM_OPEN, TAP_ITEM_DATA, TAP_ITEM_CLOSE };

typedef struct tap_item {
   struct tap_item *next;
   tap_session_t *ses;
   int kind;
   int dir;
   double t;
   char *text; /* OPEN: the client's address; CLOSE: why, or NULL */
   size_t len;
   uint8_t data[];
} tap_item_t;

typedef struct tap_queue {
   pthread_mutex_t mu;
   pthread_cond_t wake;  /* the logger: work is waiting, or stop */
   pthread_cond_t space; /* the forwarder: the queue has room again */
   tap_item_t *head;
   tap_item_t *tail;
   size_t bytes;
   bool done;
   pthread_t thread;
} tap_queue_t;

static void
tap_post(tap_t *tap, tap_session_t *ses, int kind, int dir, double t,
         const char *text, const uint8_t *data, size_t len)
{
   tap_queue_t *q = tap->queue;
   tap_item_t *it = bson_malloc(sizeof *it + len);

   it->next = NULL;
   it->ses = ses;
   it->kind = kind;
   it->dir = dir;
   it->t = t;
   it->text = text ? bson_strdup(text) : NULL;
   it->len = len;
   if (len) {
      memcpy(it->data, data, len);
   }
   pthread_mutex_lock(&q->mu);
   while (q->bytes > TAP_QUEUE_MAX) {
      pthread_cond_signal(&q->wake);
      pthread_cond_wait(&q->space, &q->mu);
   }
   if (q->tail) {
      q->tail->next = it;
   } else {
      q->head = it;
   }
   q->tail = it;
   q->bytes += len;
   if (q->bytes >= TAP_QUEUE_NUDGE) {
      pthread_cond_signal(&q->wake);
   }
   pthread_mutex_unlock(&q->mu);
}

static void
tap_log_item(tap_t *tap, tap_item_t *it)
{
   switch (it->kind) {
   case TAP_ITEM_OPEN:
      tap_log_event(tap, it->ses, it->t, "open", it->text);
      break;
   case TAP_ITEM_DATA:
      tap_feed(tap, it->ses, it->dir, it->data, it->len, it->t);
      break;
   default:
      tap_session_close(tap, it->ses, it->t, it->text);
      bson_free(it->ses);
      break;
   }
}

static void *
tap_logger(void *arg)
{
   tap_t *tap = arg;
   tap_queue_t *q = tap->queue;
   uint64_t flushed = 0;

   pthread_mutex_lock(&q->mu);
   for (;;) {
      tap_item_t *batch = q->head;

      if (!batch) {
         struct timespec until;

         if (q->done) {
            break;
         }
         clock_gettime(CLOCK_REALTIME, &until);
         until.tv_nsec += TAP_LOG_WAKE_MS * 1000000L;
         if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
         }
         pthread_cond_timedwait(&q->wake, &q->mu, &until);
         continue;
      }
      q->head = q->tail = NULL;
      q->bytes = 0;
      pthread_cond_broadcast(&q->space);
      pthread_mutex_unlock(&q->mu);
      while (batch) {
         tap_item_t *next = batch->next;

         tap_log_item(tap, batch);
         bson_free(batch->text);
         bson_free(batch);
         batch = next;
      }
      if (tap->lines != flushed) {
         fflush(tap->out);
         flushed = tap->lines;
      }
      pthread_mutex_lock(&q->mu);
   }
   pthread_mutex_unlock(&q->mu);
   return NULL;
}

static bool
tap_logger_start(tap_t *tap, tap_queue_t *q)
{
   sigset_t block, old;
   int rc;

   memset(q, 0, sizeof *q);
   pthread_mutex_init(&q->mu, NULL);
   pthread_cond_init(&q->wake, NULL);
   pthread_cond_init(&q->space, NULL);
   tap->queue = q;
   /* SIGINT and SIGTERM must interrupt the forwarding thread's poll(): the
    * logging thread blocks them (it inherits this mask). */
   sigemptyset(&block);
   sigaddset(&block, SIGINT);
   sigaddset(&block, SIGTERM);
   pthread_sigmask(SIG_BLOCK, &block, &old);
   rc = pthread_create(&q->thread, NULL, tap_logger, tap);
   pthread_sigmask(SIG_SETMASK, &old, NULL);
   if (rc != 0) {
      fprintf(stderr, "opmsg tap: cannot start the logging thread\n");
      tap->queue = NULL;
      return false;
   }
   return true;
}

/* Logs everything still queued, then stops the thread. */
static void
tap_logger_stop(tap_t *tap)
{
   tap_queue_t *q = tap->queue;

   pthread_mutex_lock(&q->mu);
   q->done = true;
   pthread_cond_signal(&q->wake);
   pthread_mutex_unlock(&q->mu);
   pthread_join(q->thread, NULL);
   pthread_mutex_destroy(&q->mu);
   pthread_cond_destroy(&q->wake);
   pthread_cond_destroy(&q->space);
   tap->queue = NULL;
}

/* ---------------------------------------------------------------------------
 * The live proxy
 * ------------------------------------------------------------------------- */

typedef struct {
   uint8_t *buf;
   size_t len;
   size_t cap;
} tap_out_t;

typedef struct {
   tap_session_t *ses; /* handed to the logging thread at close */
   int fd[2];        /* [0] the client, [1] the upstream server */
   tap_out_t out[2]; /* bytes waiting to be written to fd[i] */
   bool eof[2];      /* fd[i] has no more to read */
   bool shut[2];     /* shutdown(fd[i], SHUT_WR) done */
   bool connecting;  /* fd[1]'s connect() is in progress */
   bool dead;
} tap_conn_t;

static bool
tap_split_hostport(const char *text, char *host, size_t host_cap,
                   char *port, size_t port_cap)
{
   const char *colon = strrchr(text, ':');
   const char *h = text;
   size_t hlen;

   if (!colon || colon[1] == '\0' || strlen(colon + 1) >= port_cap) {
      return false;
   }
   hlen = (size_t) (colon - text);
   if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') { /* [::1]:27017 */
      h++;
      hlen -= 2;
   }
   if (hlen == 0 || hlen >= host_cap) {
      return false;
   }
   memcpy(host, h, hlen);
   host[hlen] = '\0';
   strcpy(port, colon + 1);
   return true;
}

static struct addrinfo *
tap_resolve(const char *hostport, bool passive)
{
   char host[256], port[16];
   struct addrinfo hints, *res = NULL;
   int rc;

   if (!tap_split_hostport(hostport, host, sizeof host, port, sizeof port)) {
      fprintf(stderr, "opmsg tap: expected HOST:PORT, got '%s'\n", hostport);
      return NULL;
   }
   memset(&hints, 0, sizeof hints);
   hints.ai_family = AF_UNSPEC;
   hints.ai_socktype = SOCK_STREAM;
   hints.ai_flags = passive ? AI_PASSIVE : 0;
   rc = getaddrinfo(host, port, &hints, &res);
   if (rc != 0) {
      fprintf(stderr, "opmsg tap: cannot resolve '%s': %s\n", hostport,
              gai_strerror(rc));
      return NULL;
   }
   return res;
}

static bool
tap_nonblock(int fd)
{
   int fl = fcntl(fd, F_GETFL, 0);

   return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static void
tap_nodelay(int fd)
{
   int one = 1;

   /* Wire messages are request/response: Nagle would add latency. */
   (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void
tap_addr_text(const struct sockaddr *sa, char *buf, size_t cap)
{
   char host[INET6_ADDRSTRLEN] = "?";
   unsigned port = 0;

   if (sa->sa_family == AF_INET) {
      const struct sockaddr_in *in = (const struct sockaddr_in *) (const void *) sa;

      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      port = ntohs(in->sin_port);
      bson_snprintf(buf, cap, "%s:%u", host, port);
   } else if (sa->sa_family == AF_INET6) {
      const struct sockaddr_in6 *in6 =
         (const struct sockaddr_in6 *) (const void *) sa;

      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      port = ntohs(in6->sin6_port);
      bson_snprintf(buf, cap, "[%s]:%u", host, port);
   } else {
      bson_snprintf(buf, cap, "?");
   }
}

static int
tap_listen(const char *hostport)
{
   struct addrinfo *res = tap_resolve(hostport, true), *ai;
   int fd = -1;

   for (ai = res; ai; ai = ai->ai_next) {
      int one = 1;

      fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd < 0) {
         continue;
      }
      (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0 &&
          tap_nonblock(fd)) {
         break;
      }
      close(fd);
      fd = -1;
   }
   if (res && fd < 0) {
      fprintf(stderr, "opmsg tap: cannot listen on %s: %s\n", hostport,
              strerror(errno));
   }
   freeaddrinfo(res);
   return fd;
}

static void
tap_conn_close(tap_t *tap, tap_conn_t *c, const char *why)
{
   for (int i = 0; i < 2; i++) {
      if (c->fd[i] >= 0) {
         close(c->fd[i]);
         c->fd[i] = -1;
      }
      bson_free(c->out[i].buf);
      c->out[i].buf = NULL;
   }
   tap_post(tap, c->ses, TAP_ITEM_CLOSE, 0, tap_now(), why, NULL, 0);
   c->ses = NULL;
   c->dead = true;
}

/* Starts connecting to the upstream server for a new client. */
static tap_conn_t *
tap_conn_new(tap_t *tap, int cfd, const struct addrinfo *up,
             const struct sockaddr *peer)
{
   tap_conn_t *c = bson_malloc0(sizeof *c);
   char text[80];
   int ufd;

   c->ses = bson_malloc(sizeof *c->ses);
   tap_session_init(tap, c->ses);
   c->fd[0] = cfd;
   c->fd[1] = -1;
   tap_addr_text(peer, text, sizeof text);
   tap_post(tap, c->ses, TAP_ITEM_OPEN, 0, tap_now(), text, NULL, 0);

   ufd = socket(up->ai_family, up->ai_socktype, up->ai_protocol);
   if (ufd < 0 || !tap_nonblock(ufd)) {
      if (ufd >= 0) {
         close(ufd);
      }
      tap_conn_close(tap, c, "cannot create the upstream socket");
      return c;
   }
   tap_nodelay(ufd);
   c->fd[1] = ufd;
   if (connect(ufd, up->ai_addr, up->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
         char why[160];

         bson_snprintf(why, sizeof why, "upstream connect: %s",
                       strerror(errno));
         tap_conn_close(tap, c, why);
         return c;
      }
      c->connecting = true;
   }
   return c;
}

/* Writes as much of data as fd takes now; false on a hard error. */
static bool
tap_send(int fd, const uint8_t *data, size_t len, size_t *sent)
{
   *sent = 0;
   while (*sent < len) {
      ssize_t n = send(fd, data + *sent, len - *sent, MSG_NOSIGNAL);

      if (n > 0) {
         *sent += (size_t) n;
      } else if (n < 0 && errno == EINTR) {
         continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
         return true;
      } else {
         return false;
      }
   }
   return true;
}

static bool
tap_queue(tap_out_t *o, const uint8_t *data, size_t len)
{
   if (o->len + len > o->cap) {
      size_t cap = o->cap ? o->cap : TAP_READ_SIZE;

      while (cap < o->len + len) {
         cap *= 2;
      }
      o->buf = bson_realloc(o->buf, cap);
      o->cap = cap;
   }
   memcpy(o->buf + o->len, data, len);
   o->len += len;
   return true;
}

/* When the source of a direction is finished and all is written, pass the
 * EOF on (half-close), as a direct connection would. */
static void
tap_pass_eof(tap_conn_t *c, int src)
{
   int dst = 1 - src;

   if (c->eof[src] && c->out[dst].len == 0 && !c->shut[dst] && c->fd[dst] >= 0) {
      (void) shutdown(c->fd[dst], SHUT_WR);
      c->shut[dst] = true;
   }
}

static void
tap_conn_read(tap_t *tap, tap_conn_t *c, int src, uint8_t *buf)
{
   int dst = 1 - src;
   ssize_t n = recv(c->fd[src], buf, TAP_READ_SIZE, 0);
   size_t sent = 0;

   if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
         return;
      }
      tap_conn_close(tap, c, src == 0 ? "client read error" : "upstream read error");
      return;
   }
   if (n == 0) {
      c->eof[src] = true;
      tap_pass_eof(c, src);
      return;
   }
   /* Forward first, log afterwards. */
   if (c->out[dst].len == 0 &&
       !tap_send(c->fd[dst], buf, (size_t) n, &sent)) {
      tap_conn_close(tap, c, dst == 0 ? "client write error" : "upstream write error");
      return;
   }
   if (sent < (size_t) n) {
      tap_queue(&c->out[dst], buf + sent, (size_t) n - sent);
   }
   tap_post(tap, c->ses, TAP_ITEM_DATA, src == 0 ? TAP_C2S : TAP_S2C,
            tap_now(), NULL, buf, (size_t) n);
}

static void
tap_conn_write(tap_t *tap, tap_conn_t *c, int dst)
{
   tap_out_t *o = &c->out[dst];
   size_t sent;

   if (c->connecting && dst == 1) {
      int err = 0;
      socklen_t len = sizeof err;

      if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
         char why[160];

         bson_snprintf(why, sizeof why, "upstream connect: %s",
                       strerror(err ? err : errno));
         tap_conn_close(tap, c, why);
         return;
      }
      c->connecting = false;
   }
   if (o->len == 0) {
      return;
   }
   if (!tap_send(c->fd[dst], o->buf, o->len, &sent)) {
      tap_conn_close(tap, c, dst == 0 ? "client write error" : "upstream write error");
      return;
   }
   memmove(o->buf, o->buf + sent, o->len - sent);
   o->len -= sent;
   tap_pass_eof(c, 1 - dst);
}

static void
tap_accept(tap_t *tap, int lfd, const struct addrinfo *up, tap_conn_t ***conns,
           size_t *n, size_t *cap)
{
   for (;;) {
      struct sockaddr_storage peer;
      socklen_t plen = sizeof peer;
      int cfd = accept(lfd, (struct sockaddr *) &peer, &plen);

      if (cfd < 0) {
         if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
             errno != ECONNABORTED) {
            fprintf(stderr, "opmsg tap: accept: %s\n", strerror(errno));
         }
         return;
      }
      if (!tap_nonblock(cfd)) {
         close(cfd);
         continue;
      }
      tap_nodelay(cfd);
      if (*n == *cap) {
         *cap = *cap ? *cap * 2 : 16;
         *conns = bson_realloc(*conns, *cap * sizeof **conns);
      }
      (*conns)[(*n)++] = tap_conn_new(tap, cfd, up, (struct sockaddr *) &peer);
   }
}

static int
tap_run_proxy(tap_t *tap)
{
   struct addrinfo *up = tap_resolve(tap->o.upstream, false);
   tap_conn_t **conns = NULL;
   size_t n_conns = 0, cap_conns = 0;
   tap_queue_t queue;
   struct pollfd *pfds = NULL;
   size_t cap_pfds = 0;
   uint8_t *buf;
   int lfd;
   struct sockaddr_storage bound;
   socklen_t blen = sizeof bound;
   char text[80];

   if (!up) {
      return 2;
   }
   lfd = tap_listen(tap->o.listen);
   if (lfd < 0) {
      freeaddrinfo(up);
      return 2;
   }
   if (getsockname(lfd, (struct sockaddr *) &bound, &blen) == 0) {
      tap_addr_text((struct sockaddr *) &bound, text, sizeof text);
      /* Tests and scripts read this line to learn a port 0 listener's port. */
      fprintf(stderr, "opmsg tap: listening on %s, upstream %s\n", text,
              tap->o.upstream);
   }
   if (!tap_logger_start(tap, &queue)) {
      close(lfd);
      freeaddrinfo(up);
      return 2;
   }
   buf = bson_malloc(TAP_READ_SIZE);

   while (!tap_stop) {
      size_t np = 0;
      int ready;

      if (cap_pfds < 1 + 2 * n_conns) {
         cap_pfds = 2 * (1 + 2 * n_conns);
         pfds = bson_realloc(pfds, cap_pfds * sizeof *pfds);
      }
      pfds[np].fd = lfd;
      pfds[np].events = POLLIN;
      np++;
      for (size_t i = 0; i < n_conns; i++) {
         tap_conn_t *c = conns[i];

         for (int side = 0; side < 2; side++) {
            short ev = 0;

            /* Read a side only when the other side has room (back
             * pressure), and the client only once upstream is connected. */
            if (!c->eof[side] && c->out[1 - side].len == 0 && !c->connecting) {
               ev |= POLLIN;
            }
            if (c->out[side].len > 0 || (side == 1 && c->connecting)) {
               ev |= POLLOUT;
            }
            /* An idle side is left out: a hung-up socket we no longer
             * read would otherwise wake poll() at once, forever. */
            pfds[np].fd = ev ? c->fd[side] : -1;
            pfds[np].events = ev;
            pfds[np].revents = 0;
            np++;
         }
      }
      ready = poll(pfds, (nfds_t) np, -1);
      if (ready < 0) {
         if (errno == EINTR) {
            continue;
         }
         fprintf(stderr, "opmsg tap: poll: %s\n", strerror(errno));
         break;
      }
      for (size_t i = 0; i < n_conns; i++) {
         tap_conn_t *c = conns[i];

         for (int side = 0; side < 2 && !c->dead; side++) {
            short re = pfds[1 + 2 * i + (size_t) side].revents;

            if (re & (POLLOUT | POLLERR | POLLHUP) &&
                (c->out[side].len > 0 || (side == 1 && c->connecting))) {
               tap_conn_write(tap, c, side);
            }
            if (!c->dead && re & (POLLIN | POLLHUP | POLLERR) && !c->eof[side] &&
                !c->connecting && c->out[1 - side].len == 0) {
               tap_conn_read(tap, c, side, buf);
            }
         }
         if (!c->dead && c->eof[0] && c->eof[1] && c->out[0].len == 0 &&
             c->out[1].len == 0) {
            tap_conn_close(tap, c, NULL);
         }
      }
      /* Drop closed connections, keeping the order. */
      {
         size_t kept = 0;

         for (size_t i = 0; i < n_conns; i++) {
            if (conns[i]->dead) {
               bson_free(conns[i]);
            } else {
               conns[kept++] = conns[i];
            }
         }
         n_conns = kept;
      }
      if (pfds[0].revents & POLLIN) {
         tap_accept(tap, lfd, up, &conns, &n_conns, &cap_conns);
      }
   }

   for (size_t i = 0; i < n_conns; i++) {
      tap_conn_close(tap, conns[i], "tap stopped");
      bson_free(conns[i]);
   }
   tap_logger_stop(tap);
   bson_free(conns);
   bson_free(pfds);
   bson_free(buf);
   close(lfd);
   freeaddrinfo(up);
   return 0;
}

/* ---------------------------------------------------------------------------
 * Reading a capture
 * ------------------------------------------------------------------------- */

typedef struct tap_segment {
   struct tap_segment *next;
   uint32_t seq;
   size_t len;
   uint8_t data[];
} tap_segment_t;

typedef struct {
   bool have_next;
   uint32_t next_seq;  /* the sequence number of the next byte to feed */
   bool fin;
   tap_segment_t *ooo; /* segments past a gap, sorted by seq */
   size_t n_ooo;
} tap_half_t;

typedef struct tap_flow {
   struct tap_flow *next;
   uint8_t key[36];    /* client address, server address (16 each), ports */
   tap_session_t ses;
   tap_half_t half[2];
} tap_flow_t;

#define TAP_FLOW_BUCKETS 1024u

typedef struct {
   tap_flow_t *bucket[TAP_FLOW_BUCKETS];
} tap_flows_t;

static uint32_t
tap_key_hash(const uint8_t *key)
{
   uint32_t h = 2166136261u;

   for (size_t i = 0; i < 36; i++) {
      h = (h ^ key[i]) * 16777619u;
   }
   return h % TAP_FLOW_BUCKETS;
}

static void
tap_flow_free(tap_flow_t *f)
{
   for (int d = 0; d < 2; d++) {
      tap_segment_t *seg = f->half[d].ooo;

      while (seg) {
         tap_segment_t *next = seg->next;

         bson_free(seg);
         seg = next;
      }
   }
   bson_free(f);
}

static void
tap_flow_end(tap_t *tap, tap_flows_t *flows, tap_flow_t *f, double now,
             const char *why)
{
   tap_flow_t **pp = &flows->bucket[tap_key_hash(f->key)];

   while (*pp && *pp != f) {
      pp = &(*pp)->next;
   }
   if (*pp) {
      *pp = f->next;
   }
   tap_session_close(tap, &f->ses, now, why);
   tap_flow_free(f);
}

/* Signed distance between sequence numbers, modulo 2^32. */
static int64_t
tap_seq_diff(uint32_t a, uint32_t b)
{
   return (int64_t) (int32_t) (a - b);
}

/* Feeds the segment's bytes that are new, in order. */
static void
tap_half_deliver(tap_t *tap, tap_flow_t *f, int dir, uint32_t seq,
                 const uint8_t *data, size_t len, double now)
{
   tap_half_t *h = &f->half[dir];
   int64_t off = tap_seq_diff(seq, h->next_seq);

   if (off < 0) { /* a retransmission, perhaps with new bytes at its end */
      if ((int64_t) len <= -off) {
         return;
      }
      data += -off;
      len -= (size_t) -off;
      off = 0;
   }
   if (off > 0) { /* past a gap: keep it until the gap fills */
      tap_segment_t **pp = &h->ooo, *seg;

      if (h->n_ooo >= TAP_OOO_MAX_SEGMENTS) {
         tap_log_event(tap, &f->ses, now, "gap",
                       "too many segments missing: not logging this direction any more");
         f->ses.dir[dir].broken = true;
         return;
      }
      seg = bson_malloc(sizeof *seg + len);
      seg->seq = seq;
      seg->len = len;
      memcpy(seg->data, data, len);
      while (*pp && tap_seq_diff((*pp)->seq, seq) < 0) {
         pp = &(*pp)->next;
      }
      seg->next = *pp;
      *pp = seg;
      h->n_ooo++;
      return;
   }
   tap_feed(tap, &f->ses, dir, data, len, now);
   h->next_seq += (uint32_t) len;
   /* Whatever now follows on. */
   while (h->ooo && tap_seq_diff(h->ooo->seq, h->next_seq) <= 0) {
      tap_segment_t *seg = h->ooo;
      int64_t skip = tap_seq_diff(h->next_seq, seg->seq);

      h->ooo = seg->next;
      h->n_ooo--;
      if ((int64_t) seg->len > skip) {
         tap_feed(tap, &f->ses, dir, seg->data + skip, seg->len - (size_t) skip,
                  now);
         h->next_seq += (uint32_t) (seg->len - (size_t) skip);
      }
      bson_free(seg);
   }
}

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04

static void
tap_tcp_segment(tap_t *tap, tap_flows_t *flows, const uint8_t *src_ip,
                const uint8_t *dst_ip, size_t ip_len, const uint8_t *tcp,
                size_t tcp_len, double now)
{
   uint16_t sport = (uint16_t) (tcp[0] << 8 | tcp[1]);
   uint16_t dport = (uint16_t) (tcp[2] << 8 | tcp[3]);
   uint32_t seq = (uint32_t) tcp[4] << 24 | (uint32_t) tcp[5] << 16 |
                  (uint32_t) tcp[6] << 8 | tcp[7];
   size_t off = (size_t) (tcp[12] >> 4) * 4;
   uint8_t flags = tcp[13];
   uint8_t key[36] = {0};
   const uint8_t *client_ip, *server_ip;
   uint16_t client_port, server_port;
   tap_flow_t *f;
   tap_half_t *h;
   int dir;

   if (off < 20 || off > tcp_len) {
      return;
   }
   if (dport == tap->o.port) {
      dir = TAP_C2S;
      client_ip = src_ip, server_ip = dst_ip;
      client_port = sport, server_port = dport;
   } else if (sport == tap->o.port) {
      dir = TAP_S2C;
      client_ip = dst_ip, server_ip = src_ip;
      client_port = dport, server_port = sport;
   } else {
      return;
   }
   memcpy(key, client_ip, ip_len);
   memcpy(key + 16, server_ip, ip_len);
   key[32] = (uint8_t) (client_port >> 8), key[33] = (uint8_t) client_port;
   key[34] = (uint8_t) (server_port >> 8), key[35] = (uint8_t) server_port;

   for (f = flows->bucket[tap_key_hash(key)]; f; f = f->next) {
      if (memcmp(f->key, key, sizeof key) == 0) {
         break;
      }
   }
   if (f && dir == TAP_C2S && (flags & TCP_SYN) && !(flags & 0x10) &&
       f->half[dir].have_next && seq + 1 != f->half[dir].next_seq) {
      /* The same ports again: a new connection. */
      tap_flow_end(tap, flows, f, now, "port reused");
      f = NULL;
   }
   if (!f) {
      char text[INET6_ADDRSTRLEN + 8];
      char host[INET6_ADDRSTRLEN];

      if ((flags & (TCP_RST | TCP_FIN)) ||
          (!(flags & TCP_SYN) && tcp_len == off)) {
         return; /* the end of something not seen, or a last ACK */
      }
      f = bson_malloc0(sizeof *f);
      memcpy(f->key, key, sizeof key);
      tap_session_init(tap, &f->ses);
      f->next = flows->bucket[tap_key_hash(key)];
      flows->bucket[tap_key_hash(key)] = f;
      inet_ntop(ip_len == 4 ? AF_INET : AF_INET6, client_ip, host, sizeof host);
      bson_snprintf(text, sizeof text, ip_len == 4 ? "%s:%u" : "[%s]:%u", host,
                    (unsigned) client_port);
      tap_log_event(tap, &f->ses, now, "open", text);
   }
   h = &f->half[dir];
   if (flags & TCP_SYN) {
      h->have_next = true;
      h->next_seq = seq + 1;
   } else if (!h->have_next) {
      h->have_next = true; /* the capture started mid-connection */
      h->next_seq = seq;
   }
   if (tcp_len > off) {
      tap_half_deliver(tap, f, dir, (flags & TCP_SYN) ? seq + 1 : seq,
                       tcp + off, tcp_len - off, now);
   }
   if (flags & TCP_RST) {
      tap_flow_end(tap, flows, f, now, "reset");
      return;
   }
   if (flags & TCP_FIN) {
      h->fin = true;
   }
   if (f->half[0].fin && f->half[1].fin) {
      tap_flow_end(tap, flows, f, now, NULL);
   }
}

/* Finds the IP packet in a frame of the capture's link type. */
static const uint8_t *
tap_link_payload(int dlt, const uint8_t *p, size_t caplen, size_t *len)
{
   size_t skip;
   uint16_t ethertype = 0;

   switch (dlt) {
   case DLT_EN10MB:
      if (caplen < 14) {
         return NULL;
      }
      ethertype = (uint16_t) (p[12] << 8 | p[13]);
      skip = 14;
      while (ethertype == 0x8100 || ethertype == 0x88a8) { /* VLAN tags */
         if (caplen < skip + 4) {
            return NULL;
         }
         ethertype = (uint16_t) (p[skip + 2] << 8 | p[skip + 3]);
         skip += 4;
      }
      if (ethertype != 0x0800 && ethertype != 0x86dd) {
         return NULL;
      }
      break;
   case DLT_LINUX_SLL:
      skip = 16;
      break;
#ifdef DLT_LINUX_SLL2
   case DLT_LINUX_SLL2:
      skip = 20;
      break;
#endif
   case DLT_NULL:
   case DLT_LOOP:
      skip = 4;
      break;
   case DLT_RAW:
#ifdef DLT_IPV4
   case DLT_IPV4:
   case DLT_IPV6:
#endif
      skip = 0;
      break;
   default:
      return NULL;
   }
   if (caplen <= skip) {
      return NULL;
   }
   *len = caplen - skip;
   return p + skip;
}

static void
tap_ip_packet(tap_t *tap, tap_flows_t *flows, const uint8_t *ip, size_t len,
              double now)
{
   if (len >= 20 && ip[0] >> 4 == 4) {
      size_t ihl = (size_t) (ip[0] & 0x0f) * 4;
      size_t total = (size_t) (ip[2] << 8 | ip[3]);
      uint16_t frag = (uint16_t) ((ip[6] & 0x1f) << 8 | ip[7]);

      if (ip[9] != 6 || ihl < 20 || total < ihl || (ip[6] & 0x20) || frag) {
         return; /* not TCP, or a fragment */
      }
      if (total > len) {
         return; /* truncated by the snap length: the bytes are not there */
      }
      if (total - ihl >= 20) {
         tap_tcp_segment(tap, flows, ip + 12, ip + 16, 4, ip + ihl, total - ihl,
                         now);
      }
   } else if (len >= 40 && ip[0] >> 4 == 6) {
      size_t payload = (size_t) (ip[4] << 8 | ip[5]);

      if (ip[6] != 6 || 40 + payload > len || payload < 20) {
         return; /* extension headers are not followed */
      }
      tap_tcp_segment(tap, flows, ip + 8, ip + 24, 16, ip + 40, payload, now);
   }
}

static int
tap_run_pcap(tap_t *tap)
{
   char errbuf[PCAP_ERRBUF_SIZE];
   pcap_t *pc = pcap_open_offline_with_tstamp_precision(
      tap->o.pcap_path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
   tap_flows_t *flows;
   struct pcap_pkthdr *hdr;
   const u_char *pkt;
   double last = 0;
   int dlt, rc = 0, status = 0; /* tap_stop may change between the two reads */

   if (!pc) {
      fprintf(stderr, "opmsg tap: %s\n", errbuf);
      return 2;
   }
   dlt = pcap_datalink(pc);
   flows = bson_malloc0(sizeof *flows);
   while (!tap_stop && (rc = pcap_next_ex(pc, &hdr, &pkt)) >= 0) {
      const uint8_t *ip;
      size_t ip_len;
      double now;

      if (rc == 0) {
         continue;
      }
      /* Opened with nanosecond precision: tv_usec holds nanoseconds. */
      now = (double) hdr->ts.tv_sec + (double) hdr->ts.tv_usec / 1e9;
      last = now;
      ip = tap_link_payload(dlt, pkt, hdr->caplen, &ip_len);
      if (ip) {
         tap_ip_packet(tap, flows, ip, ip_len, now);
      }
   }
   if (!tap_stop && rc == PCAP_ERROR) {
      fprintf(stderr, "opmsg tap: %s: %s\n", tap->o.pcap_path,
              pcap_geterr(pc));
      status = 1;
   }
   for (size_t b = 0; b < TAP_FLOW_BUCKETS; b++) {
      while (flows->bucket[b]) {
         tap_flow_end(tap, flows, flows->bucket[b], last, "end of capture");
      }
   }
   bson_free(flows);
   pcap_close(pc);
   return status;
}

/* ---------------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------------- */

static void
tap_usage(FILE *f)
{
   fputs(
      "usage: opmsg tap --listen HOST:PORT --upstream HOST:PORT [--out FILE]\n"
      "                 [--raw DIR] [--max-array N]\n"
      "       opmsg tap --pcap FILE [--port N] [--out FILE] [--raw DIR]\n"
      "                 [--max-array N]\n"
      "Forwards MongoDB wire traffic unchanged and logs one JSON line per\n"
      "message (docs/tap.md). --out FILE: the log (default stdout).\n"
      "--raw DIR: also save each message as DIR/<seq>-conn<id>-<c2s|s2c>.bin.\n"
      "--pcap FILE: read a capture instead, the server being on port --port\n"
      "(default 27017). --max-array N: show at most N elements of an array\n"
      "(default 100, 0 = all). Stop with Ctrl-C or SIGTERM.\n",
      f);
}

static bool
tap_parse_u32(const char *text, uint32_t max, uint32_t *out)
{
   char *end;
   unsigned long v;

   errno = 0;
   v = strtoul(text, &end, 10);
   if (errno || end == text || *end || text[0] == '-' || v > max) {
      return false;
   }
   *out = (uint32_t) v;
   return true;
}

static int
tap_parse_args(int argc, char **argv, tap_opts_t *o)
{
   uint32_t v;

   memset(o, 0, sizeof *o);
   o->port = 27017;
   o->max_array = TAP_DEFAULT_MAX_ARRAY;
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *val = i + 1 < argc ? argv[i + 1] : NULL;

      if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
         tap_usage(stdout);
         return 0;
      }
      if (!val) {
         fprintf(stderr, "opmsg tap: unknown option or missing value: %s\n", a);
         return 2;
      }
      i++;
      if (strcmp(a, "--listen") == 0) {
         o->listen = val;
      } else if (strcmp(a, "--upstream") == 0) {
         o->upstream = val;
      } else if (strcmp(a, "--out") == 0) {
         o->out_path = val;
      } else if (strcmp(a, "--raw") == 0) {
         o->raw_dir = val;
      } else if (strcmp(a, "--pcap") == 0) {
         o->pcap_path = val;
      } else if (strcmp(a, "--port") == 0 && tap_parse_u32(val, 65535, &v) && v) {
         o->port = (uint16_t) v;
      } else if (strcmp(a, "--max-array") == 0 &&
                 tap_parse_u32(val, UINT32_MAX, &v)) {
         o->max_array = v;
      } else {
         fprintf(stderr, "opmsg tap: bad option: %s %s\n", a, val);
         return 2;
      }
   }
   if (o->pcap_path ? (o->listen || o->upstream)
                    : (!o->listen || !o->upstream)) {
      fprintf(stderr, "opmsg tap: give --listen and --upstream, or --pcap\n");
      tap_usage(stderr);
      return 2;
   }
   return -1;
}

int
opmsg_tap_main(int argc, char **argv)
{
   tap_t tap;
   struct sigaction sa;
   int rc;

   memset(&tap, 0, sizeof tap);
   rc = tap_parse_args(argc, argv, &tap.o);
   if (rc >= 0) {
      return rc;
   }
   opmsg_options_init(&tap.parse);
   tap.parse.flags = OPMSG_PARSE_FULL_VALIDATE;
   if (tap.o.raw_dir) {
      struct stat st;

      if (stat(tap.o.raw_dir, &st) != 0 && mkdir(tap.o.raw_dir, 0777) != 0) {
         fprintf(stderr, "opmsg tap: cannot create %s: %s\n", tap.o.raw_dir,
                 strerror(errno));
         return 2;
      }
   }
   tap.out = stdout;
   if (tap.o.out_path && strcmp(tap.o.out_path, "-") != 0) {
      tap.out = fopen(tap.o.out_path, "w");
      if (!tap.out) {
         fprintf(stderr, "opmsg tap: cannot open %s: %s\n", tap.o.out_path,
                 strerror(errno));
         return 2;
      }
   }

   /* Whole lines, written in large blocks (see TAP_LOG_WAKE_MS). */
   setvbuf(tap.out, NULL, _IOFBF, 1u << 20);

   /* No SA_RESTART: the signal must interrupt poll() so the loop can flush
    * the log and close every connection cleanly. */
   memset(&sa, 0, sizeof sa);
   sa.sa_handler = tap_signal;
   sigemptyset(&sa.sa_mask);
   sigaction(SIGINT, &sa, NULL);
   sigaction(SIGTERM, &sa, NULL);
   signal(SIGPIPE, SIG_IGN);

   rc = tap.o.pcap_path ? tap_run_pcap(&tap) : tap_run_proxy(&tap);

   if (fflush(tap.out) != 0) {
      fprintf(stderr, "opmsg tap: writing the log: %s\n", strerror(errno));
      rc = rc ? rc : 2;
   }
   if (tap.out != stdout) {
      fclose(tap.out);
   }
   return rc;
}
