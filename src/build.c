/*
 * build.c - the OP_MSG encoder: buffer and iovec forms, and batch splitting.
 *
 * Every entry point first "plans" the message: it checks the description
 * against the rules the parser enforces and computes the exact size. The
 * writers then only copy; so a message is either fully valid or not written.
 */
#include "opmsg-private.h"

/* header(16) + flagBits(4) + the body's kind byte(1). */
#define HEAD_SIZE 21
/* A kind-1 section's kind byte and int32 size. */
#define SEQ_HEAD_SIZE 5
#define CRC_SIZE 4

/* Command keys checked for duplicates with a table on the stack up to this
 * many keys; a larger command borrows one table from the heap. */
#define STACK_KEYS 512

typedef struct {
   size_t max_message;
   size_t max_bson;
} build_limits_t;

/* Room for a name escaped by opmsg_printable(). */
#define NAME_BUF 200

/* An identifier or key made safe for an error message (escaped, cut). */
static const char *
printable(char *out, const char *name)
{
   return opmsg_printable(out, name ? name : "(null)", name ? strlen(name) : 6);
}

static void
limits_of(const opmsg_build_t *b, build_limits_t *l)
{
   l->max_message =
      b->max_message_size ? b->max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   /* messageLength is an int32: nothing larger can be framed. */
   if (l->max_message > (size_t) INT32_MAX) {
      l->max_message = (size_t) INT32_MAX;
   }
   l->max_bson = b->max_bson_size ? b->max_bson_size : OPMSG_DEFAULT_MAX_BSON_SIZE;
   if (l->max_bson > (size_t) INT32_MAX) {
      l->max_bson = (size_t) INT32_MAX;
   }
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

static bool
check_flags(uint32_t flags, bson_error_t *error)
{
   const uint32_t known_required =
      OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME;
   uint32_t unknown = flags & ~(known_required | OPMSG_FLAG_EXHAUST_ALLOWED);

   if (unknown & OPMSG_FLAG_REQUIRED_MASK) {
      return opmsg_fail(error, OPMSG_ERR_REQUIRED_FLAGS,
                        "flags 0x%08x set required bits 0x%08x a receiver "
                        "does not know",
                        flags, unknown & OPMSG_FLAG_REQUIRED_MASK);
   }
   if (unknown) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "flags 0x%08x set optional bits 0x%08x opmsg does "
                        "not define (a sender clears unused bits)",
                        flags, unknown);
   }
   return true;
}

/* Rewrites a failure from the document checks as OPMSG_ERR_BAD_COMMAND,
 * keeping its message: to the caller, the command is simply invalid. */
static bool
bad_command(bson_error_t *error)
{
   if (error) {
      error->code = OPMSG_ERR_BAD_COMMAND;
   }
   return false;
}

typedef struct {
   uint32_t hash;
   uint32_t len;
   const char *key;
} key_slot_t;

/* Checks that no top-level key of doc[0..len) appears twice. The parser
 * refuses such a body (which value would the server take?). */
static bool
check_unique_keys(const uint8_t *doc, uint32_t len, uint32_t n_keys,
                  bson_error_t *error)
{
   key_slot_t stack_table[STACK_KEYS * 2];
   key_slot_t *table = stack_table;
   size_t n_slots = STACK_KEYS * 2;
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + len - 1;
   bool ok = true;

   if (n_keys < 2) {
      return true;
   }
   if (n_keys > STACK_KEYS) {
      n_slots = 1;
      while (n_slots < (size_t) n_keys * 2) {
         n_slots *= 2;
      }
      table = bson_malloc(n_slots * sizeof *table);
   }
   memset(table, 0, n_slots * sizeof *table);

   while (p < end) {
      opmsg_element_t e;
      size_t at = (size_t) (p - doc);
      if (!opmsg_next_element(&p, end, &e, HEAD_SIZE + at, error)) {
         ok = bad_command(error);
         break;
      }
      uint32_t hash = OPMSG_HASH_INIT;
      for (uint32_t k = 0; k < e.key_len; k++) {
         hash = opmsg_hash_step(hash, (uint8_t) e.key[k]);
      }
      size_t i = hash & (n_slots - 1);
      while (table[i].key) {
         if (table[i].hash == hash && table[i].len == e.key_len &&
             memcmp(table[i].key, e.key, e.key_len) == 0) {
            break;
         }
         i = (i + 1) & (n_slots - 1);
      }
      if (table[i].key) {
         char nm[NAME_BUF];
         ok = opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                         "command key \"%s\" at offset %zu appears twice",
                         printable(nm, e.key), HEAD_SIZE + at);
         break;
      }
      table[i].hash = hash;
      table[i].len = e.key_len;
      table[i].key = e.key;
   }
   if (table != stack_table) {
      bson_free(table);
   }
   return ok;
}

/* The command: present, a framed document with at least one element, every
 * top-level element well-formed, no key twice, within the body's limit. */
static bool
check_command(const opmsg_build_t *b, const build_limits_t *l,
              uint32_t *body_len, bson_error_t *error)
{
   size_t max_body = l->max_bson + OPMSG_BODY_ALLOWANCE;
   const uint8_t *data;
   uint32_t len;
   uint32_t n_keys = 0;

   if (!b->command) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND, "no command document");
   }
   data = bson_get_data(b->command);
   if (!data || b->command->len < 5) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                        "the command is not a document");
   }
   if (b->command->len == 5) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                        "the command is empty: its first key names the command");
   }
   if (b->command->len > max_body) {
      return opmsg_fail(error, OPMSG_ERR_DOCUMENT_TOO_LARGE,
                        "the command is %u bytes, above the body limit of %zu "
                        "(maxBsonObjectSize + 16 KiB)",
                        b->command->len, max_body);
   }
   if (!opmsg_doc_frame(data, b->command->len, max_body, HEAD_SIZE, "command",
                        &len, error) ||
       !opmsg_doc_check_top(data, len, HEAD_SIZE, "command", &n_keys, error)) {
      return bad_command(error);
   }
   if (len != b->command->len) {
      return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                        "the command's length field says %u bytes but the "
                        "bson_t holds %u",
                        len, b->command->len);
   }
   if (!check_unique_keys(data, len, n_keys, error)) {
      return false;
   }
   *body_len = len;
   return true;
}

/* An identifier is a path: non-empty UTF-8 components joined by dots. */
static bool
check_identifier(const char *id, size_t seq_index, size_t *id_len,
                 bson_error_t *error)
{
   size_t len;

   if (!id) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "sequence %zu has no identifier", seq_index);
   }
   len = strlen(id);
   if (len == 0) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "sequence %zu has an empty identifier", seq_index);
   }
   if (len > (size_t) INT32_MAX) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "sequence %zu's identifier is too long", seq_index);
   }
   if (!bson_utf8_validate(id, len, false)) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "sequence %zu's identifier is not valid UTF-8",
                        seq_index);
   }
   if (id[0] == '.' || id[len - 1] == '.' || strstr(id, "..")) {
      char nm[NAME_BUF];
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "sequence %zu's identifier \"%s\" has an empty "
                        "path component",
                        seq_index, printable(nm, id));
   }
   /* The parser follows a path at most as deep as it validates documents. */
   size_t parts = 1;
   for (const char *dot = strchr(id, '.'); dot; dot = strchr(dot + 1, '.')) {
      parts++;
   }
   if (parts > OPMSG_MAX_DEPTH) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "sequence %zu's identifier has %zu path components, "
                        "more than %d",
                        seq_index, parts, OPMSG_MAX_DEPTH);
   }
   *id_len = len;
   return true;
}

/* True when a equals b or one is a path prefix of the other ("a", "a.b"):
 * both would fill the same field of the merged document. */
static bool
paths_overlap(const char *a, size_t a_len, const char *b, size_t b_len)
{
   size_t n = a_len < b_len ? a_len : b_len;
   if (memcmp(a, b, n) != 0) {
      return false;
   }
   if (a_len == b_len) {
      return true;
   }
   return (a_len > b_len ? a[n] : b[n]) == '.';
}

/* Finds the element called key[0..key_len) at the top level of doc. */
static bool
find_key(const uint8_t *doc, uint32_t len, const char *key, size_t key_len,
         opmsg_element_t *found, bool *walk_ok)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + len - 1;

   *walk_ok = true;
   while (p < end) {
      if (!opmsg_next_element(&p, end, found, 0, NULL)) {
         *walk_ok = false;
         return false;
      }
      if (found->key_len == key_len && memcmp(found->key, key, key_len) == 0) {
         return true;
      }
   }
   return false;
}

/* An identifier must not name a command field: "a" clashes with a body key
 * "a", "a.b" with {a: {b: ...}}, and with {a: 5} too (there is no document
 * to put "b" in). {a: {c: 1}} with "a.b" is fine: the merge adds "b". */
static bool
check_clash(const uint8_t *body, uint32_t body_len, const char *id,
            size_t id_len, bson_error_t *error)
{
   const uint8_t *doc = body;
   uint32_t doc_len = body_len;
   const char *comp = id;
   const char *id_end = id + id_len;
   char nm[NAME_BUF], field[NAME_BUF];

   for (;;) {
      const char *dot = memchr(comp, '.', (size_t) (id_end - comp));
      size_t comp_len = (size_t) ((dot ? dot : id_end) - comp);
      opmsg_element_t e;
      bool walk_ok;

      if (!find_key(doc, doc_len, comp, comp_len, &e, &walk_ok)) {
         if (!walk_ok) {
            return opmsg_fail(error, OPMSG_ERR_BAD_COMMAND,
                              "the command's sub-document on the path of "
                              "identifier \"%s\" is malformed",
                              printable(nm, id));
         }
         return true;
      }
      if (!dot || e.type != BSON_TYPE_DOCUMENT) {
         return opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH,
                           "identifier \"%s\" names the command field \"%s\"",
                           printable(nm, id),
                           opmsg_printable(field, id,
                                           (size_t) ((dot ? dot : id_end) - id)));
      }
      doc = e.value;
      doc_len = e.value_len;
      comp = dot + 1;
   }
}

/* Adds the index of a failing sequence document to the error's message. */
static bool
doc_fail(bson_error_t *error, const char *id, size_t index)
{
   if (error) {
      char nm[NAME_BUF];
      char inner[sizeof error->message];
      memcpy(inner, error->message, sizeof inner);
      inner[sizeof inner - 1] = '\0';
      bson_snprintf(error->message, sizeof error->message,
                    "document %zu of sequence \"%s\": %s", index,
                    printable(nm, id), inner);
   }
   return false;
}

/* Checks one sequence document at data with avail bytes: framed, within
 * max_bson, and (unless the caller vouches for them) its top-level elements
 * well-formed. Stores its length. */
static bool
check_doc(const uint8_t *data, size_t avail, size_t max_bson, bool frame_only,
          const char *id, size_t index, uint32_t *len, bson_error_t *error)
{
   if (avail >= 4) {
      int32_t declared = opmsg_read_i32(data);
      /* Framed (it fits in what was given) but too large: the limit is the
       * problem, not the bytes. */
      if (declared > 0 && (size_t) declared <= avail &&
          (size_t) declared > max_bson) {
         char nm[NAME_BUF];
         return opmsg_fail(error, OPMSG_ERR_DOCUMENT_OVER_LIMIT,
                           "document %zu of sequence \"%s\" is %d bytes, "
                           "above maxBsonObjectSize %zu",
                           index, printable(nm, id), declared, max_bson);
      }
   }
   if (!opmsg_doc_frame(data, avail, max_bson, 0, "document", len, error) ||
       (!frame_only &&
        !opmsg_doc_check_top(data, *len, 0, "document", NULL, error))) {
      return doc_fail(error, id, index);
   }
   return true;
}

/* The bytes of one sequence's documents; checks them unless trusted. */
static bool
sequence_docs(const opmsg_sequence_in_t *seq, size_t seq_index,
              size_t max_bson, bool trusted, bool frame_only, size_t *bytes,
              size_t *count, bson_error_t *error)
{
   size_t total = 0;
   uint32_t len;
   char nm[NAME_BUF];

   if ((seq->n_docs && seq->raw_len) || (seq->n_docs && !seq->docs) ||
       (seq->raw_len && !seq->raw)) {
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
         for (i = 0; off < seq->raw_len; i++) {
            if (!check_doc(seq->raw + off, seq->raw_len - off, max_bson,
                           frame_only, seq->identifier, i, &len, error)) {
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
         return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                           "document %zu of sequence \"%s\" is NULL", i,
                           printable(nm, seq->identifier));
      }
      if (!trusted) {
         if (!check_doc(bson_get_data(doc), doc->len, max_bson, frame_only,
                        seq->identifier, i, &len, error)) {
            return false;
         }
         if (len != doc->len) {
            return opmsg_fail(error, OPMSG_ERR_DOCUMENT_LENGTH,
                              "document %zu of sequence \"%s\": length field "
                              "says %u bytes but the bson_t holds %u",
                              i, printable(nm, seq->identifier), len, doc->len);
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
too_large(size_t size, const build_limits_t *l, bson_error_t *error)
{
   return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE,
                     "the message would be at least %zu bytes, above the "
                     "limit of %zu",
                     size, l->max_message);
}

static bool
plan_message(const opmsg_build_t *b, plan_t *plan, bson_error_t *error)
{
   build_limits_t l;
   size_t size;
   size_t merged; /* an upper bound of the merged document's size */
   size_t n_dotted = 0;

   if (!b) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "no message given");
   }
   if (b->n_sequences && !b->sequences) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "n_sequences is %zu but sequences is NULL",
                        b->n_sequences);
   }
   limits_of(b, &l);
   if (!check_flags(b->flags, error) ||
       !check_command(b, &l, &plan->body_len, error)) {
      return false;
   }
   size = HEAD_SIZE + (size_t) plan->body_len;
   merged = plan->body_len;

   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      size_t id_len = 0, bytes = 0, count = 0;

      if (!check_identifier(seq->identifier, i, &id_len, error)) {
         return false;
      }
      for (size_t j = 0; j < i; j++) {
         const char *other = b->sequences[j].identifier;
         if (paths_overlap(seq->identifier, id_len, other, strlen(other))) {
            char nm1[NAME_BUF], nm2[NAME_BUF];
            return opmsg_fail(error, OPMSG_ERR_DUPLICATE_IDENTIFIER,
                              "identifiers \"%s\" (sequence %zu) and \"%s\" "
                              "(sequence %zu) name the same field",
                              printable(nm1, other), j,
                              printable(nm2, seq->identifier), i);
         }
      }
      if (!check_clash(bson_get_data(b->command), plan->body_len,
                       seq->identifier, id_len, error) ||
          !sequence_docs(seq, i, l.max_bson, b->priv_checked != 0,
                         b->trust_documents, &bytes, &count, error)) {
         return false;
      }
      /* Checked one by one so that no sum can wrap around. */
      if (id_len > l.max_message || bytes > l.max_message) {
         return too_large(id_len > bytes ? id_len : bytes, &l, error);
      }
      size += SEQ_HEAD_SIZE + id_len + 1 + bytes;
      if (size > l.max_message) {
         return too_large(size, &l, error);
      }
      /* Merged, a sequence becomes an array: its key, the array's frame, per
       * document a type byte and a key of at most 10 digits and a NUL; each
       * path component may add a sub-document's frame. */
      merged += 7 + id_len * 8 + bytes + count * 12;
      n_dotted += memchr(seq->identifier, '.', id_len) != NULL;
   }
   if (n_dotted && b->n_sequences > OPMSG_MAX_DOTTED_SEQUENCES) {
      /* The parser places dotted paths pairwise, so it bounds them. */
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "%zu sequences with a dotted identifier among them: "
                        "more than the %d the parser accepts",
                        b->n_sequences, OPMSG_MAX_DOTTED_SEQUENCES);
   }
   if (merged > (size_t) INT32_MAX) {
      return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE,
                        "merged, the message could exceed BSON's 2 GiB "
                        "limit (up to %zu bytes)",
                        merged);
   }
   plan->checksum = (b->flags & OPMSG_FLAG_CHECKSUM_PRESENT) != 0;
   if (plan->checksum) {
      size += CRC_SIZE;
   }
   if (size > l.max_message) {
      return too_large(size, &l, error);
   }
   plan->total = size;
   return true;
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
   opmsg_write_u32(out + 4, (uint32_t) b->request_id);
   opmsg_write_u32(out + 8, (uint32_t) b->response_to);
   opmsg_write_u32(out + 12, (uint32_t) OPMSG_OP_MSG);
   opmsg_write_u32(out + 16, b->flags);
   out[20] = 0; /* kind 0: the body */
}

/* A sequence's kind byte and size, into out[0..SEQ_HEAD_SIZE). The size
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
   out[0] = 1;
   opmsg_write_u32(out + 1, (uint32_t) (4 + *id_len + 1 + bytes));
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
opmsg_build_into(const opmsg_build_t *b, uint8_t *buf, size_t buf_len,
                 size_t *written, bson_error_t *error)
{
   plan_t plan;
   uint8_t *p;

   if (!plan_message(b, &plan, error)) {
      return false;
   }
   if (!buf || buf_len < plan.total) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL,
                        "the message takes %zu bytes, the buffer has %zu",
                        plan.total, buf ? buf_len : (size_t) 0);
   }
   write_head(b, plan.total, buf);
   p = buf + HEAD_SIZE;
   put(&p, bson_get_data(b->command), plan.body_len);
   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      size_t id_len;
      write_seq_head(seq, p, &id_len);
      p += SEQ_HEAD_SIZE;
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
opmsg_build_iovec(const opmsg_build_t *b, uint8_t *scratch, size_t scratch_len,
                  struct iovec *iov, size_t iov_cap, size_t *iov_count,
                  size_t *total, bson_error_t *error)
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
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL,
                        "the message takes %zu iovec entries, %zu given",
                        need_iov, iov ? iov_cap : (size_t) 0);
   }
   if (!scratch || scratch_len < OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences)) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL,
                        "the framing takes %zu scratch bytes, %zu given",
                        OPMSG_BUILD_SCRATCH_SIZE(b->n_sequences),
                        scratch ? scratch_len : (size_t) 0);
   }

   write_head(b, plan.total, scratch);
   add_iov(iov, &n, scratch, HEAD_SIZE);
   add_iov(iov, &n, bson_get_data(b->command), plan.body_len);
   s = scratch + HEAD_SIZE;
   for (size_t i = 0; i < b->n_sequences; i++) {
      const opmsg_sequence_in_t *seq = &b->sequences[i];
      size_t id_len;
      write_seq_head(seq, s, &id_len);
      add_iov(iov, &n, s, SEQ_HEAD_SIZE);
      s += SEQ_HEAD_SIZE;
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
      add_iov(iov, &n, s, CRC_SIZE);
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
check_split_docs(const opmsg_splitter_t *s, size_t max_bson, bool frame_only,
                 bson_error_t *error)
{
   const opmsg_sequence_in_t *seq = &s->priv_all;
   size_t off = 0;
   size_t count = seq->raw_len ? SIZE_MAX : seq->n_docs;
   uint32_t len;
   char nm[NAME_BUF];

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
            return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                              "document %zu of sequence \"%s\" is NULL", i,
                              printable(nm, seq->identifier));
         }
         data = bson_get_data(seq->docs[i]);
         avail = seq->docs[i]->len;
      }
      if (!check_doc(data, avail, max_bson, frame_only, seq->identifier, i,
                     &len, error)) {
         return false;
      }
      if (!seq->raw_len && len != seq->docs[i]->len) {
         return opmsg_fail(error, OPMSG_ERR_DOCUMENT_LENGTH,
                           "document %zu of sequence \"%s\": length field "
                           "says %u bytes but the bson_t holds %u",
                           i, printable(nm, seq->identifier), len,
                           seq->docs[i]->len);
      }
      if (len > s->priv_room) {
         return opmsg_fail(error, OPMSG_ERR_DOCUMENT_OVER_LIMIT,
                           "document %zu of sequence \"%s\" is %u bytes: with "
                           "the %zu bytes of the command and framing it "
                           "exceeds maxMessageSizeBytes %zu even alone",
                           i, printable(nm, seq->identifier), len, s->priv_fixed,
                           s->priv_fixed + s->priv_room);
      }
      off += len;
   }
   return true;
}

bool
opmsg_splitter_init(opmsg_splitter_t *s, const opmsg_build_t *msg,
                    const opmsg_sequence_in_t *seq,
                    const opmsg_split_limits_t *limits, bson_error_t *error)
{
   opmsg_split_limits_t l = {0, 0, 0};
   build_limits_t bl;
   size_t fixed;

   if (!s || !msg || !seq) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "splitter, message and sequence must not be NULL");
   }
   if (msg->n_sequences) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "the message to split must have no sequences of its "
                        "own (it has %zu)",
                        msg->n_sequences);
   }
   if ((seq->n_docs && seq->raw_len) || (seq->n_docs && !seq->docs) ||
       (seq->raw_len && !seq->raw)) {
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
   limits_of(&s->priv_build, &bl);
   if (bl.max_message > OPMSG_SPLIT_MAX_MESSAGE_SIZE) {
      /* Batches are built without walking their documents again, so their
       * merged size is bounded from the bytes alone; this keeps that bound
       * under BSON's 2 GiB and no batch can fail to build. */
      bl.max_message = OPMSG_SPLIT_MAX_MESSAGE_SIZE;
      s->priv_build.max_message_size = bl.max_message;
   }
   s->priv_build.priv_checked = 0;
   s->priv_seq.identifier = seq->identifier;
   s->priv_build.sequences = &s->priv_seq;
   s->priv_build.n_sequences = 1;
   if (!opmsg_build_size(&s->priv_build, &fixed, error)) {
      return false;
   }
   s->priv_fixed = fixed;
   s->priv_room = bl.max_message - fixed;
   if (!check_split_docs(s, bl.max_bson, msg->trust_documents, error)) {
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
   s->priv_build.request_id =
      (int32_t) ((uint32_t) s->priv_request_id + (uint32_t) s->priv_batches);

   batch->index = s->priv_batches;
   batch->first_index = first;
   batch->count = count;
   batch->message_size = s->priv_fixed + bytes;
   batch->build = &s->priv_build;

   s->priv_batches++;
   s->priv_done = total_docs_left(s) == 0;
   return true;
}
