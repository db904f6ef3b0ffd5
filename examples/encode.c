/*
 * encode.c - build OP_MSG messages with libopmsg: one insert with a document
 * sequence, then a large batch split into as many messages as a server's
 * limits require.
 *
 *    encode OUT.bin
 *
 * Part 1 encodes
 *
 *    body      { insert: "people", ordered: true, $db: "example" }
 *    sequence  "documents": 3 documents
 *
 * with a CRC-32C, writes the message to OUT.bin (feed it to the merge or view
 * examples), parses it back and prints its merged form as canonical
 * Extended JSON on one line.
 *
 * Part 2 splits an insert of 10 documents with a (deliberately tiny)
 * maxWriteBatchSize of 4 and prints one line per message:
 *
 *    batch 0: documents 0-3 (4), 184 bytes
 *
 * Exit status: 0 on success, 1 on any failure, 2 for a usage error.
 *
 * Build: cc encode.c $(pkg-config --cflags --libs opmsg) -o encode
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 * This example may be copied into your own program without restriction.
 */
#include <opmsg/opmsg.h>

#include <stdio.h>
#include <stdlib.h>

#define N_PEOPLE 3
#define N_BATCH_DOCS 10

static int
fail(const char *what, const bson_error_t *error)
{
   fprintf(stderr, "encode: %s: %s: %s\n", what, opmsg_error_name(error->code), error->message);
   return 1;
}

/*
 * Part 1: one message.
 *
 * The encoder takes the command (the body) and each sequence's documents as
 * the caller's bson_t values and never copies them into a bson_t of its own:
 * it writes the wire bytes straight into the output (or, with
 * opmsg_build_iovec(), only points at them). It checks what it is given with
 * the parser's rules, so it cannot produce a message opmsg_parse() rejects.
 */
static int
encode_one(const char *out_path)
{
   static const char *names[N_PEOPLE] = {"Ada", "Grace", "Edsger"};
   bson_t people[N_PEOPLE];
   const bson_t *list[N_PEOPLE];
   for (int i = 0; i < N_PEOPLE; i++) {
      bson_init(&people[i]);
      BSON_APPEND_INT32(&people[i], "_id", i + 1);
      BSON_APPEND_UTF8(&people[i], "name", names[i]);
      list[i] = &people[i];
   }

   /* The command document: its first key is the command name, and a
    * request must carry "$db". The documents do NOT go in here. */
   bson_t command;
   bson_init(&command);
   BSON_APPEND_UTF8(&command, "insert", "people");
   BSON_APPEND_BOOL(&command, "ordered", true);
   BSON_APPEND_UTF8(&command, "$db", "example");

   /* One kind-1 section. The documents could also be given as one run of
    * raw BSON bytes (.raw / .raw_len), as they come off another message. */
   opmsg_sequence_in_t seq = {0};
   seq.identifier = "documents";
   seq.docs = list;
   seq.n_docs = N_PEOPLE;

   /* opmsg_build_init() zeroes everything else: no sequences, request and
    * response IDs 0, no flags, the protocol's default size limits. */
   opmsg_build_t b;
   opmsg_build_init(&b, &command);
   b.sequences = &seq;
   b.n_sequences = 1;
   b.request_id = 42;
   b.flags = OPMSG_FLAG_CHECKSUM_PRESENT; /* append a CRC-32C */

   /* opmsg_build_new() checks everything, computes the exact size and makes
    * one allocation of that size (bson_free() it). opmsg_build_size() +
    * opmsg_build_into() do the same into a buffer you own. */
   bson_error_t error;
   size_t len = 0;
   uint8_t *wire = opmsg_build_new(&b, &len, &error);
   int status = 0;
   if (wire == NULL) {
      status = fail("build", &error);
      goto done;
   }

   FILE *f = fopen(out_path, "wb");
   if (f == NULL || fwrite(wire, 1, len, f) != len) {
      fprintf(stderr, "encode: cannot write %s\n", out_path);
      status = 1;
   }
   if (f != NULL && fclose(f) != 0) {
      status = 1;
   }

   /* Read it back: the parser verifies the checksum we asked for, and the
    * merge shows the sequence as the array field "documents". */
   opmsg_msg_t msg;
   bson_t *merged = NULL;
   if (status == 0 && !opmsg_parse(wire, len, NULL, &msg, &error)) {
      status = fail("parse", &error);
   } else if (status == 0 && (merged = opmsg_merge_bson(&msg, &error)) == NULL) {
      status = fail("merge", &error);
   } else if (status == 0) {
      char *json = bson_as_canonical_extended_json(merged, NULL);
      printf("%s\n", json);
      bson_free(json);
      bson_destroy(merged);
   }
   bson_free(wire);

done:
   bson_destroy(&command);
   for (int i = 0; i < N_PEOPLE; i++) {
      bson_destroy(&people[i]);
   }
   return status;
}

/*
 * Part 2: many documents, several messages.
 *
 * A server limits each write command to maxWriteBatchSize documents and each
 * message to maxMessageSizeBytes (both from its hello reply). The splitter
 * cuts one sequence into batches that respect both, in order, and checks
 * every document before the first batch is handed out, so a client never
 * sends half of an insert that cannot be completed.
 */
static int
encode_split(void)
{
   bson_t docs[N_BATCH_DOCS];
   const bson_t *list[N_BATCH_DOCS];
   for (int i = 0; i < N_BATCH_DOCS; i++) {
      bson_init(&docs[i]);
      BSON_APPEND_INT32(&docs[i], "_id", i);
      list[i] = &docs[i];
   }
   bson_t command;
   bson_init(&command);
   BSON_APPEND_UTF8(&command, "insert", "events");
   BSON_APPEND_UTF8(&command, "$db", "example");

   /* The template: the command and header fields every batch shares. It
    * must have no sequences of its own; the sequence to split is separate. */
   opmsg_build_t tmpl;
   opmsg_build_init(&tmpl, &command);
   tmpl.request_id = 100; /* batch i gets request_id 100 + i */

   opmsg_sequence_in_t all = {0};
   all.identifier = "documents";
   all.docs = list;
   all.n_docs = N_BATCH_DOCS;

   opmsg_split_limits_t limits = {0}; /* 0: the protocol's defaults */
   limits.max_write_batch = 4;        /* tiny, to get several batches */

   int status = 0;
   bson_error_t error;
   opmsg_splitter_t s; /* batches point into it: do not copy or move it */
   if (!opmsg_splitter_init(&s, &tmpl, &all, &limits, &error)) {
      status = fail("splitter", &error);
   } else {
      uint8_t buf[4096]; /* reused for every batch: no allocation at all */
      opmsg_batch_t batch;
      while (status == 0 && opmsg_splitter_next(&s, &batch)) {
         size_t written = 0;
         /* batch.message_size is exact: a buffer at least that large never
          * fails with OPMSG_ERR_BUFFER_TOO_SMALL. A real client sizes its
          * buffer from the server's maxMessageSizeBytes instead. */
         if (batch.message_size > sizeof buf) {
            fprintf(stderr, "encode: batch %zu needs %zu bytes\n", batch.index, batch.message_size);
            status = 1;
            break;
         }
         if (!opmsg_build_into(batch.build, buf, sizeof buf, &written, &error)) {
            status = fail("build batch", &error);
            break;
         }
         printf("batch %zu: documents %zu-%zu (%zu), %zu bytes\n", batch.index, batch.first_index,
                batch.first_index + batch.count - 1, batch.count, written);
         /* ... here a client would send buf[0..written) and read the reply ... */
      }
   }

   bson_destroy(&command);
   for (int i = 0; i < N_BATCH_DOCS; i++) {
      bson_destroy(&docs[i]);
   }
   return status;
}

int
main(int argc, char **argv)
{
   if (argc != 2) {
      fprintf(stderr, "usage: encode OUT.bin\n");
      return 2;
   }
   if (encode_one(argv[1]) != 0) {
      return 1;
   }
   return encode_split();
}
