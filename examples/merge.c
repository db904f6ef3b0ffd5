/*
 * merge.c - turn one OP_MSG into one document with libopmsg.
 *
 *    merge FILE [OUT.bson]
 *
 * FILE holds one whole wire message, exactly as it travelled (header
 * included), for instance a message saved from a network capture. The program
 * checks it, merges it into one BSON document (the body's fields, then every
 * document sequence as an array field) and prints that document as canonical
 * Extended JSON on one line.
 *
 * With OUT.bson it merges the message a second time, into a buffer the
 * program owns, and writes the raw BSON bytes there: the form to use when
 * the document goes on to a file, a socket or another library.
 *
 * Exit status: 0 on success, 1 when the message is invalid or a file cannot
 * be read or written, 2 for a usage error.
 *
 * Build it against an installed libopmsg with either of:
 *
 *    cc merge.c $(pkg-config --cflags --libs opmsg) -o merge
 *
 *    # CMakeLists.txt
 *    find_package(opmsg CONFIG REQUIRED)
 *    add_executable(merge merge.c)
 *    target_link_libraries(merge PRIVATE opmsg::opmsg)
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 * This example may be copied into your own program without restriction.
 */
#include <opmsg/opmsg.h> /* the only header a program needs; it brings libbson's */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
         break; /* end of file (or an error, checked below) */
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
 * Every opmsg function that can fail fills a bson_error_t. Its domain is
 * OPMSG_ERROR_DOMAIN, its code an opmsg_error_code_t naming the broken rule,
 * and opmsg_error_name() turns the code into a short stable name that is
 * safe to match on ("checksum-mismatch"). The message says what was wrong
 * and at which byte offset.
 */
static int
fail(const char *what, const bson_error_t *error)
{
   fprintf(stderr, "merge: %s: %s: %s\n", what, opmsg_error_name(error->code), error->message);
   return 1;
}

/* Prints a document as canonical Extended JSON on one line. */
static void
print_json(const bson_t *doc)
{
   size_t len = 0;
   char *json = bson_as_canonical_extended_json(doc, &len);
   if (json != NULL) {
      printf("%s\n", json);
      bson_free(json);
   }
}

/*
 * The second form of merging: into memory the caller provides. It never
 * allocates, which suits a server or a proxy that reuses one buffer for
 * every message. opmsg_merged_size() says exactly how many bytes are needed;
 * opmsg_parse() already worked it out, so asking costs nothing.
 */
static int
merge_to_file(const opmsg_msg_t *msg, const bson_t *merged, const char *out_path)
{
   bson_error_t error;
   size_t size = opmsg_merged_size(msg);
   uint8_t *buf = malloc(size);
   if (buf == NULL) {
      fprintf(stderr, "merge: out of memory\n");
      return 1;
   }

   size_t written = 0;
   if (!opmsg_merge_into(msg, buf, size, &written, &error)) {
      /* With a buffer of opmsg_merged_size() bytes this only fails for a
       * message that has nothing to merge (an OP_COMPRESSED one). A smaller
       * buffer gives OPMSG_ERR_BUFFER_TOO_SMALL. */
      free(buf);
      return fail("merge_into", &error);
   }

   /* Both forms produce the same bytes: a reader may rely on it. */
   if (written != merged->len || memcmp(buf, bson_get_data(merged), written) != 0) {
      fprintf(stderr, "merge: merge_into and merge_bson disagree\n");
      free(buf);
      return 1;
   }

   FILE *f = fopen(out_path, "wb");
   int status = 0;
   if (f == NULL || fwrite(buf, 1, written, f) != written) {
      fprintf(stderr, "merge: cannot write %s\n", out_path);
      status = 1;
   }
   if (f != NULL && fclose(f) != 0) {
      status = 1;
   }
   free(buf);
   return status;
}

int
main(int argc, char **argv)
{
   if (argc < 2 || argc > 3) {
      fprintf(stderr, "usage: merge FILE [OUT.bson]\n");
      return 2;
   }

   size_t len = 0;
   uint8_t *data = read_file(argv[1], &len);
   if (data == NULL) {
      fprintf(stderr, "merge: cannot read %s\n", argv[1]);
      return 1;
   }

   /*
    * Options: the defaults are the protocol's (messages up to 48,000,000
    * bytes, documents up to 16 MiB, the CRC-32C checked when the message
    * carries one). Passing NULL instead of &opts means the same. A client
    * would set max_message_size and max_bson_size from the server's hello
    * reply; OPMSG_PARSE_FULL_VALIDATE would also check every nested value.
    */
   opmsg_options_t opts;
   opmsg_options_init(&opts);

   /*
    * Step 1: parse. opmsg_parse() checks every rule of the OP_MSG format
    * (header, flags, checksum, sections, identifiers, each document's frame
    * and top-level elements) and fills `msg`, which points into `data`:
    * nothing is copied, so `data` must stay alive while `msg` is used.
    */
   opmsg_msg_t msg;
   bson_error_t error;
   if (!opmsg_parse(data, len, &opts, &msg, &error)) {
      free(data);
      return fail(argv[1], &error);
   }

   /*
    * Step 2: merge into a bson_t. One allocation of exactly the right size;
    * nested documents are copied as they are, never decoded. The result is
    * read-only (libbson would abort on an append): bson_copy() it, or use
    * opmsg_merge_init(), to add fields. bson_destroy() frees it.
    */
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   if (merged == NULL) {
      free(data);
      return fail("merge_bson", &error);
   }
   print_json(merged);

   /* Step 3 (optional): the allocation-free form, written to a file. */
   int status = 0;
   if (argc == 3) {
      status = merge_to_file(&msg, merged, argv[2]);
   }

   /* The merged document owns its bytes: it outlives the message buffer. */
   bson_destroy(merged);
   free(data);
   return status;
}
