/*
 * build.c - the OP_MSG encoder: buffer and iovec forms, and batch splitting.
 *
 * Every entry point first "plans" the message: it checks the description
 * against the rules the parser enforces (the same functions of rules.c,
 * with the same limits) and computes the exact size. The writers then only
 * copy; so a message is either fully valid or not written.
 */
#include "opmsg-rules.h"

/* header, flagBits, the body's kind byte: the command's offset in the
 * message. */
#define HEAD_SIZE (OPMSG_OFF_SECTIONS + 1)

/* Command keys go into a key set on the stack up to this many keys; a
 * larger command borrows one table from the heap (build.h says so). */
#define STACK_KEYS 512

/* An identifier or key made safe for an error message (escaped, cut). */
static const char *
printable(char *out, const char *name)
{
   return opmsg_printable(out, name ? name : "(null)", name ? strlen(name) : 6);
}

void
opmsg_build_init(opmsg_build_t *b, const bson_t *command)
{
   if (!b) {
      return;
   }
   memset(b, 0, sizeof *b);
   b->command = command;
}

/* ---------------------------------------------------------------------------
 * Checks
 * ------------------------------------------------------------------------- */

/* The command is the body: the body's rules (rules.c), reported as
 * OPMSG_ERR_BAD_COMMAND as build.h promises, except a size above the limit
 * (OPMSG_ERR_DOCUMENT_TOO_LARGE): r is the encoder's. Fills keys with its
 * keys for the clash checks of the identifiers. */
static bool
check_command(opmsg_report_t *r, const opmsg_build_t *b, const opmsg_limits_t *l, opmsg_keyset_t *keys,
              opmsg_keyslot_t *local, uint32_t *body_len)
{
   /* The caller's own mistakes, which are not at a byte of the command,
    * go to the report's error with opmsg_fail(). */
   bson_error_t *error = r->error;
   const uint8_t *data;
   uint32_t len;
   uint32_t n_keys = 0;

   if (!b->command) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND, "no command document");
   }
   data = bson_get_data(b->command);
   if (!data || b->command->len < 5) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND, "the command is not a document");
   }
   /* Stricter than the parser, which takes an empty body: a sender has no
    * command to send without a first key, which names it. */
   if (b->command->len == 5) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND, "the command is empty: its first key names the command");
   }
   /* Offsets count from the command as if at its place in the message. */
   r->start = data;
   if (!opmsg_rule_body_frame(r, l, data, b->command->len, &len) || !opmsg_rule_body_top(r, data, len, &n_keys)) {
      return false;
   }
   if (len != b->command->len) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                        "the command's length field says %u bytes but the "
                        "bson_t holds %u",
                        len, b->command->len);
   }
   opmsg_keyset_init(keys, data, data + len, n_keys, local, OPMSG_KEYSET_LOCAL(STACK_KEYS));
   if (!opmsg_rule_unique_keys(r, keys, data, len)) {
      return false;
   }
   *body_len = len;
   return true;
}

/* The limits of a sequence's documents: the message's, with their top
 * level skipped when the caller vouches for it (trust_documents). */
static void
doc_limits(opmsg_limits_t *dl, const opmsg_limits_t *l, bool frame_only)
{
   *dl = *l;
   if (frame_only) {
      dl->check = OPMSG_CHECK_SPEC;
   }
}

/* One sequence document at data (avail bytes there), the index-th of seq:
 * the parser's rule for sequence documents, at the level dl asks. r's
 * offsets count among the sequence's documents (the message is not written
 * yet). A document of a list must also fill its bson_t: want is its len, 0
 * for a raw run. */
static bool
check_doc(opmsg_report_t *r, const opmsg_limits_t *dl, const opmsg_seq_ref_t *seq, size_t index, const uint8_t *data,
          size_t avail, size_t want, uint32_t *len)
{
   size_t flen;
   uint32_t n;
   if (OPMSG_LIKELY(opmsg_seq_doc_ok(data, avail, dl->max_bson_size, opmsg_checks_top(dl), false, &flen))) {
      n = (uint32_t) flen;
   } else if ((n = opmsg_rule_seq_doc(r, dl, seq, index, data, avail)) == 0) {
      return false;
   }
   if (want && n != want) {
      char nm[OPMSG_PRINTABLE_SIZE];
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_LENGTH, opmsg_report_at(r, data),
                          "document %zu of sequence \"%s\": length field says %u bytes but the bson_t holds %zu", index,
                          printable(nm, seq->id), n, want);
   }
   *len = n;
   return true;
}

/* A sequence gives its documents in one form, a list or a raw run, with
 * the pointer that form needs (a caller's mistake, not a wire rule). */
static bool
seq_form_ok(const opmsg_sequence_in_t *seq)
{
   return !(seq->n_docs && seq->raw_len) && !(seq->n_docs && !seq->docs) && !(seq->raw_len && !seq->raw);
}

/* The bytes of one sequence's documents; checks them unless trusted. */
static bool
sequence_docs(const opmsg_sequence_in_t *seq, size_t seq_index, const opmsg_limits_t *dl, bool trusted, size_t *bytes,
              size_t *count, bson_error_t *error)
{
   size_t total = 0;
   uint32_t len;
   char nm[OPMSG_PRINTABLE_SIZE];
   opmsg_seq_ref_t ref = {seq->identifier, strlen(seq->identifier), seq_index, true};
   opmsg_report_t r;

   if (!seq_form_ok(seq)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "sequence %zu (\"%s\") must give its documents either "
                        "as a list or as a raw run, with a pointer",
                        seq_index, printable(nm, seq->identifier));
   }
   if (seq->raw_len) {
      /* Trusted runs are not walked: a document takes at least 5 bytes,
       * which bounds the count. */
      *count = seq->raw_len / 5;
      if (!trusted) {
         size_t off = 0, i;
         opmsg_report_init(&r, error, seq->raw, 0, &opmsg_encoder_side);
         for (i = 0; off < seq->raw_len; i++) {
            if (!check_doc(&r, dl, &ref, i, seq->raw + off, seq->raw_len - off, 0, &len)) {
               return false;
            }
            off += len;
         }
         *count = i;
      }
      *bytes = seq->raw_len;
      return true;
   }
   for (size_t i = 0; i < seq->n_docs; i++) {
      const bson_t *doc = seq->docs[i];
      if (!doc) {
         return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "document %zu of sequence \"%s\" is NULL", i,
                           printable(nm, seq->identifier));
      }
      if (!trusted) {
         opmsg_report_init(&r, error, bson_get_data(doc), total, &opmsg_encoder_side);
         if (!check_doc(&r, dl, &ref, i, bson_get_data(doc), doc->len, doc->len, &len)) {
            return false;
         }
      }
      total += doc->len;
   }
   *bytes = total;
   *count = seq->n_docs;
   return true;
}

/* What the writers need: sizes, already checked. */
typedef struct {
   size_t total;
   uint32_t body_len;
   bool checksum;
} plan_t;

static bool
too_large(size_t size, const opmsg_limits_t *l, bson_error_t *error)
{
   return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE,
                     "the message would be at least %zu bytes, above the "
                     "limit of %zu",
                     size, l->max_message_size);
}

/* Each identifier's own rules, then every pair (as the parser does, before
 * any path meets the command: "a" and "a.b" are one identifier inside
 * another whatever the command holds). build.h has the encoder for a
 * command's handful of sequences, whose identifiers are the caller's
 * strings, not names in one buffer a key set could hold. */
static bool
check_identifiers(opmsg_report_t *r, const opmsg_build_t *b)
{
   bson_error_t *error = r->error;
   for (size_t i = 0; i < b->n_sequences; i++) {
      const char *id = b->sequences[i].identifier;
      bool dotted;
      if (!id) {
         return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "sequence %zu has no identifier", i);
      }
      opmsg_seq_ref_t ref = {id, strlen(id), i, true};
      if (!opmsg_rule_identifier(r, &ref, &dotted)) {
         return false;
      }
      for (size_t j = 0; j < i; j++) {
         const char *other = b->sequences[j].identifier;
         opmsg_seq_ref_t earlier = {other, strlen(other), j, true};
         if (!opmsg_rule_identifier_pair(r, &earlier, &ref)) {
            return false;
         }
      }
   }
   return true;
}

/* The checks and sizes of plan_message(); keys receives the command's keys
 * (the caller destroys it). */
static bool
plan_checked(const opmsg_build_t *b, plan_t *plan, opmsg_keyset_t *keys, opmsg_keyslot_t *local, bson_error_t *error)
{
   opmsg_limits_t l, dl;
   opmsg_report_t r;
   size_t size;
   size_t merged; /* an upper bound of the merged document's size */
   size_t n_dotted = 0;

   opmsg_limits_set(&l, b->max_message_size, b->max_bson_size, 0);
   doc_limits(&dl, &l, b->trust_documents);
   opmsg_report_init(&r, error, NULL, HEAD_SIZE, &opmsg_encoder_side);
   if (!opmsg_rule_flags(&r, b->flags) || !check_command(&r, b, &l, keys, local, &plan->body_len) ||
       !check_identifiers(&r, b)) {
      return false;
   }
   const uint8_t *body = bson_get_data(b->command);
   size = HEAD_SIZE + (size_t) plan->body_len;
   merged = plan->body_len;

   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      const char *id = seq->identifier;
      size_t id_len = strlen(id), bytes = 0, count = 0;
      bool dotted = memchr(id, '.', id_len) != NULL; /* check_identifiers() checked id */
      opmsg_seq_ref_t ref = {id, id_len, i, true};

      if (!opmsg_rule_path(&r, keys, body, plan->body_len, &ref, NULL) ||
          !sequence_docs(seq, i, &dl, b->priv_checked != 0, &bytes, &count, error)) {
         return false;
      }
      /* Checked one by one so that no sum can wrap around. */
      if (id_len > l.max_message_size || bytes > l.max_message_size) {
         return too_large(id_len > bytes ? id_len : bytes, &l, error);
      }
      size += OPMSG_SECTION_OFF_IDENTIFIER + id_len + 1 + bytes;
      if (size > l.max_message_size) {
         return too_large(size, &l, error);
      }
      /* Merged, a sequence becomes an array: its key, the array's frame, per
       * document a type byte and a key of at most 10 digits and a NUL; each
       * path component may add a sub-document's frame. */
      merged += 7 + id_len * 8 + bytes + count * 12;
      n_dotted += dotted;
   }
   if (!opmsg_rule_dotted_count(&r, b->n_sequences, n_dotted, 0) || !opmsg_rule_merged_size(&r, merged, false)) {
      return false;
   }
   plan->checksum = (b->flags & OPMSG_FLAG_CHECKSUM_PRESENT) != 0;
   if (plan->checksum) {
      size += OPMSG_CHECKSUM_SIZE;
   }
   if (size > l.max_message_size) {
      return too_large(size, &l, error);
   }
   plan->total = size;
   return true;
}

static bool
plan_message(const opmsg_build_t *b, plan_t *plan, bson_error_t *error)
{
   opmsg_keyslot_t local[OPMSG_KEYSET_LOCAL(STACK_KEYS)];
   opmsg_keyset_t keys = {0}; /* zeroed: may be destroyed before its init */
   bool ok;

   if (!b) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "no message given");
   }
   if (b->n_sequences && !b->sequences) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "n_sequences is %zu but sequences is NULL", b->n_sequences);
   }
   ok = plan_checked(b, plan, &keys, local, error);
   opmsg_keyset_destroy(&keys);
   return ok;
}

bool
opmsg_build_size(const opmsg_build_t *b, size_t *size, bson_error_t *error)
{
   plan_t plan;
   if (!size) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "size is NULL");
   }
   if (!plan_message(b, &plan, error)) {
      return false;
   }
   *size = plan.total;
   return true;
}

/* ---------------------------------------------------------------------------
 * Writers
 * ------------------------------------------------------------------------- */

/* header + flagBits + the body's kind byte, into out[0..HEAD_SIZE). */
static void
write_head(const opmsg_build_t *b, size_t total, uint8_t *out)
{
   opmsg_write_u32(out, (uint32_t) total);
   opmsg_write_u32(out + OPMSG_OFF_REQUEST_ID, (uint32_t) b->request_id);
   opmsg_write_u32(out + OPMSG_OFF_RESPONSE_TO, (uint32_t) b->response_to);
   opmsg_write_u32(out + OPMSG_OFF_OPCODE, (uint32_t) OPMSG_OP_MSG);
   opmsg_write_u32(out + OPMSG_OFF_FLAG_BITS, b->flags);
   out[OPMSG_OFF_SECTIONS] = OPMSG_SECTION_BODY;
}

/* A sequence's kind byte and size, into out[0..OPMSG_SECTION_OFF_IDENTIFIER). The size
 * counts itself, the identifier with its NUL and the documents; not the
 * kind byte. */
static size_t
write_seq_head(const opmsg_sequence_in_t *seq, uint8_t *out, size_t *id_len)
{
   size_t bytes = seq->raw_len;
   *id_len = strlen(seq->identifier);
   for (size_t i = 0; i < seq->n_docs; i++) {
      bytes += seq->docs[i]->len;
   }
   out[0] = OPMSG_SECTION_SEQUENCE;
   opmsg_write_u32(out + OPMSG_SECTION_OFF_SIZE, (uint32_t) (4 + *id_len + 1 + bytes));
   return bytes;
}

static void
put(uint8_t **p, const void *src, size_t n)
{
   if (n) {
      memcpy(*p, src, n);
      *p += n;
   }
}

bool
opmsg_build_into(const opmsg_build_t *b, uint8_t *buf, size_t buf_len, size_t *written, bson_error_t *error)
{
   plan_t plan;
   uint8_t *p;

   if (!plan_message(b, &plan, error)) {
      return false;
   }
   if (!buf || buf_len < plan.total) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "the message takes %zu bytes, the buffer has %zu",
                        plan.total, buf ? buf_len : (size_t) 0);
   }
   write_head(b, plan.total, buf);
   p = buf + HEAD_SIZE;
   put(&p, bson_get_data(b->command), plan.body_len);
   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      size_t id_len;
      write_seq_head(seq, p, &id_len);
      p += OPMSG_SECTION_OFF_IDENTIFIER;
      put(&p, seq->identifier, id_len + 1);
      put(&p, seq->raw, seq->raw_len);
      for (size_t d = 0; d < seq->n_docs; d++) {
         put(&p, bson_get_data(seq->docs[d]), seq->docs[d]->len);
      }
   }
   if (plan.checksum) {
      /* messageLength (written above) already counts these 4 bytes. */
      opmsg_write_u32(p, opmsg_crc32c(0, buf, (size_t) (p - buf)));
   }
   if (written) {
      *written = plan.total;
   }
   return true;
}

uint8_t *
opmsg_build_new(const opmsg_build_t *b, size_t *len, bson_error_t *error)
{
   size_t size;
   uint8_t *buf;

   if (!len) {
      opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "len is NULL");
      return NULL;
   }
   if (!opmsg_build_size(b, &size, error)) {
      return NULL;
   }
   buf = bson_malloc(size);
   if (!opmsg_build_into(b, buf, size, len, error)) {
      bson_free(buf);
      return NULL;
   }
   return buf;
}

size_t
opmsg_build_iovec_count(const opmsg_build_t *b)
{
   size_t n = 2;

   if (!b || (b->n_sequences && !b->sequences)) {
      return 0;
   }
   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      n += 2 + seq->n_docs + (seq->raw_len ? 1 : 0);
   }
   if (b->flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      n++;
   }
   return n;
}

static void
add_iov(struct iovec *iov, size_t *n, const void *base, size_t len)
{
   /* iov_base is not const in POSIX; the list is only ever read. */
   iov[*n].iov_base = (void *) (uintptr_t) base;
   iov[*n].iov_len = len;
   (*n)++;
}

bool
opmsg_build_iovec(const opmsg_build_t *b, uint8_t *scratch, size_t scratch_len, struct iovec *iov, size_t iov_cap,
                  size_t *iov_count, size_t *total, bson_error_t *error)
{
   plan_t plan;
   size_t n = 0;
   size_t need_iov;
   uint8_t *s;
   uint32_t crc;

   if (!plan_message(b, &plan, error)) {
      return false;
   }
   if (!iov_count) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "iov_count is NULL");
   }
   need_iov = opmsg_build_iovec_count(b);
   if (!iov || iov_cap < need_iov) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "the message takes %zu iovec entries, %zu given", need_iov,
                        iov ? iov_cap : (size_t) 0);
   }
   if (!scratch || scratch_len < OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences)) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "the framing takes %zu scratch bytes, %zu given",
                        OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences), scratch ? scratch_len : (size_t) 0);
   }

   write_head(b, plan.total, scratch);
   add_iov(iov, &n, scratch, HEAD_SIZE);
   add_iov(iov, &n, bson_get_data(b->command), plan.body_len);
   s = scratch + HEAD_SIZE;
   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      size_t id_len;
      write_seq_head(seq, s, &id_len);
      add_iov(iov, &n, s, OPMSG_SECTION_OFF_IDENTIFIER);
      s += OPMSG_SECTION_OFF_IDENTIFIER;
      add_iov(iov, &n, seq->identifier, id_len + 1);
      if (seq->raw_len) {
         add_iov(iov, &n, seq->raw, seq->raw_len);
      }
      for (size_t d = 0; d < seq->n_docs; d++) {
         add_iov(iov, &n, bson_get_data(seq->docs[d]), seq->docs[d]->len);
      }
   }
   if (plan.checksum) {
      /* The running CRC over the pieces equals the CRC of their
       * concatenation: no copy needed. */
      crc = 0;
      for (size_t i = 0; i < n; i++) {
         crc = opmsg_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
      }
      opmsg_write_u32(s, crc);
      add_iov(iov, &n, s, OPMSG_CHECKSUM_SIZE);
   }
   *iov_count = n;
   if (total) {
      *total = plan.total;
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * Batch splitting
 * ------------------------------------------------------------------------- */

/* Length of the i-th document of the whole sequence at the splitter's
 * cursor (list) or at its raw offset (run). */
static size_t
next_doc_len(const opmsg_splitter_t *s)
{
   if (s->priv_all.raw_len) {
      return (size_t) opmsg_read_u32(s->priv_all.raw + s->priv_raw_off);
   }
   return s->priv_all.docs[s->priv_next]->len;
}

static size_t
total_docs_left(const opmsg_splitter_t *s)
{
   if (s->priv_all.raw_len) {
      return s->priv_raw_off < s->priv_all.raw_len ? 1 : 0;
   }
   return s->priv_all.n_docs - s->priv_next;
}

/* Every document within max_bson and small enough to travel alone. */
static bool
check_split_docs(const opmsg_splitter_t *s, const opmsg_limits_t *dl, bson_error_t *error)
{
   const opmsg_sequence_in_t *seq = &s->priv_all;
   size_t off = 0;
   size_t count = seq->raw_len ? SIZE_MAX : seq->n_docs;
   uint32_t len;
   char nm[OPMSG_PRINTABLE_SIZE];
   opmsg_seq_ref_t ref = {seq->identifier, strlen(seq->identifier), 0, true};
   opmsg_report_t r;

   for (size_t i = 0; i < count; i++) {
      const uint8_t *data;
      size_t avail;
      if (seq->raw_len) {
         if (off >= seq->raw_len) {
            break;
         }
         data = seq->raw + off;
         avail = seq->raw_len - off;
      } else {
         if (!seq->docs[i]) {
            return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "document %zu of sequence \"%s\" is NULL", i,
                              printable(nm, seq->identifier));
         }
         data = bson_get_data(seq->docs[i]);
         avail = seq->docs[i]->len;
      }
      opmsg_report_init(&r, error, data, off, &opmsg_encoder_side);
      if (!check_doc(&r, dl, &ref, i, data, avail, seq->raw_len ? 0 : avail, &len)) {
         return false;
      }
      if (len > s->priv_room) {
         return opmsg_fail(error, OPMSG_ERR_DOCUMENT_OVER_LIMIT,
                           "document %zu of sequence \"%s\" is %u bytes: with "
                           "the %zu bytes of the command and framing it "
                           "exceeds maxMessageSizeBytes %zu even alone",
                           i, printable(nm, seq->identifier), len, s->priv_fixed, s->priv_fixed + s->priv_room);
      }
      off += len;
   }
   return true;
}

bool
opmsg_splitter_init(opmsg_splitter_t *s, const opmsg_build_t *msg, const opmsg_sequence_in_t *seq,
                    const opmsg_split_limits_t *limits, bson_error_t *error)
{
   opmsg_split_limits_t l = {0, 0, 0};
   opmsg_limits_t bl, dl;
   size_t fixed;

   if (!s || !msg || !seq) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "splitter, message and sequence must not be NULL");
   }
   if (msg->n_sequences) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "the message to split must have no sequences of its "
                        "own (it has %zu)",
                        msg->n_sequences);
   }
   if (!seq_form_ok(seq)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "the sequence must give its documents either as a "
                        "list or as a raw run, with a pointer");
   }
   if (limits) {
      l = *limits;
   }
   memset(s, 0, sizeof *s);
   s->priv_all = *seq;
   s->priv_max_batch = l.max_write_batch ? l.max_write_batch : OPMSG_DEFAULT_MAX_WRITE_BATCH;
   s->priv_request_id = msg->request_id;

   /* The message of an empty batch: it checks the command, flags and
    * identifier, and its size is what every batch costs besides its
    * documents. */
   s->priv_build = *msg;
   s->priv_build.max_message_size = l.max_message_size;
   s->priv_build.max_bson_size = l.max_bson_size;
   opmsg_limits_set(&bl, l.max_message_size, l.max_bson_size, 0);
   if (bl.max_message_size > OPMSG_SPLIT_MAX_MESSAGE_SIZE) {
      /* Batches are built without walking their documents again, so their
       * merged size is bounded from the bytes alone; this keeps that bound
       * under BSON's 2 GiB and no batch can fail to build. */
      bl.max_message_size = OPMSG_SPLIT_MAX_MESSAGE_SIZE;
      s->priv_build.max_message_size = bl.max_message_size;
   }
   s->priv_build.priv_checked = 0;
   s->priv_seq.identifier = seq->identifier;
   s->priv_build.sequences = &s->priv_seq;
   s->priv_build.n_sequences = 1;
   if (!opmsg_build_size(&s->priv_build, &fixed, error)) {
      return false;
   }
   s->priv_fixed = fixed;
   s->priv_room = bl.max_message_size - fixed;
   doc_limits(&dl, &bl, msg->trust_documents);
   if (!check_split_docs(s, &dl, error)) {
      return false;
   }
   /* The documents were checked once here; building each batch need not
    * walk them again. */
   s->priv_build.priv_checked = 1;
   return true;
}

bool
opmsg_splitter_next(opmsg_splitter_t *s, opmsg_batch_t *batch)
{
   size_t first, count = 0, bytes = 0;
   size_t raw_start;

   if (!s || !batch || s->priv_done) {
      return false;
   }
   first = s->priv_next;
   raw_start = s->priv_raw_off;
   /* Greedy: each batch takes documents while both limits allow, so every
    * message is as full as it may be. init() made sure each document fits
    * alone, so a batch is never empty while documents are left. */
   while (total_docs_left(s) && count < s->priv_max_batch) {
      size_t len = next_doc_len(s);
      if (len > s->priv_room - bytes) {
         break;
      }
      bytes += len;
      count++;
      s->priv_next++;
      s->priv_raw_off += s->priv_all.raw_len ? len : 0;
   }

   s->priv_seq.docs = NULL;
   s->priv_seq.n_docs = 0;
   s->priv_seq.raw = NULL;
   s->priv_seq.raw_len = 0;
   if (s->priv_all.raw_len) {
      s->priv_seq.raw = bytes ? s->priv_all.raw + raw_start : NULL;
      s->priv_seq.raw_len = bytes;
   } else if (count) {
      s->priv_seq.docs = s->priv_all.docs + first;
      s->priv_seq.n_docs = count;
   }
   s->priv_build.request_id = (int32_t) ((uint32_t) s->priv_request_id + (uint32_t) s->priv_batches);

   batch->index = s->priv_batches;
   batch->first_index = first;
   batch->count = count;
   batch->message_size = s->priv_fixed + bytes;
   batch->build = &s->priv_build;

   s->priv_batches++;
   s->priv_done = total_docs_left(s) == 0;
   return true;
}
