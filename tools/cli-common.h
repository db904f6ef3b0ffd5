/*
 * cli-common.h - internals shared by the source files of the `opmsg` command.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Exit codes (documented in opmsg(1)): 0 success, 1 an invalid message (one
 * line "opmsg: <rule>: <detail>" on stderr per message), 2 a usage or I/O
 * error.
 */
#ifndef OPMSG_CLI_H
#define OPMSG_CLI_H

#include <opmsg/opmsg.h>

#include "../src/opmsg-bson-compat.h"

#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_INVALID 1
#define CLI_EXIT_USAGE 2

/* Options shared by merge, check and dump. */
typedef struct {
   opmsg_options_t parse;  /* limits and OPMSG_PARSE_* flags */
   size_t read_limit;      /* largest message read from the input */
   bool bson_out;          /* merge: raw BSON instead of JSON */
   bool stream;            /* the input holds messages back to back */
   const char *path;       /* the input, "-" for stdin */
} cli_opts_t;

/* Where a message sits in the input; index is 0 outside --stream. */
typedef struct {
   bool stream;
   size_t index;
   size_t offset;
} cli_where_t;

/* ---- Output of errors (opmsg.c) ---- */

/* Prints "opmsg: <rule>: <detail>" for an opmsg error, prefixing the detail
 * with the message's place in a stream. Exactly one line. */
void cli_report(const bson_error_t *error, const cli_where_t *where);

/* Prints "opmsg: <text>" (one line) for usage and I/O errors. */
void cli_say(const char *fmt, ...) BSON_GNUC_PRINTF(1, 2);

/* Prints the usage text of one command (or of all when cmd is NULL) to f. */
void cli_usage(FILE *f, const char *cmd);

/* Parses a decimal number in [min, max]; false on anything else. */
bool cli_parse_int(const char *text, int64_t min, int64_t max, int64_t *out);

/* ---- Input (cli-io.c) ---- */

/* Reads a whole file ("-" is stdin) of at most limit bytes into *data
 * (bson_malloc'd). A larger file is read only up to limit + 1 bytes, so the
 * caller sees that it is too long without the memory. False on an I/O error
 * (already reported). */
bool cli_read_file(const char *path, size_t limit, uint8_t **data,
                   size_t *len);

/* Called once per message of the input; returns an exit code (0 or 1). */
typedef int (*cli_handler_t)(const uint8_t *data, size_t len,
                             const cli_opts_t *opts, const cli_where_t *where);

/* Runs handler on the one message of opts->path, or on each message of a
 * stream with --stream. Returns the exit code: the worst of the handlers',
 * 1 for a stream that cannot be framed or ends inside a message, 2 for an
 * I/O error. */
int cli_for_each_message(const cli_opts_t *opts, cli_handler_t handler);

/* ---- Commands ---- */

/* Message handlers of merge, check and dump (opmsg.c, cli-dump.c). */
int cli_merge_one(const uint8_t *data, size_t len, const cli_opts_t *opts,
                  const cli_where_t *where);
int cli_check_one(const uint8_t *data, size_t len, const cli_opts_t *opts,
                  const cli_where_t *where);
int cli_dump_one(const uint8_t *data, size_t len, const cli_opts_t *opts,
                 const cli_where_t *where);

/* `opmsg build` (cli-build.c); argv[0] is "build". */
int cli_build_main(int argc, char **argv);

/* Decompresses an OP_COMPRESSED message that opmsg_parse() accepted into a
 * new buffer holding the original message, header rebuilt (cli-io.c).
 * Fails with OPMSG_ERR_COMPRESSOR_UNAVAILABLE when this build has no
 * decompression. */
bool cli_decompress(const opmsg_msg_t *msg, const opmsg_options_t *opts,
                    uint8_t **out, size_t *out_len, bson_error_t *error);

/* Decompresses, parses and merges an OP_COMPRESSED message in one go (no
 * copy beyond the decompression buffer). NULL with *error set. */
bson_t *cli_merge_compressed(const opmsg_msg_t *msg,
                             const opmsg_options_t *opts, bson_error_t *error);

/* "OP_MSG", "OP_QUERY", ... or "unknown". */
const char *cli_opcode_name(int32_t opcode);

#endif /* OPMSG_CLI_H */
