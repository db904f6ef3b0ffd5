/*
 * test_conformance.c - the wire rules as data: every vector of
 * tests/data/conformance/manifest.tsv, parsed as a reply at every check
 * level, gives the verdict the manifest states for that level ("ok" or the
 * rule's name, opmsg_error_name()). The fork's conformance check
 * (scripts/fork-conformance.sh) and the drop-in's
 * (scripts/dropin-conformance.sh) read the same files.
 *
 * An OP_COMPRESSED vector is decompressed and its inner message parsed with
 * the same options, as a client does. What a level accepts must merge.
 *
 * reply-cases.json holds the same vectors with the driver-neutral outcome
 * (what the OP_MSG specification has a driver do): test_neutral_cases()
 * parses each at the spec level and asserts "ok" with the merged document
 * byte for byte (the case's BSON, and its canonical Extended JSON read by
 * libbson to the same bytes) or "error"; "unspecified" cases are counted
 * and skipped.
 *
 * The manifest has one column a level, named as opmsg_check_name() names
 * it, in the order of the levels' values: spec (0, the default), top-level,
 * full.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r, opendir */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#define MAX_COLUMNS 8

/* The manifest's level columns, in its order. */
static const char *const level_names[] = {"spec", "top-level", "full"};
#define N_LEVELS (sizeof level_names / sizeof level_names[0])

/* The verdict of one message at one level: "ok" or a rule's name. When ok,
 * the merged document is checked to be framed. */
static const char *
verdict_at(const uint8_t *data, size_t len, opmsg_check_t check)
{
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_init(&opts);
   opts.check = check;
   opts.flags = OPMSG_PARSE_REPLY;
   if (!opmsg_parse(data, len, &opts, &msg, &error)) {
      assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
      return opmsg_error_name(error.code);
   }
   bson_t *merged;
   if (msg.opcode == OPMSG_OP_COMPRESSED) {
      opmsg_decompressed_t d;
      if (!opmsg_decompress_parse(&msg, &opts, &d, &error)) {
         return opmsg_error_name(error.code);
      }
      opmsg_decompressed_destroy(&d);
      merged = opmsg_merge_compressed(&msg, &opts, &error);
   } else {
      merged = opmsg_merge_bson(&msg, &error);
   }
   if (!merged) {
      fail_msg("accepted but did not merge: %s: %s", opmsg_error_name(error.code), error.message);
   }
   assert_true(merged->len >= 5);
   assert_int_equal(bson_get_data(merged)[merged->len - 1], 0);
   bson_destroy(merged);
   return "ok";
}

/* Splits line at tabs into at most MAX_COLUMNS columns (in place). */
static size_t
split_tabs(char *line, char **col)
{
   size_t n = 0;
   char *p = line;
   while (n < MAX_COLUMNS) {
      col[n++] = p;
      char *tab = strchr(p, '\t');
      if (!tab) {
         break;
      }
      *tab = '\0';
      p = tab + 1;
   }
   return n;
}

static void
test_manifest(void **state)
{
   (void) state;
   size_t len;
   uint8_t *text = tu_read_file("conformance/manifest.tsv", &len);
   char *buf = malloc(len + 1);
   memcpy(buf, text, len);
   buf[len] = '\0';
   free(text);

   /* Every column is a level of the library, in the order of the values. */
   opmsg_check_t checks[N_LEVELS];
   for (size_t i = 0; i < N_LEVELS; i++) {
      assert_true(opmsg_check_from_name(level_names[i], &checks[i]));
      assert_int_equal(checks[i], i);
   }
   assert_null(opmsg_check_name((opmsg_check_t) N_LEVELS));

   size_t vectors = 0, verdicts = 0, failures = 0;
   char *save = NULL;
   bool header = true;
   for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      char *col[MAX_COLUMNS];
      size_t n = split_tabs(line, col);
      if (header) {
         /* "# file", then the level columns in level_names' order. */
         assert_true(n >= 1 + N_LEVELS);
         for (size_t i = 0; i < N_LEVELS; i++) {
            assert_string_equal(col[1 + i], level_names[i]);
         }
         header = false;
         continue;
      }
      if (line[0] == '#' || line[0] == '\0') {
         continue;
      }
      assert_true(n >= 1 + N_LEVELS);
      size_t mlen;
      uint8_t *msg = tu_read_file(col[0], &mlen);
      vectors++;
      for (size_t i = 0; i < N_LEVELS; i++) {
         const char *got = verdict_at(msg, mlen, checks[i]);
         verdicts++;
         if (strcmp(got, col[1 + i]) != 0) {
            print_error("%s at %s: expected %s, got %s\n", col[0], level_names[i], col[1 + i], got);
            failures++;
         }
      }
      free(msg);
   }
   free(buf);
   print_message("conformance: %zu vectors, %zu verdicts asserted\n", vectors, verdicts);
   assert_true(vectors >= 50);
   assert_int_equal(failures, 0);
}

/* Every .bin of tests/data/conformance is in the manifest exactly once, and
 * every vector listed is one message of a reply's opcode. */
static void
test_vectors_listed(void **state)
{
   (void) state;
   size_t len;
   uint8_t *text = tu_read_file("conformance/manifest.tsv", &len);
   char *buf = malloc(len + 1);
   memcpy(buf, text, len);
   buf[len] = '\0';
   free(text);
   const char *names[1024];
   size_t n_names = 0;
   char *save = NULL;
   for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      if (line[0] == '#') {
         continue;
      }
      char *tab = strchr(line, '\t');
      assert_non_null(tab);
      *tab = '\0';
      for (size_t i = 0; i < n_names; i++) {
         assert_string_not_equal(names[i], line);
      }
      assert_true(n_names < sizeof names / sizeof names[0]);
      names[n_names++] = line;
      size_t mlen;
      uint8_t *msg = tu_read_file(line, &mlen);
      assert_true(mlen >= OPMSG_HEADER_SIZE);
      int32_t opcode = (int32_t) opmsg_read_u32(msg + 12);
      assert_true(opcode == OPMSG_OP_MSG || opcode == OPMSG_OP_COMPRESSED);
      free(msg);
   }

   DIR *dir = opendir(OPMSG_TEST_DATA "/conformance");
   assert_non_null(dir);
   size_t files = 0;
   for (struct dirent *e = readdir(dir); e; e = readdir(dir)) {
      size_t l = strlen(e->d_name);
      if (l < 4 || strcmp(e->d_name + l - 4, ".bin") != 0) {
         continue;
      }
      char rel[300];
      snprintf(rel, sizeof rel, "conformance/%s", e->d_name);
      bool found = false;
      for (size_t i = 0; i < n_names && !found; i++) {
         found = strcmp(names[i], rel) == 0;
      }
      if (!found) {
         fail_msg("%s is not in manifest.tsv", rel);
      }
      files++;
   }
   closedir(dir);
   free(buf);
   assert_true(files >= 50);
}


/* The merged document of one message accepted at check, decompressed first
 * when it is OP_COMPRESSED; NULL (and *error) when it is refused. */
static bson_t *
merged_at(const uint8_t *data, size_t len, opmsg_check_t check, bson_error_t *error)
{
   opmsg_options_t opts;
   opmsg_msg_t msg;
   opmsg_options_init(&opts);
   opts.check = check;
   opts.flags = OPMSG_PARSE_REPLY;
   if (!opmsg_parse(data, len, &opts, &msg, error)) {
      return NULL;
   }
   if (msg.opcode == OPMSG_OP_COMPRESSED) {
      return opmsg_merge_compressed(&msg, &opts, error);
   }
   return opmsg_merge_bson(&msg, error);
}

/* A string field of a case, which must be there. */
static const char *
case_str(const bson_t *c, const char *path)
{
   bson_iter_t it;
   if (!bson_iter_init(&it, c) || !bson_iter_find_descendant(&it, path, &it) || !BSON_ITER_HOLDS_UTF8(&it)) {
      fail_msg("a case without the string %s", path);
   }
   return bson_iter_utf8(&it, NULL);
}

/* One case of reply-cases.json against libopmsg at the spec level: 0 when
 * they agree, 1 when not (printed). *outcome is the case's. */
static int
check_neutral_case(const bson_t *c, opmsg_check_t spec, const char **outcome)
{
   const char *name = case_str(c, "name");
   *outcome = case_str(c, "outcome");
   if (strcmp(*outcome, "unspecified") == 0) {
      return 0;
   }
   size_t len, want_len;
   uint8_t *reply = tu_from_hex(case_str(c, "reply"), &len);
   bson_error_t error;
   bson_t *merged = merged_at(reply, len, spec, &error);
   free(reply);
   int bad = 0;
   if (strcmp(*outcome, "error") == 0) {
      if (merged) {
         print_error("%s: accepted, expected an error (%s)\n", name, case_str(c, "error"));
         bad = 1;
      }
   } else {
      assert_string_equal(*outcome, "ok");
      uint8_t *want = tu_from_hex(case_str(c, "merged.bson"), &want_len);
      bson_t *ejson = bson_new_from_json((const uint8_t *) case_str(c, "merged.canonical_extjson"), -1, &error);
      if (!ejson || ejson->len != want_len || memcmp(bson_get_data(ejson), want, want_len) != 0) {
         print_error("%s: the canonical Extended JSON is not the case's BSON\n", name);
         bad = 1;
      }
      if (!merged) {
         print_error("%s: refused (%s), expected ok\n", name, error.message);
         bad = 1;
      } else if (merged->len != want_len || memcmp(bson_get_data(merged), want, want_len) != 0) {
         char *got = bson_as_canonical_extended_json(merged, NULL);
         print_error("%s: merged to %s, expected %s\n", name, got, case_str(c, "merged.canonical_extjson"));
         bson_free(got);
         bad = 1;
      }
      if (ejson) {
         bson_destroy(ejson);
      }
      free(want);
   }
   if (merged) {
      bson_destroy(merged);
   }
   return bad;
}

static void
test_neutral_cases(void **state)
{
   (void) state;
   opmsg_check_t spec;
   assert_true(opmsg_check_from_name("spec", &spec));
   size_t len;
   uint8_t *text = tu_read_file("conformance/reply-cases.json", &len);
   bson_error_t error;
   bson_t *doc = bson_new_from_json(text, (ssize_t) len, &error);
   if (!doc) {
      fail_msg("reply-cases.json: %s", error.message);
   }
   free(text);
   bson_iter_t it, cases;
   assert_true(bson_iter_init_find(&it, doc, "cases") && bson_iter_recurse(&it, &cases));
   size_t n = 0, failures = 0, counts[3] = {0, 0, 0};
   while (bson_iter_next(&cases)) {
      const uint8_t *data;
      uint32_t dlen;
      bson_t c;
      bson_iter_document(&cases, &dlen, &data);
      assert_true(bson_init_static(&c, data, dlen));
      const char *outcome;
      failures += (size_t) check_neutral_case(&c, spec, &outcome);
      counts[strcmp(outcome, "ok") == 0 ? 0 : strcmp(outcome, "error") == 0 ? 1 : 2]++;
      n++;
   }
   bson_destroy(doc);
   print_message("reply-cases.json: %zu cases, %zu ok and %zu error asserted, %zu unspecified\n", n, counts[0],
                 counts[1], counts[2]);
   assert_true(counts[0] >= 50 && counts[1] >= 50);
   assert_int_equal(failures, 0);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manifest),
      cmocka_unit_test(test_vectors_listed),
      cmocka_unit_test(test_neutral_cases),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
