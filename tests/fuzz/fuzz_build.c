/*
 * fuzz_build.c - the encoder and the batch splitter (opmsg/build.h).
 *
 * Input: byte 0 control: bit 0 checksumPresent, bit 1 moreToCome, bit 2
 * exhaustAllowed (the template's flags), bit 5 the sequence is a raw run of
 * the fuzzer's bytes (otherwise a list of documents generated from them),
 * bit 6 also encode the documents as several sequences in one message;
 * byte 1 picks the command name, byte 2 the identifier; bytes 3-4
 * maxMessageSizeBytes (0: default, else 64 + 4 * n), byte 5
 * maxWriteBatchSize (0: default), byte 6 maxBsonObjectSize (0: default,
 * else 16 + 4 * n); bytes 7-10 the first requestID; then the documents.
 *
 * Properties:
 *  - splitter_init refuses only for a reason the input really has (an
 *    over-limit document, a command too large alone, a malformed raw run);
 *  - every batch's message is exactly batch.message_size bytes, within the
 *    limits, the same bytes from build_new, build_into and the iovec list,
 *    parses with those limits (checksum verified), merges consistently
 *    (fuzz_check_accepted()), carries request_id + index and as many
 *    documents as both limits allow (each batch but the last is full);
 *  - the batches' documents, in order, are the original documents in order;
 *  - several sequences in one message parse back to the same documents per
 *    identifier, or are refused for a clash the identifiers really have.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DOCS 256

typedef struct {
   const uint8_t *p;
   size_t n;
} src_t;

static uint8_t
take(src_t *s)
{
   if (!s->n) {
      return 0;
   }
   s->n--;
   return *s->p++;
}

/* A valid document from the fuzzer's bytes (always well-formed, so the
 * splitter's own logic is what gets exercised). */
static void
gen_doc(src_t *s, bson_t *doc)
{
   unsigned fields = take(s) % 6u;
   for (unsigned i = 0; i < fields; i++) {
      char key[12];
      snprintf(key, sizeof key, "f%u", i);
      uint8_t kind = take(s);
      switch (kind % 6u) {
      case 0:
         bson_append_int32(doc, key, -1, (int32_t) (take(s) | (uint32_t) take(s) << 8));
         break;
      case 1: {
         /* Up to 1020 bytes from one byte of input, for sizable documents. */
         size_t len = (size_t) take(s) * 4u;
         char *str = malloc(len + 1);
         FUZZ_CHECK(str != NULL);
         for (size_t k = 0; k < len; k++) {
            str[k] = (char) ('a' + (k + kind) % 26u);
         }
         str[len] = '\0';
         bson_append_utf8(doc, key, -1, str, (int) len);
         free(str);
         break;
      }
      case 2: {
         bson_t child;
         bson_append_document_begin(doc, key, -1, &child);
         bson_append_int32(&child, "x", -1, take(s));
         bson_append_document_end(doc, &child);
         break;
      }
      case 3: {
         uint8_t bin[64];
         size_t len = take(s) % sizeof bin;
         for (size_t k = 0; k < len; k++) {
            bin[k] = take(s);
         }
         bson_append_binary(doc, key, -1, BSON_SUBTYPE_BINARY, bin, (uint32_t) len);
         break;
      }
      case 4:
         bson_append_double(doc, key, -1, (double) take(s) / 7.0);
         break;
      default:
         bson_append_bool(doc, key, -1, take(s) & 1);
         break;
      }
   }
}

static const char *const COMMANDS[] = {"insert", "update", "delete", "bulkWrite", "find"};
static const char *const IDENTIFIERS[] = {"documents",         "updates", "deletes", "ops",      "nsInfo",
                                          "cursor.firstBatch", "a.b.c",   "a",       "ordered.x"};
#define N_IDENTIFIERS (sizeof IDENTIFIERS / sizeof IDENTIFIERS[0])

typedef struct {
   opmsg_options_t opts; /* the limits, for parsing the batches */
   size_t max_message;   /* effective limits */
   size_t max_batch;
   size_t max_bson;
   const uint8_t **doc_data; /* the documents, in order */
   uint32_t *doc_len;
   size_t n_docs;
} expect_t;

/* build_new, build_into and the iovec list give the same bytes. */
static uint8_t *
encode_three_ways(const opmsg_build_t *b, size_t *len)
{
   bson_error_t error;
   uint8_t *msg = opmsg_build_new(b, len, &error);
   FUZZ_CHECK_MSG(msg != NULL, "build_new fails: %s", error.message);
   size_t size = 0;
   FUZZ_CHECK(opmsg_build_size(b, &size, &error) && size == *len);

   uint8_t *buf = malloc(*len);
   FUZZ_CHECK(buf != NULL);
   size_t written = 0;
   FUZZ_CHECK(opmsg_build_into(b, buf, *len, &written, &error) && written == *len);
   FUZZ_CHECK(memcmp(buf, msg, *len) == 0);
   FUZZ_CHECK(!opmsg_build_into(b, buf, *len - 1, &written, &error));
   FUZZ_CHECK(error.code == OPMSG_ERR_BUFFER_TOO_SMALL);

   size_t n_iov = opmsg_build_iovec_count(b);
   size_t scratch_len = OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences);
   struct iovec *iov = calloc(n_iov ? n_iov : 1, sizeof *iov);
   uint8_t *scratch = malloc(scratch_len);
   FUZZ_CHECK(iov != NULL && scratch != NULL);
   size_t count = 0, total = 0;
   FUZZ_CHECK_MSG(opmsg_build_iovec(b, scratch, scratch_len, iov, n_iov, &count, &total, &error),
                  "build_iovec fails: %s", error.message);
   FUZZ_CHECK(count <= n_iov && total == *len);
   size_t off = 0;
   for (size_t i = 0; i < count; i++) {
      FUZZ_CHECK(off + iov[i].iov_len <= *len);
      FUZZ_CHECK(memcmp(msg + off, iov[i].iov_base, iov[i].iov_len) == 0);
      off += iov[i].iov_len;
   }
   FUZZ_CHECK(off == *len);
   free(iov);
   free(scratch);
   free(buf);
   return msg;
}

static void
run_splitter(const opmsg_build_t *tmpl, const opmsg_sequence_in_t *seq, const opmsg_split_limits_t *limits,
             const expect_t *ex, bool raw)
{
   opmsg_splitter_t s;
   bson_error_t error;

   /* The message with no document at all, for judging refusals. */
   opmsg_build_t empty = *tmpl;
   opmsg_sequence_in_t none = {seq->identifier, NULL, 0, NULL, 0};
   empty.sequences = &none;
   empty.n_sequences = 1;
   empty.max_message_size = 0;
   empty.max_bson_size = limits->max_bson_size;
   size_t fixed = 0;
   bool fixed_ok = opmsg_build_size(&empty, &fixed, &error);

   if (!opmsg_splitter_init(&s, tmpl, seq, limits, &error)) {
      fuzz_check_error(&error);
      if (error.code == OPMSG_ERR_DOCUMENT_OVER_LIMIT) {
         bool over = false;
         for (size_t i = 0; i < ex->n_docs; i++) {
            over |= ex->doc_len[i] > ex->max_bson || fixed + ex->doc_len[i] > ex->max_message;
         }
         FUZZ_CHECK_MSG(over || raw, "no document is over a limit: %s", error.message);
      } else if (error.code == OPMSG_ERR_OUTPUT_TOO_LARGE) {
         FUZZ_CHECK_MSG(fixed_ok && fixed > ex->max_message, "the command fits (%zu <= %zu): %s", fixed,
                        ex->max_message, error.message);
      } else {
         /* A raw run may break any of the document rules. */
         FUZZ_CHECK_MSG(raw && error.code >= OPMSG_ERR_DOCUMENT_LENGTH && error.code <= OPMSG_ERR_INVALID_VALUE,
                        "splitter_init refuses valid input: %s", error.message);
      }
      return;
   }
   FUZZ_CHECK(fixed_ok);

   opmsg_batch_t batch;
   size_t next = 0, k = 0;
   while (opmsg_splitter_next(&s, &batch)) {
      FUZZ_CHECK(batch.index == k && batch.first_index == next);
      FUZZ_CHECK(batch.count <= ex->max_batch && next + batch.count <= ex->n_docs);
      FUZZ_CHECK(batch.count > 0 || ex->n_docs == 0);
      FUZZ_CHECK(batch.build->request_id == (int32_t) ((uint32_t) tmpl->request_id + (uint32_t) k));

      size_t len = 0;
      uint8_t *msg = encode_three_ways(batch.build, &len);
      FUZZ_CHECK(len == batch.message_size && len <= ex->max_message);

      opmsg_msg_t parsed;
      FUZZ_CHECK_MSG(opmsg_parse(msg, len, &ex->opts, &parsed, &error), "batch %zu does not parse: %s", k,
                     error.message);
      FUZZ_CHECK(parsed.n_sequences == 1);
      opmsg_sequence_t got;
      FUZZ_CHECK(opmsg_sequence_find(&parsed, seq->identifier, &got));
      FUZZ_CHECK(got.count == batch.count);
      opmsg_document_iter_t dit;
      bson_t doc;
      size_t i = next;
      opmsg_document_iter_init(&dit, &got);
      while (opmsg_document_iter_next(&dit, &doc)) {
         FUZZ_CHECK(i < ex->n_docs && doc.len == ex->doc_len[i]);
         FUZZ_CHECK_MSG(memcmp(bson_get_data(&doc), ex->doc_data[i], doc.len) == 0, "document %zu comes back changed",
                        i);
         i++;
      }
      FUZZ_CHECK(i == next + batch.count);
      /* The full merge/view checks on the first batches (they cost the most
       * and every batch has the same shape). */
      if (k < 4) {
         size_t merged_len = 0;
         free(fuzz_check_accepted(&parsed, &ex->opts, &merged_len));
      }

      next += batch.count;
      if (next < ex->n_docs) {
         FUZZ_CHECK_MSG(batch.count == ex->max_batch || len + ex->doc_len[next] > ex->max_message,
                        "batch %zu is not full: %zu documents, %zu bytes, next %u", k, batch.count, len,
                        ex->doc_len[next]);
      }
      bson_free(msg);
      FUZZ_CHECK_MSG(++k <= ex->n_docs + 1, "the splitter does not end");
   }
   FUZZ_CHECK_MSG(next == ex->n_docs, "the batches carry %zu of %zu documents", next, ex->n_docs);
   FUZZ_CHECK(k >= 1);
}

/* Is a a dotted-path prefix of b, or equal to it? */
static bool
path_prefix(const char *a, const char *b)
{
   size_t n = strlen(a);
   return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '.');
}

/* The documents split among up to three sequences of one message. */
static void
run_multi(const bson_t *command, src_t *src, const expect_t *ex, const bson_t *const *docs)
{
   opmsg_sequence_in_t seqs[3];
   size_t n_seqs = 1 + take(src) % 3u;
   size_t from = 0;
   memset(seqs, 0, sizeof seqs);
   for (size_t i = 0; i < n_seqs; i++) {
      size_t n = i + 1 == n_seqs ? ex->n_docs - from : take(src) % (ex->n_docs - from + 1);
      seqs[i].identifier = IDENTIFIERS[take(src) % N_IDENTIFIERS];
      seqs[i].docs = docs + from;
      seqs[i].n_docs = n;
      from += n;
   }
   opmsg_build_t b;
   opmsg_build_init(&b, command);
   b.sequences = seqs;
   b.n_sequences = n_seqs;
   b.max_message_size = ex->opts.max_message_size;
   b.max_bson_size = ex->opts.max_bson_size;

   bson_error_t error;
   size_t size = 0;
   if (!opmsg_build_size(&b, &size, &error)) {
      fuzz_check_error(&error);
      bool dup = false, clash = false;
      for (size_t i = 0; i < n_seqs; i++) {
         for (size_t j = 0; j < n_seqs; j++) {
            dup |= i != j && path_prefix(seqs[i].identifier, seqs[j].identifier);
         }
         bson_iter_t it;
         char first[32];
         snprintf(first, sizeof first, "%s", seqs[i].identifier);
         first[strcspn(first, ".")] = '\0';
         bool found = bson_iter_init_find(&it, command, first);
         /* A name the command has, or a path through a field it lacks or
          * that is not a document (the command holds each path's whole
          * parent, so one level is enough). */
         clash |= strchr(seqs[i].identifier, '.') == NULL ? found : !found || !BSON_ITER_HOLDS_DOCUMENT(&it);
      }
      switch (error.code) {
      case OPMSG_ERR_DUPLICATE_IDENTIFIER:
         FUZZ_CHECK_MSG(dup, "no duplicate identifier: %s", error.message);
         break;
      case OPMSG_ERR_IDENTIFIER_CLASH:
         FUZZ_CHECK_MSG(clash, "no identifier names a command field: %s", error.message);
         break;
      case OPMSG_ERR_OUTPUT_TOO_LARGE:
      case OPMSG_ERR_DOCUMENT_OVER_LIMIT:
      case OPMSG_ERR_DOCUMENT_TOO_LARGE:
         break;
      default:
         fuzz_fail(__FILE__, __LINE__, "build_size refuses valid input: %s", error.message);
      }
      return;
   }
   size_t len = 0;
   uint8_t *msg = encode_three_ways(&b, &len);
   FUZZ_CHECK(len == size);
   opmsg_msg_t parsed;
   FUZZ_CHECK_MSG(opmsg_parse(msg, len, &ex->opts, &parsed, &error), "an encoded message does not parse: %s",
                  error.message);
   FUZZ_CHECK(parsed.n_sequences == n_seqs);
   for (size_t i = 0; i < n_seqs; i++) {
      opmsg_sequence_t got;
      FUZZ_CHECK(opmsg_sequence_find(&parsed, seqs[i].identifier, &got));
      FUZZ_CHECK(got.count == seqs[i].n_docs);
      size_t off = 0;
      for (size_t d = 0; d < seqs[i].n_docs; d++) {
         const bson_t *doc = seqs[i].docs[d];
         FUZZ_CHECK(off + doc->len <= got.documents_len);
         FUZZ_CHECK(memcmp(got.documents + off, bson_get_data(doc), doc->len) == 0);
         off += doc->len;
      }
      FUZZ_CHECK(off == got.documents_len);
   }
   size_t merged_len = 0;
   free(fuzz_check_accepted(&parsed, &ex->opts, &merged_len));
   bson_free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   fuzz_init();
   if (size < 11) {
      return 0;
   }
   uint8_t control = data[0];
   src_t src = {data + 11, size - 11};

   bson_t command = BSON_INITIALIZER;
   BSON_APPEND_UTF8(&command, COMMANDS[data[1] % 5u], "coll");
   BSON_APPEND_UTF8(&command, "$db", "db");
   BSON_APPEND_BOOL(&command, "ordered", true);
   /* The parents of the dotted identifiers: a path never creates one. */
   bson_t sub, inner;
   BSON_APPEND_DOCUMENT_BEGIN(&command, "cursor", &sub);
   bson_append_document_end(&command, &sub);
   BSON_APPEND_DOCUMENT_BEGIN(&command, "a", &sub);
   BSON_APPEND_DOCUMENT_BEGIN(&sub, "b", &inner);
   bson_append_document_end(&sub, &inner);
   bson_append_document_end(&command, &sub);

   opmsg_split_limits_t limits = {0, 0, 0};
   unsigned mm = data[3] | (unsigned) data[4] << 8;
   limits.max_message_size = mm ? 64u + 4u * mm : 0;
   limits.max_write_batch = data[5];
   limits.max_bson_size = data[6] ? 16u + 4u * data[6] : 0;

   expect_t ex;
   memset(&ex, 0, sizeof ex);
   opmsg_options_init(&ex.opts);
   ex.opts.max_message_size = limits.max_message_size;
   ex.opts.max_bson_size = limits.max_bson_size;
   ex.max_message = mm ? limits.max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   ex.max_batch = data[5] ? data[5] : OPMSG_DEFAULT_MAX_WRITE_BATCH;
   ex.max_bson = data[6] ? limits.max_bson_size : OPMSG_DEFAULT_MAX_BSON_SIZE;

   opmsg_build_t tmpl;
   opmsg_build_init(&tmpl, &command);
   tmpl.flags = control & (OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME);
   if (control & 4u) {
      tmpl.flags |= OPMSG_FLAG_EXHAUST_ALLOWED;
   }
   tmpl.request_id = (int32_t) fuzz_u32(data + 7);

   bool raw = control & 0x20u;
   opmsg_sequence_in_t seq;
   memset(&seq, 0, sizeof seq);
   seq.identifier = IDENTIFIERS[data[2] % N_IDENTIFIERS];
   if (!strcmp(seq.identifier, "ordered.x") || !strcmp(seq.identifier, "a")) {
      seq.identifier = "documents"; /* the splitter's sequence must not clash */
   }

   bson_t *docs = NULL;
   const bson_t **ptrs = NULL;
   /* A raw run holds at most one document per 5 bytes. */
   size_t cap = raw ? src.n / 5 + 1 : MAX_DOCS;
   ex.doc_data = calloc(cap, sizeof *ex.doc_data);
   ex.doc_len = calloc(cap, sizeof *ex.doc_len);
   FUZZ_CHECK(ex.doc_data != NULL && ex.doc_len != NULL);
   if (raw) {
      seq.raw = src.p;
      seq.raw_len = src.n;
      /* The documents as the length prefixes cut them (meaningful only when
       * the splitter accepts the run, which checks every frame). */
      for (size_t off = 0; off + 4 <= src.n && ex.n_docs < cap;) {
         uint32_t len = fuzz_u32(src.p + off);
         if (len < 5 || len > src.n - off) {
            break;
         }
         ex.doc_data[ex.n_docs] = src.p + off;
         ex.doc_len[ex.n_docs++] = len;
         off += len;
      }
   } else {
      docs = fuzz_bson_array(MAX_DOCS);
      ptrs = calloc(MAX_DOCS, sizeof *ptrs);
      FUZZ_CHECK(ptrs != NULL);
      while (src.n > 0 && ex.n_docs < MAX_DOCS) {
         bson_t *d = &docs[ex.n_docs];
         bson_init(d);
         gen_doc(&src, d);
         ptrs[ex.n_docs] = d;
         ex.doc_data[ex.n_docs] = bson_get_data(d);
         ex.doc_len[ex.n_docs] = d->len;
         ex.n_docs++;
      }
      seq.docs = ptrs;
      seq.n_docs = ex.n_docs;
   }

   run_splitter(&tmpl, &seq, &limits, &ex, raw);
   if (!raw && (control & 0x40u)) {
      src_t again = {data + 11, size - 11};
      run_multi(&command, &again, &ex, ptrs);
   }

   for (size_t i = 0; docs && i < ex.n_docs; i++) {
      bson_destroy(&docs[i]);
   }
   free(docs);
   free(ptrs);
   free(ex.doc_data);
   free(ex.doc_len);
   bson_destroy(&command);
   return 0;
}
