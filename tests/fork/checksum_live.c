/*
 * checksum_live.c - OP_MSG checksums through the fork's libmongoc against a
 * live server (scripts/check-checksum.sh, docs/fork.md "Live: checksums").
 *
 * Usage: checksum-live URI          the workload, with opMsgChecksum=true added
 *                                   to URI: prints "workload ok" when every
 *                                   command succeeded
 *        checksum-live URI --cost   what the checksum costs the client: the
 *                                   thread CPU time of inserts of 100 small
 *                                   documents (one OP_MSG of about 11 KB
 *                                   each), in alternating blocks with the
 *                                   option on and off; prints "cost NS BYTES"
 *                                   (ns per message with the option on minus
 *                                   off, the request's size in bytes)
 *
 * The workload: ping, a collection dropped, 1,000 documents inserted (in
 * batches of 100), read back with find in batches of 100 (a cursor iterated
 * through getMore), updated, counted and deleted, each result checked. Exit
 * status 0, or 1 with a "checksum-live: ..." line on stderr.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
/* struct addrinfo in mongoc-socket.h needs POSIX declarations under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <mongoc/mongoc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECKSUM_LIVE_DOCS 1000
#define CHECKSUM_LIVE_BATCH 100

static void
checksum_live_fail(const char *what, const bson_error_t *error)
{
   fprintf(stderr, "checksum-live: %s%s%s\n", what, error ? ": " : "", error ? error->message : "");
   exit(1);
}

static bson_t *
checksum_live_doc(int i)
{
   char s[24];

   bson_snprintf(s, sizeof s, "item-%06d", i);
   return BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT64((int64_t) i * 1000003), "s", BCON_UTF8(s), "d",
                   BCON_DOUBLE(i / 8.0), "sub", "{", "k", BCON_INT32(i % 7), "tags", "[", BCON_UTF8("x"),
                   BCON_INT32(i % 3), "]", "}", "pad", BCON_UTF8("0123456789abcdef0123456789abcdef0123456789"));
}

static mongoc_client_t *
checksum_live_client(const char *uri_string, bool checksum)
{
   bson_error_t error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_string, &error);

   if (!uri) {
      checksum_live_fail("the URI", &error);
   }
   if (!mongoc_uri_set_option_as_bool(uri, "opMsgChecksum", checksum)) {
      checksum_live_fail("this libmongoc has no opMsgChecksum option", NULL);
   }
   mongoc_client_t *client = mongoc_client_new_from_uri_with_error(uri, &error);
   if (!client) {
      checksum_live_fail("the client", &error);
   }
   mongoc_client_set_appname(client, "checksum-live");
   mongoc_uri_destroy(uri);
   return client;
}

/* Inserts documents first .. first + CHECKSUM_LIVE_BATCH - 1: one command. */
static void
checksum_live_insert(mongoc_collection_t *coll, int first)
{
   bson_t *docs[CHECKSUM_LIVE_BATCH];
   bson_error_t error;

   for (int i = 0; i < CHECKSUM_LIVE_BATCH; i++) {
      docs[i] = checksum_live_doc(first + i);
   }
   if (!mongoc_collection_insert_many(coll, (const bson_t **) docs, CHECKSUM_LIVE_BATCH, NULL, NULL, &error)) {
      checksum_live_fail("insert_many", &error);
   }
   for (int i = 0; i < CHECKSUM_LIVE_BATCH; i++) {
      bson_destroy(docs[i]);
   }
}

static int
checksum_live_workload(const char *uri_string)
{
   mongoc_client_t *client = checksum_live_client(uri_string, true);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "checksumlive", "c");
   bson_error_t error;
   bson_t reply;

   {
      bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
      if (!mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &error)) {
         checksum_live_fail("ping", &error);
      }
      bson_destroy(&reply);
      bson_destroy(ping);
   }

   (void) mongoc_collection_drop(coll, NULL); /* absent the first time */

   for (int first = 0; first < CHECKSUM_LIVE_DOCS; first += CHECKSUM_LIVE_BATCH) {
      checksum_live_insert(coll, first);
   }

   {
      bson_t *filter = bson_new();
      bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(CHECKSUM_LIVE_BATCH));
      mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
      const bson_t *doc;
      int n = 0;

      while (mongoc_cursor_next(cursor, &doc)) {
         bson_iter_t it;
         if (!bson_iter_init_find(&it, doc, "_id") || bson_iter_int32(&it) != n) {
            checksum_live_fail("find: documents out of order", NULL);
         }
         n++;
      }
      if (mongoc_cursor_error(cursor, &error)) {
         checksum_live_fail("find", &error);
      }
      if (n != CHECKSUM_LIVE_DOCS) {
         checksum_live_fail("find: not every document came back", NULL);
      }
      mongoc_cursor_destroy(cursor);
      bson_destroy(opts);
      bson_destroy(filter);
   }

   {
      bson_t *filter = BCON_NEW("sub.k", BCON_INT32(0));
      bson_t *update = BCON_NEW("$set", "{", "seen", BCON_BOOL(true), "}");
      if (!mongoc_collection_update_many(coll, filter, update, NULL, &reply, &error)) {
         checksum_live_fail("update_many", &error);
      }
      bson_destroy(&reply);
      bson_destroy(update);
      bson_destroy(filter);
   }

   {
      bson_t *filter = BCON_NEW("seen", BCON_BOOL(true));
      const int64_t n = mongoc_collection_count_documents(coll, filter, NULL, NULL, NULL, &error);
      if (n != (CHECKSUM_LIVE_DOCS + 6) / 7) {
         checksum_live_fail("count_documents: not the updated documents", n < 0 ? &error : NULL);
      }
      bson_destroy(filter);
   }

   {
      bson_t *filter = bson_new();
      if (!mongoc_collection_delete_many(coll, filter, NULL, &reply, &error)) {
         checksum_live_fail("delete_many", &error);
      }
      bson_destroy(&reply);
      bson_destroy(filter);
   }

   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   printf("workload ok\n");
   return 0;
}

static int64_t
checksum_live_thread_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
   return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The client's CPU time per insert, with and without the option, in blocks
 * that alternate so that both see the same server and machine. */
static int
checksum_live_cost(const char *uri_string)
{
   enum { BLOCKS = 10, PER_BLOCK = 40 };
   mongoc_client_t *clients[2] = {checksum_live_client(uri_string, false), checksum_live_client(uri_string, true)};
   mongoc_collection_t *colls[2];
   int64_t ns[2] = {0, 0};
   int64_t bytes = 0;

   for (int c = 0; c < 2; c++) {
      colls[c] = mongoc_client_get_collection(clients[c], "checksumlive", c ? "cost_on" : "cost_off");
      (void) mongoc_collection_drop(colls[c], NULL);
      checksum_live_insert(colls[c], -CHECKSUM_LIVE_BATCH); /* warm up: connect, create */
   }
   {
      bson_t *doc = checksum_live_doc(0);
      /* The OP_MSG: header, flags, the body {insert, ordered, $db, lsid},
       * and the document sequence "documents" (about 110 bytes of it). */
      bytes = (int64_t) doc->len * CHECKSUM_LIVE_BATCH + 110;
      bson_destroy(doc);
   }

   int next[2] = {0, 0};
   for (int b = 0; b < BLOCKS; b++) {
      for (int c = 0; c < 2; c++) {
         const int on = (b % 2) ? 1 - c : c;
         const int64_t start = checksum_live_thread_ns();
         for (int i = 0; i < PER_BLOCK; i++) {
            checksum_live_insert(colls[on], next[on]);
            next[on] += CHECKSUM_LIVE_BATCH;
         }
         ns[on] += checksum_live_thread_ns() - start;
      }
   }

   for (int c = 0; c < 2; c++) {
      (void) mongoc_collection_drop(colls[c], NULL);
      mongoc_collection_destroy(colls[c]);
      mongoc_client_destroy(clients[c]);
   }
   printf("cost %lld %lld\n", (long long) ((ns[1] - ns[0]) / (BLOCKS * PER_BLOCK)), (long long) bytes);
   return 0;
}

int
main(int argc, char **argv)
{
   int rc;

   if (argc == 2) {
      mongoc_init();
      rc = checksum_live_workload(argv[1]);
   } else if (argc == 3 && strcmp(argv[2], "--cost") == 0) {
      mongoc_init();
      rc = checksum_live_cost(argv[1]);
   } else {
      fprintf(stderr, "usage: checksum-live URI [--cost]\n");
      return 2;
   }
   mongoc_cleanup();
   return rc;
}
