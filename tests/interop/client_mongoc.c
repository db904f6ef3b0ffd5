/*
 * client_mongoc.c - the interop workload with libmongoc 1.23 (see README.md).
 * Usage: interop-client-mongoc URI COLLECTION
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
/* struct addrinfo in mongoc-socket.h needs POSIX declarations under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <mongoc/mongoc.h>

#include <stdio.h>
#include <stdlib.h>

#define N_DOCS 300

static void
fail(const char *what, const bson_error_t *error)
{
   fprintf(stderr, "mongoc client: %s: %s\n", what, error ? error->message : "");
   exit(1);
}

static int64_t
get_int(const bson_t *doc, const char *key)
{
   bson_iter_t it;

   if (!bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_NUMBER(&it)) {
      fail(key, NULL);
   }
   return bson_iter_as_int64(&it);
}

static bson_t *
make_doc(int i)
{
   char s[16], tag[8];

   bson_snprintf(s, sizeof s, "item-%03d", i);
   bson_snprintf(tag, sizeof tag, "t%d", i % 3);
   return BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT32(i), "s", BCON_UTF8(s), "even", BCON_BOOL(i % 2 == 0), "sub",
                   "{", "k", BCON_INT32(i % 7), "tags", "[", BCON_UTF8(tag), BCON_UTF8("x"), "]", "}");
}

static void
insert_all(mongoc_collection_t *coll)
{
   bson_t *docs[N_DOCS];
   bson_t reply;
   bson_error_t error;

   for (int i = 0; i < N_DOCS; i++) {
      docs[i] = make_doc(i);
   }
   if (!mongoc_collection_insert_many(coll, (const bson_t **) docs, N_DOCS, NULL, &reply, &error)) {
      fail("insert_many", &error);
   }
   if (get_int(&reply, "insertedCount") != N_DOCS) {
      fail("insert_many count", NULL);
   }
   bson_destroy(&reply);
   for (int i = 0; i < N_DOCS; i++) {
      bson_destroy(docs[i]);
   }
}

static void
bulk_updates(mongoc_collection_t *coll)
{
   mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, NULL);
   bson_t reply, *q, *u;
   bson_error_t error;

   for (int i = 0; i < 10; i++) {
      q = BCON_NEW("_id", BCON_INT32(i));
      u = BCON_NEW("$set", "{", "upd", BCON_INT32(1), "}");
      mongoc_bulk_operation_update_one(bulk, q, u, false);
      bson_destroy(q);
      bson_destroy(u);
   }
   q = BCON_NEW("n", "{", "$gte", BCON_INT32(290), "}");
   u = BCON_NEW("$inc", "{", "n", BCON_INT32(1000), "}");
   mongoc_bulk_operation_update_many_with_opts(bulk, q, u, NULL, &error);
   bson_destroy(q);
   bson_destroy(u);
   if (!mongoc_bulk_operation_execute(bulk, &reply, &error)) {
      fail("bulk update", &error);
   }
   if (get_int(&reply, "nMatched") != 20 || get_int(&reply, "nModified") != 20) {
      fail("bulk update counts", NULL);
   }
   bson_destroy(&reply);
   mongoc_bulk_operation_destroy(bulk);
}

static void
bulk_deletes(mongoc_collection_t *coll)
{
   mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, NULL);
   bson_t reply, *q;
   bson_error_t error;

   for (int i = 280; i < 290; i++) {
      q = BCON_NEW("_id", BCON_INT32(i));
      mongoc_bulk_operation_remove_one(bulk, q);
      bson_destroy(q);
   }
   q = BCON_NEW("even", BCON_BOOL(false), "n", "{", "$lt", BCON_INT32(20), "}");
   mongoc_bulk_operation_remove_many_with_opts(bulk, q, NULL, &error);
   bson_destroy(q);
   if (!mongoc_bulk_operation_execute(bulk, &reply, &error)) {
      fail("bulk delete", &error);
   }
   if (get_int(&reply, "nRemoved") != 20) {
      fail("bulk delete count", NULL);
   }
   bson_destroy(&reply);
   mongoc_bulk_operation_destroy(bulk);
}

static void
find_all(mongoc_collection_t *coll)
{
   bson_t filter = BSON_INITIALIZER;
   bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(50));
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
   const bson_t *doc;
   bson_error_t error;
   int count = 0;

   while (mongoc_cursor_next(cur, &doc)) {
      int64_t id = get_int(doc, "_id"), n = get_int(doc, "n");
      bson_iter_t it;
      bool upd = bson_iter_init_find(&it, doc, "upd");

      if (n != (id >= 290 ? id + 1000 : id) || upd != (id < 10) || (id >= 280 && id < 290) ||
          (id % 2 == 1 && id < 20)) {
         fail("find: unexpected document", NULL);
      }
      count++;
   }
   if (mongoc_cursor_error(cur, &error)) {
      fail("find", &error);
   }
   if (count != 280) {
      fail("find count", NULL);
   }
   mongoc_cursor_destroy(cur);
   bson_destroy(opts);
}

static void
aggregate(mongoc_collection_t *coll)
{
   /* One accumulator: FerretDB 1.24.2 computes only the first of several. */
   bson_t *pipeline = BCON_NEW("pipeline", "[", "{", "$match", "{", "n", "{", "$lt", BCON_INT32(100), "}", "}", "}",
                               "{", "$group", "{", "_id", BCON_UTF8("$even"), "total", "{", "$sum", BCON_UTF8("$n"),
                               "}", "}", "}", "{", "$sort", "{", "_id", BCON_INT32(1), "}", "}", "]");
   mongoc_cursor_t *cur = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
   const bson_t *doc;
   bson_error_t error;
   int64_t want[2] = {2400, 2450};
   int i = 0;

   while (mongoc_cursor_next(cur, &doc)) {
      bson_iter_t it;

      if (i >= 2 || !bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_BOOL(&it) ||
          bson_iter_bool(&it) != (i == 1) || get_int(doc, "total") != want[i]) {
         fail("aggregate: unexpected result", NULL);
      }
      i++;
   }
   if (mongoc_cursor_error(cur, &error)) {
      fail("aggregate", &error);
   }
   if (i != 2) {
      fail("aggregate count", NULL);
   }
   mongoc_cursor_destroy(cur);
   bson_destroy(pipeline);
}

int
main(int argc, char **argv)
{
   mongoc_client_t *client;
   mongoc_collection_t *coll;
   bson_error_t error;
   mongoc_uri_t *uri;

   if (argc != 3) {
      fprintf(stderr, "usage: %s URI COLLECTION\n", argv[0]);
      return 2;
   }
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      fail("uri", &error);
   }
   client = mongoc_client_new_from_uri(uri);
   coll = mongoc_client_get_collection(client, "interop", argv[2]);
   (void) mongoc_collection_drop(coll, NULL);

   insert_all(coll);
   bulk_updates(coll);
   bulk_deletes(coll);
   find_all(coll);
   aggregate(coll);
   printf("mongoc client: OK inserted=300 updated=20 deleted=20 found=280 "
          "odd=2400 even=2450\n");

   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return 0;
}
