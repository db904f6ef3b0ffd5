/* ferretdb-client: a server's replies in batches, through libmongoc
 * (debian/tests/ferretdb, against FerretDB).
 *
 *   ferretdb-client URI
 *
 * insert_many of N_DOCS documents (one insert command: a document sequence),
 * a find of them all sorted by _id with batchSize BATCH (the server replies
 * with a first batch and getMore batches), an aggregate summing a field and
 * a delete_many. Checks every document read back, in order, the number of
 * batches (command monitoring: no batch above BATCH documents, at least
 * N_DOCS / BATCH of them), the sum, the deleted count and the count after
 * it. Prints one RESULT line; exit status 0 when every check held, 1
 * otherwise, 2 usage.
 */
#include <mongoc/mongoc.h>

#include <stdio.h>
#include <string.h>

#define N_DOCS 1000
#define BATCH 64
#define COLL "items"

static int failures;

static void
fail(const char *what, const bson_error_t *error)
{
   printf("FAIL %s%s%s\n", what, error ? ": " : "", error ? error->message : "");
   failures++;
}

typedef struct {
   int batches;   /* find and getMore replies */
   int max_batch; /* documents in the largest batch */
} batches_t;

static void
on_succeeded(const mongoc_apm_command_succeeded_t *event)
{
   batches_t *b = mongoc_apm_command_succeeded_get_context(event);
   const char *name = mongoc_apm_command_succeeded_get_command_name(event);
   bson_iter_t it, batch;
   int n = 0;

   if (strcmp(name, "find") != 0 && strcmp(name, "getMore") != 0) {
      return;
   }
   b->batches++;
   if (bson_iter_init(&it, mongoc_apm_command_succeeded_get_reply(event)) &&
       (bson_iter_find_descendant(&it, "cursor.firstBatch", &batch) ||
        (bson_iter_init(&it, mongoc_apm_command_succeeded_get_reply(event)) &&
         bson_iter_find_descendant(&it, "cursor.nextBatch", &batch))) &&
       BSON_ITER_HOLDS_ARRAY(&batch) && bson_iter_recurse(&batch, &it)) {
      while (bson_iter_next(&it)) {
         n++;
      }
   }
   if (n > b->max_batch) {
      b->max_batch = n;
   }
}

static void
text(int i, char *buf, size_t len)
{
   snprintf(buf, len, "item-%04d-%0120d", i, i);
}

int
main(int argc, char **argv)
{
   mongoc_client_t *client;
   mongoc_collection_t *coll;
   mongoc_cursor_t *cursor;
   mongoc_apm_callbacks_t *cbs;
   batches_t b = {0, 0};
   bson_t *docs[N_DOCS], reply, *opts, *pipeline;
   const bson_t *doc;
   bson_error_t error;
   bson_iter_t it;
   char s[160], want[160];
   int i, found = 0, in_order = 1;
   int64_t sum = -1, deleted = -1, left = -1;

   if (argc != 2) {
      fprintf(stderr, "usage: ferretdb-client URI\n");
      return 2;
   }
   mongoc_init();
   fprintf(stderr, "ferretdb-client: libmongoc %s\n", mongoc_get_version());
   client = mongoc_client_new(argv[1]);
   if (!client) {
      fprintf(stderr, "ferretdb-client: bad URI %s\n", argv[1]);
      return 2;
   }
   cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_succeeded_cb(cbs, on_succeeded);
   mongoc_client_set_apm_callbacks(client, cbs, &b);
   mongoc_apm_callbacks_destroy(cbs);
   coll = mongoc_client_get_collection(client, "opmsg_autopkgtest", COLL);
   mongoc_collection_drop(coll, NULL); /* (fails when there is none) */

   for (i = 0; i < N_DOCS; i++) {
      text(i, s, sizeof s);
      docs[i] = BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT64((int64_t) i * 3), "s", BCON_UTF8(s));
   }
   if (!mongoc_collection_insert_many(coll, (const bson_t **) docs, N_DOCS, NULL, &reply, &error)) {
      fail("insert_many", &error);
   } else if (!bson_iter_init_find(&it, &reply, "insertedCount") || bson_iter_as_int64(&it) != N_DOCS) {
      printf("FAIL insert_many: insertedCount is not %d\n", N_DOCS);
      failures++;
   }
   bson_destroy(&reply);
   for (i = 0; i < N_DOCS; i++) {
      bson_destroy(docs[i]);
   }

   opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(BATCH));
   cursor = mongoc_collection_find_with_opts(coll, &(bson_t) BSON_INITIALIZER, opts, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      text(found, want, sizeof want);
      if (!(bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_INT32(&it) && bson_iter_int32(&it) == found &&
            bson_iter_init_find(&it, doc, "n") && bson_iter_as_int64(&it) == (int64_t) found * 3 &&
            bson_iter_init_find(&it, doc, "s") && BSON_ITER_HOLDS_UTF8(&it) &&
            strcmp(bson_iter_utf8(&it, NULL), want) == 0)) {
         if (in_order) {
            char *json = bson_as_canonical_extended_json(doc, NULL);
            printf("FAIL document %d read back as %.200s\n", found, json);
            bson_free(json);
            failures++;
         }
         in_order = 0;
      }
      found++;
   }
   if (mongoc_cursor_error(cursor, &error)) {
      fail("find", &error);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   if (found != N_DOCS) {
      printf("FAIL find: %d documents, not %d\n", found, N_DOCS);
      failures++;
   }
   if (b.max_batch > BATCH || b.batches < N_DOCS / BATCH) {
      printf("FAIL find: %d batches, the largest of %d documents (batchSize %d)\n", b.batches, b.max_batch, BATCH);
      failures++;
   }

   pipeline = BCON_NEW("pipeline", "[", "{", "$group", "{", "_id", BCON_NULL, "sum", "{", "$sum", BCON_UTF8("$n"), "}",
                       "}", "}", "]");
   cursor = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
   if (mongoc_cursor_next(cursor, &doc) && bson_iter_init_find(&it, doc, "sum")) {
      sum = bson_iter_as_int64(&it);
   }
   if (mongoc_cursor_error(cursor, &error)) {
      fail("aggregate", &error);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(pipeline);
   if (sum != (int64_t) 3 * N_DOCS * (N_DOCS - 1) / 2) {
      printf("FAIL aggregate: sum %lld\n", (long long) sum);
      failures++;
   }

   if (!mongoc_collection_delete_many(coll, &(bson_t) BSON_INITIALIZER, NULL, &reply, &error)) {
      fail("delete_many", &error);
   } else if (bson_iter_init_find(&it, &reply, "deletedCount")) {
      deleted = bson_iter_as_int64(&it);
   }
   bson_destroy(&reply);
   left = mongoc_collection_count_documents(coll, &(bson_t) BSON_INITIALIZER, NULL, NULL, NULL, &error);
   if (left < 0) {
      fail("count_documents", &error);
   }
   if (deleted != N_DOCS || left != 0) {
      printf("FAIL delete_many: deleted %lld, %lld left\n", (long long) deleted, (long long) left);
      failures++;
   }

   printf("RESULT documents %d, batches %d (largest %d), sum %lld, deleted %lld, left %lld: %s\n", found, b.batches,
          b.max_batch, (long long) sum, (long long) deleted, (long long) left, failures ? "FAIL" : "ok");
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   mongoc_cleanup();
   return failures ? 1 : 0;
}
