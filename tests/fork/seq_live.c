/*
 * seq_live.c - cursor reads through the fork's libmongoc against a live
 * server (scripts/check-sequences.sh, docs/fork.md "Live document sequences").
 *
 * Usage: seq-live URI            the workload: prints one line per read and
 *                                a last line "documents D fnv1a64 H"
 *        seq-live URI --bench N  N documents read by one find, timed
 *
 * The workload fills seqlive.small (10,101 small documents) and seqlive.big
 * (16 documents of together 16 MiB - 1 KiB - 16 bytes), then reads them with
 * find and aggregate in batches of 1, 101 and 10,000 documents (a cursor
 * iterated through getMore) and in one batch of the big documents. Every
 * read checks that the documents come in _id order with the right count;
 * each read's line and the last line carry an FNV-1a 64 hash of the
 * canonical Extended JSON of every document in order, so that two servers'
 * outputs can be compared byte for byte. Exit status 0, or 1 with a
 * "seq-live: ..." line on stderr.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
/* struct addrinfo in mongoc-socket.h needs POSIX declarations under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <mongoc/mongoc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define SEQ_LIVE_SMALL 10101
#define SEQ_LIVE_BIG 16
/* The documents of the big batch: 16 MiB - 1 KiB, minus 16 bytes. */
#define SEQ_LIVE_BIG_TOTAL (16 * 1024 * 1024 - 1024 - 16)

typedef struct {
   uint64_t hash;
   int64_t count;
} seq_live_sum_t;

static void
seq_live_fail(const char *what, const bson_error_t *error)
{
   fprintf(stderr, "seq-live: %s%s%s\n", what, error ? ": " : "", error ? error->message : "");
   exit(1);
}

static void
seq_live_hash(seq_live_sum_t *sum, const char *data, size_t len)
{
   for (size_t i = 0; i < len; i++) {
      sum->hash ^= (uint8_t) data[i];
      sum->hash *= 0x100000001b3ULL;
   }
}

static bson_t *
seq_live_small_doc(int i)
{
   char s[24];

   bson_snprintf(s, sizeof s, "item-%06d", i);
   return BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT64((int64_t) i * 1000003), "s", BCON_UTF8(s), "d",
                   BCON_DOUBLE(i / 8.0), "even", BCON_BOOL(i % 2 == 0), "sub", "{", "k", BCON_INT32(i % 7), "tags", "[",
                   BCON_UTF8("x"), BCON_INT32(i % 3), "]", "}");
}

/* A document of exactly size bytes: {_id: i, pad: "zzz..."}. */
static bson_t *
seq_live_big_doc(int i, size_t size)
{
   /* 4 (length) + 1 (type) + "_id\0" + 4 (int32) + 1 (type) + "pad\0"
    * + 4 (string length) + the string's NUL + 1 (document's NUL). */
   const size_t overhead = 4 + 1 + 4 + 4 + 1 + 4 + 4 + 1 + 1;
   size_t n = size - overhead;
   char *pad = bson_malloc(n + 1);
   bson_t *doc = bson_new();

   memset(pad, 'a' + i % 26, n);
   pad[n] = '\0';
   BSON_APPEND_INT32(doc, "_id", i);
   BSON_APPEND_UTF8(doc, "pad", pad);
   bson_free(pad);
   if (doc->len != size) {
      seq_live_fail("a big document has the wrong size", NULL);
   }
   return doc;
}

static void
seq_live_fill(mongoc_collection_t *coll, int n, size_t big_size)
{
   bson_error_t error;
   const int chunk = 1000;

   /* A missing collection's drop fails ("ns not found"): nothing to drop. */
   (void) mongoc_collection_drop(coll, &error);
   for (int from = 0; from < n; from += chunk) {
      int k = n - from < chunk ? n - from : chunk;
      bson_t **docs = bson_malloc(sizeof *docs * (size_t) k);

      for (int j = 0; j < k; j++) {
         docs[j] = big_size ? seq_live_big_doc(from + j, big_size) : seq_live_small_doc(from + j);
      }
      if (!mongoc_collection_insert_many(coll, (const bson_t **) docs, (size_t) k, NULL, NULL, &error)) {
         seq_live_fail("insert_many", &error);
      }
      for (int j = 0; j < k; j++) {
         bson_destroy(docs[j]);
      }
      bson_free(docs);
   }
}

/* Reads a cursor to its end: documents with _id 0, 1, ... want - 1, in order;
 * hashes their canonical Extended JSON unless total is NULL. */
static void
seq_live_drain(const char *name, mongoc_cursor_t *cursor, int64_t want, seq_live_sum_t *total)
{
   const bson_t *doc;
   bson_error_t error;
   seq_live_sum_t sum = {0xcbf29ce484222325ULL, 0};
   bson_iter_t it;

   while (mongoc_cursor_next(cursor, &doc)) {
      size_t len;
      char *json;

      if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_INT32(&it) || bson_iter_int32(&it) != sum.count) {
         fprintf(stderr, "seq-live: %s: document %" PRId64 " is out of order\n", name, sum.count);
         exit(1);
      }
      sum.count++;
      if (!total) {
         continue;
      }
      json = bson_as_canonical_extended_json(doc, &len);
      if (!json) {
         seq_live_fail("a document has no Extended JSON", NULL);
      }
      seq_live_hash(&sum, json, len);
      seq_live_hash(total, json, len);
      bson_free(json);
   }
   if (mongoc_cursor_error(cursor, &error)) {
      fprintf(stderr, "seq-live: %s: %s\n", name, error.message);
      exit(1);
   }
   mongoc_cursor_destroy(cursor);
   if (sum.count != want) {
      fprintf(stderr, "seq-live: %s: %" PRId64 " documents, not %" PRId64 "\n", name, sum.count, want);
      exit(1);
   }
   if (total) {
      total->count += sum.count;
      printf("%s: documents %" PRId64 ", fnv1a64 %016" PRIx64 "\n", name, sum.count, sum.hash);
   }
}

static void
seq_live_find(mongoc_collection_t *coll, const char *name, int32_t below, int32_t batch, int64_t want,
              seq_live_sum_t *total)
{
   bson_t *filter = BCON_NEW("_id", "{", "$lt", BCON_INT32(below), "}");
   bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(batch));

   seq_live_drain(name, mongoc_collection_find_with_opts(coll, filter, opts, NULL), want, total);
   bson_destroy(filter);
   bson_destroy(opts);
}

static void
seq_live_aggregate(mongoc_collection_t *coll, const char *name, int32_t below, int32_t batch, int64_t want,
                   seq_live_sum_t *total)
{
   bson_t *pipeline = BCON_NEW("pipeline", "[", "{", "$match", "{", "_id", "{", "$lt", BCON_INT32(below), "}", "}", "}",
                               "{", "$sort", "{", "_id", BCON_INT32(1), "}", "}", "]");
   bson_t *opts = BCON_NEW("batchSize", BCON_INT32(batch));

   seq_live_drain(name, mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, opts, NULL), want, total);
   bson_destroy(pipeline);
   bson_destroy(opts);
}

static double
seq_live_cpu_us(void)
{
   struct rusage ru;

   getrusage(RUSAGE_SELF, &ru);
   return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static double
seq_live_wall_ms(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_MONOTONIC, &ts);
   return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One find of all n documents with the driver's default batch size, timed:
 * the client's CPU time (getrusage, user + system) and the wall time of
 * reading them, the documents' _id checked, nothing else done with them. */
static void
seq_live_bench(mongoc_client_t *client, int n)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "seqlive", "bench");
   bson_t *filter = bson_new();
   bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
   bson_error_t error;
   int64_t have = mongoc_collection_count_documents(coll, filter, NULL, NULL, NULL, &error);
   double cpu, wall;

   if (have != n) {
      seq_live_fill(coll, n, 0);
   }
   cpu = seq_live_cpu_us();
   wall = seq_live_wall_ms();
   seq_live_drain("bench find", mongoc_collection_find_with_opts(coll, filter, opts, NULL), n, NULL);
   cpu = seq_live_cpu_us() - cpu;
   wall = seq_live_wall_ms() - wall;
   printf("bench: documents %d, wall %.0f ms, client cpu %.2f us/document\n", n, wall, cpu / n);
   bson_destroy(filter);
   bson_destroy(opts);
   mongoc_collection_destroy(coll);
}

int
main(int argc, char **argv)
{
   mongoc_client_t *client;
   mongoc_collection_t *small, *big;
   seq_live_sum_t total = {0xcbf29ce484222325ULL, 0};

   if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--bench") == 0)) {
      fprintf(stderr, "usage: %s URI [--bench N]\n", argv[0]);
      return 2;
   }
   mongoc_init();
   client = mongoc_client_new(argv[1]);
   if (!client) {
      seq_live_fail("bad URI", NULL);
   }
   if (argc == 4) {
      seq_live_bench(client, atoi(argv[3]));
      mongoc_client_destroy(client);
      mongoc_cleanup();
      return 0;
   }
   small = mongoc_client_get_collection(client, "seqlive", "small");
   big = mongoc_client_get_collection(client, "seqlive", "big");
   seq_live_fill(small, SEQ_LIVE_SMALL, 0);
   seq_live_fill(big, SEQ_LIVE_BIG, SEQ_LIVE_BIG_TOTAL / SEQ_LIVE_BIG);

   seq_live_find(small, "find batch 1", 3, 1, 3, &total);
   seq_live_find(small, "find batch 101", 303, 101, 303, &total);
   seq_live_find(small, "find batch 10000", SEQ_LIVE_SMALL, 10000, SEQ_LIVE_SMALL, &total);
   seq_live_find(big, "find big batch", SEQ_LIVE_BIG, SEQ_LIVE_BIG, SEQ_LIVE_BIG, &total);
   seq_live_aggregate(small, "aggregate batch 1", 3, 1, 3, &total);
   seq_live_aggregate(small, "aggregate batch 101", 303, 101, 303, &total);
   seq_live_aggregate(small, "aggregate batch 10000", SEQ_LIVE_SMALL, 10000, SEQ_LIVE_SMALL, &total);
   seq_live_aggregate(big, "aggregate big batch", SEQ_LIVE_BIG, SEQ_LIVE_BIG, SEQ_LIVE_BIG, &total);
   printf("documents %" PRId64 " fnv1a64 %016" PRIx64 "\n", total.count, total.hash);

   mongoc_collection_destroy(small);
   mongoc_collection_destroy(big);
   mongoc_client_destroy(client);
   mongoc_cleanup();
   return 0;
}
