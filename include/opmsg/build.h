/*
 * opmsg/build.h - included by <opmsg/opmsg.h>; do not include it on its own.
 *
 * The OP_MSG encoder: a command document plus named document sequences
 * become one wire message, written into a caller buffer or described as an
 * iovec list that points at the caller's documents; and a splitter that cuts
 * one large sequence into as many messages as the server's limits require.
 *
 * The encoder applies the parser's rules to what it is given, so it never
 * writes a message that opmsg_parse() (with the same limits) would reject:
 * the command is a valid, non-empty document without duplicate top-level
 * keys, every identifier is a well-formed path that is unique and does not
 * name a command field, every sequence document is framed and its top-level
 * elements are well-formed (the elements unless the caller vouches for them
 * with trust_documents), and the sizes stay within the limits.
 *
 * Nothing here allocates unless its documentation says so.
 */
#ifndef OPMSG_BUILD_H
#define OPMSG_BUILD_H

#include <sys/uio.h> /* struct iovec */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Describing a message
 * ------------------------------------------------------------------------- */

/*
 * One document sequence (a kind-1 section) to encode. Give the documents in
 * exactly one of two forms, and leave the other one zero:
 *  - a list: docs[0..n_docs) (each a bson_t; the list and the documents stay
 *    the caller's and must outlive any iovec list built from them);
 *  - a raw run: raw[0..raw_len), BSON documents back to back, exactly as they
 *    go on the wire (each document's frame is checked).
 * An empty sequence (n_docs == 0 and raw_len == 0) is legal and merges to an
 * empty array. identifier is a NUL-terminated string such as "documents", or
 * a dotted path such as "cursor.firstBatch".
 */
typedef struct {
   const char *identifier;
   const bson_t *const *docs;
   size_t n_docs;
   const uint8_t *raw;
   size_t raw_len;
} opmsg_sequence_in_t;

/*
 * The message to encode. Fill it with opmsg_build_init() and then set the
 * fields you need; the encoder only reads it. Every pointer stays the
 * caller's.
 */
typedef struct {
   /* The body (kind-0 section): a non-empty document whose first key is the
    * command name. Required. */
   const bson_t *command;
   /* Document sequences, written after the body in this order. (The
    * identifier checks compare every pair: meant for the handful of
    * sequences a command has.) */
   const opmsg_sequence_in_t *sequences;
   size_t n_sequences;
   /* Header fields. */
   int32_t request_id;
   int32_t response_to;
   /* Any of OPMSG_FLAG_CHECKSUM_PRESENT (append a CRC-32C),
    * OPMSG_FLAG_MORE_TO_COME, OPMSG_FLAG_EXHAUST_ALLOWED and
    * OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED; any other bit is
    * refused (a sender sets the bits it does not use to 0). */
   uint32_t flags;
   /* Limits, as in opmsg_options_t (0 means the default): the whole message
    * at most max_message_size bytes (never more than INT32_MAX), each
    * sequence document at most max_bson_size, the command at most
    * max_bson_size + OPMSG_BODY_ALLOWANCE. */
   size_t max_message_size;
   size_t max_bson_size;
   /* false (the default): every sequence document's frame and top-level
    * elements are checked, as the parser checks them. true: the caller
    * vouches for the elements (documents made with bson_append_*(), or
    * already parsed), and only each document's frame is checked (length
    * field, bounds, terminator, limits), which makes encoding a large batch
    * several times faster. The command is always checked fully. */
   bool trust_documents;
   /* Private: set by the splitter for batches whose documents it already
    * checked. opmsg_build_init() clears it. */
   uint32_t priv_checked;
} opmsg_build_t;

/* Zeroes *b and sets b->command. Everything else: no sequences, IDs 0, no
 * flags, default limits, documents not trusted. */
OPMSG_EXPORT void opmsg_build_init(opmsg_build_t *b, const bson_t *command);

/* ---------------------------------------------------------------------------
 * Encoding into a buffer
 * ------------------------------------------------------------------------- */

/*
 * Checks *b and stores in *size the exact number of bytes the message takes
 * (header, flagBits, the body section, each sequence section and the
 * checksum when asked for). Allocates nothing except for a command of more
 * than 512 top-level keys (one bounded table for its duplicate-key check,
 * freed before returning).
 *
 * Errors: OPMSG_ERR_INVALID_ARGUMENT (NULL pointers, a sequence given both as
 * a list and as a raw run, a NULL document in a list, an unknown optional
 * flag bit), OPMSG_ERR_REQUIRED_FLAGS (a flag bit 2-15),
 * OPMSG_ERR_BAD_COMMAND (no command, an empty or malformed command, a
 * duplicate top-level key), OPMSG_ERR_DOCUMENT_TOO_LARGE (the command above
 * max_bson_size + OPMSG_BODY_ALLOWANCE), OPMSG_ERR_SEQUENCE_IDENTIFIER (empty,
 * not UTF-8, an empty path component as in "a..b", more than
 * OPMSG_MAX_DEPTH components, or more than 64 sequences when one of them
 * has a dotted identifier: the parser's limits),
 * OPMSG_ERR_DUPLICATE_IDENTIFIER (two sequences with one identifier, or one a
 * path prefix of the other), OPMSG_ERR_IDENTIFIER_CLASH (an identifier names
 * a command field, also as a dotted path, or its dotted path goes through a
 * field the command lacks, that is not a document, or that is there
 * twice), OPMSG_ERR_DOCUMENT_LENGTH /
 * OPMSG_ERR_DOCUMENT_TERMINATOR / OPMSG_ERR_DOCUMENT_ELEMENT (a sequence
 * document that is not well-formed; the message names the sequence and the
 * document's index), OPMSG_ERR_DOCUMENT_OVER_LIMIT (a sequence document above
 * max_bson_size; names its index), OPMSG_ERR_OUTPUT_TOO_LARGE (the message
 * would exceed max_message_size, or its merged form could exceed BSON's
 * 2 GiB, which only a max_message_size near 2 GiB allows).
 */
OPMSG_EXPORT bool opmsg_build_size(const opmsg_build_t *b, size_t *size, bson_error_t *error);

/*
 * Encodes the message into buf[0..buf_len). Allocates nothing (see
 * opmsg_build_size() for the one exception). Checks *b exactly as
 * opmsg_build_size() does, and fails with OPMSG_ERR_BUFFER_TOO_SMALL when
 * buf_len is below the size (nothing useful is written then). With
 * OPMSG_FLAG_CHECKSUM_PRESENT the last 4 bytes are the CRC-32C of all the
 * bytes before them (messageLength already counting the 4). On success
 * *written (if not NULL) is the message's length.
 */
OPMSG_EXPORT bool opmsg_build_into(const opmsg_build_t *b, uint8_t *buf, size_t buf_len, size_t *written,
                                   bson_error_t *error);

/*
 * Encodes the message into a new buffer of exactly its size, allocated with
 * bson_malloc() (free it with bson_free()). Stores the length in *len. NULL
 * with *error set on the errors of opmsg_build_size().
 */
OPMSG_EXPORT uint8_t *opmsg_build_new(const opmsg_build_t *b, size_t *len, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Encoding as an iovec list (scatter-gather, no copy of the documents)
 * ------------------------------------------------------------------------- */

/* Scratch bytes opmsg_build_iovec() needs for a message with n sequences:
 * header and flagBits (20), the body's kind byte (1), each sequence's kind
 * byte and size (5 each), the checksum (4). */
#define OPMSG_BUILD_SCRATCH_SIZE(n_sequences) ((size_t) 25 + (size_t) 5 * (size_t) (n_sequences))

/*
 * The number of iovec entries opmsg_build_iovec() fills for *b: 2 for the
 * framing and the body, then per sequence 2 (framing, identifier) plus one
 * per document of a list or one for a non-empty raw run, then 1 for the
 * checksum. 0 when b is NULL. Note that writev() takes at most IOV_MAX
 * (1024 on Linux) entries per call: write a longer list in slices.
 */
OPMSG_EXPORT size_t opmsg_build_iovec_count(const opmsg_build_t *b);

/*
 * Describes the message as iov[0..*iov_count): the entries point at the
 * command's bytes, the identifiers (with their NUL) and the documents, which
 * are not copied and must stay unchanged while the list is used; the framing
 * bytes (header, flagBits, kind bytes, sequence sizes, checksum) are written
 * into scratch[0..scratch_len), which needs
 * OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences) bytes and must live as long as the
 * list. The entries concatenated are byte for byte what opmsg_build_into()
 * writes; the checksum is computed over the pieces. *total (if not NULL) is
 * the message's length. Allocates nothing (see opmsg_build_size()).
 *
 * Errors: those of opmsg_build_size(), and OPMSG_ERR_BUFFER_TOO_SMALL when
 * iov_cap is below opmsg_build_iovec_count(b) or scratch_len below the
 * scratch size.
 */
OPMSG_EXPORT bool opmsg_build_iovec(const opmsg_build_t *b, uint8_t *scratch, size_t scratch_len, struct iovec *iov,
                                    size_t iov_cap, size_t *iov_count, size_t *total, bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Batch splitting
 *
 * Cuts one sequence of many documents (an insert's "documents", an update's
 * "updates", ...) into as many messages as the server's limits require, each
 * as full as it may be: the batches take the documents in order, and each
 * batch holds as many documents as fit both maxWriteBatchSize and
 * maxMessageSizeBytes (header, flagBits, body, section framing and the
 * checksum counted). Merging the messages' sequences back together, in
 * order, gives the original documents in their order.
 *
 *    opmsg_splitter_t s;
 *    opmsg_batch_t batch;
 *    if (!opmsg_splitter_init(&s, &msg, &seq, NULL, &error)) fail;
 *    while (opmsg_splitter_next(&s, &batch)) {
 *       opmsg_build_into(batch.build, buf, sizeof buf, &len, &error);
 *       ... send buf[0..len) ...
 *    }
 * ------------------------------------------------------------------------- */

/* The largest message the splitter makes, whatever max_message_size says
 * (512 MiB): it keeps every batch's merged form within BSON's 2 GiB. */
#define OPMSG_SPLIT_MAX_MESSAGE_SIZE ((size_t) 512 * 1024 * 1024)

/* The server's limits, from its hello reply; 0 means the default. */
typedef struct {
   size_t max_message_size; /* maxMessageSizeBytes, default 48,000,000 */
   size_t max_write_batch;  /* maxWriteBatchSize, default 100,000 */
   size_t max_bson_size;    /* maxBsonObjectSize, default 16 MiB */
} opmsg_split_limits_t;

/* One batch, as opmsg_splitter_next() gives it. */
typedef struct {
   size_t index;        /* 0 for the first batch, then 1, 2, ... */
   size_t first_index;  /* index of the batch's first document in the sequence */
   size_t count;        /* documents in the batch */
   size_t message_size; /* exact length of the batch's message */
   /* The batch's message, ready for opmsg_build_into(), opmsg_build_new()
    * or opmsg_build_iovec(): the template's command, flags and limits, one
    * sequence with the batch's documents (pointing into the caller's list or
    * raw run), and request_id = the template's request_id + index (wrapping
    * like an unsigned 32-bit counter; the caller may change it). Points into
    * the splitter: valid until the next call on it. */
   const opmsg_build_t *build;
} opmsg_batch_t;

/* The splitter's state. Opaque: use the functions. The batches point into
 * it, so do not copy or move a splitter after opmsg_splitter_init(). */
typedef struct {
   opmsg_build_t priv_build;     /* the current batch's message */
   opmsg_sequence_in_t priv_all; /* the whole sequence */
   opmsg_sequence_in_t priv_seq; /* the current batch's sequence */
   size_t priv_max_batch;
   size_t priv_room;    /* bytes of documents one message can hold */
   size_t priv_fixed;   /* bytes of a message with no documents */
   size_t priv_next;    /* index of the next document */
   size_t priv_raw_off; /* raw run: offset of the next document */
   size_t priv_batches; /* batches given so far */
   int32_t priv_request_id;
   bool priv_done;
} opmsg_splitter_t;

/*
 * Prepares to split *seq into batches of the message *msg. msg gives the
 * command, request_id (of the first batch), response_to, flags (with
 * OPMSG_FLAG_CHECKSUM_PRESENT every batch carries a CRC-32C, counted in its
 * size) and must have no sequences of its own (n_sequences == 0); its limit
 * fields are ignored in favour of *limits (NULL: all defaults). msg, seq and
 * everything they point at are the caller's and must outlive the splitter.
 *
 * Everything is checked here, before the first batch, so that no message is
 * sent for a batch that cannot be completed: the rules of
 * opmsg_build_size() (msg->trust_documents applies), then each document
 * against the limits (max_message_size at most
 * OPMSG_SPLIT_MAX_MESSAGE_SIZE). A document above max_bson_size, or too large
 * to fit in a message with the command even alone, is
 * OPMSG_ERR_DOCUMENT_OVER_LIMIT and the message names its index; a command
 * whose message exceeds max_message_size with no document is
 * OPMSG_ERR_OUTPUT_TOO_LARGE. Allocates nothing; takes time linear in the
 * number of documents.
 */
OPMSG_EXPORT bool opmsg_splitter_init(opmsg_splitter_t *s, const opmsg_build_t *msg, const opmsg_sequence_in_t *seq,
                                      const opmsg_split_limits_t *limits, bson_error_t *error);

/*
 * Stores the next batch in *batch and returns true; false when every
 * document has been given out. An empty sequence gives one batch with no
 * documents (the command is still sent once). Cannot fail once
 * opmsg_splitter_init() succeeded. Allocates nothing.
 */
OPMSG_EXPORT bool opmsg_splitter_next(opmsg_splitter_t *s, opmsg_batch_t *batch);

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_BUILD_H */
