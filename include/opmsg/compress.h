/*
 * opmsg/compress.h - included by <opmsg/opmsg.h>; do not include it on its own.
 *
 * OP_COMPRESSED (opcode 2012) in both directions, with the codecs the wire
 * protocol defines: noop (0), snappy (1), zlib (2) and zstd (3). noop is
 * always there; snappy, zlib and zstd each only when libopmsg was built with
 * it (CMake's OPMSG_WITH_SNAPPY, _ZLIB, _ZSTD: AUTO, ON or OFF, as
 * libmongoc's ENABLE_SNAPPY, ...; Debian's packages have all three).
 * opmsg_compressor_available() says which this build has (and
 * `opmsg --version` on its "codecs:" line); a message that uses a codec the
 * build lacks still parses (its framing is the wire's), and every function
 * below refuses it with OPMSG_ERR_COMPRESSOR_UNAVAILABLE, before anything
 * is allocated.
 *
 *   header(16) | int32 originalOpcode | int32 uncompressedSize |
 *   uint8 compressorId | compressed bytes
 *
 * The compressed bytes are the original message without its 16-byte header;
 * uncompressedSize is their length once decompressed. requestID and
 * responseTo are carried by the OP_COMPRESSED header itself.
 *
 * Receiving: opmsg_parse() checks the framing and, before anything is
 * allocated, everything that decides how much memory decompressing takes:
 * originalOpcode must be OP_MSG, OP_QUERY or OP_REPLY
 * (OPMSG_ERR_NESTED_COMPRESSION for OP_COMPRESSED,
 * OPMSG_ERR_BAD_ORIGINAL_OPCODE otherwise), compressorId must be 0-3
 * (OPMSG_ERR_UNKNOWN_COMPRESSOR), and uncompressedSize must be at least the
 * original opcode's smallest body and 16 + uncompressedSize at most the
 * message size limit (OPMSG_ERR_UNCOMPRESSED_SIZE). The payload is only
 * checked by the functions below, which decompress with the compressorId
 * given in the message (never a negotiated one) and fail unless the codec
 * produces exactly uncompressedSize bytes.
 *
 * Sending: opmsg_compress_into() wraps a complete message. It refuses the
 * commands the spec says must never be compressed (see
 * opmsg_compression_allowed()).
 *
 * Codec working memory: zlib's (about 40 KB) is allocated through
 * bson_malloc(), which aborts when memory runs out as libbson does; zstd's
 * comes from malloc() (OPMSG_ERR_NO_MEMORY when that fails), snappy's from
 * C++'s new (which ends the process when memory runs out). When decompressing
 * it does not depend on the message (zstd: about 100 KB); when compressing,
 * zstd's grows with the level and the input, as ZSTD_compress()'s does.
 */
#ifndef OPMSG_COMPRESS_H
#define OPMSG_COMPRESS_H

#ifdef __cplusplus
extern "C" {
#endif

/* compressorId values. 4-255 are reserved and always rejected. */
#define OPMSG_COMPRESSOR_NOOP 0 /* the bytes as they are; for tests */
#define OPMSG_COMPRESSOR_SNAPPY 1
#define OPMSG_COMPRESSOR_ZLIB 2
#define OPMSG_COMPRESSOR_ZSTD 3

/* The fixed part of an OP_COMPRESSED message: header, originalOpcode,
 * uncompressedSize, compressorId (wire.h); the compressed bytes begin
 * there. 25. */
#define OPMSG_COMPRESSED_OVERHEAD (OPMSG_OFF_COMPRESSOR_ID + 1)

/* The level argument of the compressors meaning "the codec's default". */
#define OPMSG_COMPRESS_DEFAULT_LEVEL (-1)

/* ---------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------- */

/* The handshake name of a compressor id ("noop", "snappy", "zlib", "zstd"),
 * or NULL for a reserved id. Static string. */
OPMSG_EXPORT const char *opmsg_compressor_name(int compressor_id);

/* The id for a handshake name, exactly as the handshake spells it ("zstd"),
 * or -1 for any other name (including "none" and NULL). */
OPMSG_EXPORT int opmsg_compressor_from_name(const char *name);

/* True when this build can (de)compress with this id: always for noop (0),
 * for snappy, zlib and zstd when libopmsg was built with them; false for
 * reserved ids. A message that uses an id this says false for (0-3) still
 * parses, and is OPMSG_ERR_COMPRESSOR_UNAVAILABLE to the functions below. */
OPMSG_EXPORT bool opmsg_compressor_available(int compressor_id);

/* ---------------------------------------------------------------------------
 * Decompression
 *
 * msg must be an OP_COMPRESSED message filled by opmsg_parse(): its
 * uncompressedSize was bounded there, and these functions trust that bound.
 * The rebuilt original message is
 *   header (16 + uncompressedSize, requestID, responseTo, originalOpcode)
 *   followed by the decompressed payload.
 * Errors common to all of them:
 *  - OPMSG_ERR_INVALID_ARGUMENT: msg is NULL;
 *  - OPMSG_ERR_WRONG_OPCODE: msg is not OP_COMPRESSED;
 *  - OPMSG_ERR_NESTED_COMPRESSION / OPMSG_ERR_BAD_ORIGINAL_OPCODE: a
 *    hand-filled msg whose originalOpcode opmsg_parse() would have refused;
 *  - OPMSG_ERR_UNKNOWN_COMPRESSOR: a reserved compressorId;
 *  - OPMSG_ERR_COMPRESSOR_UNAVAILABLE: a codec this build lacks;
 *  - OPMSG_ERR_UNCOMPRESSED_SIZE: the codec produced more or fewer bytes than
 *    uncompressedSize (for noop: the payload is not uncompressedSize long),
 *    or a snappy/zstd stream declares another size;
 *  - OPMSG_ERR_DECOMPRESS: the stream is corrupt or truncated, or has bytes
 *    after its end;
 *  - OPMSG_ERR_NO_MEMORY: zstd could not get its working memory.
 * ------------------------------------------------------------------------- */

/* The size of the rebuilt message, 16 + uncompressedSize; 0 when msg is not
 * an OP_COMPRESSED message with a valid uncompressedSize. */
OPMSG_EXPORT size_t opmsg_decompressed_size(const opmsg_msg_t *msg);

/*
 * Writes the rebuilt message into buf[0..buf_len). Allocates nothing beyond
 * the codec's working memory. Never writes past buf_len: fails with
 * OPMSG_ERR_BUFFER_TOO_SMALL (writing nothing) when buf_len is less than
 * opmsg_decompressed_size(msg). On success *written (if not NULL) is
 * opmsg_decompressed_size(msg). On failure buf's contents are unspecified.
 * The result is not parsed: pass it to opmsg_parse().
 */
OPMSG_EXPORT bool opmsg_decompress_into(const opmsg_msg_t *msg, uint8_t *buf, size_t buf_len, size_t *written,
                                        bson_error_t *error);

/*
 * The rebuilt message in a new buffer of exactly opmsg_decompressed_size(msg)
 * bytes, made with one bson_malloc(); free it with bson_free(). *len (if not
 * NULL) is its size. NULL with *error set on failure (nothing is leaked).
 */
OPMSG_EXPORT uint8_t *opmsg_decompress(const opmsg_msg_t *msg, size_t *len, bson_error_t *error);

/* A decompressed and parsed message: the rebuilt bytes and the opmsg_msg_t
 * that points into them. Use inner with every function of opmsg.h (views,
 * opmsg_merged_size(), opmsg_merge_into(), ...). */
typedef struct {
   uint8_t *data; /* the rebuilt message, owned (bson_malloc) */
   size_t len;
   opmsg_msg_t inner; /* parsed from data */
} opmsg_decompressed_t;

/*
 * Decompresses msg and parses the result with opts (may be NULL) into *out:
 * one bson_malloc() of 16 + uncompressedSize bytes, checked first against
 * opts' message size limit (OPMSG_ERR_UNCOMPRESSED_SIZE). The inner message
 * must satisfy every rule of opmsg_parse() for its opcode (its errors are
 * returned as they are). On failure nothing is allocated and *out is
 * zeroed. Release with opmsg_decompressed_destroy().
 */
OPMSG_EXPORT bool opmsg_decompress_parse(const opmsg_msg_t *msg, const opmsg_options_t *opts, opmsg_decompressed_t *out,
                                         bson_error_t *error);

/* Frees what opmsg_decompress_parse() allocated and zeroes *d. NULL and a
 * zeroed *d are fine. */
OPMSG_EXPORT void opmsg_decompressed_destroy(opmsg_decompressed_t *d);

/*
 * Decompresses, parses (with opts, may be NULL) and merges an OP_COMPRESSED
 * message in one go: the decompression buffer is the only copy of the
 * message made, the merge reads from it straight into the result, and it is
 * freed before returning. Returns a new bson_t made by opmsg_merge_bson()
 * (writable; bson_destroy() frees it), or NULL with *error set:
 * the errors of opmsg_decompress_parse() and of opmsg_merge_bson().
 */
OPMSG_EXPORT bson_t *opmsg_merge_compressed(const opmsg_msg_t *msg, const opmsg_options_t *opts, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Compression
 * ------------------------------------------------------------------------- */

/*
 * False when a message whose command is command_name must never be
 * compressed: hello, isMaster (any case: ismaster, ISMASTER, ...), saslStart,
 * saslContinue, getnonce, authenticate, createUser, updateUser,
 * copydbSaslStart, copydbgetnonce and copydb, compared case-insensitively.
 * True for every other name, and for NULL (a message without a command).
 */
OPMSG_EXPORT bool opmsg_compression_allowed(const char *command_name);

/*
 * The largest OP_COMPRESSED message that compressing a message of msg_len
 * bytes with compressor_id can give (overhead included): the size of `out`
 * that opmsg_compress_into() never runs short of. 0 for a reserved id, a
 * codec this build lacks, or msg_len below 16.
 */
OPMSG_EXPORT size_t opmsg_compress_bound(size_t msg_len, int compressor_id);

/*
 * Wraps the complete message msg[0..msg_len) (OP_MSG, OP_QUERY or OP_REPLY;
 * its messageLength must equal msg_len) as OP_COMPRESSED with the same
 * requestID and responseTo, compressed with compressor_id, into
 * out[0..out_cap). Reads msg only; allocates only the codec's working memory.
 *
 * level: zlib -1 (default) to 9; zstd OPMSG_COMPRESS_DEFAULT_LEVEL or 0 for
 * its default, otherwise ZSTD_minCLevel() to ZSTD_maxCLevel(); ignored by
 * noop and snappy.
 *
 * The command is found without a full parse: the first key of the OP_MSG
 * body (wherever the kind-0 section is) or of the OP_QUERY query; replies
 * have none. Errors:
 *  - OPMSG_ERR_INVALID_ARGUMENT: NULL pointers, or a level out of range;
 *  - OPMSG_ERR_UNKNOWN_COMPRESSOR: a reserved compressor_id;
 *  - OPMSG_ERR_COMPRESSOR_UNAVAILABLE: a codec this build lacks;
 *  - OPMSG_ERR_TRUNCATED / OPMSG_ERR_LENGTH_MISMATCH: msg_len below 16 or
 *    not messageLength;
 *  - OPMSG_ERR_NESTED_COMPRESSION: msg is already OP_COMPRESSED;
 *  - OPMSG_ERR_BAD_ORIGINAL_OPCODE: any other opcode;
 *  - OPMSG_ERR_NO_BODY or OPMSG_ERR_DOCUMENT_LENGTH: the body (query) cannot
 *    be found or its first key runs past it;
 *  - OPMSG_ERR_COMPRESSION_FORBIDDEN: opmsg_compression_allowed() is false
 *    for the command;
 *  - OPMSG_ERR_BUFFER_TOO_SMALL: out_cap is too small for the result. noop
 *    and zlib need only the size of the result; snappy and zstd may refuse
 *    anything below opmsg_compress_bound(), which always suffices;
 *  - OPMSG_ERR_OUTPUT_TOO_LARGE: the result would exceed 2 GiB - 1;
 *  - OPMSG_ERR_COMPRESS: the codec failed;
 *  - OPMSG_ERR_NO_MEMORY: zstd could not get its working memory.
 * On success *out_len (if not NULL) is the size written.
 */
OPMSG_EXPORT bool opmsg_compress_into(const uint8_t *msg, size_t msg_len, int compressor_id, int level, uint8_t *out,
                                      size_t out_cap, size_t *out_len, bson_error_t *error);

/*
 * As opmsg_compress_into(), into a new buffer of opmsg_compress_bound()
 * bytes (one bson_malloc(); free it with bson_free()). *out_len (if not
 * NULL) is the size of the message in it. NULL with *error set on failure.
 */
OPMSG_EXPORT uint8_t *opmsg_compress(const uint8_t *msg, size_t msg_len, int compressor_id, int level, size_t *out_len,
                                     bson_error_t *error);

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_COMPRESS_H */
