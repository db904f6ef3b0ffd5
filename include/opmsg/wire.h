/*
 * wire.h - the wire's vocabulary: where each opcode's fields lie, and reads
 * of them bounded by the bytes given.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Included by opmsg.h. For programs that describe messages whatever their
 * state (a dump, a tap, a proxy's log, a test double): opmsg_parse() gives a
 * valid message's fields in opmsg_msg_t; these name and read them in bytes
 * opmsg_parse() refused, or has not seen yet, as far as the bytes go. The
 * library itself, its libmongoc drop-in and its tools use the same names.
 * Since 0.4.0; the functions are in symbol version OPMSG_0.4.
 */
#ifndef OPMSG_WIRE_H
#define OPMSG_WIRE_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Offsets from a message's first byte. Every field is a little-endian
 * int32 unless said otherwise.
 * ------------------------------------------------------------------------- */

/* The header, every opcode (OPMSG_HEADER_SIZE bytes). */
#define OPMSG_OFF_MESSAGE_LENGTH 0
#define OPMSG_OFF_REQUEST_ID 4
#define OPMSG_OFF_RESPONSE_TO 8
#define OPMSG_OFF_OPCODE 12

/* OP_MSG: flagBits (uint32), then the sections, then with
 * OPMSG_FLAG_CHECKSUM_PRESENT the CRC-32C in the last OPMSG_CHECKSUM_SIZE
 * bytes. */
#define OPMSG_OFF_FLAG_BITS 16
#define OPMSG_OFF_SECTIONS 20
#define OPMSG_CHECKSUM_SIZE 4

/* An OP_MSG section, from its kind byte: a body (kind 0), whose document
 * follows the kind byte and whose length is the section's size; or a
 * document sequence (kind 1): its size (counting itself, not the kind
 * byte), then the identifier and its NUL, then the documents. */
#define OPMSG_SECTION_BODY 0
#define OPMSG_SECTION_SEQUENCE 1
#define OPMSG_SECTION_OFF_SIZE 1
#define OPMSG_SECTION_OFF_IDENTIFIER 5

/* OP_REPLY: responseFlags (uint32), cursorID (int64), startingFrom,
 * numberReturned, then the documents. */
#define OPMSG_OFF_RESPONSE_FLAGS 16
#define OPMSG_OFF_CURSOR_ID 20
#define OPMSG_OFF_STARTING_FROM 28
#define OPMSG_OFF_NUMBER_RETURNED 32
#define OPMSG_OFF_REPLY_DOCUMENTS 36

/* OP_QUERY: flags (uint32), fullCollectionName (a C string), then
 * numberToSkip and numberToReturn right after its NUL, then the query and
 * the optional returnFieldsSelector. The removed opcodes have their
 * fullCollectionName at the same offset (after a ZERO or flags field). */
#define OPMSG_OFF_QUERY_FLAGS 16
#define OPMSG_OFF_FULL_COLLECTION_NAME 20

/* OP_COMPRESSED: originalOpcode, uncompressedSize, compressorId (one byte),
 * then the compressed bytes at OPMSG_COMPRESSED_OVERHEAD (compress.h). */
#define OPMSG_OFF_ORIGINAL_OPCODE 16
#define OPMSG_OFF_UNCOMPRESSED_SIZE 20
#define OPMSG_OFF_COMPRESSOR_ID 24

/* ---------------------------------------------------------------------------
 * Bounded reads. Each reads only inside data[0..len), allocates nothing
 * and checks nothing beyond that; opmsg_parse() says whether the message
 * keeps the rules.
 * ------------------------------------------------------------------------- */

/* The little-endian int32 at data[offset..offset + 4): 0 when those bytes
 * do not all lie inside data[0..len). Read a uint32 field (flagBits,
 * responseFlags) by converting. Since 0.4.0. */
OPMSG_EXPORT int32_t opmsg_wire_i32(const uint8_t *data, size_t len, size_t offset);

/* The little-endian int64 at data[offset..offset + 8) (OP_REPLY's cursorID):
 * 0 when those bytes do not all lie inside data[0..len). Since 0.4.0. */
OPMSG_EXPORT int64_t opmsg_wire_i64(const uint8_t *data, size_t len, size_t offset);

/* The bytes the OP_MSG section at data[offset] takes, its kind byte
 * included, when it is whole: its kind 0 or 1, and its size at least 5 and
 * inside data[0..len) (len: where the sections end, before a checksum). 0
 * otherwise, and for an offset at or past len. A lenient step that frames a
 * section and looks no further inside it: for walking a message's sections
 * as far as its bytes go, which opmsg_parse() does not (it names the rule a
 * section breaks instead). Since 0.4.0. */
OPMSG_EXPORT size_t opmsg_wire_section(const uint8_t *data, size_t len, size_t offset);

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_WIRE_H */
