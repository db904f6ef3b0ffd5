/*
 * fuzz_parse.c - one wire message: parse, merge (buffer and bson_t), view.
 *
 * Input: one control byte (see fuzz_options_from_byte(); bits 5-7 pick where
 * the CRC-32C is split in two), then the message.
 *
 * Properties, beyond "no crash, no leak, no out-of-bounds access":
 *  - a refusal is a well-formed opmsg error, and opmsg_parse_with_offset()
 *    gives the same verdict with an offset inside the message (its length
 *    when it accepts);
 *  - parsing allocates nothing that outlives it, and nothing out of
 *    proportion to the input;
 *  - an accepted message satisfies fuzz_check_accepted() (merges agree,
 *    bson_validate() passes under full validation, the view rebuilt with
 *    bson_append_* equals the merge, iterators agree with the counts);
 *  - whatever the strict options accept, the most lenient options (default
 *    limits, the spec check level, checksum skipped) accept too, with the
 *    same merged bytes; what they accept that the strict ones refuse meets
 *    the same properties at the spec level;
 *  - an accepted OP_MSG encoded again by the encoder (opmsg/build.h) has
 *    the same length, parses with the same options and merges the same;
 *  - the CRC-32C is the same in one piece or two, and the same as the
 *    portable implementation.
 */
#include "harness.h"

#include "opmsg-checksum.h"

#include <stdlib.h>
#include <string.h>

static void
check_crc(uint8_t control, const uint8_t *msg, size_t len)
{
   size_t split = len * ((control >> 5) & 7u) / 7u;
   uint32_t whole = opmsg_crc32c(0, msg, len);
   uint32_t pieces = opmsg_crc32c(opmsg_crc32c(0, msg, split), msg + split, len - split);
   FUZZ_CHECK(whole == pieces);
   FUZZ_CHECK(whole == opmsg_crc32c_portable(0, msg, len));
}

static bool
same_options(const opmsg_options_t *a, const opmsg_options_t *b)
{
   return a->flags == b->flags && a->max_message_size == b->max_message_size && a->max_bson_size == b->max_bson_size &&
          a->check == b->check;
}

/* What strict options accept, lenient ones (default limits, checksum
 * skipped, the spec level) accept with the same merge. What strict
 * options refuse (strict_ok false), the lenient ones may accept: then the
 * spec level is held to fuzz_check_accepted() and the encoder too. */
static void
check_lenient(const uint8_t *data, size_t len, const opmsg_options_t *strict, bool strict_ok, const uint8_t *merged,
              size_t merged_len)
{
   opmsg_options_t lenient;
   opmsg_options_init(&lenient);
   lenient.flags = OPMSG_PARSE_SKIP_CHECKSUM;
   lenient.check = OPMSG_CHECK_SPEC;
   if (same_options(strict, &lenient)) {
      return;
   }

   opmsg_msg_t msg;
   bson_error_t error;
   bool ok = opmsg_parse(data, len, &lenient, &msg, &error);
   if (!strict_ok) {
      if (!ok) {
         fuzz_check_error(&error);
         return;
      }
      size_t len2 = 0;
      uint8_t *merged2 = fuzz_check_accepted(&msg, &lenient, &len2);
      fuzz_check_reencode(&msg, &lenient, merged2, len2);
      free(merged2);
      return;
   }
   FUZZ_CHECK_MSG(ok, "accepted with flags 0x%x at the %s level, refused by lenient options: %s", strict->flags,
                  opmsg_check_name(strict->check), error.message);
   size_t len2 = 0;
   uint8_t *merged2 = fuzz_check_accepted(&msg, &lenient, &len2);
   FUZZ_CHECK((merged == NULL) == (merged2 == NULL));
   if (merged) {
      FUZZ_CHECK_MSG(len2 == merged_len && memcmp(merged, merged2, len2) == 0,
                     "strict and lenient options merge differently");
   }
   free(merged2);
}

/* opmsg_parse_with_offset() agrees with opmsg_parse() (ok, error) and puts
 * the fault inside the message, at most at its end (a missing checksum). */
static void
check_offset(const uint8_t *msg, size_t len, const opmsg_options_t *opts, bool ok, const bson_error_t *error)
{
   opmsg_msg_t again;
   bson_error_t error2;
   size_t offset = SIZE_MAX;
   bool ok2 = opmsg_parse_with_offset(msg, len, opts, &again, &offset, &error2);
   FUZZ_CHECK(ok2 == ok);
   if (ok) {
      FUZZ_CHECK(offset == len);
      return;
   }
   FUZZ_CHECK_MSG(error2.code == error->code && offset <= len, "offset %zu of %zu for %s", offset, len,
                  opmsg_error_name(error2.code));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   fuzz_init();
   if (size < 1) {
      return 0;
   }
   opmsg_options_t opts;
   fuzz_options_from_byte(data[0], &opts);
   const uint8_t *msg = data + 1;
   size_t len = size - 1;

   check_crc(data[0], msg, len);

   opmsg_msg_t parsed;
   bson_error_t error;
   fuzz_mem_stats_t mem;
   fuzz_mem_begin();
   bool ok = opmsg_parse(msg, len, &opts, &parsed, &error);
   fuzz_mem_end(&mem);
   FUZZ_CHECK_MSG(mem.live_delta == 0, "parse leaves %zu bytes allocated", mem.live_delta);
   /* Only a duplicate-key table for large bodies is allowed: bounded by the
    * number of keys, hence by the input. */
   FUZZ_CHECK_MSG(mem.largest <= 16 * len + 65536, "parse of %zu bytes allocated %zu bytes at once", len, mem.largest);
   check_offset(msg, len, &opts, ok, &error);
   if (!ok) {
      fuzz_check_error(&error);
      check_lenient(msg, len, &opts, false, NULL, 0);
      return 0;
   }

   size_t merged_len = 0;
   uint8_t *merged = fuzz_check_accepted(&parsed, &opts, &merged_len);
   check_lenient(msg, len, &opts, true, merged, merged_len);
   fuzz_check_reencode(&parsed, &opts, merged, merged_len);
   free(merged);
   return 0;
}
