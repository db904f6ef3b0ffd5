/*
 * encode.c - the reverse direction: big's 100,000 documents encoded as
 * insert messages, split by opmsg's splitter at the limits of a server.
 *
 * The limit is a memcpy of the documents: every byte of them has to be
 * written into the messages once. The split uses maxWriteBatchSize 1000 (the
 * limit of MongoDB before 3.6) so that it produces 100 messages; with
 * today's defaults (100,000 documents, 48,000,000 bytes) big fits in one.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define ENCODE_MAX_BATCH 1000u

static const char identifier[] = "documents";

/* Splits c->docs and writes the messages back to back into out (NULL: only
 * adds up their sizes). Returns the bytes written; counts the messages. */
static size_t
encode_split(const bench_case_t *c, uint8_t *out, size_t out_cap, uint32_t *n_messages)
{
   opmsg_build_t tmpl;
   opmsg_build_init(&tmpl, c->command);
   tmpl.request_id = 1;
   opmsg_sequence_in_t seq;
   memset(&seq, 0, sizeof seq);
   seq.identifier = identifier;
   seq.raw = c->docs;
   seq.raw_len = c->docs_len;
   opmsg_split_limits_t limits;
   memset(&limits, 0, sizeof limits);
   limits.max_write_batch = ENCODE_MAX_BATCH;

   opmsg_splitter_t s;
   bson_error_t error;
   if (!opmsg_splitter_init(&s, &tmpl, &seq, &limits, &error)) {
      bench_fatal("encode: opmsg_splitter_init: %s", error.message);
   }
   size_t off = 0;
   uint32_t n = 0;
   opmsg_batch_t batch;
   while (opmsg_splitter_next(&s, &batch)) {
      size_t written = batch.message_size;
      if (out && !opmsg_build_into(batch.build, out + off, out_cap - off, &written, &error)) {
         bench_fatal("encode: opmsg_build_into: %s", error.message);
      }
      off += written;
      n++;
   }
   if (n_messages) {
      *n_messages = n;
   }
   return off;
}

bool
bench_case_make_encode(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   bench_case_make_big(c);
   c->name = def->name;
   c->kind = BENCH_KIND_ENCODE;
   c->command = BCON_NEW("insert", BCON_UTF8("coll"), "ordered", BCON_BOOL(true), "$db", BCON_UTF8("test"));

   /* The reference is the documents themselves: what memcpy copies, and what
    * merging the split messages back must give. */
   free(c->merged);
   c->merged = bench_xmalloc(c->docs_len);
   memcpy(c->merged, c->docs, c->docs_len);
   c->merged_len = c->docs_len;

   size_t total = encode_split(c, NULL, 0, &c->n_batches);
   free(c->out);
   c->out_cap = total > c->docs_len ? total : c->docs_len;
   c->out = bench_xmalloc(c->out_cap);
   memset(c->out, 0, c->out_cap);
   return true;
}

size_t
bench_op_encode_split(bench_case_t *c, bench_out_t *keep)
{
   size_t n = encode_split(c, c->out, c->out_cap, NULL);
   bench_keep_bytes(keep, c->out, n);
   return n;
}

/* The split is right when every message parses, carries the command as its
 * body and one "documents" sequence of at most ENCODE_MAX_BATCH documents,
 * and the sequences back to back are the original documents. */
void
bench_check_encode(const bench_case_t *c, const bench_out_t *out)
{
   size_t off = 0, docs_off = 0;
   uint32_t n_messages = 0;
   while (off < out->len) {
      opmsg_msg_t msg;
      bson_error_t error;
      size_t len = 0;
      if (!opmsg_frame_length(out->data + off, out->len - off, NULL, &len, &error) || len > out->len - off ||
          !opmsg_parse(out->data + off, len, NULL, &msg, &error)) {
         bench_fatal("encode check: message %u: %s", n_messages, error.message);
      }
      opmsg_sequence_t seq;
      if (msg.body_len != c->command->len || memcmp(msg.body, bson_get_data(c->command), msg.body_len) != 0 ||
          msg.n_sequences != 1 || !opmsg_sequence_find(&msg, identifier, &seq) || seq.count > ENCODE_MAX_BATCH ||
          seq.documents_len > c->docs_len - docs_off ||
          memcmp(seq.documents, c->docs + docs_off, seq.documents_len) != 0) {
         bench_fatal("encode check: message %u is not the next batch", n_messages);
      }
      docs_off += seq.documents_len;
      off += len;
      n_messages++;
   }
   if (docs_off != c->docs_len || n_messages != c->n_batches) {
      bench_fatal("encode check: %u messages carry %zu of %zu bytes", n_messages, docs_off, c->docs_len);
   }
}
