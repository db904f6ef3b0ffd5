/*
 * fuzz_compressed.c - OP_COMPRESSED: framing, the four codecs, and what is
 * inside.
 *
 * Input: one control byte (fuzz_options_from_byte()), then the message
 * (seeds: every vector wrapped with noop, snappy, zlib and zstd).
 *
 * Properties:
 *  - refusals are well-formed opmsg errors, and the three ways to decompress
 *    (into a buffer, into a new buffer, decompress+parse / merge_compressed)
 *    agree on success and on the error;
 *  - no allocation exceeds the message size limit, the rebuilt message is
 *    exactly 16 + uncompressedSize bytes with the OP_COMPRESSED header's IDs
 *    and the original opcode, and nothing is leaked;
 *  - an inner message that parses satisfies fuzz_check_accepted(), and its
 *    merge equals opmsg_merge_compressed();
 *  - compressing the rebuilt message again with the same codec stays within
 *    opmsg_compress_bound() and decompresses to the same bytes (or is
 *    refused only for the commands that must never be compressed).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* Codec working memory that goes through bson_malloc (zlib's state). */
#define CODEC_SLACK (512u * 1024u)

static size_t
limit_of(const opmsg_options_t *opts)
{
   return opts->max_message_size ? opts->max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
}

static void
check_rebuilt_header(const opmsg_msg_t *msg, const uint8_t *data, size_t len)
{
   FUZZ_CHECK(len == 16 + (size_t) msg->op_compressed.uncompressed_size);
   FUZZ_CHECK(fuzz_u32(data) == len);
   FUZZ_CHECK((int32_t) fuzz_u32(data + 4) == msg->request_id);
   FUZZ_CHECK((int32_t) fuzz_u32(data + 8) == msg->response_to);
   FUZZ_CHECK((int32_t) fuzz_u32(data + 12) == msg->op_compressed.original_opcode);
}

/* Compress the rebuilt message again; it must come back unchanged. */
static void
check_round_trip(const opmsg_msg_t *outer, const uint8_t *plain, size_t len, const opmsg_msg_t *inner,
                 const opmsg_options_t *opts)
{
   bson_error_t error;
   size_t packed_len = 0;
   uint8_t *packed =
      opmsg_compress(plain, len, outer->op_compressed.compressor_id, OPMSG_COMPRESS_DEFAULT_LEVEL, &packed_len, &error);
   if (!packed) {
      fuzz_check_error(&error);
      /* The spec level leave the body's elements unread: its first key,
       * which names the command the compressor must know, may be unsound. */
      FUZZ_CHECK_MSG(
         (error.code == OPMSG_ERR_COMPRESSION_FORBIDDEN && !opmsg_compression_allowed(opmsg_command_name(inner))) ||
            (fuzz_frames_only(opts) && error.code == OPMSG_ERR_DOCUMENT_ELEMENT),
         "compressing a valid message failed: %s", error.message);
      return;
   }
   FUZZ_CHECK(packed_len <= opmsg_compress_bound(len, outer->op_compressed.compressor_id));

   opmsg_options_t lenient;
   opmsg_options_init(&lenient);
   opmsg_msg_t again;
   FUZZ_CHECK_MSG(opmsg_parse(packed, packed_len, &lenient, &again, &error), "our own OP_COMPRESSED does not parse: %s",
                  error.message);
   FUZZ_CHECK(again.opcode == OPMSG_OP_COMPRESSED &&
              again.op_compressed.compressor_id == outer->op_compressed.compressor_id);
   size_t back_len = 0;
   uint8_t *back = opmsg_decompress(&again, &back_len, &error);
   FUZZ_CHECK_MSG(back != NULL, "our own OP_COMPRESSED does not decompress: %s", error.message);
   FUZZ_CHECK(back_len == len && memcmp(back, plain, len) == 0);
   bson_free(back);
   bson_free(packed);
}

/* The decompressed message parsed: compare with opmsg_merge_compressed(). */
static void
check_inner(const opmsg_msg_t *outer, const opmsg_options_t *opts, const uint8_t *plain, size_t len)
{
   bson_error_t error, error2;
   opmsg_msg_t direct;
   bool direct_ok = opmsg_parse(plain, len, opts, &direct, &error);

   opmsg_decompressed_t d;
   bool ok = opmsg_decompress_parse(outer, opts, &d, &error2);
   FUZZ_CHECK_MSG(ok == direct_ok, "decompress_parse (%d) and parse (%d) disagree", (int) ok, (int) direct_ok);
   bson_t *merged = opmsg_merge_compressed(outer, opts, &error2);
   if (!ok) {
      fuzz_check_error(&error2);
      FUZZ_CHECK(d.data == NULL);
      FUZZ_CHECK(error2.code == error.code);
      FUZZ_CHECK(merged == NULL && error2.code == error.code);
      return;
   }
   FUZZ_CHECK(d.len == len && memcmp(d.data, plain, len) == 0);
   FUZZ_CHECK(d.inner.opcode == outer->op_compressed.original_opcode);

   size_t merged_len = 0;
   uint8_t *expect = fuzz_check_accepted(&d.inner, opts, &merged_len);
   fuzz_check_reencode(&d.inner, opts, expect, merged_len);
   if (expect) {
      FUZZ_CHECK_MSG(merged != NULL, "merge_compressed fails: %s", error2.message);
      FUZZ_CHECK(merged->len == merged_len && memcmp(bson_get_data(merged), expect, merged_len) == 0);
   } else {
      FUZZ_CHECK(merged == NULL && error2.code == OPMSG_ERR_WRONG_OPCODE);
   }
   free(expect);
   bson_destroy(merged);

   check_round_trip(outer, plain, len, &d.inner, opts);
   opmsg_decompressed_destroy(&d);
   FUZZ_CHECK(d.data == NULL);
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

   opmsg_msg_t msg;
   bson_error_t error;
   if (!opmsg_parse(data + 1, size - 1, &opts, &msg, &error)) {
      fuzz_check_error(&error);
      return 0;
   }
   if (msg.opcode != OPMSG_OP_COMPRESSED) {
      FUZZ_CHECK(opmsg_decompressed_size(&msg) == 0);
      FUZZ_CHECK(opmsg_decompress(&msg, NULL, &error) == NULL);
      FUZZ_CHECK(error.code == OPMSG_ERR_WRONG_OPCODE);
      return 0;
   }
   /* parse bounded uncompressedSize before anything was allocated. */
   size_t total = opmsg_decompressed_size(&msg);
   FUZZ_CHECK(total == 16 + (size_t) msg.op_compressed.uncompressed_size);
   FUZZ_CHECK(total <= limit_of(&opts));
   FUZZ_CHECK(msg.op_compressed.compressor_id <= OPMSG_COMPRESSOR_ZSTD);

   fuzz_mem_stats_t mem;
   size_t len = 0;
   fuzz_mem_begin();
   uint8_t *plain = opmsg_decompress(&msg, &len, &error);
   fuzz_mem_end(&mem);
   FUZZ_CHECK_MSG(mem.largest <= total + CODEC_SLACK, "decompress allocated %zu bytes at once for a %zu-byte result",
                  mem.largest, total);

   /* Into a caller's buffer of exactly the size: the same outcome. */
   uint8_t *buf = malloc(total);
   FUZZ_CHECK(buf != NULL);
   size_t written = 0;
   bson_error_t error2;
   bool into_ok = opmsg_decompress_into(&msg, buf, total, &written, &error2);
   FUZZ_CHECK_MSG(into_ok == (plain != NULL), "decompress and decompress_into disagree");
   if (!plain) {
      fuzz_check_error(&error);
      FUZZ_CHECK(error2.code == error.code);
      FUZZ_CHECK(mem.live_delta == 0);
      opmsg_decompressed_t d;
      FUZZ_CHECK(!opmsg_decompress_parse(&msg, &opts, &d, &error2));
      FUZZ_CHECK(error2.code == error.code && d.data == NULL);
      FUZZ_CHECK(opmsg_merge_compressed(&msg, &opts, &error2) == NULL);
      FUZZ_CHECK(error2.code == error.code);
      free(buf);
      return 0;
   }
   FUZZ_CHECK(len == total && written == total);
   FUZZ_CHECK_MSG(mem.live_delta == total, "decompress keeps %zu bytes for a %zu-byte result", mem.live_delta, total);
   FUZZ_CHECK(memcmp(buf, plain, total) == 0);
   check_rebuilt_header(&msg, plain, len);
   FUZZ_CHECK(!opmsg_decompress_into(&msg, buf, total - 1, &written, &error2));
   FUZZ_CHECK(error2.code == OPMSG_ERR_BUFFER_TOO_SMALL);
   free(buf);

   check_inner(&msg, &opts, plain, len);
   bson_free(plain);
   return 0;
}
