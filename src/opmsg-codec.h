/*
 * opmsg-codec.h - what compress.c asks of each OP_COMPRESSED codec: one
 * table of functions per compressorId, each codec in a file of its own
 * (codec-noop.c, codec-snappy.c, codec-zlib.c, codec-zstd.c), built only
 * when its library is (OPMSG_WITH_SNAPPY, _ZLIB, _ZSTD in CMakeLists.txt).
 *
 * Not installed.
 */
#ifndef OPMSG_CODEC_H
#define OPMSG_CODEC_H

#include "opmsg-common.h"

/* What compressing did; OPMSG_CODEC_NO_ROOM lets the caller say whose room ran
 * out (compress.c). */
typedef enum { OPMSG_CODEC_DONE, OPMSG_CODEC_NO_ROOM, OPMSG_CODEC_FAILED } opmsg_codec_rc_t;

typedef struct {
   /* Before a byte is allocated for the output: whether the payload's own
    * account of its size agrees with uncompressedSize (usize), so that a
    * small message cannot make opmsg allocate up to the size limit for
    * nothing. */
   bool (*check_size)(const uint8_t *src, size_t src_len, size_t usize, bson_error_t *error);
   /* Exactly dst_len bytes from src, or an error. */
   bool (*decode)(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, bson_error_t *error);
   /* The most compressing src_len bytes can give. */
   size_t (*bound)(size_t src_len);
   /* Whether the codec takes this level; NULL: it ignores the level. */
   bool (*level_ok)(int level);
   /* Compresses src into dst[0..*dst_len); *dst_len becomes the size
    * written. */
   opmsg_codec_rc_t (*encode)(int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len,
                              bson_error_t *error);
} opmsg_codec_t;

/* A payload that decompresses to another size than uncompressedSize
 * (usize): OPMSG_ERR_UNCOMPRESSED_SIZE, "more bytes", "fewer bytes"... as
 * what, in every codec's words. Always false. */
bool opmsg_codec_fail_size(bson_error_t *error, const char *codec, const char *what, size_t usize);

/* A payload the codec cannot read: OPMSG_ERR_DECOMPRESS, "<codec> payload
 * at offset 25 <what>". Always false. */
bool opmsg_codec_fail_payload(bson_error_t *error, const char *codec, const char *what);

/* A payload whose own account of its size (declared) is not
 * uncompressedSize (usize): OPMSG_ERR_UNCOMPRESSED_SIZE. Always false. */
bool opmsg_codec_fail_declared(bson_error_t *error, const char *codec, unsigned long long declared, size_t usize);

/* The codecs: noop always, the others when built (compress.c's table). */
extern const opmsg_codec_t opmsg_codec_noop;
extern const opmsg_codec_t opmsg_codec_snappy;
extern const opmsg_codec_t opmsg_codec_zlib;
extern const opmsg_codec_t opmsg_codec_zstd;

#endif /* OPMSG_CODEC_H */
