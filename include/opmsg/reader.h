/*
 * opmsg/reader.h - included by <opmsg/opmsg.h>; do not include it on its own.
 *
 * The stream reader cuts a byte stream (a socket, a pipe, a file) that
 * arrives in pieces of any size into whole wire messages, and follows
 * moreToCome reply sequences (exhaust cursors, streaming hello).
 *
 *    opmsg_reader_t *r = opmsg_reader_new(NULL);
 *    while (data arrives) {
 *       size_t used = 0;
 *       while (used < n) {
 *          used += opmsg_reader_feed(r, data + used, n - used);
 *          while ((st = opmsg_reader_next(r, &msg, &len, &error)) ==
 *                 OPMSG_READER_MESSAGE) {
 *             ... opmsg_parse(msg, len, ...) ...
 *          }
 *          if (st == OPMSG_READER_ERROR) ... the stream is unusable ...
 *       }
 *    }
 *    opmsg_reader_end(r);  then opmsg_reader_next() reports a message cut
 *                          short as OPMSG_ERR_STREAM_TRUNCATED
 *    opmsg_reader_destroy(r);
 *
 * The reader only frames: it checks each header with opmsg_frame_length()
 * (messageLength within the opcode's minimum and the size limit, a known
 * opcode) and gives the message's bytes; pass them to opmsg_parse() for the
 * rest.
 *
 * Memory: one buffer, allocated with bson_malloc()/bson_realloc() (so
 * bson_mem_set_vtable() sees it), whose capacity never exceeds
 * max(largest message framed so far, min(OPMSG_READER_CHUNK,
 * max_message_size)) and so never max_message_size (for any limit of at
 * least 16 bytes). A messageLength is checked against the limit as soon as
 * its 16-byte header is complete, before the buffer grows past one chunk
 * for it; and even an accepted length is not trusted: the buffer grows
 * (doubling, from 4 KiB) only as the message's bytes actually arrive, so it
 * is also at most max(4 KiB, twice the bytes buffered when it grew). For a
 * stream that delivers its messages whole, the capacity is at most the
 * largest message or one chunk.
 * opmsg_reader_feed() takes only as many bytes as fit within the bound and
 * says how many it took. The reply functions keep a second buffer, also at
 * most max_message_size, for decompressing OP_COMPRESSED replies. A reader
 * is not thread-safe; distinct readers are independent.
 */
#ifndef OPMSG_READER_H
#define OPMSG_READER_H

#ifdef __cplusplus
extern "C" {
#endif

/* How many bytes the reader buffers ahead of the current message's end (or
 * while no header is complete), at most: small messages are framed from a
 * buffer of this size, larger ones from one of their own size. */
#define OPMSG_READER_CHUNK 65536u

typedef struct opmsg_reader_t opmsg_reader_t;

/* What opmsg_reader_next() and its variants found. */
typedef enum {
   OPMSG_READER_ERROR = -1,    /* *error is set; the reader stays failed */
   OPMSG_READER_NEED_MORE = 0, /* no whole message yet: feed more bytes */
   OPMSG_READER_MESSAGE = 1,   /* *data, *len hold one whole message */
   OPMSG_READER_END = 2        /* the stream ended cleanly after a message */
} opmsg_reader_status_t;

/*
 * A new reader. opts (may be NULL: defaults) gives the size limit
 * (max_message_size) used to check every messageLength, and the options the
 * reply functions parse OP_COMPRESSED replies with; it is copied. Allocates
 * the reader itself (bson_malloc); its buffer is allocated on the first
 * feed. Free with opmsg_reader_destroy().
 */
OPMSG_EXPORT opmsg_reader_t *opmsg_reader_new(const opmsg_options_t *opts);

/* Frees the reader and its buffers. NULL is fine. */
OPMSG_EXPORT void opmsg_reader_destroy(opmsg_reader_t *r);

/*
 * Copies bytes data[0..len) of the stream into the reader and returns how
 * many it took: all of them, or fewer when the buffer is at its bound (then
 * take messages out with opmsg_reader_next() and feed the rest). Returns 0
 * when the reader has failed or ended (or r is NULL, or data is NULL). The
 * bytes are copied: data may be reused at once. Invalidates the message
 * pointer of the last opmsg_reader_next(). If the bytes complete a header,
 * its length is checked here (a failure is reported by the next
 * opmsg_reader_next()) and no more bytes are taken.
 */
OPMSG_EXPORT size_t opmsg_reader_feed(opmsg_reader_t *r, const void *data, size_t len);

/*
 * Says the stream has ended (EOF): afterwards opmsg_reader_next() gives the
 * whole messages still buffered, then OPMSG_READER_END, or an
 * OPMSG_ERR_STREAM_TRUNCATED error when the stream stopped inside a message.
 * Further feeds take nothing.
 */
OPMSG_EXPORT void opmsg_reader_end(opmsg_reader_t *r);

/*
 * Takes the next whole message out of the reader. OPMSG_READER_MESSAGE:
 * *data and *len are the message (messageLength bytes, header included),
 * inside the reader's buffer, valid until the next call of any function on
 * this reader. OPMSG_READER_NEED_MORE: feed more. OPMSG_READER_END: the
 * stream ended at a message boundary. OPMSG_READER_ERROR: *error holds the
 * opmsg_frame_length() error of a bad header (OPMSG_ERR_LENGTH_TOO_SMALL,
 * OPMSG_ERR_LENGTH_TOO_LARGE, OPMSG_ERR_UNKNOWN_OPCODE; the message names the
 * stream offset), OPMSG_ERR_STREAM_TRUNCATED, or OPMSG_ERR_INVALID_ARGUMENT
 * for NULL pointers; the reader then stays failed (framing is lost) and
 * gives the same error again. Allocates nothing.
 */
OPMSG_EXPORT opmsg_reader_status_t opmsg_reader_next(opmsg_reader_t *r, const uint8_t **data, size_t *len,
                                                     bson_error_t *error);

/* Bytes buffered but not yet given out as messages. */
OPMSG_EXPORT size_t opmsg_reader_buffered(const opmsg_reader_t *r);

/* Bytes of the stream given out as messages so far. */
OPMSG_EXPORT uint64_t opmsg_reader_offset(const opmsg_reader_t *r);

/* ---------------------------------------------------------------------------
 * Reading from a file descriptor
 * ------------------------------------------------------------------------- */

/*
 * One read() from fd into the reader (EINTR is retried): at most as many
 * bytes as opmsg_reader_feed() would take. Returns true when bytes were
 * added, when nothing was ready on a non-blocking fd (EAGAIN), or at end of
 * file (then the reader has ended, as after opmsg_reader_end()); *n_read (if
 * not NULL) is the number of bytes added. False with *error set
 * (OPMSG_ERR_IO, naming errno) when read() fails. When the
 * buffer is at its bound no read is made (take a message out first).
 */
OPMSG_EXPORT bool opmsg_reader_fill_fd(opmsg_reader_t *r, int fd, size_t *n_read, bson_error_t *error);

/*
 * The next whole message from fd: opmsg_reader_next(), reading from fd
 * (opmsg_reader_fill_fd()) until a message is whole, the stream ends or
 * something fails. On a blocking fd it never returns
 * OPMSG_READER_NEED_MORE; on a non-blocking one it does when read() would
 * block. *data, *len as for opmsg_reader_next().
 */
OPMSG_EXPORT opmsg_reader_status_t opmsg_reader_read_fd(opmsg_reader_t *r, int fd, const uint8_t **data, size_t *len,
                                                        bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Reply sequences (moreToCome / exhaust)
 *
 * A request sent with OPMSG_FLAG_EXHAUST_ALLOWED may be answered by several
 * replies: each with moreToCome set promises another, whose responseTo is
 * the requestID of the reply before it; the last has moreToCome clear. The
 * first reply answers the request (responseTo = the request's requestID).
 * The client must read them all before it sends anything on the connection.
 *
 *    opmsg_exhaust_t x;
 *    opmsg_exhaust_init(&x, request_id);
 *    do {
 *       st = opmsg_reader_read_reply_fd(r, fd, &x, &msg, &len, &error);
 *       if (st != OPMSG_READER_MESSAGE) break;   (error, or END too soon)
 *       ... opmsg_parse(msg, len, ...) ...
 *    } while (x.more_to_come);
 * ------------------------------------------------------------------------- */

typedef struct {
   /* The responseTo the next reply must carry: the request's requestID,
    * then each moreToCome reply's requestID. */
   int32_t expected_response_to;
   /* After a reply: true when it had moreToCome (another reply follows). */
   bool more_to_come;
   /* How many replies of the sequence have been read. */
   uint32_t replies;
   /* Private: a reply without moreToCome ended the sequence. */
   bool priv_done;
} opmsg_exhaust_t;

/* Starts following the replies to the request whose requestID was
 * request_id. */
OPMSG_EXPORT void opmsg_exhaust_init(opmsg_exhaust_t *x, int32_t request_id);

/*
 * opmsg_reader_next() for the next reply of the sequence x follows. Checks
 * that the reply's responseTo is x->expected_response_to
 * (OPMSG_ERR_EXHAUST_SEQUENCE otherwise, naming both), then reads its
 * moreToCome bit into x->more_to_come and, when set, expects the following
 * reply to answer this one. An OP_COMPRESSED reply is decompressed first
 * (opmsg_parse() of its framing with the reader's options, then
 * opmsg_decompress_into() into a second reader buffer of at most
 * max_message_size) and *data, *len are the rebuilt original message, with
 * the errors of those functions. OP_REPLY (legacy) replies never have more
 * to come. Calling it again after the last reply of the sequence
 * (x->more_to_come false) is OPMSG_ERR_INVALID_ARGUMENT: start a new one with
 * opmsg_exhaust_init(). The reply's contents are not checked beyond its
 * header and flagBits: opmsg_parse() them. OPMSG_READER_END before the
 * sequence is over means the peer closed the connection early.
 */
OPMSG_EXPORT opmsg_reader_status_t opmsg_reader_next_reply(opmsg_reader_t *r, opmsg_exhaust_t *x, const uint8_t **data,
                                                           size_t *len, bson_error_t *error);

/* opmsg_reader_next_reply() reading from fd as opmsg_reader_read_fd() does. */
OPMSG_EXPORT opmsg_reader_status_t opmsg_reader_read_reply_fd(opmsg_reader_t *r, int fd, opmsg_exhaust_t *x,
                                                              const uint8_t **data, size_t *len, bson_error_t *error);

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_READER_H */
