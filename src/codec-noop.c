/*
 * codec-noop.c - the noop compressor: the bytes as they are; always built.
 */
#include "opmsg-codec.h"

static bool
noop_check_size(const uint8_t *src, size_t src_len, size_t usize, bson_error_t *error)
{
   (void) src;
   if (src_len != usize) {
      return opmsg_codec_fail_size(error, "noop", src_len > usize ? "more bytes" : "fewer bytes", usize);
   }
   return true;
}

static bool
noop_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, bson_error_t *error)
{
   if (src_len != dst_len) {
      return opmsg_codec_fail_size(error, "noop", src_len > dst_len ? "more bytes" : "fewer bytes", dst_len);
   }
   memcpy(dst, src, dst_len);
   return true;
}

static size_t
noop_bound(size_t src_len)
{
   return src_len;
}

static opmsg_codec_rc_t
noop_encode(int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len, bson_error_t *error)
{
   (void) level;
   (void) error;
   if (*dst_len < src_len) {
      return OPMSG_CODEC_NO_ROOM;
   }
   memcpy(dst, src, src_len);
   *dst_len = src_len;
   return OPMSG_CODEC_DONE;
}

const opmsg_codec_t opmsg_codec_noop = {noop_check_size, noop_decode, noop_bound, NULL, noop_encode};
