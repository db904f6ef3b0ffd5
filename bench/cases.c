/*
 * cases.c - the messages opmsg-bench measures.
 *
 * flat, deep and seq are the seed vectors (the messages of the original
 * performance report); big is an insert of 100,000 generated documents,
 * built in memory from a fixed seed so every run measures the same bytes.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the seed messages are looked for when --data is not given: the
 * source tree this binary was built from, then the installed data. */
#ifndef OPMSG_BENCH_SOURCE_DATA
#define OPMSG_BENCH_SOURCE_DATA ""
#endif
#ifndef OPMSG_BENCH_INSTALLED_DATA
#define OPMSG_BENCH_INSTALLED_DATA ""
#endif

static char data_dir_used[4096];

const char *
bench_data_dir_used(void)
{
   return data_dir_used[0] ? data_dir_used : "(none)";
}

/* Reads a whole file with malloc; NULL when it cannot be opened. */
static uint8_t *
read_file(const char *path, size_t *len)
{
   FILE *f = fopen(path, "rb");
   if (!f) {
      return NULL;
   }
   uint8_t *buf = NULL;
   size_t cap = 0;
   size_t n = 0;
   for (;;) {
      if (n == cap) {
         cap = cap ? cap * 2 : 65536;
         uint8_t *grown = realloc(buf, cap);
         if (!grown) {
            bench_fatal("out of memory reading %s", path);
         }
         buf = grown;
      }
      size_t got = fread(buf + n, 1, cap - n, f);
      n += got;
      if (got == 0) {
         break;
      }
   }
   bool failed = ferror(f) != 0;
   fclose(f);
   if (failed) {
      bench_fatal("cannot read %s", path);
   }
   *len = n;
   return buf;
}

/* Tries dir/seed/<file> then dir/<file>. */
static uint8_t *
read_from_dir(const char *dir, const char *file, size_t *len, char *found, size_t found_size)
{
   static const char *const subdirs[] = {"/seed/", "/"};
   for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
      char path[4096];
      int n = snprintf(path, sizeof path, "%s%s%s", dir, subdirs[i], file);
      if (n < 0 || (size_t) n >= sizeof path) {
         continue;
      }
      uint8_t *data = read_file(path, len);
      if (data) {
         snprintf(found, found_size, "%s%s", dir, i == 0 ? "/seed" : "");
         return data;
      }
   }
   return NULL;
}

bool
bench_case_load_seed(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   const char *name = def->arg ? def->arg : def->name;
   const char *dirs[3];
   size_t n_dirs = 0;
   if (data_dir) {
      dirs[n_dirs++] = data_dir; /* an explicit --data is the only place */
   } else {
      if (OPMSG_BENCH_SOURCE_DATA[0]) {
         dirs[n_dirs++] = OPMSG_BENCH_SOURCE_DATA;
      }
      if (OPMSG_BENCH_INSTALLED_DATA[0]) {
         dirs[n_dirs++] = OPMSG_BENCH_INSTALLED_DATA;
      }
   }

   char file[64];
   snprintf(file, sizeof file, "%s.bin", name);
   char found[4096] = "";
   for (size_t i = 0; i < n_dirs && !c->msg; i++) {
      c->msg = read_from_dir(dirs[i], file, &c->msg_len, found, sizeof found);
   }
   if (!c->msg) {
      fprintf(stderr, "opmsg-bench: %s not found (tried", file);
      for (size_t i = 0; i < n_dirs; i++) {
         fprintf(stderr, " %s", dirs[i]);
      }
      fprintf(stderr, "); use --data DIR\n");
      return false;
   }
   snprintf(data_dir_used, sizeof data_dir_used, "%s", found);
   c->name = name;
   c->kind = BENCH_KIND_MSG;
   bench_case_finish(c);

   /* When the expected merge ships next to the message (the source tree
    * does), the reference must be it: a wrong reference would make every
    * comparison meaningless. */
   char merged_path[4200];
   snprintf(merged_path, sizeof merged_path, "%s/%s.merged.bson", found, name);
   size_t expected_len;
   uint8_t *expected = read_file(merged_path, &expected_len);
   if (expected) {
      if (expected_len != c->merged_len || memcmp(expected, c->merged, expected_len) != 0) {
         bench_fatal("opmsg's merge of %s differs from %s", file, merged_path);
      }
      free(expected);
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * The generated insert
 * ------------------------------------------------------------------------- */

#define BIG_DOCS 100000u
#define BIG_SEED 0x6f706d7367u /* "opmsg" */

/* splitmix64: small, fast, and the same sequence everywhere. */
static uint64_t
next_random(uint64_t *state)
{
   uint64_t z = (*state += 0x9E3779B97F4A7C15u);
   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
   z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
   return z ^ (z >> 31);
}

static void
random_word(uint64_t *state, char *out, size_t min, size_t max)
{
   size_t len = min + (size_t) (next_random(state) % (max - min + 1));
   for (size_t i = 0; i < len; i++) {
      out[i] = (char) ('a' + next_random(state) % 26);
   }
   out[len] = '\0';
}

/* One document of about 350 bytes with the usual mix of an insert:
 * an ObjectId, numbers, strings, a date, an array and a sub-document. */
static void
make_document(bson_t *doc, uint32_t i, uint64_t *state)
{
   char name[32], email[48], user[24], host[16], street[32], city[24], zip[8];
   char tag[3][16];
   uint8_t oid_bytes[12];
   uint8_t payload[48];

   for (size_t k = 0; k < sizeof oid_bytes; k++) {
      oid_bytes[k] = (uint8_t) next_random(state);
   }
   for (size_t k = 0; k < sizeof payload; k++) {
      payload[k] = (uint8_t) next_random(state);
   }
   random_word(state, name, 12, 20);
   random_word(state, user, 8, 14);
   random_word(state, host, 5, 9);
   snprintf(email, sizeof email, "%s@%s.example", user, host);
   random_word(state, street, 14, 24);
   random_word(state, city, 6, 12);
   snprintf(zip, sizeof zip, "%05u", (unsigned) (next_random(state) % 100000u));
   for (size_t k = 0; k < 3; k++) {
      random_word(state, tag[k], 4, 8);
   }

   bson_oid_t oid;
   bson_oid_init_from_data(&oid, oid_bytes);
   bson_t tags, address;
   bool ok = BSON_APPEND_OID(doc, "_id", &oid) && BSON_APPEND_INT32(doc, "i", (int32_t) i) &&
             BSON_APPEND_UTF8(doc, "name", name) && BSON_APPEND_UTF8(doc, "email", email) &&
             BSON_APPEND_DOUBLE(doc, "score", (double) (next_random(state) % 1000000u) / 1000.0) &&
             BSON_APPEND_BOOL(doc, "active", (next_random(state) & 1u) != 0) &&
             BSON_APPEND_DATE_TIME(doc, "created", 1700000000000 + (int64_t) i * 1000) &&
             BSON_APPEND_INT64(doc, "version", (int64_t) (next_random(state) >> 1)) &&
             opmsg_append_array_begin(doc, "tags", -1, &tags) && BSON_APPEND_UTF8(&tags, "0", tag[0]) &&
             BSON_APPEND_UTF8(&tags, "1", tag[1]) && BSON_APPEND_UTF8(&tags, "2", tag[2]) &&
             bson_append_array_end(doc, &tags) && BSON_APPEND_DOCUMENT_BEGIN(doc, "address", &address) &&
             BSON_APPEND_UTF8(&address, "street", street) && BSON_APPEND_UTF8(&address, "city", city) &&
             BSON_APPEND_UTF8(&address, "zip", zip) && bson_append_document_end(doc, &address) &&
             BSON_APPEND_BINARY(doc, "payload", BSON_SUBTYPE_BINARY, payload, (uint32_t) sizeof payload);
   if (!ok) {
      bench_fatal("cannot build generated document %u", i);
   }
}

/* Appends a "notes" string that brings doc to exactly size bytes (a string
 * element is 12 bytes besides its characters); fatal when doc is already
 * too large for that. */
static void
pad_document(bson_t *doc, uint32_t size, uint64_t *state)
{
   char notes[1024];
   if (doc->len + 12 > size || size - doc->len - 12 >= sizeof notes) {
      bench_fatal("generated document of %u bytes cannot be padded to %u", (unsigned) doc->len, (unsigned) size);
   }
   size_t n = size - doc->len - 12;
   for (size_t k = 0; k < n; k++) {
      notes[k] = (char) ('a' + next_random(state) % 26);
   }
   notes[n] = '\0';
   if (!bson_append_utf8(doc, "notes", 5, notes, (int) n) || doc->len != size) {
      bench_fatal("cannot pad a generated document to %u bytes", (unsigned) size);
   }
}

/* make_document(), then an "items" array of n_items small sub-documents
 * {sku, qty, price}, padded to exactly size bytes. */
static void
make_sized_document(bson_t *doc, uint32_t i, uint64_t *state, uint32_t n_items, uint32_t size)
{
   make_document(doc, i, state);
   bson_t items, item;
   bool ok = opmsg_append_array_begin(doc, "items", -1, &items);
   for (uint32_t k = 0; ok && k < n_items; k++) {
      char key[16], sku[16];
      const char *kp;
      size_t klen = bson_uint32_to_string(k, &kp, key, sizeof key);
      random_word(state, sku, 8, 8);
      ok = bson_append_document_begin(&items, kp, (int) klen, &item) && BSON_APPEND_UTF8(&item, "sku", sku) &&
           BSON_APPEND_INT32(&item, "qty", (int32_t) (next_random(state) % 100u)) &&
           BSON_APPEND_DOUBLE(&item, "price", (double) (next_random(state) % 100000u) / 100.0) &&
           bson_append_document_end(&items, &item);
   }
   if (!ok || !bson_append_array_end(doc, &items)) {
      bench_fatal("cannot build generated document %u", i);
   }
   pad_document(doc, size, state);
}

/* A small find result of exactly 140 bytes and 5 fields: _id, i, name,
 * email, score (the name's length makes up the size). */
#define SMALL_DOC_SIZE 140u
static void
make_small_document(bson_t *doc, uint32_t i, uint64_t *state)
{
   uint8_t oid_bytes[12];
   char user[24], host[16], email[48], name[96];
   for (size_t k = 0; k < sizeof oid_bytes; k++) {
      oid_bytes[k] = (uint8_t) next_random(state);
   }
   random_word(state, user, 8, 14);
   random_word(state, host, 5, 9);
   snprintf(email, sizeof email, "%s@%s.example", user, host);
   /* 4 + _id 17 + i 7 + name (11 + n) + email (12 + strlen) + score 15 + 1 */
   size_t n = SMALL_DOC_SIZE - 67 - strlen(email);
   random_word(state, name, n, n);
   bson_oid_t oid;
   bson_oid_init_from_data(&oid, oid_bytes);
   if (!BSON_APPEND_OID(doc, "_id", &oid) || !BSON_APPEND_INT32(doc, "i", (int32_t) i) ||
       !BSON_APPEND_UTF8(doc, "name", name) || !BSON_APPEND_UTF8(doc, "email", email) ||
       !BSON_APPEND_DOUBLE(doc, "score", (double) (next_random(state) % 1000000u) / 1000.0) ||
       doc->len != SMALL_DOC_SIZE) {
      bench_fatal("cannot build small document %u", i);
   }
}

/* n documents from make(), back to back in one malloc block (*len bytes). */
static uint8_t *
make_documents(uint32_t n, uint64_t seed, size_t per_doc_max, void (*make)(bson_t *doc, uint32_t i, uint64_t *state),
               size_t *len)
{
   uint64_t state = seed;
   size_t cap = (size_t) n * per_doc_max;
   uint8_t *docs = bench_xmalloc(cap);
   size_t off = 0;
   for (uint32_t i = 0; i < n; i++) {
      bson_t doc = BSON_INITIALIZER;
      make(&doc, i, &state);
      if (off + doc.len > cap) {
         bench_fatal("generated documents larger than planned");
      }
      memcpy(docs + off, bson_get_data(&doc), doc.len);
      off += doc.len;
      bson_destroy(&doc);
   }
   *len = off;
   return docs;
}

/* The message of a generated case, encoded by opmsg's encoder (which checks
 * what it writes as the parser does): body, then at most one sequence of
 * the documents docs[0..docs_len) named identifier (NULL: none). Sets
 * c->msg (malloc memory, like every case), c->docs and c->n_docs, and
 * finishes the case. */
static void
make_message(bench_case_t *c, const char *name, const bson_t *body, const char *identifier, const uint8_t *docs,
             size_t docs_len, uint32_t n_docs)
{
   opmsg_sequence_in_t seq;
   memset(&seq, 0, sizeof seq);
   seq.identifier = identifier;
   seq.raw = docs;
   seq.raw_len = docs_len;
   opmsg_build_t b;
   opmsg_build_init(&b, body);
   b.request_id = 1;
   b.sequences = &seq;
   b.n_sequences = identifier ? 1 : 0;
   size_t len = 0;
   bson_error_t error;
   uint8_t *m = opmsg_build_new(&b, &len, &error);
   if (!m) {
      bench_fatal("cannot build %s: %s", name, error.message);
   }
   bench_case_adopt(c, name, BENCH_KIND_MSG, m, len);
   bench_case_finish(c);
   if (identifier) {
      /* Where the documents are in the message, from the parse. */
      opmsg_msg_t msg;
      opmsg_sequence_t found;
      if (!opmsg_parse(c->msg, c->msg_len, NULL, &msg, &error) || !opmsg_sequence_find(&msg, identifier, &found) ||
          found.documents_len != docs_len) {
         bench_fatal("%s: its sequence is not where it was put", name);
      }
      c->docs = found.documents;
      c->docs_len = found.documents_len;
      c->n_docs = n_docs;
   }
}

void
bench_case_make_big(bench_case_t *c)
{
   bson_t body = BSON_INITIALIZER;
   if (!BSON_APPEND_UTF8(&body, "insert", "coll") || !BSON_APPEND_BOOL(&body, "ordered", true) ||
       !BSON_APPEND_UTF8(&body, "$db", "test")) {
      bench_fatal("cannot build the body of big");
   }
   size_t docs_len;
   uint8_t *docs = make_documents(BIG_DOCS, BIG_SEED, 400, make_document, &docs_len);
   make_message(c, "big", &body, "documents", docs, docs_len, BIG_DOCS);
   free(docs);
   bson_destroy(&body);
}

/* ---------------------------------------------------------------------------
 * Generated replies and a mid-sized insert (issues 14 and 15)
 * ------------------------------------------------------------------------- */

#define REPLY_DOCS 101u          /* a find's default first batch */
#define REPLY_SEED 0x7265706c79u /* "reply" */
#define INSERT1K_DOCS 1000u
#define INSERT1K_SEED 0x696e73657274u /* "insert" */
#define SMALL_SEED 0x736d616c6cu      /* "small" */

static void
make_reply_document(bson_t *doc, uint32_t i, uint64_t *state)
{
   make_sized_document(doc, i, state, 0, 500);
}

static void
make_insert1k_document(bson_t *doc, uint32_t i, uint64_t *state)
{
   make_sized_document(doc, i, state, 4, 1024);
}

/* A body-only message of body, built when ok; frees body. */
static bool
make_body_only(bench_case_t *c, const char *name, bson_t *body, bool ok)
{
   if (!ok) {
      bench_fatal("cannot build the body of %s", name);
   }
   make_message(c, name, body, NULL, NULL, 0, 0);
   bson_destroy(body);
   return true;
}

/* reply101: a find reply with its first batch in the body, the way every
 * server sends it: {cursor: {firstBatch: [101 x 500 bytes], id, ns}, ok}. */
static bool
make_reply101(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   uint64_t state = REPLY_SEED;
   bson_t body = BSON_INITIALIZER, cursor, batch;
   bool ok = BSON_APPEND_DOCUMENT_BEGIN(&body, "cursor", &cursor) &&
             opmsg_append_array_begin(&cursor, "firstBatch", -1, &batch);
   for (uint32_t i = 0; ok && i < REPLY_DOCS; i++) {
      char key[16];
      const char *kp;
      size_t klen = bson_uint32_to_string(i, &kp, key, sizeof key);
      bson_t doc;
      ok = bson_append_document_begin(&batch, kp, (int) klen, &doc);
      if (ok) {
         make_reply_document(&doc, i, &state);
         ok = bson_append_document_end(&batch, &doc);
      }
   }
   ok = ok && bson_append_array_end(&cursor, &batch) && BSON_APPEND_INT64(&cursor, "id", INT64_C(7238172654231623)) &&
        BSON_APPEND_UTF8(&cursor, "ns", "db.coll") && bson_append_document_end(&body, &cursor) &&
        BSON_APPEND_DOUBLE(&body, "ok", 1.0);
   return make_body_only(c, def->name, &body, ok);
}

/* ok: the reply most commands get, {ok: 1.0} (a 17-byte body, small
 * enough for the bytes libbson keeps inside a bson_t). */
static bool
make_ok(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   bson_t body = BSON_INITIALIZER;
   return make_body_only(c, def->name, &body, BSON_APPEND_DOUBLE(&body, "ok", 1.0));
}

/* hello: a server's answer to the handshake and to every monitoring
 * check (447 bytes, the fields a replica set member sends). */
static bool
make_hello(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   bson_t body = BSON_INITIALIZER, tv, hosts;
   bson_oid_t oid;
   bson_oid_init_from_string(&oid, "65a1b2c3d4e5f60718293a4b");
   bool ok =
      BSON_APPEND_BOOL(&body, "isWritablePrimary", true) && BSON_APPEND_DOCUMENT_BEGIN(&body, "topologyVersion", &tv) &&
      BSON_APPEND_OID(&tv, "processId", &oid) && BSON_APPEND_INT64(&tv, "counter", 6) &&
      bson_append_document_end(&body, &tv) && opmsg_append_array_begin(&body, "hosts", -1, &hosts) &&
      BSON_APPEND_UTF8(&hosts, "0", "db0.example:27017") && BSON_APPEND_UTF8(&hosts, "1", "db1.example:27017") &&
      BSON_APPEND_UTF8(&hosts, "2", "db2.example:27017") && bson_append_array_end(&body, &hosts) &&
      BSON_APPEND_UTF8(&body, "setName", "rs0") && BSON_APPEND_INT32(&body, "setVersion", 1) &&
      BSON_APPEND_UTF8(&body, "primary", "db0.example:27017") &&
      BSON_APPEND_INT32(&body, "maxBsonObjectSize", 16777216) &&
      BSON_APPEND_INT32(&body, "maxMessageSizeBytes", 48000000) &&
      BSON_APPEND_INT32(&body, "maxWriteBatchSize", 100000) &&
      BSON_APPEND_DATE_TIME(&body, "localTime", INT64_C(1767225600000)) &&
      BSON_APPEND_INT32(&body, "logicalSessionTimeoutMinutes", 30) && BSON_APPEND_INT64(&body, "connectionId", 4711) &&
      BSON_APPEND_INT32(&body, "minWireVersion", 0) && BSON_APPEND_INT32(&body, "maxWireVersion", 25) &&
      BSON_APPEND_BOOL(&body, "readOnly", false) && BSON_APPEND_DOUBLE(&body, "ok", 1.0);
   return make_body_only(c, def->name, &body, ok);
}

/* insert1k: an insert as a driver sends it in a session and a transaction
 * (5-key body) with 1,000 documents of 1 KB in a "documents" sequence. */
static bool
make_insert1k(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   uint64_t state = INSERT1K_SEED;
   uint8_t uuid[16];
   for (size_t k = 0; k < sizeof uuid; k++) {
      uuid[k] = (uint8_t) next_random(&state);
   }
   bson_t body = BSON_INITIALIZER, lsid;
   if (!BSON_APPEND_UTF8(&body, "insert", "coll") || !BSON_APPEND_BOOL(&body, "ordered", true) ||
       !BSON_APPEND_DOCUMENT_BEGIN(&body, "lsid", &lsid) ||
       !BSON_APPEND_BINARY(&lsid, "id", BSON_SUBTYPE_UUID, uuid, (uint32_t) sizeof uuid) ||
       !bson_append_document_end(&body, &lsid) || !BSON_APPEND_INT64(&body, "txnNumber", 1) ||
       !BSON_APPEND_UTF8(&body, "$db", "db")) {
      bench_fatal("cannot build the body of %s", def->name);
   }
   size_t docs_len;
   uint8_t *docs = make_documents(INSERT1K_DOCS, next_random(&state), 1024, make_insert1k_document, &docs_len);
   make_message(c, def->name, &body, "documents", docs, docs_len, INSERT1K_DOCS);
   bson_destroy(&body);
   free(docs);
   return true;
}

/* A find or getMore reply whose 101 small documents travel as a sequence
 * named by the row's arg; the body keeps the cursor's id and ns:
 * {cursor: {id: 0, ns}, ok: 1.0}. */
static bool
make_reply_sequence(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   bson_t body = BSON_INITIALIZER, cursor;
   if (!BSON_APPEND_DOCUMENT_BEGIN(&body, "cursor", &cursor) || !BSON_APPEND_INT64(&cursor, "id", 0) ||
       !BSON_APPEND_UTF8(&cursor, "ns", "db.coll") || !bson_append_document_end(&body, &cursor) ||
       !BSON_APPEND_DOUBLE(&body, "ok", 1.0)) {
      bench_fatal("cannot build the body of %s", def->name);
   }
   size_t docs_len;
   uint8_t *docs = make_documents(REPLY_DOCS, SMALL_SEED, SMALL_DOC_SIZE, make_small_document, &docs_len);
   make_message(c, def->name, &body, def->arg, docs, docs_len, REPLY_DOCS);
   bson_destroy(&body);
   free(docs);
   return true;
}

static bool
make_big(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) def;
   (void) data_dir;
   bench_case_make_big(c);
   return true;
}

/* The cases, in the order they run: name, maker, its argument, the
 * implementation the others are compared with, the group it runs in, and
 * what it is (--list, docs/benchmarks.md). */
#define SEED bench_case_load_seed
#define COMPRESSED bench_case_make_compressed
const bench_case_def_t bench_cases[] = {
   {"ok", make_ok, NULL, "memcpy", NULL, "generated: the reply {ok: 1.0}, body only (38 bytes)"},
   {"hello", make_hello, NULL, "memcpy", NULL,
    "generated: a replica set member's hello reply, body only (about 400 bytes)"},
   {"flat", SEED, NULL, "memcpy", NULL, "seed: a cursor reply, body only, one document of 145 scalar fields (6 KB)"},
   {"deep", SEED, NULL, "memcpy", NULL, "seed: a cursor reply, body only, one binary tree 9 levels deep (2 KB)"},
   {"reply101", make_reply101, NULL, "memcpy", NULL,
    "generated: a find reply, body only, firstBatch of 101 documents of 500 bytes (50 KB)"},
   {"seq", SEED, NULL, "memcpy", NULL, "seed: an insert, 148-field body + 100 documents in a sequence (11 KB)"},
   {"insert1k", make_insert1k, NULL, "memcpy", NULL,
    "generated: an insert, 5-key body (lsid, txnNumber) + 1,000 documents of 1 KB (1 MB)"},
   {"reply_plain", make_reply_sequence, "documents", "memcpy", "reply",
    "generated: a find reply, 101 documents of 140 bytes as a \"documents\" sequence"},
   {"reply_seq", make_reply_sequence, "cursor.firstBatch", "memcpy", "reply",
    "generated: reply_plain's documents as a \"cursor.firstBatch\" sequence"},
   {"reply_next", make_reply_sequence, "cursor.nextBatch", "memcpy", "reply",
    "generated: reply_plain's documents as a \"cursor.nextBatch\" sequence (getMore)"},
   {"big", make_big, NULL, "memcpy", NULL, "generated: an insert of 100,000 documents of ~350 bytes (35 MB)"},
   {"big_zstd", COMPRESSED, "zstd", "decompress", NULL, "big as OP_COMPRESSED with zstd (default level)"},
   {"big_snappy", COMPRESSED, "snappy", "decompress", NULL, "big as OP_COMPRESSED with snappy"},
   {"encode", bench_case_make_encode, NULL, "memcpy", NULL,
    "big's documents encoded as inserts split at maxWriteBatchSize 1000"},
};
const size_t bench_n_cases = sizeof bench_cases / sizeof bench_cases[0];

/* Counts what the targets are computed from, through opmsg's view of the
 * parsed message: sequences, their documents, and the top-level elements
 * of those documents (what the top-level check walks and spec skips). */
static void
count_sequences(bench_case_t *c, const opmsg_msg_t *msg)
{
   opmsg_sequence_iter_t seqs;
   opmsg_sequence_t seq;
   opmsg_sequence_iter_init(&seqs, msg);
   while (opmsg_sequence_iter_next(&seqs, &seq)) {
      c->n_sequences++;
      if (memchr(seq.identifier, '.', seq.identifier_len)) {
         c->dotted = true;
      }
      opmsg_document_iter_t docs;
      bson_t doc;
      opmsg_document_iter_init(&docs, &seq);
      while (opmsg_document_iter_next(&docs, &doc)) {
         bson_iter_t it;
         c->seq_docs++;
         if (!bson_iter_init(&it, &doc)) {
            bench_fatal("case %s: sequence document %llu unreadable", c->name, (unsigned long long) c->seq_docs);
         }
         while (bson_iter_next(&it)) {
            c->seq_elements++;
         }
      }
   }
}

void
bench_case_finish(bench_case_t *c)
{
   const uint8_t *plain = c->plain ? c->plain : c->msg;
   size_t plain_len = c->plain ? c->plain_len : c->msg_len;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_init(&c->opts);
   if (!opmsg_parse(plain, plain_len, NULL, &msg, &error)) {
      bench_fatal("case %s does not parse: %s", c->name, error.message);
   }
   c->merged_len = opmsg_merged_size(&msg);
   c->merged = bench_xmalloc(c->merged_len);
   size_t written = 0;
   if (!opmsg_merge_into(&msg, c->merged, c->merged_len, &written, &error) || written != c->merged_len) {
      bench_fatal("case %s does not merge: %s", c->name, error.message);
   }
   count_sequences(c, &msg);
   /* Touch the reused output buffer once so page faults are not timed. */
   c->out_cap = c->merged_len;
   c->out = bench_xmalloc(c->out_cap);
   memset(c->out, 0, c->out_cap);
}

void
bench_case_at_level(const bench_case_t *base, opmsg_check_t check, bench_case_t *at)
{
   *at = *base;
   at->opts.check = check;
   memset(&at->parsed, 0, sizeof at->parsed);
   if (base->kind != BENCH_KIND_ENCODE) {
      bench_parse_or_die(at, &at->parsed);
   }
}

void
bench_case_free(bench_case_t *c)
{
   if (c->command) {
      bson_destroy(c->command);
   }
   free(c->msg);
   free(c->merged);
   free(c->out);
   free(c->plain);
   free(c->scratch);
   memset(c, 0, sizeof *c);
}
