/*
 * view.c - read an OP_MSG without copying it: the zero-copy view.
 *
 *    view FILE
 *
 * FILE holds one whole wire message. The program prints what a server or a
 * proxy usually needs to route and log a command (its name, its database,
 * its document sequences and their documents) without building the merged
 * document: every pointer it reads points into the message's own bytes, and
 * reading allocates nothing (only the JSON text printed for each document
 * is allocated). Output:
 *
 *    command: insert
 *    $db: perf
 *    ordered: true                      (only when the body has it)
 *    sequence documents: 100 documents, 4800 bytes
 *      {"_id": {"$numberInt": "0"}, ...}  (one line per document)
 *    path cursor gains a sequence       (for a dotted identifier such as
 *                                        "cursor.firstBatch")
 *    merged top level: 149 fields (148 from the body, 1 sequences, 0 paths)
 *
 * Exit status: 0 on success, 1 when the message is invalid or unreadable,
 * 2 for a usage error.
 *
 * Build: cc view.c $(pkg-config --cflags --libs opmsg) -o view
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 * This example may be copied into your own program without restriction.
 */
#include <opmsg/opmsg.h>

#include <stdio.h>
#include <stdlib.h>

/* Reads the whole file into a new buffer (free() it). NULL on failure. */
static uint8_t *
read_file(const char *path, size_t *len)
{
   FILE *f = fopen(path, "rb");
   if (f == NULL) {
      return NULL;
   }
   size_t cap = 4096, n = 0;
   uint8_t *buf = malloc(cap);
   while (buf != NULL) {
      n += fread(buf + n, 1, cap - n, f);
      if (n < cap) {
         break;
      }
      uint8_t *bigger = realloc(buf, cap * 2);
      if (bigger == NULL) {
         free(buf);
         buf = NULL;
         break;
      }
      buf = bigger;
      cap *= 2;
   }
   if (buf != NULL && ferror(f)) {
      free(buf);
      buf = NULL;
   }
   fclose(f);
   *len = n;
   return buf;
}

/*
 * The body is a plain BSON document: opmsg_body() wraps it in a static
 * bson_t (no copy, no bson_destroy() needed) so libbson's iterator can look
 * up any field. Here: the "ordered" flag of a write command.
 */
static void
print_ordered(const opmsg_msg_t *msg)
{
   bson_t body;
   bson_iter_t it;
   if (opmsg_body(msg, &body) && bson_iter_init_find(&it, &body, "ordered") && BSON_ITER_HOLDS_BOOL(&it)) {
      printf("ordered: %s\n", bson_iter_bool(&it) ? "true" : "false");
   }
}

/*
 * Document sequences, in wire order. Each opmsg_sequence_t gives the
 * identifier, the number of documents and their bytes; a document iterator
 * then hands out each document as a static bson_t pointing into the
 * message. The documents were framed and checked by opmsg_parse(), so the
 * iterators need no error handling.
 */
static void
print_sequences(const opmsg_msg_t *msg)
{
   opmsg_sequence_iter_t seqs;
   opmsg_sequence_t seq;
   opmsg_sequence_iter_init(&seqs, msg);
   while (opmsg_sequence_iter_next(&seqs, &seq)) {
      printf("sequence %s: %u documents, %u bytes\n", seq.identifier, (unsigned) seq.count,
             (unsigned) seq.documents_len);

      opmsg_document_iter_t docs;
      bson_t doc;
      opmsg_document_iter_init(&docs, &seq);
      while (opmsg_document_iter_next(&docs, &doc)) {
         char *json = bson_as_canonical_extended_json(&doc, NULL);
         if (json != NULL) {
            printf("  %s\n", json);
            bson_free(json); /* only the JSON text is allocated, not the view */
         }
      }
   }
}

/* Field counts of the merged document, as the view sees it. */
typedef struct {
   unsigned top;       /* fields at the top level, of any kind */
   unsigned body;      /* top-level fields carried over from the body */
   unsigned sequences; /* sequences, at any depth */
   unsigned paths;     /* sub-documents that gain a sequence */
} counts_t;

/*
 * The view also walks the merged document's top level as if the merge had
 * happened: body fields (kind BODY, a bson_iter_t on the field), sequences
 * that become arrays (kind SEQUENCE) and, for a dotted identifier such as
 * "cursor.firstBatch", the sub-document that gains the array (kind PATH),
 * which opmsg_view_enter() opens in turn. Nothing is copied at any level.
 */
static void
count_fields(opmsg_view_t *view, counts_t *c, int depth)
{
   opmsg_field_t field;
   while (opmsg_view_next(view, &field)) {
      if (depth == 0) {
         c->top++;
      }
      switch (field.kind) {
      case OPMSG_FIELD_BODY:
         if (depth == 0) {
            c->body++;
         }
         break;
      case OPMSG_FIELD_SEQUENCE:
         c->sequences++;
         break;
      case OPMSG_FIELD_PATH: {
         /* key is not NUL-terminated for a created path: print with %.*s. */
         printf("path %.*s gains a sequence\n", (int) field.key_len, field.key);
         c->paths++;
         opmsg_view_t child;
         if (opmsg_view_enter(view, &field, &child)) {
            count_fields(&child, c, depth + 1);
         }
         break;
      }
      }
   }
}

int
main(int argc, char **argv)
{
   if (argc != 2) {
      fprintf(stderr, "usage: view FILE\n");
      return 2;
   }
   size_t len = 0;
   uint8_t *data = read_file(argv[1], &len);
   if (data == NULL) {
      fprintf(stderr, "view: cannot read %s\n", argv[1]);
      return 1;
   }

   /* Parsing validates the whole message; the view functions rely on it. */
   opmsg_msg_t msg;
   bson_error_t error;
   if (!opmsg_parse(data, len, NULL, &msg, &error)) {
      fprintf(stderr, "view: %s: %s: %s\n", argv[1], opmsg_error_name(error.code), error.message);
      free(data);
      return 1;
   }

   /* The command name is the body's first key: a pointer into the message. */
   const char *name = opmsg_command_name(&msg);
   printf("command: %s\n", name != NULL ? name : "(empty body)");

   /* $db: the string and its length, or NULL when the body has none (a
    * reply, for instance). */
   uint32_t db_len = 0;
   const char *db = opmsg_db(&msg, &db_len);
   if (db != NULL) {
      printf("$db: %.*s\n", (int) db_len, db);
   }

   print_ordered(&msg);
   print_sequences(&msg);

   /* Only OP_MSG (and the legacy OP_QUERY/OP_REPLY) have a merged view;
    * an OP_COMPRESSED message must be decompressed first. */
   opmsg_view_t view;
   if (opmsg_view_init(&view, &msg)) {
      counts_t c = {0, 0, 0, 0};
      count_fields(&view, &c, 0);
      printf("merged top level: %u fields (%u from the body, %u sequences, %u paths)\n", c.top, c.body, c.sequences,
             c.paths);
   }

   free(data);
   return 0;
}
