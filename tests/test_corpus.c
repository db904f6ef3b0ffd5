/*
 * test_corpus.c - the public BSON corpus, each case as the body of an OP_MSG.
 *
 * The corpus (tests/data/bson_corpus, see its README.md) lists, per BSON
 * type, "valid" documents every decoder must accept and "decodeErrors" every
 * decoder must reject. With OPMSG_PARSE_FULL_VALIDATE opmsg must do both; the
 * merged document of a valid case (a body without sequences) must be the
 * case's bytes unchanged. The same documents also go through a document
 * sequence, and through the top-level mode, which checks only the top level:
 * there every decodeErrors case whose defect is at the top level (as an
 * independent checker below decides) must still be rejected.
 *
 * Finally every valid document is mutated byte by byte: opmsg must never
 * crash, and whatever full validation accepts libbson's own validator must
 * accept too.
 */
#define _POSIX_C_SOURCE 200809L

#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_DIR "bson_corpus"

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */


/* The message: header, flags, one kind-0 section holding the raw bytes. */
static void
body_message(tu_buf_t *msg, const uint8_t *doc, size_t len)
{
   tu_buf_init(msg);
   tu_msg_begin(msg, 0);
   tu_put_u8(msg, 0);
   tu_put(msg, doc, len);
   tu_msg_end(msg);
}

/* A request whose "documents" sequence holds the raw bytes. */
static void
sequence_message(tu_buf_t *msg, const uint8_t *doc, size_t len)
{
   tu_buf_init(msg);
   tu_msg_begin(msg, 0);
   tu_msg_body(msg, "{\"insert\": \"c\", \"$db\": \"d\"}");
   size_t mark = tu_msg_seq_begin(msg, "documents");
   tu_put(msg, doc, len);
   tu_msg_seq_end(msg, mark);
   tu_msg_end(msg);
}

static bool
parse(const tu_buf_t *msg, uint32_t flags, opmsg_msg_t *parsed, bson_error_t *error)
{
   opmsg_options_t opts;
   opmsg_options_init(&opts);
   /* Below full, the top-level level: the one that reads elements. The
    * default, spec, only frames a body alone. */
   opts.check = OPMSG_CHECK_TOP_LEVEL;
   opts.flags = flags;
   memset(error, 0, sizeof *error);
   return opmsg_parse(msg->data, msg->len, &opts, parsed, error);
}

/* True when the document's top-level keys are not all distinct. */
static bool
has_duplicate_top_keys(const uint8_t *doc, size_t len)
{
   bson_t b;
   bson_iter_t i, j;
   if (!bson_init_static(&b, doc, len) || !bson_iter_init(&i, &b)) {
      return false;
   }
   while (bson_iter_next(&i)) {
      j = i;
      while (bson_iter_next(&j)) {
         if (strcmp(bson_iter_key(&i), bson_iter_key(&j)) == 0) {
            return true;
         }
      }
   }
   return false;
}

/*
 * An independent reading of "the top level": is the document's frame right
 * (stated length = the bytes given, last byte 0) and can every top-level
 * element's extent be determined inside it (known type, terminated key, a
 * length field that is not negative and fits; a sub-document's length >= 5
 * and last byte 0)? It deliberately checks nothing inside a value, so a
 * case it calls "deep" is one only full validation has to reject.
 */
static bool
top_level_ok(const uint8_t *d, size_t n)
{
   if (n < 5 || opmsg_read_i32(d) != (int32_t) n || d[n - 1] != 0) {
      return false;
   }
   size_t p = 4, end = n - 1;
   while (p < end) {
      uint8_t type = d[p++];
      const uint8_t *nul = memchr(d + p, 0, end - p);
      if (!nul) {
         return false;
      }
      p = (size_t) (nul - d) + 1;
      size_t room = end - p, need;
      int32_t l = room >= 4 ? opmsg_read_i32(d + p) : -1;
      switch (type) {
      case 0x01:
      case 0x09:
      case 0x11:
      case 0x12:
         need = 8;
         break;
      case 0x10:
         need = 4;
         break;
      case 0x13:
         need = 16;
         break;
      case 0x07:
         need = 12;
         break;
      case 0x08:
         need = 1;
         break;
      case 0x06:
      case 0x0A:
      case 0x7F:
      case 0xFF:
         need = 0;
         break;
      case 0x02:
      case 0x0D:
      case 0x0E:
         if (l < 0)
            return false;
         need = 4 + (size_t) l;
         break;
      case 0x0C:
         if (l < 0)
            return false;
         need = 4 + (size_t) l + 12;
         break;
      case 0x05:
         if (l < 0)
            return false;
         need = 5 + (size_t) l;
         break;
      case 0x03:
      case 0x04:
         if (l < 5)
            return false;
         need = (size_t) l;
         if (need <= room && d[p + need - 1] != 0)
            return false;
         break;
      case 0x0F:
         if (l < 4)
            return false;
         need = (size_t) l;
         break;
      case 0x0B: {
         const uint8_t *n1 = memchr(d + p, 0, room);
         if (!n1)
            return false;
         const uint8_t *n2 = memchr(n1 + 1, 0, (size_t) (d + end - n1 - 1));
         if (!n2)
            return false;
         need = (size_t) (n2 + 1 - (d + p));
         break;
      }
      default:
         return false;
      }
      if (need > room) {
         return false;
      }
      p += need;
   }
   return p == end;
}

/* The sorted names of the corpus files. */
typedef struct {
   char **names;
   size_t count;
} name_list_t;

static int
cmp_names(const void *a, const void *b)
{
   return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
list_corpus(name_list_t *list)
{
   DIR *dir = opendir(OPMSG_TEST_DATA "/" CORPUS_DIR);
   assert_non_null(dir);
   list->names = NULL;
   list->count = 0;
   struct dirent *ent;
   while ((ent = readdir(dir)) != NULL) {
      size_t n = strlen(ent->d_name);
      if (n > 5 && strcmp(ent->d_name + n - 5, ".json") == 0) {
         list->names = realloc(list->names, (list->count + 1) * sizeof(char *));
         assert_non_null(list->names);
         list->names[list->count++] = bson_strdup(ent->d_name);
      }
   }
   closedir(dir);
   qsort(list->names, list->count, sizeof(char *), cmp_names);
}

static bson_t *
load_corpus_file(const char *name)
{
   char rel[256];
   size_t len;
   bson_error_t error;
   snprintf(rel, sizeof rel, CORPUS_DIR "/%s", name);
   uint8_t *json = tu_read_file(rel, &len);
   bson_t *doc = bson_new_from_json(json, (ssize_t) len, &error);
   if (!doc) {
      fail_msg("%s: %s", name, error.message);
   }
   free(json);
   return doc;
}

/* Runs fn on every element of the array `field` of the corpus file. */
typedef void (*case_fn)(const char *file, const bson_t *c, void *ctx);

static void
for_each_case(const char *file, const bson_t *corpus, const char *field, case_fn fn, void *ctx)
{
   bson_iter_t it, arr;
   if (!bson_iter_init_find(&it, corpus, field)) {
      return;
   }
   assert_true(BSON_ITER_HOLDS_ARRAY(&it));
   assert_true(bson_iter_recurse(&it, &arr));
   while (bson_iter_next(&arr)) {
      uint32_t len;
      const uint8_t *data;
      bson_t c;
      assert_true(BSON_ITER_HOLDS_DOCUMENT(&arr));
      bson_iter_document(&arr, &len, &data);
      assert_true(bson_init_static(&c, data, len));
      fn(file, &c, ctx);
   }
}

static const char *
case_str(const bson_t *c, const char *key)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, c, key) || !BSON_ITER_HOLDS_UTF8(&it)) {
      return NULL;
   }
   return bson_iter_utf8(&it, NULL);
}

/* ---------------------------------------------------------------------------
 * Valid cases
 * ------------------------------------------------------------------------- */

typedef struct {
   unsigned valid;            /* canonical_bson accepted and merged unchanged */
   unsigned degenerate;       /* degenerate_bson accepted */
   unsigned duplicates;       /* valid cases rejected for duplicate body keys */
   unsigned as_sequence;      /* accepted as a sequence document */
   unsigned rejected;         /* decodeErrors rejected in full mode */
   unsigned as_seq_rejected;  /* ... also as a sequence document */
   unsigned top_defects;      /* decodeErrors with a top-level defect */
   unsigned default_rejected; /* decodeErrors rejected by the top-level mode */
   unsigned default_accepted; /* ... accepted (deep defects only) */
   unsigned codes[OPMSG_ERR_COUNT_];
} tally_t;

/* The body merged alone is the body itself. */
static void
assert_merge_identity(const char *what, const tu_buf_t *msg, const opmsg_msg_t *parsed, const uint8_t *doc, size_t len)
{
   bson_error_t error;
   bson_t *merged = opmsg_merge_bson(parsed, &error);
   if (!merged) {
      fail_msg("%s: merge failed: %s", what, error.message);
   }
   assert_int_equal(merged->len, len);
   assert_memory_equal(bson_get_data(merged), doc, len);
   bson_destroy(merged);

   /* The caller-buffer form gives the same bytes. */
   uint8_t *buf = malloc(len);
   size_t written = 0;
   assert_non_null(buf);
   assert_int_equal(opmsg_merged_size(parsed), len);
   assert_true(opmsg_merge_into(parsed, buf, len, &written, &error));
   assert_int_equal(written, len);
   assert_memory_equal(buf, doc, len);
   free(buf);
   (void) msg;
}

/* Document 0 of the merged "documents" array is the sequence document. */
static void
assert_sequence_merge(const char *what, const opmsg_msg_t *parsed, const uint8_t *doc, size_t len)
{
   bson_error_t error;
   bson_t *merged = opmsg_merge_bson(parsed, &error);
   if (!merged) {
      fail_msg("%s: merge failed: %s", what, error.message);
   }
   bson_iter_t it, arr;
   assert_true(bson_iter_init_find(&it, merged, "documents"));
   assert_true(BSON_ITER_HOLDS_ARRAY(&it));
   assert_true(bson_iter_recurse(&it, &arr));
   assert_true(bson_iter_next(&arr));
   assert_string_equal(bson_iter_key(&arr), "0");
   uint32_t dlen;
   const uint8_t *ddata;
   bson_iter_document(&arr, &dlen, &ddata);
   assert_int_equal(dlen, len);
   assert_memory_equal(ddata, doc, len);
   assert_false(bson_iter_next(&arr));
   bson_destroy(merged);
}

static void
check_valid_bytes(const char *file, const char *desc, const char *field, const char *hex, tally_t *t)
{
   char what[512];
   size_t len;
   uint8_t *doc = tu_from_hex(hex, &len);
   tu_buf_t msg;
   opmsg_msg_t parsed;
   bson_error_t error;
   snprintf(what, sizeof what, "%s: \"%s\" (%s)", file, desc, field);

   body_message(&msg, doc, len);
   if (has_duplicate_top_keys(doc, len)) {
      /* A body may not repeat a top-level key, whatever BSON allows. */
      for (uint32_t flags = 0; flags <= OPMSG_PARSE_FULL_VALIDATE; flags++) {
         assert_false(parse(&msg, flags, &parsed, &error));
         assert_int_equal(error.code, OPMSG_ERR_DUPLICATE_KEY);
      }
      printf("special: %s has duplicate top-level keys: rejected as a body\n", what);
      t->duplicates++;
   } else {
      if (!parse(&msg, OPMSG_PARSE_FULL_VALIDATE, &parsed, &error)) {
         fail_msg("%s rejected in full mode: %s (%s)", what, error.message, opmsg_error_name(error.code));
      }
      assert_merge_identity(what, &msg, &parsed, doc, len);
      if (!parse(&msg, 0, &parsed, &error)) {
         fail_msg("%s rejected in top-level mode: %s", what, error.message);
      }
      assert_merge_identity(what, &msg, &parsed, doc, len);
      if (strcmp(field, "canonical_bson") == 0) {
         t->valid++;
      } else {
         t->degenerate++;
      }
   }
   tu_buf_free(&msg);

   /* Sequence documents may repeat keys; they are checked all the same. */
   sequence_message(&msg, doc, len);
   if (!parse(&msg, OPMSG_PARSE_FULL_VALIDATE, &parsed, &error)) {
      fail_msg("%s rejected as a sequence document: %s", what, error.message);
   }
   assert_sequence_merge(what, &parsed, doc, len);
   t->as_sequence++;
   tu_buf_free(&msg);
   free(doc);
}

static void
check_valid_case(const char *file, const bson_t *c, void *ctx)
{
   const char *desc = case_str(c, "description");
   const char *canonical = case_str(c, "canonical_bson");
   const char *degenerate = case_str(c, "degenerate_bson");
   assert_non_null(desc);
   assert_non_null(canonical);
   check_valid_bytes(file, desc, "canonical_bson", canonical, ctx);
   if (degenerate) {
      check_valid_bytes(file, desc, "degenerate_bson", degenerate, ctx);
   }
}

/* ---------------------------------------------------------------------------
 * decodeErrors
 * ------------------------------------------------------------------------- */

static void
check_decode_error(const char *file, const bson_t *c, void *ctx)
{
   tally_t *t = ctx;
   const char *desc = case_str(c, "description");
   const char *hex = case_str(c, "bson");
   char what[512];
   size_t len;
   tu_buf_t msg;
   opmsg_msg_t parsed;
   bson_error_t error;
   assert_non_null(desc);
   assert_non_null(hex);
   snprintf(what, sizeof what, "%s: \"%s\"", file, desc);
   uint8_t *doc = tu_from_hex(hex, &len);

   body_message(&msg, doc, len);
   if (parse(&msg, OPMSG_PARSE_FULL_VALIDATE, &parsed, &error)) {
      fail_msg("%s accepted in full mode", what);
   }
   /* A clear error: our domain, a rule's code, a message with the offset. */
   assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   assert_true(error.code > 0 && error.code < OPMSG_ERR_COUNT_);
   if (!strstr(error.message, "offset")) {
      fail_msg("%s: message without an offset: %s", what, error.message);
   }
   t->codes[error.code]++;
   t->rejected++;
   printf("  %-60.60s full: %-22s %s\n", what, opmsg_error_name(error.code), error.message);

   /* The top-level mode: no crash; a top-level defect is still rejected. */
   bool top = !top_level_ok(doc, len);
   bool ok = parse(&msg, 0, &parsed, &error);
   if (top) {
      t->top_defects++;
      if (ok) {
         fail_msg("%s: top-level defect accepted in top-level mode", what);
      }
   }
   if (ok) {
      t->default_accepted++;
      printf("  %-60.60s default: accepted (defect inside a value)\n", what);
   } else {
      t->default_rejected++;
   }
   tu_buf_free(&msg);

   /* As a sequence document the same bytes fail in full mode (when the
    * stated length differs from the bytes given, the sequence's framing
    * fails instead, which is also a rejection). */
   sequence_message(&msg, doc, len);
   if (parse(&msg, OPMSG_PARSE_FULL_VALIDATE, &parsed, &error)) {
      fail_msg("%s accepted as a sequence document", what);
   }
   t->as_seq_rejected++;
   tu_buf_free(&msg);
   free(doc);
}

/* ---------------------------------------------------------------------------
 * Mutations
 *
 * libbson 1.23's bson_validate() is the reference only one way: it stops
 * early without an error at invalid UTF-8 or a 0 type byte inside a
 * document, and does not check a nested document's last byte, so it accepts
 * documents opmsg rightly rejects. What opmsg accepts, it must accept.
 * ------------------------------------------------------------------------- */

typedef struct {
   unsigned tried;
   unsigned accepted;
   unsigned libbson_stricter;                 /* opmsg accepted, libbson rejected: none allowed */
   unsigned opmsg_stricter;                   /* opmsg rejected, libbson accepted */
   unsigned stricter_codes[OPMSG_ERR_COUNT_]; /* ... by error code */
} mutation_tally_t;

static bool
libbson_accepts(const uint8_t *doc, size_t len)
{
   bson_t b;
   if (!bson_init_static(&b, doc, len)) {
      return false;
   }
   return bson_validate(&b, BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL, NULL);
}

static void
mutate_case(const char *file, const bson_t *c, void *ctx)
{
   mutation_tally_t *m = ctx;
   static const int deltas[] = {-1, 1};
   static const uint8_t values[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0xC0, 0xFF};
   const char *hex = case_str(c, "canonical_bson");
   size_t len;
   uint8_t *doc = tu_from_hex(hex, &len);
   (void) file;

   for (size_t i = 0; i < len; i++) {
      uint8_t orig = doc[i];
      for (size_t k = 0; k < sizeof values + sizeof deltas / sizeof deltas[0]; k++) {
         uint8_t v = k < sizeof values ? values[k] : (uint8_t) (orig + deltas[k - sizeof values]);
         if (v == orig) {
            continue;
         }
         doc[i] = v;
         tu_buf_t msg;
         opmsg_msg_t parsed;
         bson_error_t error;
         body_message(&msg, doc, len);
         bool ours = parse(&msg, OPMSG_PARSE_FULL_VALIDATE, &parsed, &error);
         bool theirs = libbson_accepts(doc, len) && !has_duplicate_top_keys(doc, len);
         m->tried++;
         if (ours) {
            m->accepted++;
            if (!theirs) {
               char *h = bson_malloc(2 * len + 1);
               for (size_t j = 0; j < len; j++) {
                  snprintf(h + 2 * j, 3, "%02X", doc[j]);
               }
               printf("accepted by opmsg, rejected by libbson: %s\n", h);
               bson_free(h);
               m->libbson_stricter++;
            }
            /* Whatever is accepted merges back to itself. */
            bson_t *merged = opmsg_merge_bson(&parsed, &error);
            assert_non_null(merged);
            assert_int_equal(merged->len, len);
            assert_memory_equal(bson_get_data(merged), doc, len);
            bson_destroy(merged);
         } else if (theirs) {
            m->opmsg_stricter++;
            if (error.code < OPMSG_ERR_COUNT_) {
               m->stricter_codes[error.code]++;
            }
         }
         tu_buf_free(&msg);
      }
      doc[i] = orig;
   }
   free(doc);
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static void
test_corpus(void **state)
{
   (void) state;
   name_list_t files;
   tally_t t;
   memset(&t, 0, sizeof t);
   list_corpus(&files);
   /* The README lists 34 files; losing some would hide cases. */
   assert_int_equal(files.count, 34);

   printf("decodeErrors, each as the body of an OP_MSG:\n");
   for (size_t i = 0; i < files.count; i++) {
      bson_t *corpus = load_corpus_file(files.names[i]);
      for_each_case(files.names[i], corpus, "valid", check_valid_case, &t);
      for_each_case(files.names[i], corpus, "decodeErrors", check_decode_error, &t);
      bson_destroy(corpus);
      bson_free(files.names[i]);
   }
   free(files.names);

   printf("bson corpus: %u valid accepted (+%u degenerate forms, %u "
          "duplicate-key bodies), %u decodeErrors rejected in full mode\n",
          t.valid, t.degenerate, t.duplicates, t.rejected);
   printf("bson corpus: as sequence documents: %u valid accepted, %u "
          "decodeErrors rejected\n",
          t.as_sequence, t.as_seq_rejected);
   printf("bson corpus: top-level mode: %u decodeErrors rejected (%u with a "
          "top-level defect), %u accepted (defects inside values)\n",
          t.default_rejected, t.top_defects, t.default_accepted);
   printf("bson corpus: full-mode error codes:");
   for (unsigned code = 1; code < OPMSG_ERR_COUNT_; code++) {
      if (t.codes[code]) {
         printf(" %s=%u", opmsg_error_name(code), t.codes[code]);
      }
   }
   printf("\n");

   assert_true(t.valid > 0);
   assert_true(t.rejected > 0);
   assert_int_equal(t.default_rejected + t.default_accepted, t.rejected);
}

static void
test_corpus_mutations(void **state)
{
   (void) state;
   name_list_t files;
   mutation_tally_t m;
   memset(&m, 0, sizeof m);
   list_corpus(&files);
   for (size_t i = 0; i < files.count; i++) {
      bson_t *corpus = load_corpus_file(files.names[i]);
      for_each_case(files.names[i], corpus, "valid", mutate_case, &m);
      bson_destroy(corpus);
      bson_free(files.names[i]);
   }
   free(files.names);
   printf("bson corpus mutations: %u tried, %u accepted in full mode, %u of "
          "them rejected by libbson, %u rejected only by opmsg\n",
          m.tried, m.accepted, m.libbson_stricter, m.opmsg_stricter);
   printf("bson corpus mutations rejected only by opmsg, by code:");
   for (unsigned code = 1; code < OPMSG_ERR_COUNT_; code++) {
      if (m.stricter_codes[code]) {
         printf(" %s=%u", opmsg_error_name(code), m.stricter_codes[code]);
      }
   }
   printf("\n");
   assert_true(m.tried > 0);
   assert_int_equal(m.libbson_stricter, 0);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus),
      cmocka_unit_test(test_corpus_mutations),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
