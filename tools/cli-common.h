/*
 * cli-common.h - internals shared by the source files of the `opmsg` command.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Who owns what: opmsg.c the entry (dispatch, help, --version);
 * cli-common.c the messages to the user, the usage texts, number parsing
 * and the check level options (--check, --full-validate) of every command
 * that parses; cli-io.c the input and the options of the commands that read
 * it; cli-merge.c merge and check; cli-dump.c dump; cli-build.c build;
 * tap/ the tap (tap/tap-private.h). Names of opcodes and flags come from
 * libopmsg (opmsg_opcode_name(), opmsg_flag_name()), never from a table
 * here.
 *
 * Exit codes (documented in opmsg(1)): 0 success, 1 an invalid message (one
 * line "opmsg: <rule>: <detail>" on stderr per message), 2 a usage or I/O
 * error.
 */
#ifndef OPMSG_CLI_H
#define OPMSG_CLI_H

#include <opmsg/opmsg.h>

#include "opmsg-bson-compat.h"

#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_INVALID 1
#define CLI_EXIT_USAGE 2

/* Options shared by merge, check and dump. */
typedef struct {
   opmsg_options_t parse; /* limits, OPMSG_PARSE_* flags, the check level */
   size_t read_limit;     /* largest message read from the input */
   bool bson_out;         /* merge: raw BSON instead of JSON */
   bool stream;           /* the input holds messages back to back */
   const char *path;      /* the input, "-" for stdin */
} cli_opts_t;

/* Where a message sits in the input; index is 0 outside --stream. */
typedef struct {
   bool stream;
   size_t index;
   size_t offset;
} cli_where_t;

/* ---- Messages, usage, numbers (cli-common.c) ---- */

/* Prints "opmsg: <rule>: <detail>" for an opmsg error, prefixing the detail
 * with the message's place in a stream. Exactly one line. */
void cli_report(const bson_error_t *error, const cli_where_t *where);

/* cli_report() for `opmsg check`: the detail ends with the level the
 * message was checked at, " (check: top-level)". */
void cli_report_checked(const bson_error_t *error, const cli_where_t *where, opmsg_check_t check);

/* Prints "opmsg: <text>" (one line) for usage and I/O errors. */
void cli_say(const char *fmt, ...) BSON_GNUC_PRINTF(1, 2);

/* Prints the usage text of one command (or of all when cmd is NULL) to f. */
void cli_usage(FILE *f, const char *cmd);

/* Says what was wrong (as cli_say()), then how cmd is used (all commands
 * when cmd is NULL), on stderr. Returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) BSON_GNUC_PRINTF(2, 3);

/* The check level options of every command that parses messages: reads
 * --check LEVEL, --check=LEVEL and --full-validate (the same as --check
 * full) at argv[*i]; the last one given wins. Returns 1 when argv[*i] was
 * one of them (*i is then at its last argument, *check is set), 0 when it
 * is another argument, and -1 after a usage error (an unknown or missing
 * level: reported with cmd's usage; the caller exits CLI_EXIT_USAGE). The
 * names are libopmsg's (opmsg_check_from_name()). */
int cli_check_option(const char *cmd, int argc, char **argv, int *i, opmsg_check_t *check);

/* opmsg_check_name() of check ("spec", "top-level", "full"). */
const char *cli_check_text(opmsg_check_t check);

/* The names of the OP_COMPRESSED codecs this build has (available true:
 * "noop snappy zlib zstd") or lacks (false: "" when none), space-separated,
 * in buf; as libopmsg's opmsg_compressor_available() says. Returns buf. */
const char *cli_codecs(bool available, char *buf, size_t size);

/* Parses a decimal number in [min, max]; false on anything else (a minus
 * sign too, when min is not negative: "-0" is no count). */
bool cli_parse_int(const char *text, int64_t min, int64_t max, int64_t *out);

/* opmsg_opcode_name(), or "unknown" for a number it does not name. */
static inline const char *
cli_opcode_text(int32_t opcode)
{
   const char *name = opmsg_opcode_name(opcode);

   return name ? name : "unknown";
}

/* ---- Input (cli-io.c) ---- */

/* Reads a whole file ("-" is stdin) of at most limit bytes into *data
 * (bson_malloc'd). A larger file is read only up to limit + 1 bytes, so the
 * caller sees that it is too long without the memory. False on an I/O error
 * (already reported). */
bool cli_read_file(const char *path, size_t limit, uint8_t **data, size_t *len);

/* Called once per message of the input; returns an exit code (0 or 1). */
typedef int (*cli_handler_t)(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where);

/* Runs handler on the one message of opts->path, or on each message of a
 * stream with --stream. Returns the exit code: the worst of the handlers',
 * 1 for a stream that cannot be framed or ends inside a message, 2 for an
 * I/O error. */
int cli_for_each_message(const cli_opts_t *opts, cli_handler_t handler);

/* merge, check and dump: reads their options (argv[0] is the command) and
 * runs handler on their input; returns the exit code. */
int cli_read_command(int argc, char **argv, cli_handler_t handler);

/* ---- Commands ---- */

/* Message handlers of merge, check and dump (cli-merge.c, cli-dump.c). */
int cli_merge_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where);
int cli_check_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where);
int cli_dump_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where);

/* `opmsg build` (cli-build.c); argv[0] is "build". */
int cli_build_main(int argc, char **argv);

/* `opmsg tap` (tap/); argv[0] is "tap". Returns the process exit code:
 * 0 after a clean stop (SIGINT/SIGTERM, or the end of a --pcap file),
 * 1 when a --pcap file cannot be read completely, 2 for usage errors or
 * when it cannot listen. */
int cli_tap_main(int argc, char **argv);

#endif /* OPMSG_CLI_H */
