/*
 * captures_test.c - real driver and server traffic as fixed vectors.
 *
 * Usage: interop-captures DIR
 * DIR holds one sub-directory per client (tests/data/captures/real), each
 * with the files `opmsg tap --raw` wrote: one message per file, named
 * <seq>-conn<id>-<c2s|s2c>.bin. Every message must parse with full
 * validation (requests with OPMSG_PARSE_REQUEST), be decompressed when it is
 * OP_COMPRESSED, and merge to a document of exactly opmsg_merged_size()
 * bytes; and every OP_MSG's merged document must hold each of its document
 * sequences as an array of as many documents as the sequence has.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#define _POSIX_C_SOURCE 200809L

#include <opmsg/opmsg.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int checked;

static uint8_t *
read_file(const char *path, size_t *len)
{
   FILE *f = fopen(path, "rb");
   uint8_t *buf = NULL;
   long size;

   if (!f) {
      return NULL;
   }
   if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
      buf = bson_malloc((size_t) size);
      if (fread(buf, 1, (size_t) size, f) != (size_t) size) {
         bson_free(buf);
         buf = NULL;
      }
      *len = (size_t) size;
   }
   fclose(f);
   return buf;
}

static void
fail(const char *path, const char *what, const bson_error_t *error)
{
   failures++;
   printf("FAIL: %s: %s: %s%s%s\n", path, what, error ? opmsg_error_name(error->code) : "", error ? ": " : "",
          error ? error->message : "");
}

/* Each sequence must be an array of `count` documents in the merged one. */
static void
check_sequences(const char *path, const opmsg_msg_t *msg, const bson_t *merged)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;

   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      bson_iter_t bi, arr;
      uint32_t n = 0;

      if (!bson_iter_init(&bi, merged) || !bson_iter_find_descendant(&bi, seq.identifier, &arr) ||
          !BSON_ITER_HOLDS_ARRAY(&arr) || !bson_iter_recurse(&arr, &bi)) {
         fail(path, "a sequence is not an array of the merged document", NULL);
         return;
      }
      while (bson_iter_next(&bi)) {
         n += BSON_ITER_HOLDS_DOCUMENT(&bi) ? 1 : 0;
      }
      if (n != seq.count) {
         fail(path, "a sequence merged to a different number of documents", NULL);
      }
   }
}

static void
check_message(const char *path, bool request)
{
   opmsg_options_t opts;
   opmsg_decompressed_t dec = {0};
   const opmsg_msg_t *inner;
   bson_error_t error;
   opmsg_msg_t msg;
   size_t len = 0;
   uint8_t *data = read_file(path, &len);
   bson_t *merged;

   if (!data) {
      fail(path, "cannot read", NULL);
      return;
   }
   opmsg_options_init(&opts);
   opts.flags = OPMSG_PARSE_FULL_VALIDATE;
   if (request && len >= 16 && data[12] == 0xdd && data[13] == 0x07) {
      opts.flags |= OPMSG_PARSE_REQUEST; /* an OP_MSG command needs $db */
   }
   checked++;
   if (!opmsg_parse(data, len, &opts, &msg, &error)) {
      fail(path, "parse", &error);
      bson_free(data);
      return;
   }
   inner = &msg;
   if (msg.opcode == OPMSG_OP_COMPRESSED) {
      if (!opmsg_decompress_parse(&msg, &opts, &dec, &error)) {
         fail(path, "decompress", &error);
         bson_free(data);
         return;
      }
      inner = &dec.inner;
   }
   if (inner->opcode == OPMSG_OP_REPLY && inner->op_reply.number_returned != 1) {
      /* Nothing to merge: an OP_REPLY merges only with one document. */
   } else if (!(merged = opmsg_merge_bson(inner, &error))) {
      fail(path, "merge", &error);
   } else {
      if (merged->len != opmsg_merged_size(inner)) {
         fail(path, "merged size differs from opmsg_merged_size()", NULL);
      }
      if (inner->opcode == OPMSG_OP_MSG) {
         check_sequences(path, inner, merged);
      }
      bson_destroy(merged);
   }
   opmsg_decompressed_destroy(&dec);
   bson_free(data);
}

static void
check_dir(const char *dir)
{
   DIR *d = opendir(dir);
   struct dirent *e;
   char path[4096];

   if (!d) {
      return;
   }
   while ((e = readdir(d)) != NULL) {
      size_t n = strlen(e->d_name);

      if (e->d_name[0] == '.') {
         continue;
      }
      bson_snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (n > 8 && strcmp(e->d_name + n - 8, "-c2s.bin") == 0) {
         check_message(path, true);
      } else if (n > 8 && strcmp(e->d_name + n - 8, "-s2c.bin") == 0) {
         check_message(path, false);
      } else {
         check_dir(path); /* a client's sub-directory */
      }
   }
   closedir(d);
}

int
main(int argc, char **argv)
{
   if (argc != 2) {
      fprintf(stderr, "usage: %s DIR\n", argv[0]);
      return 2;
   }
   check_dir(argv[1]);
   printf("%d messages checked, %d failures\n", checked, failures);
   if (checked == 0) {
      printf("FAIL: no captured message found under %s\n", argv[1]);
      return 1;
   }
   return failures ? 1 : 0;
}
