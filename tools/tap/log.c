/*
 * log.c - the log of `opmsg tap`: one JSON line per message, event and
 * closed connection (docs/tap.md describes every member).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The one place that knows the log's format, so the live proxy and the
 * capture reader cannot drift apart: both hand framed messages and events to
 * these functions. A message is parsed at the run's check level (full
 * validation unless --check says otherwise); one that breaks a rule is still
 * logged (header, the rule's name, its detail). Long arrays
 * are elided for the log (--max-array), never in what is forwarded.
 */
#include "tap-private.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

const char *const tap_dir_name[2] = {"c2s", "s2c"};

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
   opmsg_strbuf_append_printf(s, "%s.%06ldZ\",\"conn\":%" PRIu64, buf, usec, conn);
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

/* ,"key":"OP_..." or, for an opcode without a name, ,"key":N */
static void
tap_append_opcode(opmsg_strbuf_t *s, const char *key, int32_t opcode)
{
   const char *name = opmsg_opcode_name(opcode);

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
   bool first = true;

   opmsg_strbuf_append(s, ",\"flags\":[");
   for (unsigned bit = 0; bit < 32; bit++) {
      const char *name = opmsg_flag_name(opcode, bit);

      if (!(flags & (1u << bit))) {
         continue;
      }
      if (!first) {
         opmsg_strbuf_append_c(s, ',');
      }
      first = false;
      if (name) {
         opmsg_strbuf_append_printf(s, "\"%s\"", name);
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
tap_copy_elided(const bson_t *src, bson_t *dst, uint32_t max, bool is_array, int depth)
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
      if ((type == BSON_TYPE_ARRAY || type == BSON_TYPE_DOCUMENT) && depth < OPMSG_MAX_DEPTH) {
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

   /* Below full validation, an element libbson cannot read stops its
    * iterator: the eliding copy would lose the rest silently, and JSON
    * cannot carry it. Such a document is logged without "doc". */
   if (tap->parse.check != OPMSG_CHECK_FULL && !bson_validate(doc, BSON_VALIDATE_UTF8, NULL)) {
      return;
   }
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

static void
tap_save_raw(tap_t *tap, const tap_session_t *ses, int dir, const uint8_t *data, size_t len)
{
   char path[4096];
   FILE *f;

   /* The sequence number first, so listing the directory replays the
    * conversation in the order it was logged. */
   bson_snprintf(path, sizeof path, "%s/%08" PRIu64 "-conn%" PRIu64 "-%s.bin", tap->o.raw_dir, ++tap->raw_seq, ses->id,
                 tap_dir_name[dir]);
   f = fopen(path, "wb");
   if (!f || fwrite(data, 1, len, f) != len) {
      if (!tap->raw_failed) {
         fprintf(stderr, "opmsg tap: cannot write %s: %s\n", path, strerror(errno));
         tap->raw_failed = true;
      }
   }
   if (f) {
      fclose(f);
   }
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
   const char *name = error->domain == OPMSG_ERROR_DOMAIN ? opmsg_error_name(error->code) : "error";

   opmsg_strbuf_append(s, ",\"error\":");
   tap_json_string(s, name, strlen(name));
   opmsg_strbuf_append(s, ",\"error_message\":");
   tap_json_string(s, error->message, strlen(error->message));
}

/* The command, $db and merged document of a parsed (inner) message. A
 * reply's first key is not a command: only requests name one. */
static void
tap_append_contents(tap_t *tap, opmsg_strbuf_t *s, const opmsg_msg_t *msg, int dir)
{
   bson_error_t error;
   bson_t *merged;
   bson_t body;

   if (dir == TAP_C2S && (msg->opcode == OPMSG_OP_MSG || msg->opcode == OPMSG_OP_QUERY)) {
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
      } else if (msg->opcode == OPMSG_OP_QUERY && msg->op_query.full_collection_name) {
         /* A legacy command names its database as "db.$cmd". */
         const char *ns = msg->op_query.full_collection_name;
         const char *dot = strchr(ns, '.');

         opmsg_strbuf_append(s, ",\"db\":");
         tap_json_string(s, ns, dot ? (size_t) (dot - ns) : strlen(ns));
      }
   }
   if (msg->opcode == OPMSG_OP_REPLY) {
      opmsg_strbuf_append_printf(s, ",\"numberReturned\":%" PRId32, msg->op_reply.number_returned);
      if (msg->op_reply.number_returned != 1) {
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

/* Logs one framed message: the header, then either what the message says
 * or, when it breaks a rule, the rule. A request is remembered for the
 * latency of its reply even when it breaks one: the server may answer it. */
void
tap_log_message(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data, size_t len, double now)
{
   opmsg_options_t opts = tap->parse;
   opmsg_decompressed_t dec = {0};
   const opmsg_msg_t *inner = NULL;
   bson_error_t error;
   opmsg_msg_t msg;
   opmsg_strbuf_t *s;
   /* The header, whatever the rest: a refused message is logged too. */
   int32_t request_id = opmsg_wire_i32(data, len, OPMSG_OFF_REQUEST_ID);
   int32_t response_to = opmsg_wire_i32(data, len, OPMSG_OFF_RESPONSE_TO);
   int32_t opcode = opmsg_wire_i32(data, len, OPMSG_OFF_OPCODE);
   bool ok;
   double sent;

   if (tap->o.raw_dir) {
      tap_save_raw(tap, ses, dir, data, len);
   }
   s = tap_line_start(now, ses->id);
   opmsg_strbuf_append_printf(s, ",\"dir\":\"%s\",\"len\":%zu,\"requestID\":%" PRId32 ",\"responseTo\":%" PRId32,
                              tap_dir_name[dir], len, request_id, response_to);
   tap_append_opcode(s, "opcode", opcode);

   if (dir == TAP_C2S && opcode == OPMSG_OP_MSG) {
      opts.flags |= OPMSG_PARSE_REQUEST;
   }
   ok = opmsg_parse(data, len, &opts, &msg, &error);
   if (ok && msg.opcode == OPMSG_OP_COMPRESSED) {
      const char *codec = opmsg_compressor_name(msg.op_compressed.compressor_id);

      opmsg_strbuf_append_printf(s, ",\"compressor\":\"%s\"", codec ? codec : "reserved");
      tap_append_opcode(s, "originalOpcode", msg.op_compressed.original_opcode);
      if (dir == TAP_C2S && msg.op_compressed.original_opcode == OPMSG_OP_MSG) {
         opts.flags |= OPMSG_PARSE_REQUEST;
      }
      ok = opmsg_decompress_parse(&msg, &opts, &dec, &error);
      inner = ok ? &dec.inner : NULL;
   } else if (ok) {
      inner = &msg;
   }

   if (inner) {
      if (inner->opcode == OPMSG_OP_MSG || inner->opcode == OPMSG_OP_QUERY || inner->opcode == OPMSG_OP_REPLY) {
         tap_append_flags(s, inner->opcode, inner->flags);
      }
      if (dir == TAP_C2S && !(inner->opcode == OPMSG_OP_MSG && (inner->flags & OPMSG_FLAG_MORE_TO_COME))) {
         tap_remember(ses, request_id, now);
      }
   } else if (dir == TAP_C2S) {
      /* Still a request the server may answer. */
      tap_remember(ses, request_id, now);
   }
   if (dir == TAP_S2C && tap_answer(ses, response_to, &sent)) {
      opmsg_strbuf_append_printf(s, ",\"latency_us\":%.1f", (now - sent) * 1e6);
      /* Exhaust: the next reply answers this one. */
      if (inner && inner->opcode == OPMSG_OP_MSG && (inner->flags & OPMSG_FLAG_MORE_TO_COME)) {
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
 * Events: open, close reasons, lost framing
 * ------------------------------------------------------------------------- */

void
tap_log_event(tap_t *tap, const tap_session_t *ses, double now, const char *event, const char *detail)
{
   opmsg_strbuf_t *s = tap_line_start(now, ses->id);

   opmsg_strbuf_append_printf(s, ",\"event\":\"%s\"", event);
   if (detail) {
      opmsg_strbuf_append(s, ",\"detail\":");
      tap_json_string(s, detail, strlen(detail));
   }
   tap_line_end(tap, s);
}

void
tap_log_close(tap_t *tap, const tap_session_t *ses, double now, const char *why)
{
   opmsg_strbuf_t *s = tap_line_start(now, ses->id);

   opmsg_strbuf_append_printf(s,
                              ",\"event\":\"close\",\"bytes_c2s\":%" PRIu64 ",\"bytes_s2c\":%" PRIu64
                              ",\"messages_c2s\":%" PRIu64 ",\"messages_s2c\":%" PRIu64
                              ",\"unframed_c2s\":%zu,\"unframed_s2c\":%zu",
                              ses->dir[0].bytes, ses->dir[1].bytes, ses->dir[0].messages, ses->dir[1].messages,
                              opmsg_reader_buffered(ses->dir[0].reader), opmsg_reader_buffered(ses->dir[1].reader));
   if (why) {
      opmsg_strbuf_append(s, ",\"detail\":");
      tap_json_string(s, why, strlen(why));
   }
   tap_line_end(tap, s);
}
