/*
 * session.c - one connection's conversation as `opmsg tap` follows it,
 * wherever its bytes come from (the live proxy or a capture): each
 * direction cut into messages by a stream reader, and replies paired with
 * the requests they answer.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Bytes are only ever observed here, never changed: what was forwarded has
 * been forwarded. When a direction cannot be framed any more (a length out
 * of bounds) it is logged once and then only counted.
 */
#include "tap-private.h"

#include <string.h>

/* ---------------------------------------------------------------------------
 * Latency: requests are remembered by requestID until the reply whose
 * responseTo names them.
 * ------------------------------------------------------------------------- */

void
tap_remember(tap_session_t *ses, int32_t request_id, double t)
{
   if (ses->n_pending == TAP_MAX_PENDING) {
      /* Forget the oldest: a peer that never answers must not grow us. */
      memmove(ses->pending, ses->pending + 1, (TAP_MAX_PENDING - 1) * sizeof ses->pending[0]);
      ses->n_pending--;
   }
   ses->pending[ses->n_pending].request_id = request_id;
   ses->pending[ses->n_pending].t = t;
   ses->n_pending++;
}

bool
tap_answer(tap_session_t *ses, int32_t response_to, double *t)
{
   for (size_t i = 0; i < ses->n_pending; i++) {
      if (ses->pending[i].request_id == response_to) {
         *t = ses->pending[i].t;
         ses->n_pending--;
         memmove(ses->pending + i, ses->pending + i + 1, (ses->n_pending - i) * sizeof ses->pending[0]);
         return true;
      }
   }
   return false;
}

/* ---------------------------------------------------------------------------
 * Framing: cuts each direction's bytes into messages
 * ------------------------------------------------------------------------- */

static void
tap_lost_framing(tap_t *tap, tap_session_t *ses, int dir, double now, const bson_error_t *error)
{
   char detail[700];

   bson_snprintf(detail, sizeof detail, "%s: %s: %s: not logging this direction any more", tap_dir_name[dir],
                 opmsg_error_name(error->code), error->message);
   tap_log_event(tap, ses, now, "desync", detail);
   ses->dir[dir].broken = true;
}

void
tap_feed(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data, size_t len, double now)
{
   tap_stream_t *st = &ses->dir[dir];
   bson_error_t error;
   size_t used = 0;

   st->bytes += len;
   if (st->broken) {
      return;
   }
   if (!st->reader) {
      st->reader = opmsg_reader_new(&tap->parse);
   }
   while (used < len) {
      size_t took = opmsg_reader_feed(st->reader, data + used, len - used);
      const uint8_t *msg;
      size_t msg_len;
      opmsg_reader_status_t rs;
      bool progress = took > 0;

      used += took;
      while ((rs = opmsg_reader_next(st->reader, &msg, &msg_len, &error)) == OPMSG_READER_MESSAGE) {
         tap_log_message(tap, ses, dir, msg, msg_len, now);
         st->messages++;
         progress = true;
      }
      if (rs == OPMSG_READER_ERROR) {
         tap_lost_framing(tap, ses, dir, now, &error);
         return;
      }
      if (!progress) { /* the reader takes nothing and gives nothing: never */
         bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_STREAM_TRUNCATED,
                        "the stream reader is stuck after %zu bytes: the rest of the stream is not read", used);
         tap_lost_framing(tap, ses, dir, now, &error);
         return;
      }
   }
}

void
tap_session_init(tap_t *tap, tap_session_t *ses)
{
   memset(ses, 0, sizeof *ses);
   ses->id = ++tap->next_conn;
}

void
tap_session_close(tap_t *tap, tap_session_t *ses, double now, const char *why)
{
   tap_log_close(tap, ses, now, why);
   for (int d = 0; d < 2; d++) {
      opmsg_reader_destroy(ses->dir[d].reader);
      ses->dir[d].reader = NULL;
   }
}
