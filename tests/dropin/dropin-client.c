/*
 * dropin-client.c - an ordinary libmongoc program, linked against the
 * system's libmongoc and knowing nothing of libopmsg. The drop-in tests run it
 * as it is and with LD_PRELOAD=libopmsg-mongoc.so and compare.
 *
 *   dropin-client URI ping|find|insert
 *      one operation; prints "RESULT ok <json>" and exits 0, or
 *      "RESULT error <domain>.<code> <message>" and exits 2, or, when
 *      libmongoc accepted the reply but libbson cannot print what it
 *      returned as JSON (an element bson_iter cannot read, which the
 *      drop-in's spec level lets through), "RESULT unprintable <what>"
 *      and exits 3.
 *   dropin-client URI threads
 *      a pooled client, 4 threads x 10 rounds of ping + find; prints
 *      "RESULT ok {...}" when every find returned its 2 documents and every
 *      ping succeeded (the last ping reply is shown), else an error.
 *   dropin-client URI stream
 *      a pooled client whose server monitor streams (the server's hello has
 *      a topologyVersion): ping, wait until the monitor has finished two
 *      awaitable hellos or one has failed (at most STREAM_WAIT_S seconds),
 *      ping again; prints "RESULT ok {...}" with both pings' outcome and the
 *      awaited heartbeats started, succeeded and failed.
 *   dropin-client URI workload DB THREADS
 *      a pooled client, THREADS threads, APM on: per thread insert_many,
 *      find with getMore, aggregate, update_many, delete_many; prints a
 *      deterministic summary (the same bytes whatever the reply path).
 */
#define _POSIX_C_SOURCE 200809L /* struct addrinfo in mongoc-socket.h under -std=c11 */
#include <mongoc/mongoc.h>

/* bson_string_t's stand-in (header only: this program links no libopmsg). */
#include "../../tools/opmsg-bson-compat.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_OP_ERROR 2
#define EXIT_UNPRINTABLE 3
#define WORKLOAD_DOCS 60
#define WORKLOAD_MAX_THREADS 16

static int
print_error(const bson_error_t *error)
{
   printf("RESULT error %u.%u %s\n", error->domain, error->code, error->message);
   return EXIT_OP_ERROR;
}

static int
print_ok(const char *json)
{
   printf("RESULT ok %s\n", json);
   return 0;
}

/* The reply as "RESULT ok <json>", or "RESULT unprintable" when libbson
 * cannot make JSON of it. */
static int
print_reply(const bson_t *reply)
{
   char *json = bson_as_relaxed_extended_json(reply, NULL);
   int rc;

   if (!json) {
      printf("RESULT unprintable reply of %u bytes\n", (unsigned) reply->len);
      return EXIT_UNPRINTABLE;
   }
   rc = print_ok(json);
   bson_free(json);
   return rc;
}

static int
op_ping(mongoc_client_t *client)
{
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;
   int rc;

   if (mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error)) {
      rc = print_reply(&reply);
   } else {
      rc = print_error(&error);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
   return rc;
}

static int
op_find(mongoc_client_t *client)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "test", "c");
   bson_t *filter = bson_new();
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
   const bson_t *doc;
   bson_error_t error;
   opmsg_strbuf_t *out = opmsg_strbuf_new("[");
   int n = 0, unprintable = -1;
   int rc;

   while (mongoc_cursor_next(cursor, &doc)) {
      char *json = bson_as_relaxed_extended_json(doc, NULL);
      if (!json && unprintable < 0) {
         unprintable = n;
      }
      opmsg_strbuf_append_printf(out, "%s%s", n++ ? ", " : "", json ? json : "null");
      bson_free(json);
   }
   opmsg_strbuf_append(out, "]");
   if (mongoc_cursor_error(cursor, &error)) {
      rc = print_error(&error);
   } else if (unprintable >= 0) {
      printf("RESULT unprintable document %d\n", unprintable);
      rc = EXIT_UNPRINTABLE;
   } else {
      rc = print_ok(out->str);
   }
   opmsg_strbuf_free(out, true);
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);
   mongoc_collection_destroy(coll);
   return rc;
}

static int
op_insert(mongoc_client_t *client)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "test", "c");
   bson_t *docs[3];
   bson_t reply;
   bson_error_t error;
   int rc;

   for (int i = 0; i < 3; i++) {
      docs[i] = BCON_NEW("_id", BCON_INT32(i + 1), "x", BCON_UTF8("y"));
   }
   if (mongoc_collection_insert_many(coll, (const bson_t **) docs, 3, NULL, &reply, &error)) {
      rc = print_reply(&reply);
   } else {
      rc = print_error(&error);
   }
   bson_destroy(&reply);
   for (int i = 0; i < 3; i++) {
      bson_destroy(docs[i]);
   }
   mongoc_collection_destroy(coll);
   return rc;
}

/* ------------------------------------------------------------------------
 * Several threads on a pooled client (each thread has its own merged body).
 * ---------------------------------------------------------------------- */
#define POOL_THREADS 4
#define POOL_ROUNDS 10

typedef struct {
   mongoc_client_pool_t *pool;
   int good;
   char last_ping[512];
   bson_error_t error;
} pool_worker_t;

static void *
pool_worker(void *arg)
{
   pool_worker_t *w = arg;
   mongoc_client_t *client = mongoc_client_pool_pop(w->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "test", "c");
   bson_t *ping = BCON_NEW("ping", BCON_INT32(1));

   for (int r = 0; r < POOL_ROUNDS; r++) {
      bson_t reply, filter = BSON_INITIALIZER;
      mongoc_cursor_t *cursor;
      const bson_t *doc;
      int n = 0;

      if (mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &w->error)) {
         char *json = bson_as_relaxed_extended_json(&reply, NULL);
         snprintf(w->last_ping, sizeof w->last_ping, "%s", json ? json : "null");
         bson_free(json);
         w->good++;
      }
      bson_destroy(&reply);
      cursor = mongoc_collection_find_with_opts(coll, &filter, NULL, NULL);
      while (mongoc_cursor_next(cursor, &doc)) {
         n++;
      }
      if (!mongoc_cursor_error(cursor, &w->error) && n == 2) {
         w->good++;
      }
      mongoc_cursor_destroy(cursor);
   }
   bson_destroy(ping);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(w->pool, client);
   return NULL;
}

static int
op_threads(const mongoc_uri_t *uri)
{
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   pool_worker_t w[POOL_THREADS];
   pthread_t tids[POOL_THREADS];
   int good = 0;
   int rc = EXIT_OP_ERROR;
   char json[700];

   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   memset(w, 0, sizeof w);
   for (int i = 0; i < POOL_THREADS; i++) {
      w[i].pool = pool;
      pthread_create(&tids[i], NULL, pool_worker, &w[i]);
   }
   for (int i = 0; i < POOL_THREADS; i++) {
      pthread_join(tids[i], NULL);
      good += w[i].good;
   }
   if (good == POOL_THREADS * POOL_ROUNDS * 2) {
      snprintf(json, sizeof json, "{\"threads\": %d, \"operations\": %d, \"ping\": %s}", POOL_THREADS, good,
               w[0].last_ping);
      rc = print_ok(json);
   } else {
      for (int i = 0; i < POOL_THREADS; i++) {
         if (w[i].good != POOL_ROUNDS * 2) {
            rc = print_error(&w[i].error);
            break;
         }
      }
   }
   mongoc_client_pool_destroy(pool);
   return rc;
}

/* ------------------------------------------------------------------------
 * A pooled client's streaming server monitor.
 * ---------------------------------------------------------------------- */
#define STREAM_WAIT_S 10

typedef struct {
   pthread_mutex_t lock;
   pthread_cond_t ended;
   int started, succeeded, failed; /* awaited heartbeats only */
} stream_counts_t;

/* Counts an awaited heartbeat event in *field; one that ended (succeeded or
 * failed) wakes the waiting thread. */
static void
count_awaited(stream_counts_t *c, bool awaited, int *field, bool ended)
{
   if (awaited) {
      pthread_mutex_lock(&c->lock);
      (*field)++;
      if (ended) {
         pthread_cond_signal(&c->ended);
      }
      pthread_mutex_unlock(&c->lock);
   }
}

static void
on_heartbeat_started(const mongoc_apm_server_heartbeat_started_t *e)
{
   stream_counts_t *c = mongoc_apm_server_heartbeat_started_get_context(e);
   count_awaited(c, mongoc_apm_server_heartbeat_started_get_awaited(e), &c->started, false);
}

static void
on_heartbeat_succeeded(const mongoc_apm_server_heartbeat_succeeded_t *e)
{
   stream_counts_t *c = mongoc_apm_server_heartbeat_succeeded_get_context(e);
   count_awaited(c, mongoc_apm_server_heartbeat_succeeded_get_awaited(e), &c->succeeded, true);
}

static void
on_heartbeat_failed(const mongoc_apm_server_heartbeat_failed_t *e)
{
   stream_counts_t *c = mongoc_apm_server_heartbeat_failed_get_context(e);
   count_awaited(c, mongoc_apm_server_heartbeat_failed_get_awaited(e), &c->failed, true);
}

/* "ok" or "error <domain>.<code>" for one ping. */
static void
stream_ping(mongoc_client_t *client, char *out, size_t size)
{
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;

   if (mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error)) {
      snprintf(out, size, "ok");
   } else {
      snprintf(out, size, "error %u.%u", error.domain, error.code);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
}

/* A pool that reports to cbs (with context ctx) and uses error API 2, both
 * set before the first pop, which starts the monitors. */
static mongoc_client_pool_t *
pool_with_apm(const mongoc_uri_t *uri, mongoc_apm_callbacks_t *cbs, void *ctx)
{
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);

   mongoc_client_pool_set_apm_callbacks(pool, cbs, ctx);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   return pool;
}

static int
op_stream(const mongoc_uri_t *uri)
{
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   stream_counts_t c = {.started = 0};
   mongoc_client_pool_t *pool;
   mongoc_client_t *client;
   struct timespec deadline;
   char first[64], second[64], json[300];

   pthread_mutex_init(&c.lock, NULL);
   pthread_cond_init(&c.ended, NULL);
   mongoc_apm_set_server_heartbeat_started_cb(cbs, on_heartbeat_started);
   mongoc_apm_set_server_heartbeat_succeeded_cb(cbs, on_heartbeat_succeeded);
   mongoc_apm_set_server_heartbeat_failed_cb(cbs, on_heartbeat_failed);
   pool = pool_with_apm(uri, cbs, &c);
   client = mongoc_client_pool_pop(pool);
   stream_ping(client, first, sizeof first);
   clock_gettime(CLOCK_REALTIME, &deadline);
   deadline.tv_sec += STREAM_WAIT_S;
   pthread_mutex_lock(&c.lock);
   /* Two: a moreToCome answer is followed by a second message. */
   while (c.succeeded < 2 && c.failed == 0) {
      if (pthread_cond_timedwait(&c.ended, &c.lock, &deadline) != 0) {
         break;
      }
   }
   pthread_mutex_unlock(&c.lock);
   stream_ping(client, second, sizeof second);
   /* Counted before the pool stops its monitors (a cancelled awaitable
    * hello is not the server's answer). */
   pthread_mutex_lock(&c.lock);
   snprintf(json, sizeof json,
            "{\"ping\": \"%s\", \"ping_after\": \"%s\", \"awaited_started\": %d, "
            "\"awaited_succeeded\": %d, \"awaited_failed\": %d}",
            first, second, c.started, c.succeeded, c.failed);
   pthread_mutex_unlock(&c.lock);
   mongoc_client_pool_push(pool, client);
   mongoc_client_pool_destroy(pool);
   mongoc_apm_callbacks_destroy(cbs);
   pthread_cond_destroy(&c.ended);
   pthread_mutex_destroy(&c.lock);
   return print_ok(json);
}

/* ------------------------------------------------------------------------
 * The workload against a real server.
 * ---------------------------------------------------------------------- */

typedef struct {
   pthread_mutex_t lock;
   int started[8], succeeded[8], failed[8];
   int64_t insert_docs_in_events; /* length of "documents" in started events */
} apm_counts_t;

static const char *const apm_names[8] = {"insert", "find", "getMore", "aggregate", "update", "delete", "drop", "other"};

static int
apm_index(const char *name)
{
   for (int i = 0; i < 7; i++) {
      if (strcmp(name, apm_names[i]) == 0) {
         return i;
      }
   }
   return 7;
}

static void
on_started(const mongoc_apm_command_started_t *e)
{
   apm_counts_t *c = mongoc_apm_command_started_get_context(e);
   int i = apm_index(mongoc_apm_command_started_get_command_name(e));
   const bson_t *cmd = mongoc_apm_command_started_get_command(e);
   bson_iter_t it, child;
   int64_t n = 0;

   /* The sequence appears as an array here, built by
    * _mongoc_cmd_append_payload_as_array. */
   if (i == 0 && bson_iter_init_find(&it, cmd, "documents") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &child)) {
      while (bson_iter_next(&child)) {
         n++;
      }
   }
   pthread_mutex_lock(&c->lock);
   c->started[i]++;
   c->insert_docs_in_events += n;
   pthread_mutex_unlock(&c->lock);
}

static void
on_succeeded(const mongoc_apm_command_succeeded_t *e)
{
   apm_counts_t *c = mongoc_apm_command_succeeded_get_context(e);
   int i = apm_index(mongoc_apm_command_succeeded_get_command_name(e));

   pthread_mutex_lock(&c->lock);
   c->succeeded[i]++;
   pthread_mutex_unlock(&c->lock);
}

static void
on_failed(const mongoc_apm_command_failed_t *e)
{
   apm_counts_t *c = mongoc_apm_command_failed_get_context(e);
   int i = apm_index(mongoc_apm_command_failed_get_command_name(e));

   pthread_mutex_lock(&c->lock);
   c->failed[i]++;
   pthread_mutex_unlock(&c->lock);
}

typedef struct {
   mongoc_client_pool_t *pool;
   const char *db;
   int index;
   char summary[1024];
} worker_t;

/* Appends " name=value" to the thread's summary line. */
static void
append_summary(worker_t *w, const char *name, const char *value)
{
   size_t used = strlen(w->summary);
   snprintf(w->summary + used, sizeof w->summary - used, " %s=%s", name, value);
}

static void
append_error(worker_t *w, const char *step, const bson_error_t *error)
{
   char name[32];
   char value[600];
   snprintf(name, sizeof name, "%s-error", step);
   snprintf(value, sizeof value, "%u.%u:%s", error->domain, error->code, error->message);
   append_summary(w, name, value);
}

static void
work_insert(worker_t *w, mongoc_collection_t *coll)
{
   bson_t *docs[WORKLOAD_DOCS];
   bson_error_t error;
   bson_t reply;
   char buf[64];

   for (int k = 0; k < WORKLOAD_DOCS; k++) {
      docs[k] = BCON_NEW("_id", BCON_INT32(w->index * 1000 + k), "t", BCON_INT32(w->index), "k", BCON_INT32(k), "sub",
                         "{", "a", BCON_INT32(k % 7), "}");
   }
   if (mongoc_collection_insert_many(coll, (const bson_t **) docs, WORKLOAD_DOCS, NULL, &reply, &error)) {
      bson_iter_t it;
      snprintf(buf, sizeof buf, "%d",
               bson_iter_init_find(&it, &reply, "insertedCount")
                  ? bson_iter_as_int64(&it) > 0 ? (int) bson_iter_as_int64(&it) : 0
                  : -1);
      append_summary(w, "inserted", buf);
   } else {
      append_error(w, "insert", &error);
   }
   bson_destroy(&reply);
   for (int k = 0; k < WORKLOAD_DOCS; k++) {
      bson_destroy(docs[k]);
   }
}

static void
work_find(worker_t *w, mongoc_collection_t *coll)
{
   bson_t *filter = BCON_NEW("t", BCON_INT32(w->index));
   bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(7));
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
   const bson_t *doc;
   bson_error_t error;
   int64_t n = 0, sum = 0, order_ok = 1, last = -1;
   char buf[128];

   while (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, doc, "k")) {
         int64_t k = bson_iter_as_int64(&it);
         sum += k;
         order_ok &= k > last;
         last = k;
      }
      n++;
   }
   if (mongoc_cursor_error(cursor, &error)) {
      append_error(w, "find", &error);
   } else {
      snprintf(buf, sizeof buf, "%lld/%lld/%lld", (long long) n, (long long) sum, (long long) order_ok);
      append_summary(w, "find(n/sum/ordered)", buf);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   bson_destroy(filter);
}

static void
work_aggregate(worker_t *w, mongoc_collection_t *coll)
{
   bson_t *pipeline = BCON_NEW("pipeline", "[", "{", "$match", "{", "t", BCON_INT32(w->index), "}", "}", "{", "$group",
                               "{", "_id", "$sub.a", "n", "{", "$sum", BCON_INT32(1), "}", "}", "}", "{", "$sort", "{",
                               "_id", BCON_INT32(1), "}", "}", "]");
   bson_t *opts = BCON_NEW("batchSize", BCON_INT32(2));
   mongoc_cursor_t *cursor = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, opts, NULL);
   const bson_t *doc;
   bson_error_t error;
   opmsg_strbuf_t *s = opmsg_strbuf_new("");

   while (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t id, n;
      if (bson_iter_init_find(&id, doc, "_id") && bson_iter_init_find(&n, doc, "n")) {
         opmsg_strbuf_append_printf(s, "%lld:%lld,", (long long) bson_iter_as_int64(&id),
                                    (long long) bson_iter_as_int64(&n));
      }
   }
   if (mongoc_cursor_error(cursor, &error)) {
      append_error(w, "aggregate", &error);
   } else {
      append_summary(w, "aggregate", s->str);
   }
   opmsg_strbuf_free(s, true);
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   bson_destroy(pipeline);
}

static void
work_update_delete(worker_t *w, mongoc_collection_t *coll)
{
   bson_t *sel = BCON_NEW("t", BCON_INT32(w->index), "sub.a", BCON_INT32(3));
   bson_t *upd = BCON_NEW("$set", "{", "u", BCON_BOOL(true), "}");
   bson_t *del = BCON_NEW("t", BCON_INT32(w->index), "u", BCON_BOOL(true));
   bson_t reply;
   bson_error_t error;
   bson_iter_t it;
   char buf[32];

   if (mongoc_collection_update_many(coll, sel, upd, NULL, &reply, &error)) {
      snprintf(buf, sizeof buf, "%lld",
               bson_iter_init_find(&it, &reply, "modifiedCount") ? (long long) bson_iter_as_int64(&it) : -1LL);
      append_summary(w, "updated", buf);
   } else {
      append_error(w, "update", &error);
   }
   bson_destroy(&reply);
   if (mongoc_collection_delete_many(coll, del, NULL, &reply, &error)) {
      snprintf(buf, sizeof buf, "%lld",
               bson_iter_init_find(&it, &reply, "deletedCount") ? (long long) bson_iter_as_int64(&it) : -1LL);
      append_summary(w, "deleted", buf);
   } else {
      append_error(w, "delete", &error);
   }
   bson_destroy(&reply);
   bson_destroy(del);
   bson_destroy(upd);
   bson_destroy(sel);
}

static void *
worker_run(void *arg)
{
   worker_t *w = arg;
   mongoc_client_t *client = mongoc_client_pool_pop(w->pool);
   char name[32];
   mongoc_collection_t *coll;

   snprintf(name, sizeof name, "w%d", w->index);
   coll = mongoc_client_get_collection(client, w->db, name);
   (void) mongoc_collection_drop(coll, NULL); /* absent the first time */
   work_insert(w, coll);
   work_find(w, coll);
   work_aggregate(w, coll);
   work_update_delete(w, coll);
   work_find(w, coll);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(w->pool, client);
   return NULL;
}

static int
workload(const mongoc_uri_t *uri, const char *db, int threads)
{
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   apm_counts_t counts;
   worker_t workers[WORKLOAD_MAX_THREADS];
   pthread_t tids[WORKLOAD_MAX_THREADS];
   mongoc_client_pool_t *pool;
   int failures = 0;

   memset(&counts, 0, sizeof counts);
   pthread_mutex_init(&counts.lock, NULL);
   mongoc_apm_set_command_started_cb(cbs, on_started);
   mongoc_apm_set_command_succeeded_cb(cbs, on_succeeded);
   mongoc_apm_set_command_failed_cb(cbs, on_failed);
   pool = pool_with_apm(uri, cbs, &counts);

   for (int i = 0; i < threads; i++) {
      workers[i].pool = pool;
      workers[i].db = db;
      workers[i].index = i;
      workers[i].summary[0] = '\0';
      pthread_create(&tids[i], NULL, worker_run, &workers[i]);
   }
   for (int i = 0; i < threads; i++) {
      pthread_join(tids[i], NULL);
      printf("thread %d:%s\n", i, workers[i].summary);
      failures += strstr(workers[i].summary, "-error=") != NULL;
   }
   for (int i = 0; i < 7; i++) {
      /* drop fails the first time (no collection): count attempts only. */
      printf("apm %s: started=%d succeeded+failed=%d\n", apm_names[i], counts.started[i],
             counts.succeeded[i] + counts.failed[i]);
   }
   printf("apm insert documents seen in started events: %lld\n", (long long) counts.insert_docs_in_events);
   mongoc_client_pool_destroy(pool);
   mongoc_apm_callbacks_destroy(cbs);
   pthread_mutex_destroy(&counts.lock);
   return failures ? EXIT_OP_ERROR : 0;
}

int
main(int argc, char **argv)
{
   mongoc_uri_t *uri;
   mongoc_client_t *client;
   bson_error_t error;
   int rc;

   setvbuf(stdout, NULL, _IOLBF, 0);
   if (argc < 3) {
      fprintf(stderr, "usage: %s URI ping|find|insert|threads|stream|workload DB THREADS\n", argv[0]);
      return 64;
   }
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      rc = print_error(&error);
   } else if (strcmp(argv[2], "threads") == 0) {
      rc = op_threads(uri);
   } else if (strcmp(argv[2], "stream") == 0) {
      rc = op_stream(uri);
   } else if (strcmp(argv[2], "workload") == 0) {
      int threads = argc > 4 ? atoi(argv[4]) : 4;
      if (threads < 1 || threads > WORKLOAD_MAX_THREADS) {
         threads = 4;
      }
      rc = workload(uri, argc > 3 ? argv[3] : "opmsg_dropin", threads);
   } else {
      client = mongoc_client_new_from_uri(uri);
      mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
      if (strcmp(argv[2], "ping") == 0) {
         rc = op_ping(client);
      } else if (strcmp(argv[2], "find") == 0) {
         rc = op_find(client);
      } else if (strcmp(argv[2], "insert") == 0) {
         rc = op_insert(client);
      } else {
         fprintf(stderr, "unknown operation %s\n", argv[2]);
         rc = 64;
      }
      mongoc_client_destroy(client);
   }
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return rc;
}
