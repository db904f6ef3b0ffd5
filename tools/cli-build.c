/*
 * cli-build.c - `opmsg build`: encode one OP_MSG (or a split batch) from
 * Extended JSON, through <opmsg/build.h> and <opmsg/compress.h>.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#include "cli-common.h"

#include <string.h>

/* JSON is wordier than BSON: allow input files this many times the message
 * size limit before refusing them. */
#define CLI_JSON_FACTOR 4u

/* At most this many --sequence options (the wire allows more; no server
 * accepts more than two). */
#define CLI_MAX_SEQUENCES 16

/* One --sequence: its documents back to back, as they go on the wire (one
 * buffer rather than a bson_t per document). */
typedef struct {
   const char *name;
   const char *path;
   uint8_t *raw;
   size_t raw_len;
   size_t raw_cap;
   size_t n_docs;
} cli_seq_t;

typedef struct {
   const char *command_path;
   cli_seq_t seqs[CLI_MAX_SEQUENCES];
   size_t n_seqs;
   int compressor; /* -1: none */
   uint32_t flags;
   int32_t request_id;
   int32_t response_to;
   size_t max_message_size;
   size_t max_batch;
   bool split;
} cli_build_opts_t;

static int
cli_build_usage(const char *what, const char *arg)
{
   cli_say("build: %s%s%s%s", what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
   cli_usage(stderr, "build");
   return CLI_EXIT_USAGE;
}

/* The value of an option given as "--opt VALUE" or "--opt=VALUE"; NULL
 * when a is not that option. */
static const char *
cli_opt_value(const char *a, const char *opt, int argc, char **argv, int *i, bool *missing)
{
   size_t n = strlen(opt);

   if (strncmp(a, opt, n) != 0) {
      return NULL;
   }
   if (a[n] == '=') {
      return a + n + 1;
   }
   if (a[n] != '\0') {
      return NULL;
   }
   if (*i + 1 >= argc) {
      *missing = true;
      return NULL;
   }
   return argv[++*i];
}

static int
cli_build_parse_value(cli_build_opts_t *o, const char *opt, const char *v)
{
   int64_t n;

   if (strcmp(opt, "--command") == 0) {
      o->command_path = v;
   } else if (strcmp(opt, "--sequence") == 0) {
      const char *eq = strchr(v, '=');
      cli_seq_t *s;

      if (!eq || eq == v || !eq[1]) {
         return cli_build_usage("--sequence needs NAME=FILE, not", v);
      }
      if (o->n_seqs == CLI_MAX_SEQUENCES) {
         return cli_build_usage("too many --sequence options", NULL);
      }
      s = &o->seqs[o->n_seqs++];
      s->name = bson_strndup(v, (size_t) (eq - v));
      s->path = eq + 1;
   } else if (strcmp(opt, "--compress") == 0) {
      if (strcmp(v, "none") == 0) {
         o->compressor = -1;
      } else if ((o->compressor = opmsg_compressor_from_name(v)) < 0) {
         return cli_build_usage("unknown compressor", v);
      } else if (!opmsg_compressor_available(o->compressor)) {
         return cli_build_usage("this opmsg was built without the compressor", v);
      }
   } else if (strcmp(opt, "--request-id") == 0 || strcmp(opt, "--response-to") == 0) {
      if (!cli_parse_int(v, INT32_MIN, INT32_MAX, &n)) {
         return cli_build_usage("not a 32-bit integer:", v);
      }
      if (strcmp(opt, "--request-id") == 0) {
         o->request_id = (int32_t) n;
      } else {
         o->response_to = (int32_t) n;
      }
   } else if (strcmp(opt, "--max-message-size") == 0) {
      if (!cli_parse_int(v, 1, INT32_MAX, &n)) {
         return cli_build_usage("bad --max-message-size", v);
      }
      o->max_message_size = (size_t) n;
      o->split = true;
   } else if (strcmp(opt, "--max-batch") == 0) {
      if (!cli_parse_int(v, 1, INT32_MAX, &n)) {
         return cli_build_usage("bad --max-batch", v);
      }
      o->max_batch = (size_t) n;
      o->split = true;
   }
   return -1;
}

static int
cli_build_parse(int argc, char **argv, cli_build_opts_t *o)
{
   static const char *const with_value[] = {"--command",     "--sequence",         "--compress", "--request-id",
                                            "--response-to", "--max-message-size", "--max-batch"};
   int i;

   memset(o, 0, sizeof *o);
   o->compressor = -1;
   for (i = 1; i < argc; i++) {
      const char *a = argv[i];
      bool matched = false, missing = false;
      size_t k;

      if (strcmp(a, "--checksum") == 0) {
         o->flags |= OPMSG_FLAG_CHECKSUM_PRESENT;
         continue;
      }
      if (strcmp(a, "--more-to-come") == 0) {
         o->flags |= OPMSG_FLAG_MORE_TO_COME;
         continue;
      }
      if (strcmp(a, "--exhaust-allowed") == 0) {
         o->flags |= OPMSG_FLAG_EXHAUST_ALLOWED;
         continue;
      }
      if (strcmp(a, "--document-sequences-allowed") == 0) {
         o->flags |= OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED;
         continue;
      }
      if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
         cli_usage(stdout, "build");
         return CLI_EXIT_OK;
      }
      for (k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
         const char *v = cli_opt_value(a, with_value[k], argc, argv, &i, &missing);
         int rc;

         if (missing) {
            return cli_build_usage("a value is missing after", a);
         }
         if (v) {
            matched = true;
            rc = cli_build_parse_value(o, with_value[k], v);
            if (rc >= 0) {
               return rc;
            }
            break;
         }
      }
      if (!matched) {
         return cli_build_usage("unknown argument", a);
      }
   }
   if (!o->command_path) {
      return cli_build_usage("--command CMD.json is required", NULL);
   }
   if (o->split && o->n_seqs != 1) {
      return cli_build_usage("--max-message-size and --max-batch split exactly one --sequence", NULL);
   }
   return -1;
}

static size_t
cli_json_limit(const cli_build_opts_t *o)
{
   return CLI_JSON_FACTOR *
          (o->max_message_size > OPMSG_DEFAULT_MAX_MESSAGE_SIZE ? o->max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE);
}

/* Reports a JSON (libbson) error as one rule line. */
static void
cli_json_error(opmsg_error_code_t code, const char *path, size_t line, const bson_error_t *json_error)
{
   bson_error_t error;

   if (line) {
      bson_set_error(&error, OPMSG_ERROR_DOMAIN, code, "%s line %zu: %s", path, line, json_error->message);
   } else {
      bson_set_error(&error, OPMSG_ERROR_DOMAIN, code, "%s: %s", path, json_error->message);
   }
   cli_report(&error, NULL);
}

static bool
cli_is_space(char c)
{
   return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* True when text[0..len) is only white space. */
static bool
cli_blank(const char *text, size_t len)
{
   size_t i;

   for (i = 0; i < len; i++) {
      if (!cli_is_space(text[i])) {
         return false;
      }
   }
   return true;
}

/* Parses text[0..len) as exactly one JSON object. bson_new_from_json()
 * alone would take an array as a document and ignore a second object after
 * the first, silently dropping input. */
static bson_t *
cli_json_doc(const char *text, size_t len, bson_error_t *error)
{
   bson_json_reader_t *reader;
   bson_t *doc;
   bson_t extra = BSON_INITIALIZER;
   bson_error_t extra_error;
   size_t i = 0;
   int rc;

   while (i < len && cli_is_space(text[i])) {
      i++;
   }
   if (i == len || text[i] != '{') {
      bson_set_error(error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_INVALID_ARGUMENT, "not a JSON object");
      return NULL;
   }
   reader = bson_json_data_reader_new(true, 0);
   bson_json_data_reader_ingest(reader, (const uint8_t *) text, len);
   doc = bson_new();
   rc = bson_json_reader_read(reader, doc, error);
   if (rc == 1 && bson_json_reader_read(reader, &extra, &extra_error) != 0) {
      bson_set_error(error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_INVALID_ARGUMENT, "more than one JSON document");
      rc = -1;
   } else if (rc == 0) {
      bson_set_error(error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_INVALID_ARGUMENT, "no JSON document");
   }
   bson_destroy(&extra);
   bson_json_reader_destroy(reader);
   if (rc != 1) {
      bson_destroy(doc);
      return NULL;
   }
   return doc;
}

static int
cli_read_command_json(const cli_build_opts_t *o, bson_t **command)
{
   uint8_t *text = NULL;
   size_t len = 0;
   bson_error_t jerr;
   const size_t limit = cli_json_limit(o);

   if (!cli_read_file(o->command_path, limit, &text, &len)) {
      return CLI_EXIT_USAGE;
   }
   if (len > limit) {
      bson_free(text);
      cli_say("%s: larger than %zu bytes", o->command_path, limit);
      return CLI_EXIT_USAGE;
   }
   *command = cli_json_doc((const char *) text, len, &jerr);
   bson_free(text);
   if (!*command) {
      cli_json_error(OPMSG_ERR_BAD_COMMAND, o->command_path, 0, &jerr);
      return CLI_EXIT_INVALID;
   }
   return -1;
}

/* DOCS.jsonl: one Extended JSON document per line; blank lines skipped. */
static int
cli_read_jsonl(cli_seq_t *s, size_t limit)
{
   uint8_t *text = NULL;
   size_t len = 0, off = 0, line = 0;

   if (!cli_read_file(s->path, limit, &text, &len)) {
      return CLI_EXIT_USAGE;
   }
   if (len > limit) {
      bson_free(text);
      cli_say("%s: larger than %zu bytes", s->path, limit);
      return CLI_EXIT_USAGE;
   }
   while (off < len) {
      const char *p = (const char *) text + off;
      const char *nl = memchr(p, '\n', len - off);
      size_t n = nl ? (size_t) (nl - p) : len - off;
      bson_error_t jerr;
      bson_t *doc;

      off += n + (nl ? 1 : 0);
      line++;
      if (cli_blank(p, n)) {
         continue;
      }
      doc = cli_json_doc(p, n, &jerr);
      if (!doc) {
         cli_json_error(OPMSG_ERR_INVALID_ARGUMENT, s->path, line, &jerr);
         bson_free(text);
         return CLI_EXIT_INVALID;
      }
      if (s->raw_len + doc->len > s->raw_cap) {
         s->raw_cap = BSON_MAX(s->raw_cap * 2, s->raw_len + doc->len);
         s->raw = bson_realloc(s->raw, s->raw_cap);
      }
      memcpy(s->raw + s->raw_len, bson_get_data(doc), doc->len);
      s->raw_len += doc->len;
      s->n_docs++;
      bson_destroy(doc);
   }
   bson_free(text);
   return -1;
}

static void
cli_build_free(cli_build_opts_t *o, bson_t *command)
{
   size_t i;

   for (i = 0; i < o->n_seqs; i++) {
      bson_free(o->seqs[i].raw);
      bson_free((char *) o->seqs[i].name);
   }
   if (command) {
      bson_destroy(command);
   }
}

/* Refuses, before anything is written, to compress what the spec forbids
 * (opmsg_compress() checks it again). */
static bool
cli_check_compressible(const cli_build_opts_t *o, const bson_t *command)
{
   bson_iter_t it;
   const char *name = NULL;
   bson_error_t error;

   if (o->compressor < 0) {
      return true;
   }
   if (bson_iter_init(&it, command) && bson_iter_next(&it)) {
      name = bson_iter_key(&it);
   }
   if (opmsg_compression_allowed(name)) {
      return true;
   }
   bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_COMPRESSION_FORBIDDEN,
                  "the command '%s' must never be compressed", name);
   cli_report(&error, NULL);
   return false;
}

/* Writes one encoded message, compressed when asked. */
static int
cli_emit(const cli_build_opts_t *o, const uint8_t *msg, size_t len)
{
   bson_error_t error;
   uint8_t *packed = NULL;
   size_t packed_len = 0;

   if (o->compressor >= 0) {
      packed = opmsg_compress(msg, len, o->compressor, OPMSG_COMPRESS_DEFAULT_LEVEL, &packed_len, &error);
      if (!packed) {
         cli_report(&error, NULL);
         return CLI_EXIT_INVALID;
      }
      msg = packed;
      len = packed_len;
   }
   if (fwrite(msg, 1, len, stdout) != len) {
      bson_free(packed);
      cli_say("cannot write the output");
      return CLI_EXIT_USAGE;
   }
   bson_free(packed);
   return CLI_EXIT_OK;
}

static int
cli_build_one(const cli_build_opts_t *o, const bson_t *command)
{
   opmsg_sequence_in_t seqs[CLI_MAX_SEQUENCES];
   opmsg_build_t b;
   bson_error_t error;
   uint8_t *msg;
   size_t len = 0, i;
   int rc;

   memset(seqs, 0, sizeof seqs);
   for (i = 0; i < o->n_seqs; i++) {
      seqs[i].identifier = o->seqs[i].name;
      seqs[i].raw = o->seqs[i].raw;
      seqs[i].raw_len = o->seqs[i].raw_len;
   }
   opmsg_build_init(&b, command);
   b.sequences = seqs;
   b.n_sequences = o->n_seqs;
   b.request_id = o->request_id;
   b.response_to = o->response_to;
   b.flags = o->flags;
   msg = opmsg_build_new(&b, &len, &error);
   if (!msg) {
      cli_report(&error, NULL);
      return CLI_EXIT_INVALID;
   }
   rc = cli_emit(o, msg, len);
   bson_free(msg);
   return rc;
}

static int
cli_build_split(const cli_build_opts_t *o, const bson_t *command)
{
   opmsg_sequence_in_t seq;
   opmsg_build_t tmpl;
   opmsg_split_limits_t limits;
   opmsg_splitter_t s;
   opmsg_batch_t batch;
   bson_error_t error;

   memset(&seq, 0, sizeof seq);
   seq.identifier = o->seqs[0].name;
   seq.raw = o->seqs[0].raw;
   seq.raw_len = o->seqs[0].raw_len;
   opmsg_build_init(&tmpl, command);
   tmpl.request_id = o->request_id;
   tmpl.response_to = o->response_to;
   tmpl.flags = o->flags;
   memset(&limits, 0, sizeof limits);
   limits.max_message_size = o->max_message_size;
   limits.max_write_batch = o->max_batch;
   /* The splitter checks every document before the first batch, so a
    * failure never leaves half a stream on stdout. */
   if (!opmsg_splitter_init(&s, &tmpl, &seq, &limits, &error)) {
      cli_report(&error, NULL);
      return CLI_EXIT_INVALID;
   }
   while (opmsg_splitter_next(&s, &batch)) {
      size_t len = 0;
      uint8_t *msg = opmsg_build_new(batch.build, &len, &error);
      int rc;

      if (!msg) {
         cli_report(&error, NULL);
         return CLI_EXIT_INVALID;
      }
      rc = cli_emit(o, msg, len);
      bson_free(msg);
      if (rc != CLI_EXIT_OK) {
         return rc;
      }
   }
   return CLI_EXIT_OK;
}

int
cli_build_main(int argc, char **argv)
{
   cli_build_opts_t o;
   bson_t *command = NULL;
   size_t i;
   int rc = cli_build_parse(argc, argv, &o);

   if (rc >= 0) {
      cli_build_free(&o, NULL);
      return rc;
   }
   rc = cli_read_command_json(&o, &command);
   for (i = 0; rc < 0 && i < o.n_seqs; i++) {
      rc = cli_read_jsonl(&o.seqs[i], cli_json_limit(&o));
   }
   if (rc < 0) {
      if (!cli_check_compressible(&o, command)) {
         rc = CLI_EXIT_INVALID;
      } else {
         rc = o.split ? cli_build_split(&o, command) : cli_build_one(&o, command);
      }
   }
   if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
      cli_say("cannot write the output");
      rc = CLI_EXIT_USAGE;
   }
   cli_build_free(&o, command);
   return rc;
}
