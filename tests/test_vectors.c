/*
 * test_vectors.c - the third-party vectors and the real driver captures
 * behave as tests/data/thirdparty/manifest.tsv and captures/README.md say.
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

typedef enum { ACCEPT, REJECT, PLACEHOLDER_CRC } expect_t;

/* The manifest's "expected" column, file by file. */
static const struct {
   const char *file;
   expect_t expect;
   opmsg_error_code_t code; /* for REJECT and PLACEHOLDER_CRC */
   int32_t opcode;
} manifest[] = {
   {"ferretdb_handshake1.bin", ACCEPT, 0, OPMSG_OP_QUERY},
   {"ferretdb_handshake2.bin", ACCEPT, 0, OPMSG_OP_REPLY},
   {"ferretdb_handshake3.bin", ACCEPT, 0, OPMSG_OP_QUERY},
   {"ferretdb_handshake4.bin", ACCEPT, 0, OPMSG_OP_REPLY},
   {"ferretdb_handshake5.bin", ACCEPT, 0, OPMSG_OP_MSG},
   {"ferretdb_handshake6.bin", ACCEPT, 0, OPMSG_OP_MSG},
   {"ferretdb_import.bin", ACCEPT, 0, OPMSG_OP_MSG},
   {"ferretdb_multisection_insert_crc.bin", ACCEPT, 0, OPMSG_OP_MSG},
   {"ferretdb_multisection_update_crc.bin", ACCEPT, 0, OPMSG_OP_MSG},
   {"ferretdb_invalid_checksum.bin", REJECT, OPMSG_ERR_CHECKSUM_MISMATCH, OPMSG_OP_MSG},
   {"ferretdb_msg_fuzz1_invalid.bin", REJECT, OPMSG_ERR_REQUIRED_FLAGS, OPMSG_OP_MSG},
   {"mcdrpc_op_msg_kind_0.bin", PLACEHOLDER_CRC, OPMSG_ERR_CHECKSUM_MISMATCH, OPMSG_OP_MSG},
   {"mcdrpc_op_msg_kind_1_single.bin", PLACEHOLDER_CRC, OPMSG_ERR_CHECKSUM_MISMATCH, OPMSG_OP_MSG},
   {"mcdrpc_op_msg_kind_1_multiple.bin", PLACEHOLDER_CRC, OPMSG_ERR_CHECKSUM_MISMATCH, OPMSG_OP_MSG},
   {"mcdrpc_op_compressed.bin", ACCEPT, 0, OPMSG_OP_COMPRESSED},
   {"mcdrpc_op_query.bin", ACCEPT, 0, OPMSG_OP_QUERY},
   {"mcdrpc_op_reply.bin", ACCEPT, 0, OPMSG_OP_REPLY},
   {"mcdrpc_op_update.bin", ACCEPT, 0, OPMSG_OP_UPDATE},
   {"mcdrpc_op_insert.bin", ACCEPT, 0, OPMSG_OP_INSERT},
   {"mcdrpc_op_get_more.bin", ACCEPT, 0, OPMSG_OP_GET_MORE},
   {"mcdrpc_op_delete.bin", ACCEPT, 0, OPMSG_OP_DELETE},
   {"mcdrpc_op_kill_cursors.bin", ACCEPT, 0, OPMSG_OP_KILL_CURSORS},
};
#define N_MANIFEST (sizeof manifest / sizeof manifest[0])

static void
check_merge(const opmsg_msg_t *msg)
{
   bson_error_t error;
   if (msg->opcode != OPMSG_OP_MSG && msg->opcode != OPMSG_OP_QUERY &&
       !(msg->opcode == OPMSG_OP_REPLY && msg->op_reply.number_returned == 1)) {
      return;
   }
   bson_t *merged = opmsg_merge_bson(msg, &error);
   assert_non_null(merged);
   assert_true(bson_validate(merged, BSON_VALIDATE_NONE, NULL));
   if (msg->opcode == OPMSG_OP_MSG) {
      bson_t rebuilt;
      tu_view_to_bson(msg, &rebuilt);
      assert_true(bson_equal(&rebuilt, merged));
      bson_destroy(&rebuilt);
   }
   bson_destroy(merged);
}

static void
test_thirdparty_manifest(void **state)
{
   (void) state;
   for (size_t i = 0; i < N_MANIFEST; i++) {
      char path[128];
      size_t len;
      opmsg_msg_t msg;
      bson_error_t error;
      opmsg_options_t opts;
      snprintf(path, sizeof path, "thirdparty/%s", manifest[i].file);
      uint8_t *data = tu_read_file(path, &len);
      opmsg_options_init(&opts);
      bool ok = opmsg_parse(data, len, NULL, &msg, &error);
      if (manifest[i].expect == ACCEPT) {
         if (!ok) {
            fail_msg("%s: %s", manifest[i].file, error.message);
         }
         assert_int_equal(msg.opcode, manifest[i].opcode);
         check_merge(&msg);
         /* Full validation accepts them too. */
         opts.flags = OPMSG_PARSE_FULL_VALIDATE;
         assert_true(opmsg_parse(data, len, &opts, &msg, &error));
      } else {
         assert_false(ok);
         assert_int_equal(error.code, manifest[i].code);
      }
      if (manifest[i].expect == PLACEHOLDER_CRC) {
         /* "Structure ok; CRC wrong by design": fine once the CRC is not checked. */
         opts.flags = OPMSG_PARSE_SKIP_CHECKSUM;
         if (!opmsg_parse(data, len, &opts, &msg, &error)) {
            fail_msg("%s: %s", manifest[i].file, error.message);
         }
         assert_true(msg.checksum_present);
         assert_int_equal(msg.checksum, 0x11223344u); /* bytes 44 33 22 11 */
         check_merge(&msg);
      }
      free(data);
   }
}

static void
test_manifest_covers_every_file(void **state)
{
   (void) state;
   DIR *dir = opendir(OPMSG_TEST_DATA "/thirdparty");
   struct dirent *de;
   size_t bins = 0;
   assert_non_null(dir);
   while ((de = readdir(dir))) {
      size_t n = strlen(de->d_name);
      if (n < 4 || strcmp(de->d_name + n - 4, ".bin") != 0) {
         continue;
      }
      bool listed = false;
      for (size_t i = 0; i < N_MANIFEST; i++) {
         listed |= strcmp(manifest[i].file, de->d_name) == 0;
      }
      if (!listed) {
         fail_msg("%s has no expectation", de->d_name);
      }
      bins++;
   }
   closedir(dir);
   assert_int_equal(bins, N_MANIFEST);
}

static void
test_multiple_sequences_vector(void **state)
{
   (void) state;
   /* mongo-c-driver's annotated message: body {kind: 0}, sequences "first"
    * (1 doc) and "second" (2 docs). */
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_msg_kind_1_multiple.bin", &len);
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_init(&opts);
   opts.flags = OPMSG_PARSE_SKIP_CHECKSUM;
   assert_true(opmsg_parse(data, len, &opts, &msg, &error));
   assert_int_equal(msg.n_sequences, 2);
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   char *json = bson_as_relaxed_extended_json(merged, NULL);
   assert_string_equal(json, "{ \"kind\" : 0, \"first\" : [ { \"kind\" : 1 } ], "
                             "\"second\" : [ { \"index\" : 0 }, { \"index\" : 1 } ] }");
   bson_free(json);
   bson_destroy(merged);
   free(data);
}

typedef struct {
   size_t messages;
   size_t queries;
   size_t sequences;
   size_t rejected;
   opmsg_error_code_t code;
} capture_stats_t;

static void
capture_message(const uint8_t *data, size_t len, void *ctx)
{
   capture_stats_t *st = ctx;
   opmsg_msg_t msg;
   bson_error_t error;
   st->messages++;
   if (!opmsg_parse(data, len, NULL, &msg, &error)) {
      st->rejected++;
      st->code = (opmsg_error_code_t) error.code;
      return;
   }
   st->queries += msg.opcode == OPMSG_OP_QUERY;
   st->sequences += msg.n_sequences;
   check_merge(&msg);
}

static void
test_captures(void **state)
{
   (void) state;
   DIR *dir = opendir(OPMSG_TEST_DATA "/captures");
   struct dirent *de;
   size_t files = 0, clashes = 0;
   assert_non_null(dir);
   while ((de = readdir(dir))) {
      size_t n = strlen(de->d_name);
      if (n < 4 || strcmp(de->d_name + n - 4, ".bin") != 0) {
         continue;
      }
      char path[sizeof de->d_name + 16];
      size_t len;
      capture_stats_t st = {0};
      snprintf(path, sizeof path, "captures/%s", de->d_name);
      uint8_t *data = tu_read_file(path, &len);
      tu_for_each_message(data, len, capture_message, &st);
      assert_true(st.messages > 0);
      bool c2s = strstr(de->d_name, "_c2s") != NULL;
      bool mockseq = strncmp(de->d_name, "mockseq_", 8) == 0;
      if (c2s) {
         /* Every client opens with a legacy OP_QUERY isMaster. */
         assert_true(st.queries >= 1);
         assert_int_equal(st.rejected, 0);
      } else if (mockseq) {
         /* A find reply whose cursor.firstBatch sequence clashes with the
          * body's own cursor.firstBatch is refused, and nothing else. */
         assert_true(st.rejected <= 1);
         if (st.rejected) {
            assert_int_equal(st.code, OPMSG_ERR_IDENTIFIER_CLASH);
            clashes++;
         }
      } else {
         assert_int_equal(st.rejected, 0);
      }
      /* libmongoc and pymongo send insert_many as a "documents" sequence. */
      if (c2s && (strstr(de->d_name, "mongoc") || strstr(de->d_name, "pymongo_c2")) && !mockseq) {
         assert_true(st.sequences >= 1);
      }
      free(data);
      files++;
   }
   closedir(dir);
   assert_true(files >= 20);
   /* The libmongoc and pymongo finds against the clashing server. */
   assert_int_equal(clashes, 2);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thirdparty_manifest),
      cmocka_unit_test(test_manifest_covers_every_file),
      cmocka_unit_test(test_multiple_sequences_vector),
      cmocka_unit_test(test_captures),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
