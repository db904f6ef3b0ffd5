/*
 * opmsg.h - MongoDB OP_MSG wire protocol: parse, validate, merge, view.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * This is the one header a program includes, and with the headers it
 * includes at the end it is libopmsg's API reference: it documents every
 * function (what it reads, what it writes, who owns memory, which errors it
 * gives), every type and every constant. The parts added after the engine
 * live in those headers and are documented there in the same way:
 * opmsg/wire.h (the wire's field offsets), opmsg/compress.h (OP_COMPRESSED),
 * opmsg/build.h (encoding, batch splitting), opmsg/legacy.h (OP_QUERY /
 * OP_REPLY) and opmsg/reader.h (the stream reader). Do not include them on
 * their own. docs/api.md is a short guide to the order of the calls.
 *
 * Linking: `cc app.c $(pkg-config --cflags --libs opmsg)`, or CMake's
 * find_package(opmsg CONFIG REQUIRED) and the target opmsg::opmsg (the
 * static library: opmsg::opmsg_static). The shared library is
 * libopmsg.so.2 (.so.1 from 0.3.0 to 0.4, .so.0 until 0.2.0); it exports
 * only the opmsg_* functions, each under the symbol version of the release
 * that introduced it (src/libopmsg.map): OPMSG_0.1 unless its comment says
 * "Since 0.x.0 (symbol version OPMSG_0.x)".
 *
 * Conventions (the same as libbson's):
 *  - Every input buffer is `const`; opmsg never writes into a buffer it was
 *    handed to read.
 *  - Functions that can fail return bool (or NULL) and fill an optional
 *    `bson_error_t *error` whose domain is OPMSG_ERROR_DOMAIN and whose code
 *    is an opmsg_error_code_t naming the violated rule. The message says what
 *    was wrong and at which byte offset of the message;
 *    opmsg_parse_with_offset() also gives that offset as a number.
 *  - No global state. Nothing allocates unless its documentation says so,
 *    and never more than the message's limits allow, checked first.
 *    Allocations go through libbson's bson_malloc() family, so an
 *    application's bson_mem_set_vtable() applies, and follow libbson's
 *    policy: running out of memory aborts the process, so no function
 *    reports a failed allocation of its own. Only zstd's working memory
 *    (opmsg/compress.h) comes from its own malloc(): OPMSG_ERR_NO_MEMORY
 *    when that fails.
 *  - Error messages print the message's identifiers and keys escaped and
 *    shortened: a hostile message cannot put control characters into a log.
 *  - Zero copy: an opmsg_msg_t and everything read through it (bodies,
 *    sequences, documents, identifiers, names) point into the caller's
 *    message bytes, which must stay alive and unchanged while in use.
 *  - Threads: no function keeps state between calls except in the objects
 *    the caller passes; different threads may use different objects at
 *    once, and a parsed opmsg_msg_t may be read from several threads at
 *    once. A stream reader is used by one thread at a time.
 *  - Preconditions: functions that return a status check their pointer
 *    arguments (OPMSG_ERR_INVALID_ARGUMENT). The view and iterator functions
 *    return plain values and need a non-NULL message that opmsg_parse()
 *    accepted: they read only what it has already checked.
 */
#ifndef OPMSG_H
#define OPMSG_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A program that links the static library libopmsg.a by hand defines
 * OPMSG_STATIC; CMake's opmsg::opmsg_static defines it. */
#if defined(OPMSG_STATIC)
#define OPMSG_EXPORT
#elif defined(__GNUC__)
#define OPMSG_EXPORT __attribute__((visibility("default")))
#else
#define OPMSG_EXPORT
#endif

/* ---------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------- */

#define OPMSG_VERSION_MAJOR 0
#define OPMSG_VERSION_MINOR 5
#define OPMSG_VERSION_PATCH 0
#define OPMSG_VERSION_STRING "0.5.0"
/* One number that grows with every release: MAJOR*10000 + MINOR*100 + PATCH. */
#define OPMSG_VERSION_NUMBER (OPMSG_VERSION_MAJOR * 10000 + OPMSG_VERSION_MINOR * 100 + OPMSG_VERSION_PATCH)

/* The version of the library actually loaded, e.g. "0.1.0". Static string. */
OPMSG_EXPORT const char *opmsg_version_string(void);
/* OPMSG_VERSION_NUMBER of the library actually loaded: comparing it with the
 * macro detects headers and library from different releases. */
OPMSG_EXPORT unsigned opmsg_version_number(void);

/* ---------------------------------------------------------------------------
 * Wire constants
 * ------------------------------------------------------------------------- */

#define OPMSG_OP_REPLY 1
#define OPMSG_OP_QUERY 2004
#define OPMSG_OP_COMPRESSED 2012
#define OPMSG_OP_MSG 2013
/* Removed in MongoDB 5.1; opmsg checks their framing (proxies still see them
 * from old clients) but has nothing to merge for them. */
#define OPMSG_OP_UPDATE 2001
#define OPMSG_OP_INSERT 2002
#define OPMSG_OP_GET_MORE 2005
#define OPMSG_OP_DELETE 2006
#define OPMSG_OP_KILL_CURSORS 2007

/* The header every message begins with; wire.h names its fields and those
 * of each opcode. */
#define OPMSG_HEADER_SIZE 16

/* OP_MSG flagBits. Bits 0-15 are "required": an unknown one fails the
 * message. Bits 16-31 are "optional": unknown ones are ignored. */
#define OPMSG_FLAG_CHECKSUM_PRESENT 0x00000001u
#define OPMSG_FLAG_MORE_TO_COME 0x00000002u
#define OPMSG_FLAG_EXHAUST_ALLOWED 0x00010000u
/* A request's "the sender accepts document sequences in the reply" (bit 17,
 * optional: a server that does not know it ignores it). */
#define OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED 0x00020000u
#define OPMSG_FLAG_REQUIRED_MASK 0x0000FFFFu

/* The name of an opcode as MongoDB's wire protocol documentation spells it:
 * "OP_MSG", "OP_COMPRESSED", "OP_QUERY", "OP_REPLY", and the removed
 * "OP_UPDATE", "OP_INSERT", "OP_GET_MORE", "OP_DELETE", "OP_KILL_CURSORS".
 * NULL for any other value, 2003 (once OP_GET_BY_OID, now unnamed) included:
 * the caller decides how to show a number nobody named (opmsg tap prints
 * the number, opmsg dump "unknown"). A static string. Since 0.2.0 (symbol
 * version OPMSG_0.2). */
OPMSG_EXPORT const char *opmsg_opcode_name(int32_t opcode);

/* The name of flag bit `bit` (0-31) of a message with this opcode, as the
 * wire protocol documentation spells it:
 *  - OP_MSG flagBits: 0 "checksumPresent", 1 "moreToCome",
 *    16 "exhaustAllowed", 17 "documentSequencesAllowed";
 *  - OP_QUERY flags: 1 "tailableCursor", 2 "slaveOk", 3 "oplogReplay",
 *    4 "noCursorTimeout", 5 "awaitData", 6 "exhaust", 7 "partial";
 *  - OP_REPLY responseFlags: 0 "cursorNotFound", 1 "queryFailure",
 *    2 "shardConfigStale", 3 "awaitCapable".
 * NULL for a bit without a name, a bit above 31, or another opcode (for
 * OP_COMPRESSED, ask with its op_compressed.original_opcode). A static
 * string. Since 0.2.0 (symbol version OPMSG_0.2). */
OPMSG_EXPORT const char *opmsg_flag_name(int32_t opcode, unsigned bit);

/* Defaults from the handshake spec, used until a hello reply says otherwise. */
#define OPMSG_DEFAULT_MAX_MESSAGE_SIZE 48000000u /* decimal, not 48 MiB */
#define OPMSG_DEFAULT_MAX_BSON_SIZE 16777216u    /* 16 MiB */
#define OPMSG_DEFAULT_MAX_WRITE_BATCH 100000u
/* A command body may exceed maxBsonObjectSize by this much. */
#define OPMSG_BODY_ALLOWANCE 16384u

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------- */

/* bson_error_t.domain of every error opmsg reports ("OPMS"). */
#define OPMSG_ERROR_DOMAIN 0x4F504D53u

/*
 * bson_error_t.code: one per rule. Every error opmsg reports has
 * domain == OPMSG_ERROR_DOMAIN and one of these codes.
 *
 * This enum is the error table. Each code's comment gives, in this order:
 *  - its name in quotes, what opmsg_error_name() returns for it: short and
 *    stable, printed by the CLI ("opmsg: <name>: <detail>") for scripts to
 *    match on (the consumer.cmake test holds these names to the installed
 *    library's, consumer.api-doc to src/error.c's);
 *  - what breaks the rule;
 *  - "Offset:" where opmsg_parse_with_offset() puts *offset when
 *    opmsg_parse() reports it (tests/test_offsets.c holds every rule of
 *    opmsg_parse() to it), or that opmsg_parse() does not report it.
 * The numbers are stable: new codes are only ever added at the end, before
 * OPMSG_ERR_COUNT_, which is not a code.
 */
typedef enum {
   /* "ok": no error. */
   OPMSG_OK = 0,

   /* Framing, every opcode. */

   /* "truncated": fewer bytes than a header, or than messageLength says.
    * Offset: 0 (messageLength); a field of a removed opcode cut short: that
    * field. */
   OPMSG_ERR_TRUNCATED = 1,
   /* "length-mismatch": messageLength differs from the bytes given (more
    * bytes than it says). Offset: 0. */
   OPMSG_ERR_LENGTH_MISMATCH = 2,
   /* "length-too-small": messageLength negative or below the opcode's
    * minimum. Offset: 0. */
   OPMSG_ERR_LENGTH_TOO_SMALL = 3,
   /* "length-too-large": messageLength above the configured limit.
    * Offset: 0. */
   OPMSG_ERR_LENGTH_TOO_LARGE = 4,
   /* "unknown-opcode": not an opcode MongoDB defines (OP_MSG, OP_COMPRESSED,
    * OP_QUERY, OP_REPLY, or one of the removed ones). Offset: 12, opCode. */
   OPMSG_ERR_UNKNOWN_OPCODE = 5,

   /* OP_MSG. */

   /* "required-flags": an unknown required flag bit (2-15) is set.
    * Offset: 16, flagBits. */
   OPMSG_ERR_REQUIRED_FLAGS = 6,
   /* "checksum-missing": checksumPresent set but no room for the 4 bytes.
    * Offset: len, where the checksum should begin. */
   OPMSG_ERR_CHECKSUM_MISSING = 7,
   /* "checksum-mismatch": the CRC-32C differs from the stored checksum.
    * Offset: len - 4, the stored checksum. */
   OPMSG_ERR_CHECKSUM_MISMATCH = 8,
   /* "no-body": no kind-0 section. Offset: 20, where the sections begin. */
   OPMSG_ERR_NO_BODY = 9,
   /* "multiple-bodies": more than one kind-0 section. Offset: the second
    * body's kind byte. */
   OPMSG_ERR_MULTIPLE_BODIES = 10,
   /* "unknown-section-kind": a section kind other than 0 or 1. Offset: the
    * section's kind byte. */
   OPMSG_ERR_UNKNOWN_SECTION = 11,
   /* "section-truncated": a section's fixed part runs past the end.
    * Offset: the section's kind byte. */
   OPMSG_ERR_SECTION_TRUNCATED = 12,
   /* "sequence-size": a kind-1 size negative, too small or past the end.
    * Offset: the section's kind byte. */
   OPMSG_ERR_SEQUENCE_SIZE = 13,
   /* "sequence-identifier": an identifier unterminated, empty, a bad path
    * or not UTF-8, or more than 64 sequences with a dotted identifier among
    * them. Offset: the sequence's kind byte (of too many sequences, the
    * first past the bound). */
   OPMSG_ERR_SEQUENCE_IDENTIFIER = 14,
   /* "sequence-overrun": a sequence document crosses its section's end.
    * Offset: that document. */
   OPMSG_ERR_SEQUENCE_OVERRUN = 15,
   /* "duplicate-identifier": two sequences with one identifier, or one a
    * path prefix of the other. Offset: the later sequence's kind byte. */
   OPMSG_ERR_DUPLICATE_IDENTIFIER = 16,
   /* "identifier-clash": an identifier names a body field (also as a dotted
    * path), or a dotted path goes through a field the body lacks (a parent
    * is never created), that is not a document, or that is there twice.
    * Offset: the sequence's kind byte (of two sequences, the later). */
   OPMSG_ERR_IDENTIFIER_CLASH = 17,
   /* "trailing-bytes": bytes after the last section (OP_MSG) or document
    * (legacy). Offset: the first of them. */
   OPMSG_ERR_TRAILING_BYTES = 18,

   /* BSON documents (body, sequence documents, legacy documents). */

   /* "document-length": a document's length below 5 or past the bytes
    * available. Offset: the document's first byte. */
   OPMSG_ERR_DOCUMENT_LENGTH = 19,
   /* "document-terminator": a document's last byte is not 0, or an element
    * runs into it. Offset: that last byte; a 0 type byte before the end:
    * that type byte. */
   OPMSG_ERR_DOCUMENT_TERMINATOR = 20,
   /* "document-element": a bad element: unknown type, unterminated key, bad
    * value size. Offset: the element's type byte, at any depth the check
    * level looks. */
   OPMSG_ERR_DOCUMENT_ELEMENT = 21,
   /* "duplicate-key": a top-level key twice in the body (at the top-level
    * and full check levels; the encoder always). Offset: the second
    * element. */
   OPMSG_ERR_DUPLICATE_KEY = 22,
   /* "document-too-large": a document above maxBsonObjectSize (+16 KiB,
    * OPMSG_BODY_ALLOWANCE, for a body). Offset: the document's first
    * byte. */
   OPMSG_ERR_DOCUMENT_TOO_LARGE = 23,
   /* "invalid-utf8": full validation: a string or key is not UTF-8.
    * Offset: the first bad byte. */
   OPMSG_ERR_INVALID_UTF8 = 24,
   /* "invalid-boolean": full validation: a boolean byte other than 0 or 1.
    * Offset: the element's type byte. */
   OPMSG_ERR_INVALID_BOOLEAN = 25,
   /* "nesting-too-deep": full validation: more than OPMSG_MAX_DEPTH
    * levels. Offset: the first document too deep. */
   OPMSG_ERR_NESTING_TOO_DEEP = 26,
   /* "invalid-value": full validation: a value breaks its type's rules.
    * Offset: inside the value. */
   OPMSG_ERR_INVALID_VALUE = 27,

   /* Callers' mistakes and resources. */

   /* "invalid-argument": NULL where a pointer is needed, or a bad option
    * (an unknown check level). Offset: 0. */
   OPMSG_ERR_INVALID_ARGUMENT = 28,
   /* "buffer-too-small": the caller's buffer is smaller than the size
    * needed. Not from opmsg_parse(). */
   OPMSG_ERR_BUFFER_TOO_SMALL = 29,
   /* "wrong-opcode": the function does not apply to this opcode. Not from
    * opmsg_parse(). */
   OPMSG_ERR_WRONG_OPCODE = 30,
   /* "no-memory": zstd's own working memory could not be had (opmsg's
    * allocations abort when memory runs out, as libbson's do). Offset: 0. */
   OPMSG_ERR_NO_MEMORY = 31,
   /* "output-too-large": the result would exceed the size limit (for
    * opmsg_parse(): a merged document above BSON's 2 GiB). Offset: 0. */
   OPMSG_ERR_OUTPUT_TOO_LARGE = 32,

   /* OP_COMPRESSED (opmsg/compress.h). */

   /* "unknown-compressor": compressorId 4-255. Offset: 24, compressorId. */
   OPMSG_ERR_UNKNOWN_COMPRESSOR = 33,
   /* "compressor-unavailable": a known codec this build lacks
    * (opmsg_compressor_available()). Not from opmsg_parse(). */
   OPMSG_ERR_COMPRESSOR_UNAVAILABLE = 34,
   /* "uncompressed-size": uncompressedSize out of range, or not what
    * decompressing gave. Offset: 20, uncompressedSize. */
   OPMSG_ERR_UNCOMPRESSED_SIZE = 35,
   /* "decompress": the codec failed: a corrupt or truncated stream. Not
    * from opmsg_parse(). */
   OPMSG_ERR_DECOMPRESS = 36,
   /* "nested-compression": OP_COMPRESSED inside OP_COMPRESSED. Offset: 16,
    * originalOpcode. */
   OPMSG_ERR_NESTED_COMPRESSION = 37,
   /* "bad-original-opcode": originalOpcode is not one opmsg can carry.
    * Offset: 16, originalOpcode. */
   OPMSG_ERR_BAD_ORIGINAL_OPCODE = 38,
   /* "compression-forbidden": hello, auth and user commands are never
    * compressed (opmsg_compression_allowed()). Not from opmsg_parse(). */
   OPMSG_ERR_COMPRESSION_FORBIDDEN = 39,
   /* "compress": the codec failed while compressing. Not from
    * opmsg_parse(). */
   OPMSG_ERR_COMPRESS = 40,

   /* Encoder (opmsg/build.h). */

   /* "document-over-limit": one document larger than a message may carry
    * (the message names its index). Not from opmsg_parse(). */
   OPMSG_ERR_DOCUMENT_OVER_LIMIT = 41,
   /* "bad-command": the command is empty or not a valid document. Not from
    * opmsg_parse(). */
   OPMSG_ERR_BAD_COMMAND = 42,

   /* Stream reader (opmsg/reader.h). */

   /* "stream-truncated": the stream ended inside a message. Not from
    * opmsg_parse(). */
   OPMSG_ERR_STREAM_TRUNCATED = 43,
   /* "exhaust-sequence": a moreToCome reply's follow-up does not answer it.
    * Not from opmsg_parse(). */
   OPMSG_ERR_EXHAUST_SEQUENCE = 44,

   /* Legacy OP_QUERY / OP_REPLY (opmsg/legacy.h). */

   /* "query-namespace": OP_QUERY fullCollectionName unterminated or empty.
    * Offset: 20, fullCollectionName. */
   OPMSG_ERR_QUERY_NAMESPACE = 45,
   /* "reply-count": OP_REPLY numberReturned negative or not the documents
    * present. Offset: negative: 32, numberReturned; fewer documents: len,
    * where the next should begin; a document more: that document.
    * OP_KILL_CURSORS numberOfCursorIDs: 20 when the IDs it counts are not
    * all there, else where the bytes it does not count begin. */
   OPMSG_ERR_REPLY_COUNT = 46,

   /* "missing-db": OPMSG_PARSE_REQUEST: no "$db" string in the body.
    * Offset: the body. */
   OPMSG_ERR_MISSING_DB = 47,
   /* "io": read() failed on a stream (opmsg/reader.h); the message names
    * errno. Not from opmsg_parse(). */
   OPMSG_ERR_IO = 48,
   /* "not-a-reply": OPMSG_PARSE_REPLY: a request opcode (or OP_COMPRESSED
    * carrying one) where a reply belongs. Offset: 12, opCode (16,
    * originalOpcode, for OP_COMPRESSED). */
   OPMSG_ERR_NOT_A_REPLY = 49,

   OPMSG_ERR_COUNT_ /* not a code: one past the last */
} opmsg_error_code_t;

/* The name of an error code, as the table above gives it
 * ("checksum-mismatch"), or "unknown" for a number that is not a code. A
 * static string. */
OPMSG_EXPORT const char *opmsg_error_name(uint32_t code);

/* ---------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------- */

/* opmsg_options_t.flags */
/* Also check every nested element: types, lengths, UTF-8 of strings and keys,
 * booleans 0/1, and the rules of each type (the BSON corpus's rules). */
#define OPMSG_PARSE_FULL_VALIDATE 0x1u
/* Do not verify the CRC-32C (it is still required to be present when the
 * flag says so). For peers that already verified it. */
#define OPMSG_PARSE_SKIP_CHECKSUM 0x2u
/* The message is a command (a request): the body must have a "$db" string. */
#define OPMSG_PARSE_REQUEST 0x4u
/* The message is a reply (what a client reads from a server): only OP_MSG,
 * OP_REPLY, or OP_COMPRESSED carrying one of those two; any other opcode is
 * OPMSG_ERR_NOT_A_REPLY, from the header alone in opmsg_frame_length() too.
 * A client that reads a request opcode where a reply belongs must not
 * interpret it as one (libmongoc aborts on them; the drop-in sets this flag
 * on libmongoc's receive paths). */
#define OPMSG_PARSE_REPLY 0x8u

/* Deepest nesting full validation follows (libbson's own limit is 100). */
#define OPMSG_MAX_DEPTH 100

/*
 * How much of each document opmsg_parse() reads (opmsg_options_t.check).
 * What never changes with the level: no read outside the message, no
 * allocation past the limits, no crash, nothing dropped, and a merged
 * document (or a view) that is always well framed. The levels differ only
 * in how far inside the documents the parser looks:
 *
 *  - OPMSG_CHECK_SPEC (0, the default: NULL options, opmsg_options_init(),
 *    a zeroed opmsg_options_t): what the OP_MSG spec requires, and the
 *    framing. The header and its limits, flag bits, the checksum, the
 *    section kinds, exactly one body, kind-1 sizes, identifiers (syntax, unique, none a path prefix of
 *    another, none naming a body field, also as a dotted path), trailing
 *    bytes, compression bounds, and every document's frame: its length
 *    inside its section and under the size limit, and its terminating 0.
 *    Sequence documents are opaque, as nested documents are at every
 *    level. A body alone is only framed. With sequences, the body's keys
 *    are walked (its top-level elements checked on the way) to find the
 *    fields the identifiers name (no dotted path may go through a field
 *    the body lacks), and opmsg_db() finds "$db" with a walk that stops at
 *    the first unsound element. A key repeated in the body is not an
 *    error (the spec allows it; libbson and libmongoc do too), except a
 *    dotted path's component: twice, it leaves the sequence two places,
 *    and that is refused as a clash. For callers that read the result
 *    through bson_iter, which checks each element it reads, or that only
 *    forward it.
 *  - OPMSG_CHECK_TOP_LEVEL: also every top-level element of every
 *    document (type, key, value size) and no duplicate key in the body.
 *    What 0.1 to 0.3 did by default.
 *  - OPMSG_CHECK_FULL: also every nested element, to BSON's own rules:
 *    UTF-8 of strings and keys, booleans 0/1, each type's value rules,
 *    nesting up to OPMSG_MAX_DEPTH (the BSON corpus's rules). The flag
 *    OPMSG_PARSE_FULL_VALIDATE asks for the same and keeps working.
 *
 * Each level checks all that the one before it does. OP_QUERY and
 * OP_REPLY documents, and those of the removed opcodes, are checked to the
 * same level. Since 0.5.0 (libopmsg.so.2) each level has one name and one
 * value, and 0 is the default: 0.4's OPMSG_CHECK_FRAMES (spec's checks
 * under 0.3's name) is gone, and a zeroed opmsg_options_t, top-level in
 * 0.1 to 0.4, asks for spec. (Until 0.4 the values were TOP_LEVEL 0,
 * FRAMES 1, FULL 2, SPEC 3.) To keep 0.3's behaviour, set check to
 * OPMSG_CHECK_TOP_LEVEL; the opmsg command does (its default stays
 * top-level).
 */
typedef enum {
   OPMSG_CHECK_SPEC = 0,      /* the default */
   OPMSG_CHECK_TOP_LEVEL = 1, /* also every top-level element */
   OPMSG_CHECK_FULL = 2       /* also every nested element */
} opmsg_check_t;

/* "spec", "top-level" or "full"; NULL for any other value. Static. Since
 * 0.3.0 (symbol version OPMSG_0.3). */
OPMSG_EXPORT const char *opmsg_check_name(opmsg_check_t check);
/* The level named name (as opmsg_check_name() spells it); false for any
 * other string, NULL and "frames" included, leaving *check unchanged. The
 * CLI's --check and the drop-in's OPMSG_MONGOC_CHECK read their value
 * through it. Since 0.3.0 (symbol version OPMSG_0.3). */
OPMSG_EXPORT bool opmsg_check_from_name(const char *name, opmsg_check_t *check);

typedef struct {
   /* Largest messageLength accepted; 0 means OPMSG_DEFAULT_MAX_MESSAGE_SIZE.
    * Also bounds every allocation opmsg makes for a message (decompression,
    * merging): the merged document may be at most this size plus the array
    * keys of its sequences, and never more than 2 GiB - 1 (BSON's limit).
    * Values above INT32_MAX are taken as INT32_MAX. A client sets it (and
    * max_bson_size) from the server's hello reply (maxMessageSizeBytes,
    * maxBsonObjectSize); until then the defaults are the protocol's. */
   size_t max_message_size;
   /* Largest document; 0 means OPMSG_DEFAULT_MAX_BSON_SIZE. A body may be
    * OPMSG_BODY_ALLOWANCE larger. */
   size_t max_bson_size;
   /* OPMSG_PARSE_* bits. */
   uint32_t flags;
   /* How far inside the documents to check (see opmsg_check_t): 0, what
    * opmsg_options_init() sets, is the default, OPMSG_CHECK_SPEC. Another
    * value than the three levels fails opmsg_parse() with
    * OPMSG_ERR_INVALID_ARGUMENT. OPMSG_PARSE_FULL_VALIDATE in flags means
    * OPMSG_CHECK_FULL whatever this says. */
   opmsg_check_t check;
} opmsg_options_t;

/* Fills *opts with the defaults (all limits 0 = default, no flags, the
 * OPMSG_CHECK_SPEC level): what NULL options mean, and since 0.5.0 the
 * same as zeroing it. */
OPMSG_EXPORT void opmsg_options_init(opmsg_options_t *opts);

/* ---------------------------------------------------------------------------
 * Parsing
 *
 * opmsg_parse() validates one whole wire message and fills an opmsg_msg_t
 * that points into the caller's bytes: nothing is copied and, for bodies of up
 * to 256 top-level keys, nothing is allocated (a larger body, or at spec
 * more than four sequences, borrows one bounded table for its key checks,
 * freed before opmsg_parse() returns). The bytes must outlive the
 * opmsg_msg_t, which owns nothing and needs no cleanup.
 * ------------------------------------------------------------------------- */

/*
 * A parsed message. The fields before the union are every opcode's (0 /
 * NULL where an opcode has no such thing); the union holds what one opcode
 * alone has, in the member named for msg.opcode, with the wire's names:
 *
 *   opcode           flags          body, body_len      union member
 *   OP_MSG           flagBits       the body            - (n_sequences,
 *                                                        checksum above)
 *   OP_QUERY         flags          the query           op_query
 *   OP_REPLY         responseFlags  document 0 (*)      op_reply
 *   OP_COMPRESSED    0              -                   op_compressed
 *   OP_INSERT        flags          the first document  op_insert
 *   OP_UPDATE        flags          the selector        op_update
 *   OP_DELETE        flags          the selector        op_delete
 *   OP_GET_MORE      0              -                   op_get_more
 *   OP_KILL_CURSORS  0              -                   op_kill_cursors
 *   (*) NULL when numberReturned is 0.
 *
 * The other members of the union are not the message's: read only the one
 * of msg.opcode. (Until 0.4 one set of fields served all opcodes, the
 * removed ones reusing OP_QUERY's and OP_REPLY's under other meanings.)
 * The removed opcodes (OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE,
 * OP_KILL_CURSORS) are gone since MongoDB 5.1; a proxy still sees them
 * from old clients.
 *
 * Every pointer points into the bytes given to opmsg_parse(). The fields
 * before priv_ are the API; priv_ is opmsg's own state for the merge and
 * view functions (as bson_t's padding is libbson's): its size is part of
 * the ABI, its contents are not, and a caller never reads or writes it.
 */
typedef struct {
   /* Every opcode: the whole message as given, and its header. */
   const uint8_t *data;
   size_t len;
   int32_t message_length;
   int32_t request_id;
   int32_t response_to;
   int32_t opcode;

   uint32_t flags;        /* the opcode's flags (see above); 0 when it has none */
   bool checksum_present; /* OP_MSG: flag bit 0 was set (and checked) */
   uint32_t checksum;     /* OP_MSG: the stored CRC-32C when checksum_present */

   /* The main document (see above), a framed BSON document of body_len
    * bytes checked to the level asked (opmsg_check_t); NULL when the
    * opcode has none. */
   const uint8_t *body;
   uint32_t body_len;

   /* OP_MSG: how many kind-1 sections (document sequences) there are. */
   uint32_t n_sequences;

   union {
      /* OP_QUERY (see opmsg/legacy.h). body is the query. */
      struct {
         const char *full_collection_name; /* NUL-terminated, inside data */
         int32_t number_to_skip;
         int32_t number_to_return;
         const uint8_t *field_selector; /* returnFieldsSelector; NULL when absent */
         uint32_t field_selector_len;
      } op_query;
      /* OP_REPLY (see opmsg/legacy.h). Every document is checked. */
      struct {
         int64_t cursor_id;
         int32_t starting_from;
         int32_t number_returned;
         const uint8_t *documents; /* the documents back to back */
         size_t documents_len;
      } op_reply;
      /* OP_COMPRESSED (see opmsg/compress.h). Framing only: the payload is
       * checked when it is decompressed. */
      struct {
         int32_t original_opcode;
         int32_t uncompressed_size;
         uint8_t compressor_id;
         const uint8_t *compressed;
         size_t compressed_len;
      } op_compressed;
      /* OP_INSERT: body is the first document. */
      struct {
         const char *full_collection_name;
         int32_t count;            /* how many documents */
         const uint8_t *documents; /* all of them, back to back */
         size_t documents_len;
      } op_insert;
      /* OP_UPDATE: body is the selector. */
      struct {
         const char *full_collection_name;
         const uint8_t *update; /* the update document */
         uint32_t update_len;
      } op_update;
      /* OP_DELETE: body is the selector. */
      struct {
         const char *full_collection_name;
      } op_delete;
      struct {
         const char *full_collection_name;
         int32_t number_to_return;
         int64_t cursor_id;
      } op_get_more;
      struct {
         int32_t number_of_cursor_ids;
         const uint8_t *cursor_ids; /* 8 bytes each, little-endian (opmsg_wire_i64()) */
         size_t cursor_ids_len;
      } op_kill_cursors;
   };

   /* opmsg's own; see above. */
   void *priv_[8];
} opmsg_msg_t;

/*
 * Parses and validates the message in data[0..len). len must be the whole
 * message: messageLength must equal len (use opmsg_frame_length() or the
 * stream reader to cut a stream into messages). opts may be NULL.
 *
 * Checks every rule of the OP_MSG spec: header bounds and the size limit,
 * flag bits, the CRC-32C when present, exactly one body, kind-1 sizes,
 * identifiers and document bounds, unique identifiers, identifiers clashing
 * with body fields (as dotted paths too), unknown section kinds, trailing
 * bytes, every document's length and terminator; at the level opts asks for
 * (opmsg_check_t; spec by default) more: duplicate top-level body keys and
 * every document's top-level elements (top-level), every nested element
 * (full, or OPMSG_PARSE_FULL_VALIDATE). OP_QUERY and OP_REPLY documents are
 * checked to the same level, OP_COMPRESSED as far as its framing goes.
 *
 * Returns true and fills *msg, or false with *error set (msg is then
 * unspecified). Allocates nothing except as said above. Errors: the rule
 * codes 1-27 (24-27 only at the full level); for OP_COMPRESSED's framing
 * 33, 35, 37 and 38; for OP_QUERY / OP_REPLY 45 and 46; 47 with
 * OPMSG_PARSE_REQUEST; 49 with OPMSG_PARSE_REPLY; OPMSG_ERR_OUTPUT_TOO_LARGE
 * when the merged document would pass BSON's 2 GiB;
 * OPMSG_ERR_INVALID_ARGUMENT for a NULL data or msg or an unknown check
 * level. OPMSG_ERR_TRUNCATED means fewer bytes than messageLength,
 * OPMSG_ERR_LENGTH_MISMATCH more.
 */
OPMSG_EXPORT bool opmsg_parse(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg,
                              bson_error_t *error);

/*
 * opmsg_parse(), and where the message breaks a rule as data: when offset is
 * not NULL, *offset receives on failure the byte offset in data[0..len) of
 * the fault, on success len (every byte was accepted), as libbson's
 * bson_validate_with_error_and_offset() and llhttp's error position do.
 * Where the offset points for each code is the "Offset:" of its comment in
 * opmsg_error_code_t above: the field of the header or of the section, the
 * document or the element that breaks the rule, and 0 for what is not a
 * fault of the bytes (a NULL argument, an unknown check level, no memory, a
 * merged document above 2 GiB). error may be NULL: the offset and the
 * return value still say what happened. The errors and their messages are
 * opmsg_parse()'s. The libmongoc drop-in reports the same offset to
 * libmongoc's parser callers (mcd_rpc_message_from_data()'s data_end).
 * Since 0.4.0 (symbol version OPMSG_0.4).
 */
OPMSG_EXPORT bool opmsg_parse_with_offset(const uint8_t *data, size_t len, const opmsg_options_t *opts,
                                          opmsg_msg_t *msg, size_t *offset, bson_error_t *error);

/*
 * Reads the 16-byte header at data[0..len) and stores in *message_length the
 * length of the message that starts there, after checking it against the
 * opcode's minimum and the limit in opts. Returns false with *error set:
 * OPMSG_ERR_TRUNCATED when fewer than 16 bytes are given,
 * OPMSG_ERR_UNKNOWN_OPCODE, OPMSG_ERR_LENGTH_TOO_SMALL (negative, or below
 * the opcode's minimum), OPMSG_ERR_LENGTH_TOO_LARGE (above the limit),
 * OPMSG_ERR_NOT_A_REPLY (with OPMSG_PARSE_REPLY), OPMSG_ERR_INVALID_ARGUMENT
 * (NULL data or message_length). Allocates nothing. For cutting a stream
 * by hand (the stream reader, opmsg/reader.h, does it for you): the message
 * is complete once *message_length bytes are there.
 */
OPMSG_EXPORT bool opmsg_frame_length(const uint8_t *data, size_t len, const opmsg_options_t *opts,
                                     size_t *message_length, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Merging
 *
 * The merged document is the body's fields in their order, then each
 * document sequence as an array field (keys "0", "1", ...) in wire order.
 * A dotted identifier such as "cursor.firstBatch" is placed at its path,
 * inside the body's "cursor" sub-document (a body without it is refused,
 * OPMSG_ERR_IDENTIFIER_CLASH: a parent is never created); the path goes one
 * component at a time, so a body key
 * that holds a dot ("a.b") is never part of it. Nested documents are copied
 * as opaque bytes. For
 * OP_QUERY the result is the query document, for OP_REPLY its only document.
 * The three forms below give the same bytes.
 * ------------------------------------------------------------------------- */

/* The exact size in bytes of the merged document of a parsed message:
 * opmsg_parse() computed it, so the call costs nothing. 0 when the message
 * has nothing to merge: OP_COMPRESSED, an OP_REPLY without exactly one
 * document, or a removed opcode. Allocates nothing. */
OPMSG_EXPORT size_t opmsg_merged_size(const opmsg_msg_t *msg);

/*
 * Writes the merged document into buf[0..buf_len). Allocates nothing: the
 * caller owns buf, and a server can reuse one buffer for every message.
 * Returns false with OPMSG_ERR_BUFFER_TOO_SMALL when buf_len is less than
 * opmsg_merged_size(msg) (nothing useful is written then), with
 * OPMSG_ERR_WRONG_OPCODE for OP_COMPRESSED (decompress it first), an
 * OP_REPLY without exactly one document or a removed opcode, with
 * OPMSG_ERR_INVALID_ARGUMENT when msg or buf is NULL. On success *written
 * (if not NULL) is the size written.
 */
OPMSG_EXPORT bool opmsg_merge_into(const opmsg_msg_t *msg, uint8_t *buf, size_t buf_len, size_t *written,
                                   bson_error_t *error);

/*
 * Returns the merged document as a new bson_t, written once in place into
 * the bytes libbson's public API makes for it (bson_sized_new() of the
 * exact size, bson_reserve_buffer()): one allocation for a document that
 * fits inside the bson_t (libbson keeps up to 120 bytes there, 115 of
 * them for this), two above (the bson_t, its bytes), none rounded up
 * (libbson 1.23 to 2.5). The caller owns it: bson_destroy() frees it. An
 * ordinary, writable bson_t (since 0.5.0; read-only before): it takes
 * appends, and does not depend on the message bytes once made. NULL with
 * *error set on failure: OPMSG_ERR_WRONG_OPCODE (as for opmsg_merge_into())
 * or OPMSG_ERR_INVALID_ARGUMENT.
 */
OPMSG_EXPORT bson_t *opmsg_merge_bson(const opmsg_msg_t *msg, bson_error_t *error);

/*
 * Initialises the caller's bson_t *out (e.g. on the stack) with the merged
 * document, writable, with one allocation (libbson rounds its capacity up to
 * a power of two). The caller must bson_destroy(out), on success and on
 * failure alike. On failure *out is left initialised and empty (unless out
 * is NULL), and *error is set: OPMSG_ERR_WRONG_OPCODE,
 * OPMSG_ERR_INVALID_ARGUMENT (NULL out or msg), OPMSG_ERR_OUTPUT_TOO_LARGE
 * (a document past libbson's largest, which a parse with the default
 * limits never gives).
 */
OPMSG_EXPORT bool opmsg_merge_init(const opmsg_msg_t *msg, bson_t *out, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Zero-copy view
 *
 * Read a parsed message as if it were merged, without copying or
 * allocating. Every pointer points into the message's bytes. These
 * functions need a message that opmsg_parse() accepted: they do not check
 * their arguments and report no errors, since every structure they walk
 * has already been checked.
 * ------------------------------------------------------------------------- */

/* The command name: the body's first key, NUL-terminated, inside the
 * message (for OP_QUERY the query's, for OP_REPLY the first document's).
 * NULL for an empty body or a message without one. */
OPMSG_EXPORT const char *opmsg_command_name(const opmsg_msg_t *msg);

/* The body's "$db" string, and its length if len is not NULL; NULL when the
 * body has no "$db" string (the normal case for replies). */
OPMSG_EXPORT const char *opmsg_db(const opmsg_msg_t *msg, uint32_t *len);

/* Initialises *body as a read-only static view of the body (bson_init_static;
 * bson_destroy() is not needed): read any body field with libbson's
 * iterator. False when the message has no body (OP_COMPRESSED, an OP_REPLY
 * with no documents). */
OPMSG_EXPORT bool opmsg_body(const opmsg_msg_t *msg, bson_t *body);

/* One document sequence. */
typedef struct {
   const char *identifier; /* NUL-terminated, inside the message */
   uint32_t identifier_len;
   const uint8_t *documents; /* the documents back to back */
   uint32_t documents_len;
   uint32_t count;  /* how many documents */
   uint32_t offset; /* byte offset of the section's kind byte */
} opmsg_sequence_t;

/* Iterates the sequences in wire order. Read its fields only through the
 * functions below. */
typedef struct {
   const uint8_t *p;
   const uint8_t *end;
   const uint8_t *base;
   const opmsg_msg_t *msg;
} opmsg_sequence_iter_t;

/* Starts at the first kind-1 section of msg; a message that is not OP_MSG
 * has none. The iterator is a plain struct on the caller's stack. */
OPMSG_EXPORT void opmsg_sequence_iter_init(opmsg_sequence_iter_t *it, const opmsg_msg_t *msg);
/* Stores the next sequence, in wire order, in *seq; false when there are no
 * more. It counts the sequence's documents: time linear in their number. */
OPMSG_EXPORT bool opmsg_sequence_iter_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq);
/* Finds the sequence whose identifier is exactly identifier (a
 * NUL-terminated string); false when there is none. */
OPMSG_EXPORT bool opmsg_sequence_find(const opmsg_msg_t *msg, const char *identifier, opmsg_sequence_t *seq);

/* Iterates the documents of one sequence. */
typedef struct {
   const uint8_t *p;
   const uint8_t *end;
} opmsg_document_iter_t;

/* Starts at the first document of seq. */
OPMSG_EXPORT void opmsg_document_iter_init(opmsg_document_iter_t *it, const opmsg_sequence_t *seq);
/* Initialises *doc as a read-only static view of the next document
 * (bson_destroy() is not needed); false after the last one. */
OPMSG_EXPORT bool opmsg_document_iter_next(opmsg_document_iter_t *it, bson_t *doc);

/*
 * An iterator over the top level of the merged document, field by field in
 * the merged order, with no copy. Each field is one of:
 *  - OPMSG_FIELD_BODY: a body field carried over unchanged; `iter` is a
 *    bson_iter_t on it (use bson_iter_key(), bson_iter_type(), ...).
 *  - OPMSG_FIELD_SEQUENCE: a document sequence that becomes an array; `seq`
 *    describes it.
 *  - OPMSG_FIELD_PATH: a sub-document that gains sequences at a dotted path
 *    (e.g. "cursor" for "cursor.firstBatch"). `iter` is on the body's field
 *    (the merge never creates one, so path_in_body is always true);
 *    opmsg_view_enter() iterates its merged contents in turn.
 */
typedef enum { OPMSG_FIELD_BODY = 1, OPMSG_FIELD_SEQUENCE = 2, OPMSG_FIELD_PATH = 3 } opmsg_field_kind_t;

typedef struct {
   opmsg_field_kind_t kind;
   /* The field's name, key_len bytes, NUL-terminated (a SEQUENCE field's
    * name is the last component of its identifier, "firstBatch" in
    * "cursor.firstBatch", which ends with the identifier's NUL). */
   const char *key;
   uint32_t key_len;
   bson_iter_t iter;     /* BODY, and PATH when path_in_body */
   bool path_in_body;    /* PATH: the body has this sub-document (always) */
   opmsg_sequence_t seq; /* SEQUENCE */
   /* PATH: the dotted path down to this field ("cursor"), path_len bytes,
    * pointing into an identifier. */
   const char *path;
   uint32_t path_len;
} opmsg_field_t;

/* Read its fields only through the functions below. */
typedef struct {
   const opmsg_msg_t *msg;
   bson_iter_t iter;   /* over the body (or the body's sub-document) */
   const uint8_t *doc; /* that document */
   uint32_t doc_len;
   bool has_doc;
   bool in_sequences;  /* past the body's fields */
   const char *prefix; /* dotted path of this level; NULL at the top */
   uint32_t prefix_len;
   opmsg_sequence_iter_t seqs;
} opmsg_view_t;

/* Starts a view of the top level of msg's merged document. False for an
 * OP_COMPRESSED message (decompress it first) or one without a body. */
OPMSG_EXPORT bool opmsg_view_init(opmsg_view_t *view, const opmsg_msg_t *msg);
/* Stores the next field in *field; false after the last. */
OPMSG_EXPORT bool opmsg_view_next(opmsg_view_t *view, opmsg_field_t *field);
/* For an OPMSG_FIELD_PATH field: starts a view of its merged contents.
 * False for any other kind of field. */
OPMSG_EXPORT bool opmsg_view_enter(const opmsg_view_t *view, const opmsg_field_t *field, opmsg_view_t *child);

/* ---------------------------------------------------------------------------
 * CRC-32C (Castagnoli), the OP_MSG checksum
 * ------------------------------------------------------------------------- */

/*
 * Updates a running CRC-32C with data[0..len) and returns it. Start with
 * crc = 0; the value returned after the last piece is the checksum (the
 * initial and final inversions are done inside, as zlib's crc32() does).
 * opmsg_crc32c(0, "123456789", 9) == 0xE3069283. The OP_MSG checksum is the
 * CRC-32C of the message's first messageLength - 4 bytes. Uses ISA-L's
 * crc32_iscsi when the library was built with it (CMake's OPMSG_WITH_ISAL,
 * AUTO by default), a portable table otherwise. Allocates nothing.
 */
OPMSG_EXPORT uint32_t opmsg_crc32c(uint32_t crc, const void *data, size_t len);

/* "isa-l" or "portable": which implementation opmsg_crc32c() uses. A static
 * string. */
OPMSG_EXPORT const char *opmsg_crc32c_implementation(void);

#ifdef __cplusplus
}
#endif

/* The parts beyond the engine; each documents its own functions. */
#include <opmsg/wire.h>
#include <opmsg/compress.h>
#include <opmsg/build.h>
#include <opmsg/legacy.h>
#include <opmsg/reader.h>

#endif /* OPMSG_H */
