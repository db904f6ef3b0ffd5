/*
 * test_names.c - opmsg_opcode_name() and opmsg_flag_name(): every name, and
 * NULL everywhere else.
 *
 * The names are a contract (`opmsg dump` and `opmsg tap` print them, scripts
 * match on them), so the expected tables are written out here in full rather
 * than derived from the library's.
 */
#include "testutil.h"

#include <string.h>

/* call says which call gave got, for the failure message. */
static void
assert_name(const char *got, const char *want, const char *call)
{
   if (want == NULL && got == NULL) {
      return;
   }
   if (want == NULL || got == NULL || strcmp(got, want) != 0) {
      fail_msg("%s: got %s, want %s", call, got ? got : "NULL", want ? want : "NULL");
   }
}

/* Every name, written out: bit -1 stands for the opcode itself. */
static const struct {
   int32_t opcode;
   int bit;
   const char *name;
} names[] = {
   {1, -1, "OP_REPLY"},
   {2001, -1, "OP_UPDATE"},
   {2002, -1, "OP_INSERT"},
   {2004, -1, "OP_QUERY"},
   {2005, -1, "OP_GET_MORE"},
   {2006, -1, "OP_DELETE"},
   {2007, -1, "OP_KILL_CURSORS"},
   {2012, -1, "OP_COMPRESSED"},
   {2013, -1, "OP_MSG"},
   {2013, 0, "checksumPresent"},
   {2013, 1, "moreToCome"},
   {2013, 16, "exhaustAllowed"},
   {2013, 17, "documentSequencesAllowed"},
   {2004, 1, "tailableCursor"},
   {2004, 2, "slaveOk"},
   {2004, 3, "oplogReplay"},
   {2004, 4, "noCursorTimeout"},
   {2004, 5, "awaitData"},
   {2004, 6, "exhaust"},
   {2004, 7, "partial"},
   {1, 0, "cursorNotFound"},
   {1, 1, "queryFailure"},
   {1, 2, "shardConfigStale"},
   {1, 3, "awaitCapable"},
};

/* The name the table gives, NULL for none. */
static const char *
expected(int32_t opcode, int bit)
{
   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      if (names[i].opcode == opcode && names[i].bit == bit) {
         return names[i].name;
      }
   }
   return NULL;
}

static void
test_opcode_names(void **state)
{
   (void) state;
   /* Every value around the defined ones, 2003 (unnamed) included. */
   for (int32_t op = -100; op <= 2100; op++) {
      char call[64];

      bson_snprintf(call, sizeof call, "opmsg_opcode_name(%d)", (int) op);
      assert_name(opmsg_opcode_name(op), expected(op, -1), call);
   }
   assert_null(opmsg_opcode_name(INT32_MIN));
   assert_null(opmsg_opcode_name(INT32_MAX));
   assert_null(opmsg_opcode_name(2003));
   /* The constants name the same opcodes. */
   assert_string_equal(opmsg_opcode_name(OPMSG_OP_MSG), "OP_MSG");
   assert_string_equal(opmsg_opcode_name(OPMSG_OP_COMPRESSED), "OP_COMPRESSED");
   assert_string_equal(opmsg_opcode_name(OPMSG_OP_QUERY), "OP_QUERY");
   assert_string_equal(opmsg_opcode_name(OPMSG_OP_REPLY), "OP_REPLY");
   assert_string_equal(opmsg_opcode_name(OPMSG_OP_KILL_CURSORS), "OP_KILL_CURSORS");
}

static void
test_flag_names(void **state)
{
   (void) state;
   /* Every bit (and some past 31) of every opcode, named or not. */
   for (int32_t op = -1; op <= 2100; op++) {
      for (unsigned bit = 0; bit < 40; bit++) {
         char call[64];

         bson_snprintf(call, sizeof call, "opmsg_flag_name(%d, %u)", (int) op, bit);
         assert_name(opmsg_flag_name(op, bit), expected(op, (int) bit), call);
      }
   }
   assert_null(opmsg_flag_name(OPMSG_OP_MSG, UINT32_MAX));
   assert_null(opmsg_flag_name(INT32_MIN, 0));
   /* The OP_MSG flag constants are the bits of those names. */
   assert_string_equal(opmsg_flag_name(OPMSG_OP_MSG, 0), "checksumPresent");
   assert_int_equal(OPMSG_FLAG_CHECKSUM_PRESENT, 1u << 0);
   assert_int_equal(OPMSG_FLAG_MORE_TO_COME, 1u << 1);
   assert_int_equal(OPMSG_FLAG_EXHAUST_ALLOWED, 1u << 16);
   assert_int_equal(OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED, 1u << 17);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_opcode_names),
      cmocka_unit_test(test_flag_names),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
