/*
 * codec-zlib.c - OP_COMPRESSED with zlib (compressorId 2).
 */
#include "opmsg-codec.h"

#define ZLIB_CONST
#include <zlib.h>

/* zlib's working memory goes through libbson's allocator, so an
 * application's bson_mem_set_vtable() sees it, and running out of it
 * aborts as every bson_malloc() does: zlib never reports Z_MEM_ERROR. */
static voidpf
zlib_alloc(voidpf opaque, uInt items, uInt size)
{
   (void) opaque;
   return bson_malloc((size_t) items * size);
}

static void
zlib_free(voidpf opaque, voidpf address)
{
   (void) opaque;
   bson_free(address);
}

static void
zlib_stream_init(z_stream *zs)
{
   memset(zs, 0, sizeof *zs);
   zs->zalloc = zlib_alloc;
   zs->zfree = zlib_free;
}

/* Deflate cannot expand input by more than about 1032:1; anything claiming
 * more is a lie, whatever the stream holds. zlib's stream does not say its
 * size, so that ratio is the only bound before decompressing. */
#define ZLIB_MAX_RATIO 1032u

static bool
zlib_check_size(const uint8_t *src, size_t src_len, size_t usize, bson_error_t *error)
{
   (void) src;
   if (usize / ZLIB_MAX_RATIO > src_len) {
      return opmsg_fail(error, OPMSG_ERR_UNCOMPRESSED_SIZE,
                        "uncompressedSize %zu at offset %d is more than %u times the %zu-byte zlib payload: no "
                        "deflate stream expands that far",
                        usize, OPMSG_OFF_UNCOMPRESSED_SIZE, ZLIB_MAX_RATIO, src_len);
   }
   return true;
}

/* After the output is full, finds out whether the stream has more to give
 * (then it is longer than uncompressedSize) or just ends. */
static int
zlib_drain(z_stream *zs, bool *longer)
{
   uint8_t extra;
   int rc;

   zs->next_out = &extra;
   zs->avail_out = 1;
   rc = inflate(zs, Z_FINISH);
   *longer = zs->avail_out == 0;
   return rc;
}
static bool
zlib_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, bson_error_t *error)
{
   z_stream zs;
   bool longer = false;
   bool ok = false;
   int rc;

   zlib_stream_init(&zs);
   /* Its memory cannot fail (zlib_alloc); a zlib of another version can. */
   rc = inflateInit(&zs);
   if (rc != Z_OK) {
      return opmsg_fail(error, OPMSG_ERR_DECOMPRESS, "zlib: cannot initialise the inflater (%d)", rc);
   }
   /* Both sizes are below 2 GiB: they come from int32 fields. */
   zs.next_in = src;
   zs.avail_in = (uInt) src_len;
   zs.next_out = dst;
   zs.avail_out = (uInt) dst_len;
   rc = inflate(&zs, Z_FINISH);
   if (rc != Z_STREAM_END && zs.avail_out == 0) {
      rc = zlib_drain(&zs, &longer);
   }
   if (longer) {
      opmsg_codec_fail_size(error, "zlib", "more bytes", dst_len);
   } else if (rc == Z_STREAM_END && zs.total_out != dst_len) {
      opmsg_codec_fail_size(error, "zlib", "fewer bytes", dst_len);
   } else if (rc == Z_STREAM_END && zs.avail_in != 0) {
      opmsg_fail(error, OPMSG_ERR_DECOMPRESS,
                 "zlib payload has %u bytes after the end of its stream "
                 "at offset %zu",
                 (unsigned) zs.avail_in, OPMSG_COMPRESSED_OVERHEAD + src_len - zs.avail_in);
   } else if (rc == Z_STREAM_END) {
      ok = true;
   } else if (rc == Z_BUF_ERROR) {
      opmsg_fail(error, OPMSG_ERR_DECOMPRESS,
                 "zlib payload at offset %d is truncated: it ends after "
                 "%lu of %zu bytes",
                 OPMSG_COMPRESSED_OVERHEAD, zs.total_out, dst_len);
   } else {
      opmsg_fail(error, OPMSG_ERR_DECOMPRESS, "zlib payload is corrupt near offset %zu: %s",
                 OPMSG_COMPRESSED_OVERHEAD + src_len - zs.avail_in, zs.msg ? zs.msg : "bad data");
   }
   inflateEnd(&zs);
   return ok;
}


static size_t
zlib_bound(size_t src_len)
{
   /* deflate with the default window and memory level, as used here,
    * stays within compressBound() at every level. */
   return (size_t) compressBound((uLong) src_len);
}

static bool
zlib_level_ok(int level)
{
   return level >= -1 && level <= 9;
}

static opmsg_codec_rc_t
zlib_encode(int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len, bson_error_t *error)
{
   z_stream zs;
   int rc;

   zlib_stream_init(&zs);
   rc = deflateInit(&zs, level);
   if (rc != Z_OK) {
      opmsg_fail(error, OPMSG_ERR_COMPRESS, "zlib: cannot initialise the deflater (%d)", rc);
      return OPMSG_CODEC_FAILED;
   }
   zs.next_in = src;
   zs.avail_in = (uInt) src_len;
   zs.next_out = dst;
   zs.avail_out = (uInt) BSON_MIN(*dst_len, (size_t) UINT32_MAX);
   rc = deflate(&zs, Z_FINISH);
   *dst_len = zs.total_out;
   deflateEnd(&zs);
   if (rc == Z_STREAM_END) {
      return OPMSG_CODEC_DONE;
   }
   if (rc == Z_OK || rc == Z_BUF_ERROR) {
      return OPMSG_CODEC_NO_ROOM;
   }
   opmsg_fail(error, OPMSG_ERR_COMPRESS, "zlib deflate failed (%d)", rc);
   return OPMSG_CODEC_FAILED;
}

const opmsg_codec_t opmsg_codec_zlib = {zlib_check_size, zlib_decode, zlib_bound, zlib_level_ok, zlib_encode};
