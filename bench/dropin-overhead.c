/*
 * dropin-overhead.c - what libopmsg-mongoc.so costs an ordinary libmongoc
 * program. Linked with the system's libmongoc only; dropin-overhead.sh runs
 * it with and without LD_PRELOAD and compares.
 *
 *   dropin-overhead URI ping|find|find1000 N
 *      N timed operations (after N/10 untimed ones); prints
 *      "median_ns p99_ns mean_ns". find reads the 2 documents of
 *      opmsg_bench.c, find1000 its 1,000 small documents (batches of 101:
 *      ten replies); each fills the collection first.
 *   dropin-overhead scatter N
 *      N parses of a typical find reply with what the drop-in replaces (1.23:
 *      _mongoc_rpc_scatter; 1.30 and 2.x: from_data_in_place + get_body), and
 *      of the same reply with its batch as a document sequence; prints
 *      "plain_ns sequence_ns" per reply, in the thread's CPU time.
 */
#define _POSIX_C_SOURCE 200809L
#include <mongoc/mongoc.h>

#include "../tools/opmsg-bson-compat.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the drop-in replaces on a reply's path, per call, looked up at run
 * time in the global scope (the drop-in's, when preloaded, comes first), as
 * no installed header declares them:
 * - 1.23: _mongoc_rpc_scatter;
 * - 1.30 and 2.x: mcd_rpc_message_from_data_in_place, then
 *   mcd_rpc_message_get_body and bson_destroy, as libmongoc's receive paths
 *   call them (on one message object, reset in between as they do).
 * The scatter mode exits 77 when neither is there. */
typedef bool (*scatter_fn)(void *rpc, const uint8_t *buf, size_t buflen);
static scatter_fn rpc_scatter;
static struct {
   bool (*parse)(void *, const void *, size_t, const void **);
   bool (*get_body)(const void *, bson_t *);
   void *(*message_new)(void);
   void (*reset)(void *);
   void (*destroy)(void *);
} mcd;

static int64_t
now_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The thread's CPU time: the per-reply figures time a loop that never
 * blocks, and on a shared machine the CPU clock leaves out the time other
 * jobs held the processor (what opmsg-bench's --cpu-time does). */
static int64_t
cpu_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
   return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
cmp_i64(const void *a, const void *b)
{
   int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
   return (x > y) - (x < y);
}

/* find reads every document of the collection: 2, or FIND_BIG for
 * "find1000" (a first batch of 101 and 9 getMores of up to 101). */
#define FIND_BIG 1000

static bool
one_op(mongoc_client_t *client, mongoc_collection_t *coll, int find)
{
   bson_error_t error;
   bool ok;

   if (find) {
      bson_t filter = BSON_INITIALIZER;
      /* Batches of 101 (the server's default first batch) for the getMores
       * too: find1000 is 10 replies. */
      bson_t *opts = BCON_NEW("batchSize", BCON_INT32(101));
      mongoc_cursor_t *c = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
      bson_destroy(opts);
      const bson_t *doc;
      int n = 0;
      while (mongoc_cursor_next(c, &doc)) {
         n++;
      }
      ok = !mongoc_cursor_error(c, &error) && n == find;
      mongoc_cursor_destroy(c);
   } else {
      bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
      ok = mongoc_client_command_simple(client, "admin", cmd, NULL, NULL, &error);
      bson_destroy(cmd);
   }
   if (!ok) {
      fprintf(stderr, "operation failed: %s\n", error.message);
   }
   return ok;
}

static int
round_trips(const char *uri, int find, int n)
{
   mongoc_client_t *client = mongoc_client_new(uri);
   mongoc_collection_t *coll;
   int64_t *t = calloc((size_t) n, sizeof *t);
   double sum = 0;

   if (!client || !t) {
      return 1;
   }
   coll = mongoc_client_get_collection(client, "opmsg_bench", "c");
   if (find) {
      /* Small documents {_id: i, a: "x..."}, inserted once. */
      bson_t *docs[FIND_BIG];
      (void) mongoc_collection_drop(coll, NULL);
      for (int i = 0; i < find; i++) {
         docs[i] = BCON_NEW("_id", BCON_INT32(i), "a", BCON_UTF8("xyzzy"));
      }
      if (!mongoc_collection_insert_many(coll, (const bson_t **) docs, (size_t) find, NULL, NULL, NULL)) {
         fprintf(stderr, "insert_many of %d documents failed\n", find);
         return 1;
      }
      for (int i = 0; i < find; i++) {
         bson_destroy(docs[i]);
      }
   }
   for (int i = 0; i < n / 10 + 1; i++) {
      if (!one_op(client, coll, find)) {
         return 1;
      }
   }
   for (int i = 0; i < n; i++) {
      int64_t start = now_ns();
      if (!one_op(client, coll, find)) {
         return 1;
      }
      t[i] = now_ns() - start;
      sum += (double) t[i];
   }
   qsort(t, (size_t) n, sizeof *t, cmp_i64);
   printf("%lld %lld %.0f\n", (long long) t[n / 2], (long long) t[(n * 99) / 100], sum / n);
   free(t);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   return 0;
}

/* A find reply: OP_MSG with body {cursor: {firstBatch|<none>, id, ns}, ok}
 * and, when as_sequence, the batch as a "cursor.firstBatch" sequence. */
static size_t
find_reply(uint8_t *m, size_t cap, bool as_sequence)
{
   bson_t body = BSON_INITIALIZER, cursor, batch;
   bson_t *d1 = BCON_NEW("_id", BCON_INT32(1), "a", BCON_UTF8("x"));
   bson_t *d2 = BCON_NEW("_id", BCON_INT32(2), "a", BCON_UTF8("y"));
   size_t off = 21;
   int32_t v;

   BSON_APPEND_DOCUMENT_BEGIN(&body, "cursor", &cursor);
   if (!as_sequence) {
      opmsg_append_array_begin(&cursor, "firstBatch", -1, &batch);
      BSON_APPEND_DOCUMENT(&batch, "0", d1);
      BSON_APPEND_DOCUMENT(&batch, "1", d2);
      bson_append_array_end(&cursor, &batch);
   }
   BSON_APPEND_INT64(&cursor, "id", 0);
   BSON_APPEND_UTF8(&cursor, "ns", "opmsg_bench.c");
   bson_append_document_end(&body, &cursor);
   BSON_APPEND_DOUBLE(&body, "ok", 1.0);
   if (cap < 21 + body.len + 64) {
      abort();
   }
   memset(m, 0, 21);
   v = 2013;
   memcpy(m + 12, &v, 4);
   memcpy(m + off, bson_get_data(&body), body.len);
   off += body.len;
   if (as_sequence) {
      m[off] = 1;
      v = (int32_t) (4 + 18 + d1->len + d2->len);
      memcpy(m + off + 1, &v, 4);
      memcpy(m + off + 5, "cursor.firstBatch", 18);
      memcpy(m + off + 23, bson_get_data(d1), d1->len);
      memcpy(m + off + 23 + d1->len, bson_get_data(d2), d2->len);
      off += 1 + (size_t) v;
   }
   v = (int32_t) off;
   memcpy(m, &v, 4);
   bson_destroy(&body);
   bson_destroy(d1);
   bson_destroy(d2);
   return off;
}

static double
time_scatter(const uint8_t *m, size_t len, int n)
{
   uint64_t rpc[12]; /* mongoc_rpc_t: 96 bytes, align 8 */
   int64_t start = cpu_ns();

   for (int i = 0; i < n; i++) {
      if (!rpc_scatter(rpc, m, len)) {
         fprintf(stderr, "scatter refused the reply\n");
         exit(1);
      }
   }
   return (double) (cpu_ns() - start) / n;
}

static double
time_mcd(const uint8_t *m, size_t len, int n)
{
   void *rpc = mcd.message_new();
   int64_t start = cpu_ns();

   for (int i = 0; i < n; i++) {
      bson_t body;

      mcd.reset(rpc);
      if (!mcd.parse(rpc, m, len, NULL) || !mcd.get_body(rpc, &body)) {
         fprintf(stderr, "the reply was refused\n");
         exit(1);
      }
      bson_destroy(&body);
   }
   start = cpu_ns() - start;
   mcd.destroy(rpc);
   return (double) start / n;
}

/* Object to function pointer: POSIX guarantees dlsym's result converts. */
#define FN(var, name) memcpy(&(var), &(void *) {dlsym(self, name)}, sizeof(var))

int
main(int argc, char **argv)
{
   int n = argc > 3 ? atoi(argv[3]) : argc > 2 ? atoi(argv[2]) : 0;
   int rc;

   setvbuf(stdout, NULL, _IOLBF, 0);
   if (argc >= 3 && strcmp(argv[1], "scatter") == 0 && n > 0) {
      uint8_t plain[512], seq[512];
      size_t lp = find_reply(plain, sizeof plain, false);
      size_t ls = find_reply(seq, sizeof seq, true);
      void *self = dlopen(NULL, RTLD_NOW);
      double (*time_one)(const uint8_t *, size_t, int) = time_scatter;

      if (!self) {
         return 1;
      }
      FN(rpc_scatter, "_mongoc_rpc_scatter");
      FN(mcd.parse, "mcd_rpc_message_from_data_in_place");
      FN(mcd.get_body, "mcd_rpc_message_get_body");
      FN(mcd.message_new, "mcd_rpc_message_new");
      FN(mcd.reset, "mcd_rpc_message_reset");
      FN(mcd.destroy, "mcd_rpc_message_destroy");
      mongoc_init();
      if (mongoc_get_major_version() == 1 && mongoc_get_minor_version() < 24 && rpc_scatter) {
         time_one = time_scatter;
      } else if (mcd.parse && mcd.get_body && mcd.message_new && mcd.reset && mcd.destroy) {
         time_one = time_mcd;
      } else {
         fprintf(stderr, "scatter: libmongoc %s has neither path\n", mongoc_get_version());
         return 77;
      }
      time_one(plain, lp, n / 10 + 1); /* warm up */
      printf("%.1f %.1f\n", time_one(plain, lp, n), time_one(seq, ls, n));
      mongoc_cleanup();
      return 0;
   }
   if (argc < 4 || n <= 0 || (strcmp(argv[2], "ping") && strcmp(argv[2], "find") && strcmp(argv[2], "find1000"))) {
      fprintf(stderr, "usage: %s URI ping|find|find1000 N | %s scatter N\n", argv[0], argv[0]);
      return 64;
   }
   mongoc_init();
   /* Quiet: FerretDB's missing endSessions would warn at every exit. */
   mongoc_log_set_handler(NULL, NULL);
   rc = round_trips(argv[1], strcmp(argv[2], "find") == 0 ? 2 : strcmp(argv[2], "find1000") == 0 ? FIND_BIG : 0, n);
   mongoc_cleanup();
   return rc;
}
