/*
 * test_checksum.c - CRC-32C, ISA-L and the portable table against the check
 * value and against each other.
 */
#include "testutil.h"

#include <string.h>

static void
test_check_value(void **state)
{
   (void) state;
   assert_int_equal(opmsg_crc32c(0, "123456789", 9), 0xE3069283u);
   assert_int_equal(opmsg_crc32c_portable(0, "123456789", 9), 0xE3069283u);
   assert_int_equal(opmsg_crc32c(0, "", 0), 0);
   /* 32 zero bytes: a second published CRC-32C check value (RFC 3720). */
   uint8_t zeros[32] = {0};
   assert_int_equal(opmsg_crc32c(0, zeros, 32), 0x8A9136AAu);
   uint8_t ones[32];
   memset(ones, 0xFF, sizeof ones);
   assert_int_equal(opmsg_crc32c_portable(0, ones, 32), 0x62A8AB43u);
}

static void
test_implementations_agree(void **state)
{
   (void) state;
   uint8_t buf[4099];
   uint32_t x = 12345;
   for (size_t i = 0; i < sizeof buf; i++) {
      x = x * 1103515245u + 12345u;
      buf[i] = (uint8_t) (x >> 16);
   }
   /* Every length and misalignment up to a few blocks. */
   for (size_t off = 0; off < 9; off++) {
      for (size_t len = 0; len + off < sizeof buf; len += (len < 80 ? 1 : 97)) {
         assert_int_equal(opmsg_crc32c(0, buf + off, len), opmsg_crc32c_portable(0, buf + off, len));
      }
   }
   /* Running CRCs over pieces equal the CRC of the whole. */
   uint32_t whole = opmsg_crc32c(0, buf, sizeof buf);
   uint32_t run = 0;
   for (size_t i = 0; i < sizeof buf; i += 333) {
      size_t n = sizeof buf - i < 333 ? sizeof buf - i : 333;
      run = opmsg_crc32c(run, buf + i, n);
   }
   assert_int_equal(run, whole);
   assert_int_equal(opmsg_crc32c_portable(opmsg_crc32c_portable(0, buf, 100), buf + 100, sizeof buf - 100), whole);
}

/* The portable table is a constant in the source: every entry is derived
 * here again from the reflected Castagnoli polynomial, bit by bit. */
static void
test_table_from_polynomial(void **state)
{
   (void) state;
   const uint32_t poly = 0x82F63B78u;
   for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) {
         c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
      }
      assert_int_equal(opmsg_crc32c_table[0][i], c);
      /* Row t is row t - 1 advanced over one more zero byte. */
      for (int t = 1; t < 8; t++) {
         uint32_t prev = opmsg_crc32c_table[t - 1][i];
         for (int k = 0; k < 8; k++) {
            prev = (prev & 1) ? (prev >> 1) ^ poly : prev >> 1;
         }
         assert_int_equal(opmsg_crc32c_table[t][i], prev);
      }
   }
}

static void
test_real_vectors(void **state)
{
   (void) state;
   /* FerretDB's captured messages carry checksums made by MongoDB. */
   const char *files[] = {"thirdparty/ferretdb_multisection_insert_crc.bin",
                          "thirdparty/ferretdb_multisection_update_crc.bin"};
   const uint32_t want[] = {0x6790b7e2u, 0xaed1fcf1u};
   for (size_t i = 0; i < 2; i++) {
      size_t len;
      uint8_t *data = tu_read_file(files[i], &len);
      assert_int_equal(opmsg_crc32c(0, data, len - 4), want[i]);
      opmsg_msg_t msg;
      bson_error_t error;
      assert_true(opmsg_parse(data, len, NULL, &msg, &error));
      assert_int_equal(msg.checksum, want[i]);
      free(data);
   }
   assert_true(strcmp(opmsg_crc32c_implementation(), "isa-l") == 0 ||
               strcmp(opmsg_crc32c_implementation(), "portable") == 0);
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_value),
      cmocka_unit_test(test_implementations_agree),
      cmocka_unit_test(test_table_from_polynomial),
      cmocka_unit_test(test_real_vectors),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
