/*
 * impls.c - the implementations opmsg-bench compares.
 *
 * Each one goes from the raw message bytes to a merged document someone can
 * use, and each is timed per whole operation (parse included).
 */
#include "bench.h"
#include "view_rebuild.h"

#include <string.h>

/* The limit: copying as many bytes as the merged document has, into a buffer
 * that is already there. No merge can be faster than writing its output. */
static size_t
op_memcpy(bench_case_t *c, bench_out_t *keep)
{
   memcpy(c->out, c->merged, c->merged_len);
   bench_keep_bytes(keep, c->out, c->merged_len);
   return c->merged_len;
}

/* The bytes a merge of the message copies, from where they sit in it: for
 * a body-only message, the body at offset 21, which is no multiple of 16.
 * memcpy from there is slower than from the aligned copy op_memcpy reads
 * (50 KB: 1,093 ns against 991 ns on the reference machine), and no merge
 * can read the body from anywhere else: the floor the fixed-cost targets
 * of body-only messages are measured against. (For a message with
 * sequences it copies as many bytes from the same place: comparable, not
 * the merged bytes.) */
static const uint8_t *
wire_source(const bench_case_t *c, size_t *len)
{
   size_t at = OPMSG_HEADER_SIZE + 5; /* flagBits, the body's kind byte */
   *len = c->merged_len <= c->msg_len - at ? c->merged_len : c->msg_len - at;
   return c->msg + at;
}

static size_t
op_memcpy_wire(bench_case_t *c, bench_out_t *keep)
{
   size_t len;
   const uint8_t *src = wire_source(c, &len);
   memcpy(c->out, src, len);
   (void) keep; /* not the merged bytes for every case: nothing to compare */
   __asm__ volatile("" : : "r"(c->out) : "memory");
   return len;
}

/* The floor of any merge to a new bson_t, with nothing parsed or checked:
 * one block of a bson_t and len bytes, 128-byte aligned as libbson's bson_t
 * must be (as 0.4's opmsg_merge_bson allocated it, through libbson's private
 * flags; since 0.5.0 it takes libbson's public way, two allocations above
 * 115 bytes), src copied in, the block freed. It shows how much of
 * merge_bson is the allocation. When keep is not NULL the
 * copied bytes are kept for the comparison. */
static size_t
alloc_copy(bench_case_t *c, const uint8_t *src, size_t len, bench_out_t *keep)
{
   size_t align = BSON_ALIGNOF(bson_t);
   size_t total = (sizeof(bson_t) + len + align - 1) / align * align;
   uint8_t *block = bson_aligned_alloc(align, total);
   memcpy(block + sizeof(bson_t), src, len);
   __asm__ volatile("" : : "r"(block) : "memory");
   if (keep) {
      memcpy(c->out, block + sizeof(bson_t), len);
      bench_keep_bytes(keep, c->out, len);
   }
   bson_free(block);
   return len;
}

static size_t
op_alloc_copy(bench_case_t *c, bench_out_t *keep)
{
   return alloc_copy(c, c->merged, c->merged_len, keep);
}

static size_t
op_alloc_copy_wire(bench_case_t *c, bench_out_t *keep)
{
   size_t len;
   const uint8_t *src = wire_source(c, &len);
   (void) keep; /* not the merged bytes for every case: nothing to compare */
   return alloc_copy(c, src, len, NULL);
}

static size_t
op_merge_bson(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bson_error_t error;
   bench_parse_or_die(c, &msg);
   bson_t *b = opmsg_merge_bson(&msg, &error);
   if (!b) {
      bench_fatal("%s: opmsg_merge_bson: %s", c->name, error.message);
   }
   return bench_keep_bson(keep, b);
}

/* libbson's public ways to a new bson_t holding the merge, beside
 * opmsg_merge_bson()'s (bson_sized_new() of the exact size, then
 * bson_reserve_buffer()). The first writes the document once into the
 * buffer bson_reserve_buffer() makes from an empty bson_new(): two
 * allocations (one when it fits inside the bson_t), the capacity a power of
 * two. */
static size_t
op_merge_bson_reserve(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bson_error_t error;
   bench_parse_or_die(c, &msg);
   size_t size = opmsg_merged_size(&msg);
   bson_t *b = bson_new();
   uint8_t *data = bson_reserve_buffer(b, (uint32_t) size);
   if (!data || !opmsg_merge_into(&msg, data, size, NULL, &error)) {
      bench_fatal("%s: bson_reserve_buffer + opmsg_merge_into failed", c->name);
   }
   return bench_keep_bson(keep, b);
}

/* opmsg_parse + opmsg_merge_into the case's reused buffer; its size. */
static size_t
merge_into_out(bench_case_t *c)
{
   opmsg_msg_t msg;
   bson_error_t error;
   size_t written = 0;
   bench_parse_or_die(c, &msg);
   if (!opmsg_merge_into(&msg, c->out, c->out_cap, &written, &error)) {
      bench_fatal("%s: opmsg_merge_into: %s", c->name, error.message);
   }
   return written;
}

/* The second merges into a buffer the caller keeps and copies it with
 * bson_new_from_data(): two allocations of the exact size, the document
 * written twice. */
static size_t
op_merge_bson_copy(bench_case_t *c, bench_out_t *keep)
{
   size_t written = merge_into_out(c);
   return bench_keep_bson(keep, bson_new_from_data(c->out, written));
}

static size_t
op_merge_into(bench_case_t *c, bench_out_t *keep)
{
   size_t written = merge_into_out(c);
   bench_keep_bytes(keep, c->out, written);
   return written;
}

/* What a server or proxy reads of a command without materialising it: the
 * command name, $db and every document of every sequence. The lengths are
 * summed so that every document is really reached. */
static size_t
op_view(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bench_parse_or_die(c, &msg);
   size_t sum = 0;
   const char *name = opmsg_command_name(&msg);
   if (name) {
      sum += (unsigned char) name[0];
   }
   uint32_t db_len = 0;
   if (opmsg_db(&msg, &db_len)) {
      sum += db_len;
   }
   opmsg_sequence_iter_t seqs;
   opmsg_sequence_t seq;
   opmsg_sequence_iter_init(&seqs, &msg);
   while (opmsg_sequence_iter_next(&seqs, &seq)) {
      opmsg_document_iter_t docs;
      bson_t doc;
      opmsg_document_iter_init(&docs, &seq);
      while (opmsg_document_iter_next(&docs, &doc)) {
         sum += doc.len;
      }
   }
   (void) keep; /* nothing is written; bench_check_view() checks the view */
   return sum;
}

/* opmsg_parse() alone, at the cell's level: what every other opmsg
 * implementation pays before it reads or writes anything. */
static size_t
op_parse(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bench_parse_or_die(c, &msg);
   (void) keep; /* nothing is written; check_parse() merges the result */
   return msg.body_len + msg.n_sequences;
}

/* The command name and $db of a message parsed beforehand (c->parsed, at
 * the cell's level): what routing a command costs once it is parsed. */
static size_t
op_name_db(bench_case_t *c, bench_out_t *keep)
{
   (void) keep;
   const char *name = opmsg_command_name(&c->parsed);
   uint32_t db_len = 0;
   const char *db = opmsg_db(&c->parsed, &db_len);
   return (name ? (unsigned char) name[0] : 0u) + (db ? db_len : 0u);
}

/* The same from the bytes: opmsg_parse + opmsg_command_name + opmsg_db. */
static size_t
op_parse_name_db(bench_case_t *c, bench_out_t *keep)
{
   (void) keep;
   opmsg_msg_t msg;
   bench_parse_or_die(c, &msg);
   const char *name = opmsg_command_name(&msg);
   uint32_t db_len = 0;
   const char *db = opmsg_db(&msg, &db_len);
   return (name ? (unsigned char) name[0] : 0u) + (db ? db_len : 0u);
}

/*
 * What full validation costs with libbson alone: the sections found by hand
 * (as the other baselines do), then bson_validate_with_error() over the body
 * and every sequence document. The flags are the ones that ask libbson for
 * what opmsg's full level checks (src/validate.c):
 *  - BSON_VALIDATE_UTF8: the UTF-8 of every key and string-like value, at
 *    every level (without it libbson >= 1.30 skips text entirely);
 *  - BSON_VALIDATE_UTF8_ALLOW_NULL: string values may hold U+0000, as the
 *    BSON corpus and validate.c allow (keys cannot, their NUL ends them);
 *  - not BSON_VALIDATE_DOLLAR_KEYS, _DOT_KEYS or _EMPTY_KEYS: opmsg's full
 *    level does not refuse such keys (every command body has "$db"), so
 *    asking libbson to would measure a different rule.
 * Types, lengths, terminators, booleans 0/1, binary subtype 2's inner length
 * and nesting (100 levels on both sides) libbson checks whatever the flags.
 * bson_validate_with_error() has the same prototype in libbson 1.23, 1.30
 * and 2.x (bson.h: (const bson_t *, bson_validate_flags_t, bson_error_t *)),
 * and the flag values have not changed. Level-independent: it does not
 * parse with opmsg; "parse" at the full level is what it is compared with.
 */
#define LIBBSON_FULL_FLAGS ((bson_validate_flags_t) (BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL))

static void
libbson_validate_or_die(const bench_case_t *c, const uint8_t *data, size_t len, const char *what)
{
   bson_t doc;
   bson_error_t error;
   if (!bson_init_static(&doc, data, len)) {
      bench_fatal("libbson_validate: %s: %s: bad frame", c->name, what);
   }
   if (!bson_validate_with_error(&doc, LIBBSON_FULL_FLAGS, &error)) {
      bench_fatal("libbson_validate: %s: %s: %s", c->name, what, error.message);
   }
}

static size_t
op_libbson_validate(bench_case_t *c, bench_out_t *keep)
{
   bench_sections_t s;
   bench_split_sections(c->msg, c->msg_len, &s);
   libbson_validate_or_die(c, s.body, s.body_len, "body");
   size_t n = 1;
   for (size_t i = 0; i < s.n_seqs; i++) {
      const uint8_t *p = s.seqs[i].docs;
      const uint8_t *end = p + s.seqs[i].docs_len;
      while (p < end) {
         uint32_t doc_len = (size_t) (end - p) >= 4 ? bench_read_u32(p) : 0;
         if (doc_len < 5 || doc_len > (size_t) (end - p)) {
            bench_fatal("libbson_validate: %s: bad sequence document", c->name);
         }
         libbson_validate_or_die(c, p, doc_len, "sequence document");
         p += doc_len;
         n++;
      }
   }
   if (keep) {
      keep->len = n; /* documents validated, for check_validated() */
   }
   return n;
}

/* libmongoc 1.23's way of turning a command and its payload into one
 * document (_mongoc_cmd_append_payload_as_array, used for APM and
 * client-side encryption): copy the body, then append the payload documents
 * one by one into an array. Plain libbson calls; libmongoc is not linked. */
static size_t
op_mongoc_append(bench_case_t *c, bench_out_t *keep)
{
   bench_sections_t s;
   bench_split_sections(c->msg, c->msg_len, &s);

   bson_t body;
   if (!bson_init_static(&body, s.body, s.body_len)) {
      bench_fatal("mongoc_append: bad body");
   }
   bson_t *out = bson_copy(&body);
   for (size_t i = 0; i < s.n_seqs; i++) {
      const bench_seq_t *seq = &s.seqs[i];
      if (memchr(seq->identifier, '.', seq->identifier_len)) {
         bench_fatal("mongoc_append: dotted identifiers are not supported");
      }
      bson_t array;
      if (!opmsg_append_array_begin(out, seq->identifier, (int) seq->identifier_len, &array)) {
         bench_fatal("mongoc_append: cannot open array");
      }
      const uint8_t *p = seq->docs;
      const uint8_t *end = seq->docs + seq->docs_len;
      for (uint32_t n = 0; p < end; n++) {
         uint32_t doc_len = (size_t) (end - p) >= 4 ? bench_read_u32(p) : 0;
         bson_t doc;
         if (doc_len > (size_t) (end - p) || !bson_init_static(&doc, p, doc_len)) {
            bench_fatal("mongoc_append: bad document %u", n);
         }
         char buf[16];
         const char *key;
         size_t klen = bson_uint32_to_string(n, &key, buf, sizeof buf);
         if (!bson_append_document(&array, key, (int) klen, &doc)) {
            bench_fatal("mongoc_append: cannot append document %u", n);
         }
         p += doc_len;
      }
      if (!bson_append_array_end(out, &array)) {
         bench_fatal("mongoc_append: cannot close array");
      }
   }
   return bench_keep_bson(keep, out);
}

static void check_parse(const bench_case_t *c, const bench_out_t *out);
static void check_validated(const bench_case_t *c, const bench_out_t *out);

/* The implementations, in the order their rows are printed: name,
 * operation, the case kinds it runs on, what it is besides (per level,
 * output), its own check of the output, and what it does (--list). */
#define MSG BENCH_KIND_BIT(BENCH_KIND_MSG)
#define COMPRESSED BENCH_KIND_BIT(BENCH_KIND_COMPRESSED)
#define ENCODE BENCH_KIND_BIT(BENCH_KIND_ENCODE)
#define LEVEL BENCH_PER_LEVEL
#define WRITES BENCH_WRITES
const bench_impl_t bench_impls[] = {
   {"memcpy", op_memcpy, MSG | COMPRESSED | ENCODE, WRITES, NULL,
    "memcpy of the merged document's size (encode: of the documents) into a reused buffer"},
   {"memcpy_wire", op_memcpy_wire, MSG, 0, NULL,
    "memcpy of the merged size from the body's place in the message (offset 21): a body-only message's floor"},
   {"alloc_copy_wire", op_alloc_copy_wire, MSG, 0, NULL, "alloc_copy, reading from the body's place in the message"},
   {"alloc_copy", op_alloc_copy, MSG, WRITES, NULL,
    "one aligned block of the merged size, memcpy into it, free: merge_bson's floor, nothing checked"},
   {"parse", op_parse, MSG, LEVEL, check_parse, "opmsg_parse alone at the level"},
   {"merge_bson", op_merge_bson, MSG, LEVEL | WRITES, NULL, "opmsg_parse + opmsg_merge_bson + bson_destroy"},
   {"merge_bson_reserve", op_merge_bson_reserve, MSG, LEVEL | WRITES, NULL,
    "opmsg_parse + bson_new + bson_reserve_buffer + opmsg_merge_into + bson_destroy: libbson's public way"},
   {"merge_bson_copy", op_merge_bson_copy, MSG, LEVEL | WRITES, NULL,
    "opmsg_parse + opmsg_merge_into a reused buffer + bson_new_from_data + bson_destroy: the other one"},
   {"merge_into", op_merge_into, MSG, LEVEL | WRITES, NULL, "opmsg_parse + opmsg_merge_into a reused buffer"},
   {"view", op_view, MSG, LEVEL, bench_check_view,
    "opmsg_parse + command name, $db and every sequence document via the view API"},
   {"name_db", op_name_db, MSG, LEVEL, bench_check_view,
    "opmsg_command_name + opmsg_db of a message parsed beforehand (the view alone)"},
   {"parse_name_db", op_parse_name_db, MSG, LEVEL, bench_check_view, "opmsg_parse + opmsg_command_name + opmsg_db"},
   {"libbson_validate", op_libbson_validate, MSG, 0, check_validated,
    "sections by hand, bson_validate_with_error (UTF8 | UTF8_ALLOW_NULL) of the body and every sequence document"},
   {"reencode_libbson", bench_reencode_libbson, MSG, BENCH_PLAIN_IDS | WRITES, NULL,
    "sections by hand, every value decoded with bson_iter and re-encoded with bson_append_*"},
   {"mongoc_append", op_mongoc_append, MSG, BENCH_PLAIN_IDS | WRITES, NULL,
    "libmongoc 1.23's way: bson_copy of the body + bson_append_document per sequence document"},
   {"decompress", bench_op_decompress, COMPRESSED, LEVEL | BENCH_WRITES_PLAIN, NULL,
    "opmsg_parse + opmsg_decompress_into a reused buffer (the limit of compressed cases)"},
   {"decompress_merge", bench_op_decompress_merge, COMPRESSED, LEVEL | WRITES, NULL,
    "opmsg_parse + opmsg_decompress_into + opmsg_parse + opmsg_merge_into, reused buffers"},
   {"merge_compressed", bench_op_merge_compressed, COMPRESSED, LEVEL | WRITES, NULL,
    "opmsg_parse + opmsg_merge_compressed + bson_destroy"},
   {"encode_split", bench_op_encode_split, ENCODE, WRITES, bench_check_encode,
    "opmsg_splitter_* + opmsg_build_into every batch back to back into a reused buffer"},
};
const size_t bench_n_impls = sizeof bench_impls / sizeof bench_impls[0];

/* ---------------------------------------------------------------------------
 * Checking the view
 * ------------------------------------------------------------------------- */

/* The parse at the cell's level must give the reference merge. */
static void
check_parse(const bench_case_t *c, const bench_out_t *out)
{
   (void) out;
   opmsg_msg_t msg;
   bson_error_t error;
   size_t written = 0;
   bench_parse_or_die(c, &msg);
   if (opmsg_merged_size(&msg) != c->merged_len || !opmsg_merge_into(&msg, c->out, c->out_cap, &written, &error) ||
       written != c->merged_len || memcmp(c->out, c->merged, written) != 0) {
      bench_fatal("parse check: %s at %s: the merge differs", c->name, opmsg_check_name(c->opts.check));
   }
}

/* libbson must have accepted the body and every sequence document. */
static void
check_validated(const bench_case_t *c, const bench_out_t *out)
{
   if (out->len != 1 + c->seq_docs) {
      bench_fatal("libbson_validate check: %s: %zu documents validated, the message has %llu", c->name, out->len,
                  (unsigned long long) (1 + c->seq_docs));
   }
}

void
bench_check_view(const bench_case_t *c, const bench_out_t *out)
{
   (void) out;
   opmsg_msg_t msg;
   bench_parse_or_die(c, &msg);

   /* The merged document rebuilt field by field from the view must be the
    * merge, byte for byte. */
   bson_t rebuilt = BSON_INITIALIZER;
   char why[256];
   view_rebuild_status_t st = view_rebuild(&msg, &rebuilt, why, sizeof why);
   if (st == VIEW_REBUILD_TOO_DEEP) {
      bench_fatal("view check: %s: paths too deep to rebuild", c->name);
   } else if (st != VIEW_REBUILD_OK) {
      bench_fatal("view check: %s: %s", c->name, why);
   }
   if (rebuilt.len != c->merged_len || memcmp(bson_get_data(&rebuilt), c->merged, c->merged_len) != 0) {
      bench_fatal("view check: %s: the view differs from the merge", c->name);
   }
   bson_destroy(&rebuilt);

   /* What op_view reads must be what the merge says. */
   bson_t merged;
   bson_iter_t it;
   if (!bson_init_static(&merged, c->merged, c->merged_len) || !bson_iter_init(&it, &merged)) {
      bench_fatal("view check: %s: bad reference", c->name);
   }
   const char *name = opmsg_command_name(&msg);
   if (bson_iter_next(&it) != (name != NULL) || (name && strcmp(name, bson_iter_key(&it)) != 0)) {
      bench_fatal("view check: %s: wrong command name", c->name);
   }
   uint32_t db_len = 0;
   const char *db = opmsg_db(&msg, &db_len);
   bson_iter_t db_it;
   if (bson_iter_init_find(&db_it, &merged, "$db") && BSON_ITER_HOLDS_UTF8(&db_it)) {
      uint32_t want_len;
      const char *want = bson_iter_utf8(&db_it, &want_len);
      if (!db || db_len != want_len || memcmp(db, want, want_len) != 0) {
         bench_fatal("view check: %s: wrong $db", c->name);
      }
   } else if (db) {
      bench_fatal("view check: %s: $db where the merge has none", c->name);
   }
}
