/*
 * codec-snappy.c - OP_COMPRESSED with snappy (compressorId 1).
 */
#include "opmsg-codec.h"

#include <snappy-c.h>

static bool
snappy_check_size(const uint8_t *src, size_t src_len, size_t usize, bson_error_t *error)
{
   size_t declared;

   if (snappy_uncompressed_length((const char *) src, src_len, &declared) != SNAPPY_OK) {
      return opmsg_codec_fail_payload(error, "snappy", "has no valid length preamble");
   }
   if (declared != usize) {
      return opmsg_codec_fail_declared(error, "snappy", declared, usize);
   }
   return true;
}

/* snappy_uncompress() rejects corrupt input by itself, so the separate
 * validation pass snappy offers would only read the stream twice. The
 * declared length was compared with uncompressedSize before the output was
 * allocated (snappy_check_size). */
static bool
snappy_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, bson_error_t *error)
{
   size_t out = dst_len;

   if (snappy_uncompress((const char *) src, src_len, (char *) dst, &out) != SNAPPY_OK) {
      return opmsg_codec_fail_payload(error, "snappy", "is corrupt or truncated");
   }
   if (out != dst_len) {
      return opmsg_codec_fail_size(error, "snappy", "another number of bytes", dst_len);
   }
   return true;
}

static size_t
snappy_bound(size_t src_len)
{
   return snappy_max_compressed_length(src_len);
}

static opmsg_codec_rc_t
snappy_encode(int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len, bson_error_t *error)
{
   (void) level;
   /* snappy refuses any buffer smaller than its bound. */
   if (*dst_len < snappy_max_compressed_length(src_len)) {
      return OPMSG_CODEC_NO_ROOM;
   }
   if (snappy_compress((const char *) src, src_len, (char *) dst, dst_len) != SNAPPY_OK) {
      opmsg_fail(error, OPMSG_ERR_COMPRESS, "snappy failed");
      return OPMSG_CODEC_FAILED;
   }
   return OPMSG_CODEC_DONE;
}

const opmsg_codec_t opmsg_codec_snappy = {snappy_check_size, snappy_decode, snappy_bound, NULL, snappy_encode};
