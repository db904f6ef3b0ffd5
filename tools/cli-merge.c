/*
 * cli-merge.c - `opmsg merge` (the merged document, as canonical Extended
 * JSON or raw BSON) and `opmsg check` (the verdict, and the level it was
 * reached at).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * Both take an OP_COMPRESSED message as the message inside it: it is
 * decompressed (bounded by the parse options) and checked or merged like any
 * other.
 */
#include "cli-common.h"

static bool
cli_write_all(const void *p, size_t n)
{
   return fwrite(p, 1, n, stdout) == n;
}

/* Prints the merged document; false when libbson cannot print it as JSON
 * (only contents the check level left unread can cause it). */
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
 * into data or into *inner. *outer_opcode (when not NULL) is data's own
 * opcode, which msg no longer shows for OP_COMPRESSED. */
static bool
cli_parse_any(const uint8_t *data, size_t len, const cli_opts_t *opts, opmsg_msg_t *msg, uint8_t **inner,
              int32_t *outer_opcode, bson_error_t *error)
{
   size_t inner_len = 0;

   *inner = NULL;
   if (!opmsg_parse(data, len, &opts->parse, msg, error)) {
      return false;
   }
   if (outer_opcode) {
      *outer_opcode = msg->opcode;
   }
   if (msg->opcode != OPMSG_OP_COMPRESSED) {
      return true;
   }
   /* The parse bounded uncompressedSize with these options. */
   *inner = opmsg_decompress(msg, &inner_len, error);
   if (!*inner) {
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
cli_report_unprintable(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where)
{
   cli_opts_t strict = *opts;
   opmsg_msg_t msg;
   uint8_t *inner = NULL;
   bson_error_t error;

   strict.parse.check = OPMSG_CHECK_FULL;
   if (cli_parse_any(data, len, &strict, &msg, &inner, NULL, &error)) {
      bson_set_error(&error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_INVALID_VALUE,
                     "the merged document cannot be printed as Extended JSON");
   }
   bson_free(inner);
   cli_report(&error, where);
}

int
cli_merge_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where)
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
   doc = msg.opcode == OPMSG_OP_COMPRESSED ? opmsg_merge_compressed(&msg, &opts->parse, &error)
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
cli_check_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where)
{
   opmsg_msg_t msg;
   bson_error_t error;
   uint8_t *inner = NULL;
   int32_t outer_opcode = 0;

   if (!cli_parse_any(data, len, opts, &msg, &inner, &outer_opcode, &error)) {
      cli_report_checked(&error, where, opts->parse.check);
      return CLI_EXIT_INVALID;
   }
   if (where->stream) {
      /* One line per message so a stream's output lines up with it; the
       * level last, so that the verdict says what it covers. */
      printf("ok %zu %zu %s %zu %s\n", where->index, where->offset, cli_opcode_text(outer_opcode), len,
             cli_check_text(opts->parse.check));
   }
   bson_free(inner);
   return CLI_EXIT_OK;
}
