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
read_from_dir(const char *dir, const char *file, size_t *len, char *found,
              size_t found_size)
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
         snprintf(found, found_size, "%s%s", dir,
                  i == 0 ? "/seed" : "");
         return data;
      }
   }
   return NULL;
}

bool
bench_case_load_seed(bench_case_t *c, const char *name, const char *data_dir)
{
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
      if (expected_len != c->merged_len ||
          memcmp(expected, c->merged, expected_len) != 0) {
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
   snprintf(zip, sizeof zip, "%05u",
            (unsigned) (next_random(state) % 100000u));
   for (size_t k = 0; k < 3; k++) {
      random_word(state, tag[k], 4, 8);
   }

   bson_oid_t oid;
   bson_oid_init_from_data(&oid, oid_bytes);
   bson_t tags, address;
   bool ok = BSON_APPEND_OID(doc, "_id", &oid) &&
             BSON_APPEND_INT32(doc, "i", (int32_t) i) &&
             BSON_APPEND_UTF8(doc, "name", name) &&
             BSON_APPEND_UTF8(doc, "email", email) &&
             BSON_APPEND_DOUBLE(doc, "score",
                                (double) (next_random(state) % 1000000u) /
                                   1000.0) &&
             BSON_APPEND_BOOL(doc, "active", (next_random(state) & 1u) != 0) &&
             BSON_APPEND_DATE_TIME(doc, "created",
                                   1700000000000 + (int64_t) i * 1000) &&
             BSON_APPEND_INT64(doc, "version",
                               (int64_t) (next_random(state) >> 1)) &&
             opmsg_append_array_begin(doc, "tags", -1, &tags) &&
             BSON_APPEND_UTF8(&tags, "0", tag[0]) &&
             BSON_APPEND_UTF8(&tags, "1", tag[1]) &&
             BSON_APPEND_UTF8(&tags, "2", tag[2]) &&
             bson_append_array_end(doc, &tags) &&
             BSON_APPEND_DOCUMENT_BEGIN(doc, "address", &address) &&
             BSON_APPEND_UTF8(&address, "street", street) &&
             BSON_APPEND_UTF8(&address, "city", city) &&
             BSON_APPEND_UTF8(&address, "zip", zip) &&
             bson_append_document_end(doc, &address) &&
             BSON_APPEND_BINARY(doc, "payload", BSON_SUBTYPE_BINARY, payload,
                                (uint32_t) sizeof payload);
   if (!ok) {
      bench_fatal("cannot build generated document %u", i);
   }
}

static void
put_u32(uint8_t *p, uint32_t v)
{
   v = BSON_UINT32_TO_LE(v);
   memcpy(p, &v, 4);
}

void
bench_case_make_big(bench_case_t *c)
{
   static const char identifier[] = "documents";
   uint64_t state = BIG_SEED;

   bson_t body = BSON_INITIALIZER;
   if (!BSON_APPEND_UTF8(&body, "insert", "coll") ||
       !BSON_APPEND_BOOL(&body, "ordered", true) ||
       !BSON_APPEND_UTF8(&body, "$db", "test")) {
      bench_fatal("cannot build the body of big");
   }

   /* The documents are generated straight into their place in the message:
    * first into a growing run, then framed. */
   size_t docs_cap = (size_t) BIG_DOCS * 400u;
   uint8_t *docs = bench_xmalloc(docs_cap);
   size_t docs_len = 0;
   for (uint32_t i = 0; i < BIG_DOCS; i++) {
      bson_t doc = BSON_INITIALIZER;
      make_document(&doc, i, &state);
      if (docs_len + doc.len > docs_cap) {
         bench_fatal("generated documents larger than planned");
      }
      memcpy(docs + docs_len, bson_get_data(&doc), doc.len);
      docs_len += doc.len;
      bson_destroy(&doc);
   }

   size_t seq_size = 4 + sizeof identifier + docs_len;
   size_t total = OPMSG_HEADER_SIZE + 4 + 1 + body.len + 1 + seq_size;
   if (total > OPMSG_DEFAULT_MAX_MESSAGE_SIZE) {
      bench_fatal("big is %zu bytes, over the default limit", total);
   }
   uint8_t *m = bench_xmalloc(total);
   uint8_t *p = m;
   put_u32(p, (uint32_t) total);
   put_u32(p + 4, 1);  /* requestID */
   put_u32(p + 8, 0);  /* responseTo */
   put_u32(p + 12, OPMSG_OP_MSG);
   put_u32(p + 16, 0); /* flagBits */
   p += OPMSG_HEADER_SIZE + 4;
   *p++ = 0;
   memcpy(p, bson_get_data(&body), body.len);
   p += body.len;
   *p++ = 1;
   put_u32(p, (uint32_t) seq_size);
   p += 4;
   memcpy(p, identifier, sizeof identifier);
   p += sizeof identifier;
   memcpy(p, docs, docs_len);
   c->docs = p;
   c->docs_len = docs_len;
   c->n_docs = BIG_DOCS;
   free(docs);
   bson_destroy(&body);

   c->name = "big";
   c->kind = BENCH_KIND_MSG;
   c->msg = m;
   c->msg_len = total;
   bench_case_finish(c);
}

static bool
make_flat(bench_case_t *c, const char *data_dir)
{
   return bench_case_load_seed(c, "flat", data_dir);
}

static bool
make_deep(bench_case_t *c, const char *data_dir)
{
   return bench_case_load_seed(c, "deep", data_dir);
}

static bool
make_seq(bench_case_t *c, const char *data_dir)
{
   return bench_case_load_seed(c, "seq", data_dir);
}

static bool
make_big(bench_case_t *c, const char *data_dir)
{
   (void) data_dir;
   bench_case_make_big(c);
   return true;
}

static bool
make_big_zstd(bench_case_t *c, const char *data_dir)
{
   (void) data_dir;
   return bench_case_make_compressed(c, "big_zstd", OPMSG_COMPRESSOR_ZSTD);
}

static bool
make_big_snappy(bench_case_t *c, const char *data_dir)
{
   (void) data_dir;
   return bench_case_make_compressed(c, "big_snappy", OPMSG_COMPRESSOR_SNAPPY);
}

static bool
make_encode(bench_case_t *c, const char *data_dir)
{
   (void) data_dir;
   return bench_case_make_encode(c);
}

const bench_case_def_t bench_cases[] = {
   {"flat", "seed: a cursor reply, body only, one document of 145 scalar fields (6 KB)",
    make_flat, "memcpy"},
   {"deep", "seed: a cursor reply, body only, one binary tree 9 levels deep (2 KB)",
    make_deep, "memcpy"},
   {"seq", "seed: an insert, 148-field body + 100 documents in a sequence (11 KB)",
    make_seq, "memcpy"},
   {"big", "generated: an insert of 100,000 documents of ~350 bytes (35 MB)",
    make_big, "memcpy"},
   {"big_zstd", "big as OP_COMPRESSED with zstd (default level)",
    make_big_zstd, "decompress"},
   {"big_snappy", "big as OP_COMPRESSED with snappy",
    make_big_snappy, "decompress"},
   {"encode", "big's documents encoded as inserts split at maxWriteBatchSize 1000",
    make_encode, "memcpy"},
};
const size_t bench_n_cases = sizeof bench_cases / sizeof bench_cases[0];

void
bench_case_finish(bench_case_t *c)
{
   const uint8_t *plain = c->plain ? c->plain : c->msg;
   size_t plain_len = c->plain ? c->plain_len : c->msg_len;
   opmsg_msg_t msg;
   bson_error_t error;
   if (!opmsg_parse(plain, plain_len, NULL, &msg, &error)) {
      bench_fatal("case %s does not parse: %s", c->name, error.message);
   }
   c->merged_len = opmsg_merged_size(&msg);
   c->merged = bench_xmalloc(c->merged_len);
   size_t written = 0;
   if (!opmsg_merge_into(&msg, c->merged, c->merged_len, &written, &error) ||
       written != c->merged_len) {
      bench_fatal("case %s does not merge: %s", c->name, error.message);
   }
   /* Touch the reused output buffer once so page faults are not timed. */
   c->out_cap = c->merged_len;
   c->out = bench_xmalloc(c->out_cap);
   memset(c->out, 0, c->out_cap);
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
