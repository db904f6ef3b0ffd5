/*
 * cli-io.c - reading the input of `opmsg`: one whole message, or a stream of
 * messages cut with opmsg_frame_length(); and the options of the commands
 * that read it (merge, check, dump), which are the same for the three.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#include "cli-common.h"

#include <errno.h>
#include <string.h>

/* Growth step for reading: large enough for few reads, small enough that a
 * short input never makes us allocate much. */
#define CLI_CHUNK 65536u

static FILE *
cli_open(const char *path)
{
   FILE *f;

   if (strcmp(path, "-") == 0) {
      return stdin;
   }
   f = fopen(path, "rb");
   if (!f) {
      cli_say("cannot open %s: %s", path, strerror(errno));
   }
   return f;
}

static void
cli_close(FILE *f)
{
   if (f && f != stdin) {
      fclose(f);
   }
}

/* Makes room for at least `need` bytes in *buf (capacity *cap), never more
 * than `bound`. */
static void
cli_reserve(uint8_t **buf, size_t *cap, size_t need, size_t bound)
{
   size_t n;

   if (need <= *cap) {
      return;
   }
   n = *cap ? *cap : CLI_CHUNK;
   while (n < need) {
      n = n > bound / 2 ? bound : n * 2;
   }
   if (n < need) {
      n = need;
   }
   *buf = bson_realloc(*buf, n);
   *cap = n;
}

bool
cli_read_file(const char *path, size_t limit, uint8_t **data, size_t *len)
{
   FILE *f = cli_open(path);
   uint8_t *buf = NULL;
   size_t cap = 0, used = 0;
   /* One byte past the limit tells "too long" from "exactly the limit". */
   const size_t bound = limit + 1;

   if (!f) {
      return false;
   }
   for (;;) {
      size_t want, got;

      if (used == bound) {
         break;
      }
      cli_reserve(&buf, &cap, BSON_MIN(used + CLI_CHUNK, bound), bound);
      want = BSON_MIN(cap, bound) - used;
      got = fread(buf + used, 1, want, f);
      used += got;
      if (got < want) {
         if (ferror(f)) {
            cli_say("cannot read %s: %s", path, strerror(errno));
            cli_close(f);
            bson_free(buf);
            return false;
         }
         break; /* end of file */
      }
   }
   cli_close(f);
   *data = buf;
   *len = used;
   return true;
}

/* ---------------------------------------------------------------------------
 * Streams
 * ------------------------------------------------------------------------- */

typedef struct {
   FILE *f;
   const char *path;
   uint8_t *buf;
   size_t cap;
   size_t len; /* bytes of the current message read so far */
   bool eof;
   bool io_error;
} cli_stream_t;

/* Reads until the buffer holds `want` bytes or the input ends. */
static bool
cli_stream_fill(cli_stream_t *s, size_t want, size_t bound)
{
   cli_reserve(&s->buf, &s->cap, want, bound);
   while (s->len < want && !s->eof) {
      size_t got = fread(s->buf + s->len, 1, want - s->len, s->f);

      s->len += got;
      if (got == 0) {
         if (ferror(s->f)) {
            cli_say("cannot read %s: %s", s->path, strerror(errno));
            s->io_error = true;
         }
         s->eof = true;
      }
   }
   return s->len >= want;
}

/* Cuts the message that starts in s->buf: its header must be there. Like
 * opmsg_frame_length(), but an unknown opcode with a sane length is still
 * framed, so the stream can go on after it (parsing then rejects it). */
static bool
cli_stream_frame(const cli_stream_t *s, const cli_opts_t *opts, size_t *msg_len, bson_error_t *error)
{
   int32_t declared;

   if (opmsg_frame_length(s->buf, s->len, &opts->parse, msg_len, error)) {
      return true;
   }
   if (error->domain != OPMSG_ERROR_DOMAIN || error->code != OPMSG_ERR_UNKNOWN_OPCODE) {
      return false;
   }
   memcpy(&declared, s->buf, 4);
   declared = (int32_t) BSON_UINT32_FROM_LE((uint32_t) declared);
   if (declared < OPMSG_HEADER_SIZE || (size_t) declared > opts->read_limit) {
      return false;
   }
   *msg_len = (size_t) declared;
   return true;
}

static void
cli_stream_truncated(const cli_where_t *where, size_t have, size_t want)
{
   bson_error_t error;

   bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_STREAM_TRUNCATED,
                  "the stream ends inside a message: %zu of %zu bytes", have, want);
   cli_report(&error, where);
}

static int
cli_stream_run(cli_stream_t *s, const cli_opts_t *opts, cli_handler_t handler)
{
   cli_where_t where = {true, 0, 0};
   int rc = CLI_EXIT_OK;

   for (;;) {
      bson_error_t error;
      size_t msg_len = 0;
      int one;

      s->len = 0;
      if (!cli_stream_fill(s, OPMSG_HEADER_SIZE, OPMSG_HEADER_SIZE)) {
         if (s->len > 0 && !s->io_error) {
            cli_stream_truncated(&where, s->len, OPMSG_HEADER_SIZE);
            rc = CLI_EXIT_INVALID;
         }
         break;
      }
      if (!cli_stream_frame(s, opts, &msg_len, &error)) {
         /* A lying length loses the framing: nothing after it can be
          * trusted, so the stream stops here. */
         cli_report(&error, &where);
         rc = CLI_EXIT_INVALID;
         break;
      }
      if (!cli_stream_fill(s, msg_len, msg_len)) {
         if (!s->io_error) {
            cli_stream_truncated(&where, s->len, msg_len);
            rc = CLI_EXIT_INVALID;
         }
         break;
      }
      one = handler(s->buf, msg_len, opts, &where);
      rc = BSON_MAX(rc, one);
      where.index++;
      where.offset += msg_len;
   }
   if (s->io_error) {
      rc = CLI_EXIT_USAGE;
   }
   return rc;
}

int
cli_for_each_message(const cli_opts_t *opts, cli_handler_t handler)
{
   uint8_t *data = NULL;
   size_t len = 0;
   int rc;

   if (opts->stream) {
      cli_stream_t s;

      memset(&s, 0, sizeof s);
      s.path = opts->path;
      s.f = cli_open(opts->path);
      if (!s.f) {
         return CLI_EXIT_USAGE;
      }
      rc = cli_stream_run(&s, opts, handler);
      cli_close(s.f);
      bson_free(s.buf);
      return rc;
   }

   if (!cli_read_file(opts->path, opts->read_limit, &data, &len)) {
      return CLI_EXIT_USAGE;
   }
   {
      const cli_where_t where = {false, 0, 0};

      /* An input longer than the limit was cut at limit + 1 bytes; parsing
       * reports it (the header's length is too large, or differs from the
       * bytes given). */
      rc = handler(data ? data : (const uint8_t *) "", len, opts, &where);
   }
   bson_free(data);
   return rc;
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
   /* The command's default level is top-level, as it always was; the
    * library's (opmsg_options_init()) is spec. */
   opts->parse.check = OPMSG_CHECK_TOP_LEVEL;
   for (i = 1; i < argc; i++) {
      const char *a = argv[i];
      int level = options_done ? 0 : cli_check_option(cmd, argc, argv, &i, &opts->parse.check);

      if (level < 0) {
         return CLI_EXIT_USAGE;
      } else if (level > 0) {
         continue;
      } else if (!options_done && strcmp(a, "--") == 0) {
         options_done = true;
      } else if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
         if (opts->path) {
            return cli_usage_error(cmd, "too many arguments: '%s'", a);
         }
         opts->path = a;
      } else if (strcmp(a, "--bson") == 0 && is_merge) {
         opts->bson_out = true;
      } else if (strcmp(a, "--stream") == 0) {
         opts->stream = true;
      } else if (strcmp(a, "--max-message-size") == 0 || strncmp(a, "--max-message-size=", 19) == 0) {
         const char *v = a[18] == '=' ? a + 19 : (i + 1 < argc ? argv[++i] : NULL);
         int64_t n;

         if (!cli_parse_int(v, OPMSG_HEADER_SIZE, INT32_MAX, &n)) {
            return cli_usage_error(cmd, "bad --max-message-size: '%s'", v ? v : "");
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
   opts->read_limit = opts->parse.max_message_size ? opts->parse.max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   return -1;
}

int
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
