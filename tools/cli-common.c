/*
 * cli-common.c - what every command of `opmsg` says to the user, and how:
 * error lines, usage texts, number options, the check level options.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * One home for the error-line contract of opmsg(1): exactly one line
 * "opmsg: <rule>: <detail>" per invalid message, "opmsg: <text>" for usage
 * and I/O errors, whatever bytes the message or the file name hold.
 */
#include "cli-common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/* The one error line: "opmsg: <rule>: [<place>: ]<detail>[<suffix>]". */
static void
cli_report_line(const bson_error_t *error, const cli_where_t *where, const char *suffix)
{
   const char *rule = error->domain == OPMSG_ERROR_DOMAIN ? opmsg_error_name(error->code)
                                                          : opmsg_error_name(OPMSG_ERR_INVALID_ARGUMENT);
   char prefix[96] = "";

   if (where && where->stream) {
      bson_snprintf(prefix, sizeof prefix, "message %zu at offset %zu: ", where->index, where->offset);
   }
   fputs("opmsg: ", stderr);
   cli_put_one_line(rule);
   fputs(": ", stderr);
   cli_put_one_line(prefix);
   cli_put_one_line(error->message);
   cli_put_one_line(suffix);
   fputc('\n', stderr);
}

void
cli_report(const bson_error_t *error, const cli_where_t *where)
{
   cli_report_line(error, where, "");
}

void
cli_report_checked(const bson_error_t *error, const cli_where_t *where, opmsg_check_t check)
{
   char suffix[48];

   bson_snprintf(suffix, sizeof suffix, " (check: %s)", cli_check_text(check));
   cli_report_line(error, where, suffix);
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
   {"merge", "opmsg merge [--bson] [--check spec|top-level|full]"
             " [--full-validate]\n"
             "            [--stream] [--max-message-size N] FILE|-\n"},
   {"check", "opmsg check [--check spec|top-level|full] [--full-validate]\n"
             "            [--stream] [--max-message-size N] FILE|-\n"},
   {"dump", "opmsg dump [--check spec|top-level|full] [--full-validate]\n"
            "           [--stream] [--max-message-size N] FILE|-\n"},
   {"build", "opmsg build --command CMD.json [--sequence NAME=DOCS.jsonl]...\n"
             "            [--compress none|noop|snappy|zlib|zstd] [--checksum]\n"
             "            [--request-id N] [--response-to N] [--more-to-come]\n"
             "            [--exhaust-allowed] [--document-sequences-allowed] [--max-message-size N]"
             " [--max-batch N]\n"},
   {"tap", "opmsg tap ... [--check spec|top-level|full]"
           "  (see `opmsg tap --help`)\n"},
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

int
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

const char *
cli_check_text(opmsg_check_t check)
{
   const char *name = opmsg_check_name(check);

   return name ? name : "?";
}

const char *
cli_codecs(bool available, char *buf, size_t size)
{
   size_t used = 0;

   buf[0] = '\0';
   for (int id = OPMSG_COMPRESSOR_NOOP; id <= OPMSG_COMPRESSOR_ZSTD; id++) {
      if (opmsg_compressor_available(id) == available) {
         used += (size_t) bson_snprintf(buf + used, size - used, "%s%s", used ? " " : "", opmsg_compressor_name(id));
      }
   }
   return buf;
}

int
cli_check_option(const char *cmd, int argc, char **argv, int *i, opmsg_check_t *check)
{
   const char *a = argv[*i];
   const char *v;

   if (strcmp(a, "--full-validate") == 0) {
      *check = OPMSG_CHECK_FULL;
      return 1;
   }
   if (strcmp(a, "--check") == 0) {
      v = *i + 1 < argc ? argv[++*i] : NULL;
   } else if (strncmp(a, "--check=", 8) == 0) {
      v = a + 8;
   } else {
      return 0;
   }
   if (!opmsg_check_from_name(v, check)) {
      /* The names in the order of what they check, from libopmsg. */
      cli_usage_error(cmd, "%s%s%s (%s, %s or %s)", v ? "unknown --check level '" : "--check needs a level", v ? v : "",
                      v ? "'" : "", cli_check_text(OPMSG_CHECK_SPEC), cli_check_text(OPMSG_CHECK_TOP_LEVEL),
                      cli_check_text(OPMSG_CHECK_FULL));
      return -1;
   }
   return 1;
}

bool
cli_parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
   char *end = NULL;
   long long v;

   if (!text || !*text || (min >= 0 && text[0] == '-')) {
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
