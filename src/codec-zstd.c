/*
 * codec-zstd.c - OP_COMPRESSED with zstd (compressorId 3).
 */
#include "opmsg-codec.h"

#include <zstd.h>
#include <zstd_errors.h>

/* zstd's working memory comes from its own malloc(), which can fail
 * without aborting: the one OPMSG_ERR_NO_MEMORY (docs/design.md). True
 * when that is what n says. */
static bool
zstd_out_of_memory(size_t n, bson_error_t *error)
{
   if (ZSTD_getErrorCode(n) != ZSTD_error_memory_allocation) {
      return false;
   }
   opmsg_fail(error, OPMSG_ERR_NO_MEMORY, "zstd: out of memory");
   return true;
}

/* A frame may leave its size out; then the overrun is found while
 * decompressing, into exactly usize bytes. */
static bool
zstd_check_size(const uint8_t *src, size_t src_len, size_t usize, bson_error_t *error)
{
   unsigned long long frame = ZSTD_getFrameContentSize(src, src_len);

   if (frame == ZSTD_CONTENTSIZE_ERROR) {
      return opmsg_codec_fail_payload(error, "zstd", "is not a zstd frame");
   }
   if (frame != ZSTD_CONTENTSIZE_UNKNOWN && frame != usize) {
      return opmsg_codec_fail_declared(error, "zstd", frame, usize);
   }
   return true;
}

static bool
zstd_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, bson_error_t *error)
{
   size_t n = ZSTD_decompress(dst, dst_len, src, src_len);

   if (ZSTD_isError(n)) {
      if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
         return opmsg_codec_fail_size(error, "zstd", "more bytes", dst_len);
      }
      if (zstd_out_of_memory(n, error)) {
         return false;
      }
      return opmsg_fail(error, OPMSG_ERR_DECOMPRESS,
                        "zstd payload at offset %d is corrupt or truncated: "
                        "%s",
                        OPMSG_COMPRESSED_OVERHEAD, ZSTD_getErrorName(n));
   }
   if (n != dst_len) {
      return opmsg_codec_fail_size(error, "zstd", "fewer bytes", dst_len);
   }
   return true;
}

static size_t
zstd_bound(size_t src_len)
{
   return ZSTD_compressBound(src_len);
}

static bool
zstd_level_ok(int level)
{
   return level == OPMSG_COMPRESS_DEFAULT_LEVEL || (level >= ZSTD_minCLevel() && level <= ZSTD_maxCLevel());
}

static opmsg_codec_rc_t
zstd_encode(int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len, bson_error_t *error)
{
   size_t n = ZSTD_compress(dst, *dst_len, src, src_len, level == OPMSG_COMPRESS_DEFAULT_LEVEL ? 0 : level);

   if (!ZSTD_isError(n)) {
      *dst_len = n;
      return OPMSG_CODEC_DONE;
   }
   if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
      return OPMSG_CODEC_NO_ROOM;
   }
   if (!zstd_out_of_memory(n, error)) {
      opmsg_fail(error, OPMSG_ERR_COMPRESS, "zstd failed: %s", ZSTD_getErrorName(n));
   }
   return OPMSG_CODEC_FAILED;
}

const opmsg_codec_t opmsg_codec_zstd = {zstd_check_size, zstd_decode, zstd_bound, zstd_level_ok, zstd_encode};
