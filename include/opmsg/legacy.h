/*
 * opmsg/legacy.h - included by <opmsg/opmsg.h>; do not include it on its own.
 *
 * The legacy opcodes that survive for the first handshake of older drivers:
 *
 *   OP_QUERY (2004): header | int32 flags | cstring fullCollectionName |
 *                    int32 numberToSkip | int32 numberToReturn |
 *                    document query | [document returnFieldsSelector]
 *   OP_REPLY (1):    header | int32 responseFlags | int64 cursorID |
 *                    int32 startingFrom | int32 numberReturned | document*
 *
 * Parsing is opmsg_parse()'s job; it fills these opmsg_msg_t fields:
 *  - OP_QUERY: flags, body/body_len (the query), and op_query:
 *    full_collection_name (NUL-terminated, inside the message),
 *    number_to_skip, number_to_return, field_selector/field_selector_len
 *    (NULL/0 when absent).
 *  - OP_REPLY: flags (responseFlags), body/body_len (the first document;
 *    NULL/0 when there is none), and op_reply: cursor_id, starting_from,
 *    number_returned, documents/documents_len (all documents back to back).
 * Every document is framed, and checked further to the level opts asks for
 * (opmsg_check_t: its top-level elements at top-level, every nested element
 * at full or with OPMSG_PARSE_FULL_VALIDATE). The query and the first reply
 * document may be OPMSG_BODY_ALLOWANCE larger than max_bson_size, as an
 * OP_MSG body may; other documents may not. Errors beyond the document ones:
 *  - OPMSG_ERR_QUERY_NAMESPACE: fullCollectionName empty, or not terminated
 *    early enough to leave room for numberToSkip, numberToReturn and a
 *    query (with full validation: not UTF-8);
 *  - OPMSG_ERR_REPLY_COUNT: numberReturned negative, the message ending
 *    before numberReturned documents, or a whole document after them;
 *  - OPMSG_ERR_TRAILING_BYTES: bytes after the returnFieldsSelector (or fewer
 *    than 5 after the query), or after the last reply document that do not
 *    form a document.
 * opmsg_merge_*() give the query of an OP_QUERY and the only document of an
 * OP_REPLY; opmsg_command_name() and opmsg_body() read the query or the first
 * reply document.
 *
 * The builders below write into a caller's buffer and allocate nothing.
 */
#ifndef OPMSG_LEGACY_H
#define OPMSG_LEGACY_H

#ifdef __cplusplus
extern "C" {
#endif

/* OP_QUERY flags (bit 0 is reserved). */
#define OPMSG_QUERY_FLAG_TAILABLE_CURSOR 0x00000002u
#define OPMSG_QUERY_FLAG_SECONDARY_OK 0x00000004u
#define OPMSG_QUERY_FLAG_OPLOG_REPLAY 0x00000008u
#define OPMSG_QUERY_FLAG_NO_CURSOR_TIMEOUT 0x00000010u
#define OPMSG_QUERY_FLAG_AWAIT_DATA 0x00000020u
#define OPMSG_QUERY_FLAG_EXHAUST 0x00000040u
#define OPMSG_QUERY_FLAG_PARTIAL 0x00000080u

/* OP_REPLY responseFlags. Captured mongod handshake replies set AwaitCapable. */
#define OPMSG_REPLY_FLAG_CURSOR_NOT_FOUND 0x00000001u
#define OPMSG_REPLY_FLAG_QUERY_FAILURE 0x00000002u
#define OPMSG_REPLY_FLAG_SHARD_CONFIG_STALE 0x00000004u
#define OPMSG_REPLY_FLAG_AWAIT_CAPABLE 0x00000008u

/* The namespace of every legacy command. */
#define OPMSG_ADMIN_CMD_NS "admin.$cmd"

/* ---------------------------------------------------------------------------
 * The OP_QUERY handshake
 *
 * Builds  OP_QUERY flags, "admin.$cmd", numberToSkip 0, numberToReturn -1,
 * query { isMaster: 1 | hello: 1, helloOk: true, client: {...},
 *         compression: [...], <extra fields> }
 * in that order (helloOk, client and compression only when asked for).
 * ------------------------------------------------------------------------- */

typedef struct {
   /* Send "hello: 1" instead of "isMaster: 1". Servers accept hello over
    * OP_QUERY only from 5.0 on, and the handshake spec has drivers send
    * legacy hello over OP_QUERY: leave it false unless you know the peer. */
   bool use_hello;
   /* Add "helloOk: true" (the client understands hello replies). */
   bool hello_ok;
   /* The "client" metadata document (driver, os, platform, application), or
    * NULL to leave the field out. Not copied until the build call. */
   const bson_t *client;
   /* Add "compression": an array of n_compression names (the client's
    * preference order, e.g. "zstd", "snappy"); with n_compression 0 it is
    * the empty array "compression: []". */
   bool send_compression;
   const char *const *compression;
   size_t n_compression;
   /* More fields appended as they are (e.g. saslSupportedMechs,
    * loadBalanced, speculativeAuthenticate), or NULL. Its keys must not
    * repeat the fields above. */
   const bson_t *extra;
   int32_t request_id;
   /* OP_QUERY flags (OPMSG_QUERY_FLAG_*), usually 0. */
   uint32_t flags;
} opmsg_hello_query_t;

/* Fills *q with the defaults: isMaster, helloOk true, no client, no
 * compression field, no extra fields, requestID 0, flags 0. */
OPMSG_EXPORT void opmsg_hello_query_init(opmsg_hello_query_t *q);

/*
 * The exact size of the message opmsg_build_hello_query() writes for q, or 0
 * when q is NULL, a compression name is NULL or the message would not fit a
 * messageLength (2 GiB - 1).
 */
OPMSG_EXPORT size_t opmsg_hello_query_size(const opmsg_hello_query_t *q);

/*
 * Writes the handshake OP_QUERY described by q into buf[0..buf_len). Reads
 * q and what it points to; allocates nothing. *written (if not NULL) is the
 * size written, opmsg_hello_query_size(q). Errors:
 *  - OPMSG_ERR_INVALID_ARGUMENT: q or buf NULL, a NULL compression name,
 *    compression NULL with n_compression > 0;
 *  - OPMSG_ERR_DUPLICATE_KEY: extra repeats isMaster, ismaster, hello,
 *    helloOk, client or compression;
 *  - OPMSG_ERR_OUTPUT_TOO_LARGE: the message would exceed 2 GiB - 1;
 *  - OPMSG_ERR_BUFFER_TOO_SMALL: buf_len < opmsg_hello_query_size(q)
 *    (nothing is written).
 */
OPMSG_EXPORT bool opmsg_build_hello_query(const opmsg_hello_query_t *q, uint8_t *buf, size_t buf_len, size_t *written,
                                          bson_error_t *error);

/* ---------------------------------------------------------------------------
 * OP_REPLY: building (for servers and test peers) and reading
 * ------------------------------------------------------------------------- */

typedef struct {
   int32_t request_id;
   int32_t response_to;     /* the requestID of the OP_QUERY answered */
   uint32_t response_flags; /* OPMSG_REPLY_FLAG_* */
   int64_t cursor_id;
   int32_t starting_from;
   /* The documents, in order; numberReturned is n_documents. */
   const bson_t *const *documents;
   size_t n_documents;
} opmsg_reply_t;

/* Fills *r with zeros: no documents, flags 0, IDs 0. */
OPMSG_EXPORT void opmsg_reply_init(opmsg_reply_t *r);

/* The exact size of the OP_REPLY r describes, or 0 when r is NULL, a
 * document is NULL, or it would exceed 2 GiB - 1 or INT32_MAX documents. */
OPMSG_EXPORT size_t opmsg_reply_size(const opmsg_reply_t *r);

/*
 * Writes the OP_REPLY described by r into buf[0..buf_len); the documents'
 * bytes are copied as they are. Allocates nothing. *written (if not NULL)
 * is opmsg_reply_size(r). Errors: OPMSG_ERR_INVALID_ARGUMENT (r or buf
 * NULL, documents NULL with n_documents > 0, a NULL document),
 * OPMSG_ERR_OUTPUT_TOO_LARGE, OPMSG_ERR_BUFFER_TOO_SMALL (nothing written).
 */
OPMSG_EXPORT bool opmsg_build_reply(const opmsg_reply_t *r, uint8_t *buf, size_t buf_len, size_t *written,
                                    bson_error_t *error);

/* Iterates the documents of a parsed OP_REPLY without copying. */
typedef struct {
   const uint8_t *p;
   const uint8_t *end;
} opmsg_reply_iter_t;

/* Starts at the first document of msg, an OP_REPLY filled by opmsg_parse()
 * (which checked every document). False, with an iterator that yields
 * nothing, for any other opcode. */
OPMSG_EXPORT bool opmsg_reply_iter_init(opmsg_reply_iter_t *it, const opmsg_msg_t *msg);

/* Initialises *doc as a read-only static view (bson_init_static; no
 * bson_destroy() needed) of the next document and returns true; false after
 * the last one. */
OPMSG_EXPORT bool opmsg_reply_iter_next(opmsg_reply_iter_t *it, bson_t *doc);

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_LEGACY_H */
