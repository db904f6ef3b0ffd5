/*
 * test_find_nul.c - opmsg_find_nul(), the key scan of every element walk,
 * in whichever form this build compiled: SSE2 on x86-64, eight bytes at a
 * time as a little-endian number otherwise (OPMSG_SIMD=OFF, and every
 * big-endian machine; `make check-portable` runs both). Each answer is
 * compared with a byte-by-byte scan, for every start alignment in sixteen,
 * every length up to a hundred bytes, and the bytes the wide forms can
 * mistake for a zero (0x01, 0x80, 0xFF beside it, before and after).
 */
#include "testutil.h"

#include <string.h>

#define BUF 112

static const uint8_t *
first_nul(const uint8_t *k)
{
   while (*k) {
      k++;
   }
   return k;
}

static void
test_finds_the_first_nul(void **state)
{
   (void) state;
   static const uint8_t fills[] = {0x01, 0x80, 0xFF, 0x7F, 'a', 0x81, 0xFE, 0x02};
   const size_t nf = sizeof fills;
   uint8_t buf[BUF];
   const uint8_t *end = buf + BUF - 1;

   for (size_t start = 0; start < 16; start++) {
      for (size_t len = 0; start + len < BUF - 1; len++) {
         for (size_t f = 0; f < nf; f++) {
            /* The key's bytes, then its NUL, then zeros and 0x01s. */
            for (size_t i = 0; i < BUF; i++) {
               buf[i] = fills[(i + f) % nf];
            }
            for (size_t i = start + len; i < BUF; i += 2) {
               buf[i] = 0;
            }
            buf[BUF - 1] = 0;
            const uint8_t *want = first_nul(buf + start);
            const uint8_t *got = opmsg_find_nul(buf + start, end);
            if (got != want) {
               fail_msg("start %zu, length %zu, fill %zu: found %td, the first NUL is at %td", start, len, f, got - buf,
                        want - buf);
            }
         }
      }
   }
}

/* No NUL before end: the answer is end (its terminator). */
static void
test_none_before_end(void **state)
{
   (void) state;
   uint8_t buf[BUF];
   for (size_t start = 0; start < 16; start++) {
      memset(buf, 0x01, sizeof buf);
      buf[BUF - 1] = 0;
      assert_ptr_equal(opmsg_find_nul(buf + start, buf + BUF - 1), buf + BUF - 1);
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finds_the_first_nul),
      cmocka_unit_test(test_none_before_end),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
