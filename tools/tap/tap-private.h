/*
 * tap-private.h - what the files of `opmsg tap` share: the options, the
 * state of one run, what is known of each connection, and the functions one
 * file calls in another. Not installed. Include it first: it sets the
 * feature macros the system headers of the proxy and of libpcap need.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * `opmsg tap` is a transparent TCP proxy that logs every MongoDB wire message
 * passing through it as one JSON line, or reads the same traffic from a pcap
 * capture (docs/tap.md describes the log). Who owns what:
 *  - main.c     the command line and the run: options, signals, the log file;
 *  - proxy.c    the live proxy: sockets, connection pairs, forwarding;
 *  - logger.c   the logging thread that the proxy hands each read to;
 *  - pcap.c     reading a capture: link, IP and TCP headers, reassembly;
 *  - session.c  one connection's conversation, wherever its bytes come from:
 *               framing each direction into messages, pairing replies with
 *               requests;
 *  - log.c      the JSON line of each message and event.
 * Both sources feed the same session code, so the proxy and the capture
 * reader log the same lines for the same bytes (only times and latencies
 * differ).
 */
#ifndef OPMSG_TAP_PRIVATE_H
#define OPMSG_TAP_PRIVATE_H

#define _DEFAULT_SOURCE 1 /* u_char & co. for pcap.h; struct addrinfo */
#define _POSIX_C_SOURCE 200809L

#include "../cli-common.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#define TAP_C2S 0
#define TAP_S2C 1
#define TAP_MAX_PENDING 1024u /* outstanding requests remembered per connection */

/* "c2s" and "s2c", by TAP_C2S and TAP_S2C. */
extern const char *const tap_dir_name[2];

/* Set by SIGINT and SIGTERM: the proxy and the capture reader stop, and the
 * log is flushed. */
extern volatile sig_atomic_t tap_stop;

/* ---------------------------------------------------------------------------
 * Options and shared state
 * ------------------------------------------------------------------------- */

typedef struct {
   const char *listen;
   const char *upstream;
   const char *out_path;
   const char *raw_dir;
   const char *pcap_path;
   uint16_t port;
   uint32_t max_array;  /* 0: no elision */
   opmsg_check_t check; /* --check; OPMSG_CHECK_FULL unless given */
} tap_opts_t;

typedef struct {
   tap_opts_t o;
   FILE *out;
   opmsg_options_t parse;
   uint64_t raw_seq;        /* numbers the --raw files in the order logged */
   uint64_t next_conn;      /* connection ids, from 1 */
   uint64_t lines;          /* log lines written (flushed or not) */
   struct tap_queue *queue; /* live proxy: the logging thread's input */
   bool raw_failed;         /* reported once */
} tap_t;

/* One direction of one connection: the stream reader (opmsg/reader.h) cuts
 * its bytes into messages. */
typedef struct {
   opmsg_reader_t *reader; /* created on the first bytes */
   bool broken;            /* framing lost: stop logging this direction */
   uint64_t bytes;         /* every byte seen (forwarded) */
   uint64_t messages;      /* messages framed and logged */
} tap_stream_t;

typedef struct {
   int32_t request_id;
   double t;
} tap_pending_t;

/* What the framer knows of one connection, live or from a capture. */
typedef struct {
   uint64_t id;
   tap_stream_t dir[2];
   tap_pending_t pending[TAP_MAX_PENDING];
   size_t n_pending;
} tap_session_t;

/* ---------------------------------------------------------------------------
 * One connection's conversation (session.c)
 * ------------------------------------------------------------------------- */

/* Gives ses the next connection id; nothing is allocated yet. */
void tap_session_init(tap_t *tap, tap_session_t *ses);
/* Feeds bytes that went from one side to the other (dir) and logs every
 * message they complete. */
void tap_feed(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data, size_t len, double now);
/* Logs the close line with the byte counts (why: NULL or the reason) and
 * frees the buffers; ses itself is the caller's. */
void tap_session_close(tap_t *tap, tap_session_t *ses, double now, const char *why);
/* Round-trip latency: tap_remember() notes a request sent at t;
 * tap_answer() finds (and forgets) the one a reply's responseTo names. */
void tap_remember(tap_session_t *ses, int32_t request_id, double t);
bool tap_answer(tap_session_t *ses, int32_t response_to, double *t);

/* ---------------------------------------------------------------------------
 * The log (log.c)
 * ------------------------------------------------------------------------- */

/* Logs one framed message (and saves it under --raw). */
void tap_log_message(tap_t *tap, tap_session_t *ses, int dir, const uint8_t *data, size_t len, double now);
/* Logs {"event": event, "detail": detail} (detail may be NULL). */
void tap_log_event(tap_t *tap, const tap_session_t *ses, double now, const char *event, const char *detail);
/* Logs the close event with ses's byte and message counts and how many
 * bytes each direction left unframed; why may be NULL. */
void tap_log_close(tap_t *tap, const tap_session_t *ses, double now, const char *why);

/* ---------------------------------------------------------------------------
 * The logging thread of the live proxy (logger.c)
 * ------------------------------------------------------------------------- */

enum { TAP_ITEM_OPEN, TAP_ITEM_DATA, TAP_ITEM_CLOSE };

/* Starts the thread and tap->queue; false (reported) when it cannot. */
bool tap_logger_start(tap_t *tap);
/* Queues what happened on a connection, in order: OPEN (text: the client's
 * address), DATA (dir, data[0..len)), CLOSE (text: why, or NULL; the logging
 * thread then frees ses). t is when it happened. */
void tap_post(tap_t *tap, tap_session_t *ses, int kind, int dir, double t, const char *text, const uint8_t *data,
              size_t len);
/* Logs everything still queued, then stops the thread. */
void tap_logger_stop(tap_t *tap);

/* ---------------------------------------------------------------------------
 * The two sources (proxy.c, pcap.c); each returns the exit code.
 * ------------------------------------------------------------------------- */

int tap_run_proxy(tap_t *tap);
int tap_run_pcap(tap_t *tap);

#endif /* OPMSG_TAP_PRIVATE_H */
