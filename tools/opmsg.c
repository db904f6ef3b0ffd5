/*
 * opmsg.c - the `opmsg` command: merge, check, dump and build OP_MSG
 * messages (and tap, when built with libpcap).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The output formats and exit codes are a contract other tools and tests rely
 * on; docs/opmsg.1 and docs/cli.md describe them.
 */
#include "cli-common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifdef OPMSG_HAVE_TAP
#include "tap.h"
#endif

/* ---------------------------------------------------------------------------
 * Messages to the user
 * ------------------------------------------------------------------------- */

/* Writes s to stderr with every control character replaced by a space: the
 * contract is exactly one line per error, whatever a message contains. */
static void
cli_put_one_line(const char *s)
{
   for (; *s; s++) {
      unsigned char c = (unsigned char) *s;

      fputc(c < 0x20 || c == 0x7f ? ' ' : c, stderr);
   }
}

void
cli_report(const bson_error_t *error, const cli_where_t *where)
{
   const char *rule = error->domain == OPMSG_ERROR_DOMAIN
                         ? opmsg_error_name(error->code)
                         : opmsg_error_name(OPMSG_ERR_INVALID_ARGUMENT);
   char prefix[96] = "";

   if (where && where->stream) {
      bson_snprintf(prefix, sizeof prefix, "message %zu at offset %zu: ",
                    where->index, where->offset);
   }
   fputs("opmsg: ", stderr);
   cli_put_one_line(rule);
   fputs(": ", stderr);
   cli_put_one_line(prefix);
   cli_put_one_line(error->message);
   fputc('\n', stderr);
}

void
cli_say(const char *fmt, ...)
{
   char text[512];
   va_list ap;

   va_start(ap, fmt);
   bson_vsnprintf(text, sizeof text, fmt, ap);
   va_end(ap);
   fputs("opmsg: ", stderr);
   cli_put_one_line(text);
   fputc('\n', stderr);
}

static const char *const cli_usage_text[][2] = {
   {"merge", "opmsg merge [--bson] [--full-validate] [--stream]\n"
             "            [--max-message-size N] FILE|-\n"},
   {"check", "opmsg check [--full-validate] [--stream] [--max-message-size N]"
             " FILE|-\n"},
   {"dump", "opmsg dump [--full-validate] [--stream] [--max-message-size N]"
            " FILE|-\n"},
   {"build", "opmsg build --command CMD.json [--sequence NAME=DOCS.jsonl]...\n"
             "            [--compress none|noop|snappy|zlib|zstd] [--checksum]\n"
             "            [--request-id N] [--response-to N] [--more-to-come]\n"
             "            [--exhaust-allowed] [--max-message-size N]"
             " [--max-batch N]\n"},
#ifdef OPMSG_HAVE_TAP
   {"tap", "opmsg tap ...  (see `opmsg tap --help`)\n"},
#endif
   {"help", "opmsg help [COMMAND]\n"
            "  opmsg --version\n"},
};

void
cli_usage(FILE *f, const char *cmd)
{
   size_t i;
   bool any = false;

   fputs("usage:\n", f);
   for (i = 0; i < sizeof cli_usage_text / sizeof cli_usage_text[0]; i++) {
      if (!cmd || strcmp(cmd, cli_usage_text[i][0]) == 0) {
         fputs("  ", f);
         fputs(cli_usage_text[i][1], f);
         any = true;
      }
   }
   if (!any) {
      cli_usage(f, NULL);
   }
}

static int cli_usage_error(const char *cmd, const char *fmt, ...)
   BSON_GNUC_PRINTF(2, 3);

/* Says what was wrong, then how the command is used. */
static int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
   char text[256];
   va_list ap;

   va_start(ap, fmt);
   bson_vsnprintf(text, sizeof text, fmt, ap);
   va_end(ap);
   cli_say("%s", text);
   cli_usage(stderr, cmd);
   return CLI_EXIT_USAGE;
}

bool
cli_parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
   char *end = NULL;
   long long v;

   if (!text || !*text) {
      return false;
   }
   errno = 0;
   v = strtoll(text, &end, 10);
   if (errno != 0 || *end != '\0' || v < min || v > max) {
      return false;
   }
   *out = (int64_t) v;
   return true;
}

const char *
cli_opcode_name(int32_t opcode)
{
   switch (opcode) {
   case 1: return "OP_REPLY";
   case 2001: return "OP_UPDATE";
   case 2002: return "OP_INSERT";
   case 2003: return "RESERVED";
   case 2004: return "OP_QUERY";
   case 2005: return "OP_GET_MORE";
   case 2006: return "OP_DELETE";
   case 2007: return "OP_KILL_CURSORS";
   case 2012: return "OP_COMPRESSED";
   case 2013: return "OP_MSG";
   default: return "unknown";
   }
}

/* ---------------------------------------------------------------------------
 * merge and check
 * ------------------------------------------------------------------------- */

static bool
cli_write_all(const void *p, size_t n)
{
   return fwrite(p, 1, n, stdout) == n;
}

/* Prints the merged document; false when libbson cannot print it as JSON
 * (only unchecked nested contents, without --full-validate, can cause it). */
static bool
cli_print_doc(const bson_t *doc, const cli_opts_t *opts)
{
   size_t n = 0;
   char *json;

   if (opts->bson_out) {
      cli_write_all(bson_get_data(doc), doc->len);
      return true;
   }
   json = bson_as_canonical_extended_json(doc, &n);
   if (!json) {
      return false;
   }
   cli_write_all(json, n);
   cli_write_all("\n", 1);
   bson_free(json);
   return true;
}

/* Parses data and, for OP_COMPRESSED, decompresses and parses the message
 * inside. *inner owns the decompressed bytes (NULL otherwise); msg points
 * into data or into *inner. */
static bool
cli_parse_any(const uint8_t *data, size_t len, const cli_opts_t *opts,
              opmsg_msg_t *msg, uint8_t **inner, bson_error_t *error)
{
   size_t inner_len = 0;

   *inner = NULL;
   if (!opmsg_parse(data, len, &opts->parse, msg, error)) {
      return false;
   }
   if (msg->opcode != OPMSG_OP_COMPRESSED) {
      return true;
   }
   if (!cli_decompress(msg, &opts->parse, inner, &inner_len, error)) {
      return false;
   }
   if (!opmsg_parse(*inner, inner_len, &opts->parse, msg, error)) {
      bson_free(*inner);
      *inner = NULL;
      return false;
   }
   return true;
}

/* The merged document of a valid message could not be printed as JSON:
 * find out why with full validation, which names the rule and offset. */
static void
cli_report_unprintable(const uint8_t *data, size_t len, const cli_opts_t *opts,
                       const cli_where_t *where)
{
   cli_opts_t strict = *opts;
   opmsg_msg_t msg;
   uint8_t *inner = NULL;
   bson_error_t error;

   strict.parse.flags |= OPMSG_PARSE_FULL_VALIDATE;
   if (cli_parse_any(data, len, &strict, &msg, &inner, &error)) {
      bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_INVALID_VALUE,
                     "the merged document cannot be printed as Extended JSON");
   }
   bson_free(inner);
   cli_report(&error, where);
}

int
cli_merge_one(const uint8_t *data, size_t len, const cli_opts_t *opts,
              const cli_where_t *where)
{
   opmsg_msg_t msg;
   bson_error_t error;
   bson_t *doc;
   bool printed;

   if (!opmsg_parse(data, len, &opts->parse, &msg, &error)) {
      cli_report(&error, where);
      return CLI_EXIT_INVALID;
   }
   /* OP_COMPRESSED: decompressed and merged in one go, no extra copy. */
   doc = msg.opcode == OPMSG_OP_COMPRESSED
            ? cli_merge_compressed(&msg, &opts->parse, &error)
            : opmsg_merge_bson(&msg, &error);
   if (!doc) {
      cli_report(&error, where);
      return CLI_EXIT_INVALID;
   }
   printed = cli_print_doc(doc, opts);
   bson_destroy(doc);
   if (!printed) {
      cli_report_unprintable(data, len, opts, where);
      return CLI_EXIT_INVALID;
   }
   return CLI_EXIT_OK;
}

int
cli_check_one(const uint8_t *data, size_t len, const cli_opts_t *opts,
              const cli_where_t *where)
{
   opmsg_msg_t msg;
   bson_error_t error;
   uint8_t *inner = NULL;
   int32_t outer_opcode;

   if (!cli_parse_any(data, len, opts, &msg, &inner, &error)) {
      cli_report(&error, where);
      return CLI_EXIT_INVALID;
   }
   /* The parse checked the header; for OP_COMPRESSED msg now describes the
    * inner message, so the outer opcode is read again. */
   outer_opcode = (int32_t) ((uint32_t) data[12] | (uint32_t) data[13] << 8 |
                             (uint32_t) data[14] << 16 |
                             (uint32_t) data[15] << 24);
   if (where->stream) {
      /* One line per message so a stream's output lines up with it. */
      printf("ok %zu %zu %s %zu\n", where->index, where->offset,
             cli_opcode_name(outer_opcode), len);
   }
   bson_free(inner);
   return CLI_EXIT_OK;
}

/* Reads the options of merge, check and dump (in any order around the one
 * FILE; after "--" everything is a file name). Returns -1 when they are
 * fine, an exit code otherwise. */
static int
cli_parse_read_opts(int argc, char **argv, cli_opts_t *opts)
{
   const char *cmd = argv[0];
   bool is_merge = strcmp(cmd, "merge") == 0;
   bool options_done = false;
   int i;

   memset(opts, 0, sizeof *opts);
   opmsg_options_init(&opts->parse);
   for (i = 1; i < argc; i++) {
      const char *a = argv[i];

      if (!options_done && strcmp(a, "--") == 0) {
         options_done = true;
      } else if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
         if (opts->path) {
            return cli_usage_error(cmd, "too many arguments: '%s'", a);
         }
         opts->path = a;
      } else if (strcmp(a, "--bson") == 0 && is_merge) {
         opts->bson_out = true;
      } else if (strcmp(a, "--full-validate") == 0) {
         opts->parse.flags |= OPMSG_PARSE_FULL_VALIDATE;
      } else if (strcmp(a, "--stream") == 0) {
         opts->stream = true;
      } else if (strcmp(a, "--max-message-size") == 0 ||
                 strncmp(a, "--max-message-size=", 19) == 0) {
         const char *v = a[18] == '=' ? a + 19
                                      : (i + 1 < argc ? argv[++i] : NULL);
         int64_t n;

         if (!cli_parse_int(v, OPMSG_HEADER_SIZE, INT32_MAX, &n)) {
            return cli_usage_error(cmd, "bad --max-message-size: '%s'",
                                   v ? v : "");
         }
         opts->parse.max_message_size = (size_t) n;
      } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
         cli_usage(stdout, cmd);
         return CLI_EXIT_OK;
      } else {
         return cli_usage_error(cmd, "unknown option '%s'", a);
      }
   }
   if (!opts->path) {
      return cli_usage_error(cmd, "no input file given (use - for stdin)");
   }
   opts->read_limit = opts->parse.max_message_size
                         ? opts->parse.max_message_size
                         : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   return -1;
}

static int
cli_read_command(int argc, char **argv, cli_handler_t handler)
{
   cli_opts_t opts;
   int rc = cli_parse_read_opts(argc, argv, &opts);

   if (rc >= 0) {
      return rc;
   }
   rc = cli_for_each_message(&opts, handler);
   if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_say("cannot write the output: %s", strerror(errno));
      return CLI_EXIT_USAGE;
   }
   return rc;
}

/* ---------------------------------------------------------------------------
 * help, version, dispatch
 * ------------------------------------------------------------------------- */

static const char cli_features[] = ""
#ifdef OPMSG_CLI_HAVE_BUILD
   " build"
#endif
#ifdef OPMSG_CLI_HAVE_COMPRESS
   " compress"
#endif
#ifdef OPMSG_HAVE_TAP
   " tap"
#endif
   ;

static int
cli_version(void)
{
   printf("opmsg %s (libopmsg %s, libbson %s, crc32c %s)\n",
          OPMSG_VERSION_STRING, opmsg_version_string(),
          bson_get_version(), opmsg_crc32c_implementation());
   /* Which optional parts this build has; scripts (and the tests) read it. */
   printf("features:%s\n", cli_features);
   return CLI_EXIT_OK;
}

static int
cli_help(int argc, char **argv)
{
   if (argc > 1) {
      cli_usage(stdout, argv[1]);
      return CLI_EXIT_OK;
   }
   fputs("opmsg - parse, validate, merge and build MongoDB OP_MSG messages\n\n",
         stdout);
   cli_usage(stdout, NULL);
   fputs("\nFILE is one raw wire message (or several with --stream); '-' reads"
         " stdin.\n"
         "Exit status: 0 success, 1 invalid message"
         " (\"opmsg: <rule>: <detail>\" on stderr),\n"
         "2 usage or I/O error. See opmsg(1).\n",
         stdout);
   return CLI_EXIT_OK;
}

int
main(int argc, char **argv)
{
   const char *cmd;

   if (argc < 2) {
      return cli_usage_error(NULL, "no command given");
   }
   cmd = argv[1];
   if (strcmp(cmd, "merge") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_merge_one);
   }
   if (strcmp(cmd, "check") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_check_one);
   }
   if (strcmp(cmd, "dump") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_dump_one);
   }
   if (strcmp(cmd, "build") == 0) {
      return cli_build_main(argc - 1, argv + 1);
   }
#ifdef OPMSG_HAVE_TAP
   if (strcmp(cmd, "tap") == 0) {
      return opmsg_tap_main(argc - 1, argv + 1);
   }
#endif
   if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
       strcmp(cmd, "-h") == 0) {
      return cli_help(argc - 1, argv + 1);
   }
   if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
      return cli_version();
   }
   return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
