/*
 * logger.c - the logging thread of the live `opmsg tap`, and the queue the
 * forwarding thread hands it work through.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Why a thread: each read is written to the other side first, and only
 * then queued, with the time it was read, for this thread to frame, parse,
 * merge and log. So logging never delays the bytes, not even the next
 * request of a client that waits for the reply just forwarded.
 */
#include "tap-private.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

/* The live proxy hands what it forwarded to a logging thread, which wakes
 * this often to frame, log and flush it: the forwarding thread then spends
 * no time on the log (nor a wake-up syscall per message). */
#define TAP_LOG_WAKE_MS 10
/* ...or at once when this much is waiting; and the forwarding thread waits
 * for the logger when the queue is this full (memory stays bounded). */
#define TAP_QUEUE_NUDGE (1u << 20)
#define TAP_QUEUE_MAX (64u << 20)

/* ---------------------------------------------------------------------------
 * The logging thread (live proxy)
 *
 * The forwarding thread posts, in order, what happens on each connection:
 * open, the bytes of each read, close. The logging thread owns the sessions
 * from then on: it frames, logs and frees them. Times are taken when the
 * bytes are forwarded, so latencies do not depend on when they are logged.
 * ------------------------------------------------------------------------- */

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

void
tap_post(tap_t *tap, tap_session_t *ses, int kind, int dir, double t, const char *text, const uint8_t *data, size_t len)
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

bool
tap_logger_start(tap_t *tap)
{
   tap_queue_t *q = bson_malloc0(sizeof *q);
   sigset_t block, old;
   int rc;

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
      pthread_mutex_destroy(&q->mu);
      pthread_cond_destroy(&q->wake);
      pthread_cond_destroy(&q->space);
      bson_free(q);
      tap->queue = NULL;
      return false;
   }
   return true;
}

void
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
   bson_free(q);
   tap->queue = NULL;
}
