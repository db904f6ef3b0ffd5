/*
 * rules.c - the rules of OP_MSG that the parser and the encoder both apply:
 * flag bits, limits, identifiers, identifiers against each other and
 * against the body's fields, the duplicate-key set, and the frames of the
 * body and the sequence documents.
 *
 * Each rule is written once, here or (where it is hot) inline in
 * opmsg-rules.h, and both sides call it with the same limits: that is
 * what makes "the encoder never writes what the parser rejects" hold. Where
 * the two need a different answer, the function takes it as an argument and
 * says why; the caller's error is written once, with the right code.
 */
#include "opmsg-parse.h"
#include "opmsg-rules.h"

#include <stdio.h>

/* Room for opmsg_printable()'s output. */
#define NAME_BUF 200
/* Room for seq_name()'s. */
#define SEQ_NAME_BUF (NAME_BUF + 48)

/* ---------------------------------------------------------------------------
 * Naming things in messages
 * ------------------------------------------------------------------------- */

/* A sequence as the messages name it: "sequence "docs" at offset 94" for
 * the parser, "sequence 2 "docs"" for the encoder. */
static const char *
seq_name(char *out, opmsg_seq_at_t at, const char *id, size_t len)
{
   char name[NAME_BUF];
   opmsg_printable(name, id, len);
   if (at.is_index) {
      snprintf(out, SEQ_NAME_BUF, "sequence %zu \"%s\"", at.n, name);
   } else {
      snprintf(out, SEQ_NAME_BUF, "sequence \"%s\" at offset %zu", name, at.n);
   }
   return out;
}

/* The encoder's caller knows the body as the command it handed in. */
static const char *
body_noun(opmsg_error_code_t body_code)
{
   return body_code == OPMSG_OK ? "body" : "command";
}

/* document.c names what is wrong with a document by the rule it breaks.
 * For a fault of the encoder's command, build.h promises
 * OPMSG_ERR_BAD_COMMAND instead (document.c's checks take no code of their
 * own): they report into scratch, and body_fault() writes the caller's error
 * once, under body_code, in document.c's words. report_to() says where
 * document.c reports. */
static bson_error_t *
report_to(bson_error_t *error, opmsg_error_code_t body_code, bson_error_t *scratch)
{
   return body_code == OPMSG_OK || !error ? error : scratch;
}

static bool
body_fault(bson_error_t *error, opmsg_error_code_t body_code, const bson_error_t *reported)
{
   if (reported != error) {
      opmsg_fail(error, body_code, "%s", reported->message);
   }
   return false;
}

/* ---------------------------------------------------------------------------
 * Limits and flags
 * ------------------------------------------------------------------------- */

void
opmsg_limits_set(opmsg_limits_t *limits, size_t max_message_size, size_t max_bson_size, uint32_t flags)
{
   limits->max_message_size = max_message_size ? max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   limits->max_bson_size = max_bson_size ? max_bson_size : OPMSG_DEFAULT_MAX_BSON_SIZE;
   limits->flags = flags;
   limits->check = (flags & OPMSG_PARSE_FULL_VALIDATE) ? OPMSG_CHECK_FULL : OPMSG_CHECK_TOP_LEVEL;
   /* messageLength is an int32 on the wire, and so is every BSON length,
    * a body's too, which may be OPMSG_BODY_ALLOWANCE above max_bson_size. */
   if (limits->max_message_size > (size_t) INT32_MAX) {
      limits->max_message_size = (size_t) INT32_MAX;
   }
   if (limits->max_bson_size > (size_t) INT32_MAX - OPMSG_BODY_ALLOWANCE) {
      limits->max_bson_size = (size_t) INT32_MAX - OPMSG_BODY_ALLOWANCE;
   }
}

void
opmsg_limits_from(const opmsg_options_t *opts, opmsg_limits_t *limits)
{
   if (!opts) {
      opmsg_limits_set(limits, 0, 0, 0);
      return;
   }
   opmsg_limits_set(limits, opts->max_message_size, opts->max_bson_size, opts->flags);
   /* The flag asks for full whatever the level says. */
   if (!(opts->flags & OPMSG_PARSE_FULL_VALIDATE)) {
      limits->check = opts->check;
   }
}

bool
opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error)
{
   if (opts && (unsigned) opts->check > (unsigned) OPMSG_CHECK_FULL) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                        "opmsg_options_t.check is %d, not a check level (0 top-level, 1 frames, 2 full)",
                        (int) opts->check);
   }
   return true;
}

bool
opmsg_flags_fail(uint32_t flags, uint32_t unknown, bson_error_t *error)
{
   /* flagBits is at offset 16 of every OP_MSG, read or written. */
   if (unknown & OPMSG_FLAG_REQUIRED_MASK) {
      return opmsg_fail(error, OPMSG_ERR_REQUIRED_FLAGS,
                        "flagBits 0x%08x at offset 16 set unknown required bits 0x%04x (bits 2-15 must be 0)", flags,
                        unknown & OPMSG_FLAG_REQUIRED_MASK);
   }
   return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT,
                     "flagBits 0x%08x set optional bits 0x%08x opmsg does not define (a sender sets unused bits to 0)",
                     flags, unknown);
}

bool
opmsg_merged_size_fail(size_t size, bool exact, bson_error_t *error)
{
   return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE, "the merged document %s %zu bytes, above BSON's 2 GiB limit",
                     exact ? "would be" : "could be up to", size);
}

/* ---------------------------------------------------------------------------
 * Documents: the body and the sequence documents
 * ------------------------------------------------------------------------- */

/* A framed document (5 <= length <= avail) above max is refused under the
 * caller's code before document.c frames it, which would call it
 * OPMSG_ERR_DOCUMENT_TOO_LARGE whoever asks. The order is document.c's:
 * a length that does not fit the bytes is a framing fault, not a size. */
static bool
size_ok(const uint8_t *doc, size_t avail, size_t max, const char *what, size_t off, const char *limit_name,
        opmsg_error_code_t code, bson_error_t *error)
{
   if (avail < 5) {
      return true; /* document.c says what is wrong */
   }
   size_t n = opmsg_read_u32(doc);
   if (n < 5 || n > avail || n <= max) {
      return true;
   }
   return opmsg_fail(error, code, "%s at offset %zu: %zu bytes, above the limit of %zu (%s)", what, off, n, max,
                     limit_name);
}

bool
opmsg_rule_body_frame(const uint8_t *body, size_t avail, const opmsg_limits_t *limits, size_t off,
                      opmsg_error_code_t body_code, uint32_t *len, bson_error_t *error)
{
   const char *what = body_noun(body_code);
   bson_error_t scratch, *into = report_to(error, body_code, &scratch);

   /* Too large is OPMSG_ERR_DOCUMENT_TOO_LARGE on both sides (build.h
    * says so for the command too): it is the limit, not the bytes. */
   return size_ok(body, avail, opmsg_body_limit(limits), what, off, "maxBsonObjectSize + 16 KiB",
                  OPMSG_ERR_DOCUMENT_TOO_LARGE, error) &&
          (opmsg_doc_frame(body, avail, opmsg_body_limit(limits), off, what, len, into) ||
           body_fault(error, body_code, into));
}

/* The top level of the body or of a sub-document of it (document.c). */
static bool
top_ok(const uint8_t *doc, uint32_t len, size_t off, const char *what, opmsg_error_code_t body_code, uint32_t *count,
       bson_error_t *error)
{
   bson_error_t scratch, *into = report_to(error, body_code, &scratch);

   return opmsg_doc_check_top(doc, len, off, what, count, into) || body_fault(error, body_code, into);
}

bool
opmsg_rule_body_top(const uint8_t *body, uint32_t len, size_t off, opmsg_error_code_t body_code, uint32_t *count,
                    bson_error_t *error)
{
   return top_ok(body, len, off, body_noun(body_code), body_code, count, error);
}

bool
opmsg_rule_seq_doc(const uint8_t *doc, size_t avail, size_t max_bson, bool top, bool deep, size_t off, const char *id,
                   size_t id_len, size_t index, opmsg_error_code_t too_large, uint32_t *len, bson_error_t *error)
{
   /* Named here, on the way to an error, not for every document. */
   char name[NAME_BUF];
   char what[NAME_BUF + 64];
   snprintf(what, sizeof what, "document %zu of sequence \"%s\"", index, opmsg_printable(name, id, id_len));

   return size_ok(doc, avail, max_bson, what, off, "maxBsonObjectSize", too_large, error) &&
          opmsg_doc_check(doc, avail, max_bson, off, what, top, deep, len, error);
}

/* ---------------------------------------------------------------------------
 * Duplicate keys
 * ------------------------------------------------------------------------- */

bool
opmsg_duplicate_key_fail(const char *key, size_t off, opmsg_error_code_t body_code, bson_error_t *error)
{
   char name[NAME_BUF];
   return opmsg_fail(error, body_code == OPMSG_OK ? OPMSG_ERR_DUPLICATE_KEY : body_code,
                     "%s key \"%s\" at offset %zu appears twice", body_noun(body_code),
                     opmsg_printable(name, key, strlen(key)), off);
}

/* Every key of the body into keys; with refuse, a second one is the
 * error, without it only the first of each is kept. */
static bool
add_keys(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, size_t off, bool refuse, opmsg_error_code_t body_code,
         bson_error_t *error)
{
   const uint8_t *p = body + 4;
   const uint8_t *end = body + len - 1;
   opmsg_element_t e;

   while (p < end) {
      const uint8_t *at = p;
      if (!opmsg_next_element_inline(&p, end, &e, 0, NULL)) {
         return true; /* the caller checked the body: not reached */
      }
      uint32_t key_off = (uint32_t) ((const uint8_t *) e.key - keys->base);
      if (opmsg_keyset_find(keys, e.key, e.key_len, key_off, true) >= 0 && refuse) {
         return opmsg_duplicate_key_fail(e.key, off + (size_t) (at - body), body_code, error);
      }
   }
   return true;
}

bool
opmsg_rule_unique_keys(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, size_t off,
                       opmsg_error_code_t body_code, bson_error_t *error)
{
   return add_keys(keys, body, len, off, true, body_code, error);
}

void
opmsg_keys_add_all(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len)
{
   (void) add_keys(keys, body, len, 0, false, OPMSG_OK, NULL);
}

/* ---------------------------------------------------------------------------
 * Identifiers
 * ------------------------------------------------------------------------- */

bool
opmsg_rule_identifier(const char *id, size_t len, opmsg_seq_at_t at, bool *dotted, bson_error_t *error)
{
   char where[SEQ_NAME_BUF];
   size_t parts = 1;

   if (len == 0) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER, "%s: the identifier is empty",
                        seq_name(where, at, id, len));
   }
   /* The section's int32 size counts itself, the identifier and its NUL.
    * A parser never meets a longer one; the encoder is given any string. */
   if (len > (size_t) INT32_MAX - 5) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER, "%s: the identifier's %zu bytes do not fit a section",
                        seq_name(where, at, id, len), len);
   }
   /* One pass: the dots, and whether any byte is not ASCII. Identifiers
    * are ASCII in practice; only one that is not needs libbson's UTF-8
    * check. */
   unsigned high = 0;
   for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char) id[i];
      high |= c;
      if (c == '.') {
         if (i == 0 || i + 1 == len || id[i + 1] == '.') {
            return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER, "%s: the identifier has an empty path component",
                              seq_name(where, at, id, len));
         }
         parts++;
      }
   }
   if ((high & 0x80u) && !bson_utf8_validate(id, len, false)) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER, "%s: the identifier is not valid UTF-8",
                        seq_name(where, at, id, len));
   }
   *dotted = parts > 1;
   /* The parser follows a path at most as deep as it validates documents. */
   if (parts > OPMSG_MAX_DEPTH) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "%s: the identifier has %zu path components, more than %d", seq_name(where, at, id, len), parts,
                        OPMSG_MAX_DEPTH);
   }
   return true;
}

bool
opmsg_rule_identifier_pair(const char *a, size_t a_len, opmsg_seq_at_t a_at, const char *b, size_t b_len,
                           opmsg_seq_at_t b_at, bson_error_t *error)
{
   size_t n = a_len < b_len ? a_len : b_len;
   char na[SEQ_NAME_BUF], nb[SEQ_NAME_BUF];

   if (memcmp(a, b, n) != 0) {
      return true;
   }
   if (a_len == b_len) {
      return opmsg_fail(error, OPMSG_ERR_DUPLICATE_IDENTIFIER, "%s repeats the identifier of %s",
                        seq_name(nb, b_at, b, b_len), seq_name(na, a_at, a, a_len));
   }
   if ((a_len > b_len ? a[n] : b[n]) != '.') {
      return true; /* "x" and "xy" are different fields */
   }
   seq_name(na, a_at, a, a_len);
   seq_name(nb, b_at, b, b_len);
   return opmsg_fail(error, OPMSG_ERR_DUPLICATE_IDENTIFIER, "%s lies inside %s", a_len > b_len ? na : nb,
                     a_len > b_len ? nb : na);
}

bool
opmsg_rule_dotted_count(size_t n_seq, size_t n_dotted, bson_error_t *error)
{
   if (n_dotted == 0 || n_seq <= OPMSG_MAX_DOTTED_SEQUENCES) {
      return true;
   }
   return opmsg_fail(
      error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
      "%zu document sequences with a dotted identifier among them: more than the %d this implementation places", n_seq,
      OPMSG_MAX_DOTTED_SEQUENCES);
}

/* ---------------------------------------------------------------------------
 * Identifiers against the body
 * ------------------------------------------------------------------------- */

/* The element called key[0..key_len) at the top level of a checked
 * document doc, among the elements from p on. */
static bool
find_key_from(const uint8_t *doc, uint32_t len, const uint8_t *p, const char *key, size_t key_len,
              opmsg_element_t *found)
{
   const uint8_t *end = doc + len - 1;
   while (p < end && opmsg_next_element_inline(&p, end, found, 0, NULL)) {
      if (found->key_len == key_len && memcmp(found->key, key, key_len) == 0) {
         return true;
      }
   }
   return false;
}

/* find_key_from() on a document whose elements nobody checked yet: each
 * element from p on is checked on the way, to the end when key is not
 * there. 1 found (in *found), 0 not there, -1 an unsound element (its
 * rule in *error, the document called the body, see top_ok()). */
static int
find_key_checked(const uint8_t *doc, uint32_t len, const uint8_t *p, size_t off, const char *key, size_t key_len,
                 opmsg_error_code_t body_code, opmsg_element_t *found, const uint8_t **db, bson_error_t *error)
{
   const uint8_t *end = doc + len - 1;
   while (p < end) {
      const uint8_t *k = p;
      const uint8_t *next = opmsg_skip_element(p, end, &k);
      if (OPMSG_UNLIKELY(!next)) {
         (void) top_ok(doc, len, off, body_noun(body_code), body_code, NULL, error);
         return -1;
      }
      if ((size_t) (k - p - 1) == key_len && memcmp(p + 1, key, key_len) == 0) {
         (void) opmsg_next_element_inline(&p, end, found, 0, NULL); /* sound */
         return 1;
      }
      if (db && !*db && k - p == 4 && memcmp(p + 1, "$db", 3) == 0) {
         *db = p;
      }
      p = next;
   }
   return 0;
}

/* A path's component name[0..len) found twice in holder (at offsets a and
 * b): the sequence named in where would have two places. */
static OPMSG_COLD bool
path_twice_fail(const char *where, const char *holder, const char *name, size_t len, size_t a, size_t b,
                bson_error_t *error)
{
   char field[NAME_BUF];
   return opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH,
                     "%s: the %s holds \"%s\" twice (at offsets %zu and %zu), so the path has no single place", where,
                     holder, opmsg_printable(field, name, len), a, b);
}

/* The first element called key[0..key_len) at the top level of a checked
 * document, if there is one. */
static bool
find_key(const uint8_t *doc, uint32_t len, const char *key, size_t key_len, opmsg_element_t *found)
{
   return find_key_from(doc, len, doc + 4, key, key_len, found);
}

bool
opmsg_rule_path(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, size_t off, const char *id, size_t id_len,
                opmsg_seq_at_t at, opmsg_error_code_t body_code, const uint8_t **place, const uint8_t **db,
                bson_error_t *error)
{
   const char *id_end = id + id_len;
   const uint8_t *unused;
   if (!place) {
      place = &unused;
   }
   *place = NULL;
   const char *dot = memchr(id, '.', id_len);
   size_t first = (size_t) ((dot ? dot : id_end) - id);
   char where[SEQ_NAME_BUF], field[NAME_BUF], what[64];
   opmsg_element_t e;

   if (keys) {
      /* The identifier's NUL follows it, in the message or the C string:
       * the hash may read up to there. */
      int64_t key_off =
         opmsg_keyset_find_hashed(keys, opmsg_key_hash(id, first, (const uint8_t *) id_end + 1), id, first, 0, false);
      if (key_off < 0) {
         return true; /* the merge adds the field, or creates the path */
      }
      /* The stored offset is the key's; its element starts one byte earlier. */
      const uint8_t *p = keys->base + key_off - 1;
      (void) opmsg_next_element_inline(&p, body + len - 1, &e, 0, NULL); /* checked */
   } else {
      /* No key table (the frames level): the body's top level, walked and
       * checked here. */
      int found = find_key_checked(body, len, body + 4, off, id, first, body_code, &e, db, error);
      if (found <= 0) {
         return found == 0;
      }
   }
   /* Where nothing refused duplicate keys (the frames level), a path's first
    * component may be in the body twice: looked for past its first place. */
   if (dot && (!keys || !keys->unique)) {
      opmsg_element_t again;
      int twice = find_key_checked(body, len, e.value + e.value_len, off, id, first, body_code, &again, db, error);
      if (twice != 0) {
         return twice > 0 &&
                path_twice_fail(seq_name(where, at, id, id_len), body_noun(body_code), id, first,
                                off + (size_t) (e.start - body), off + (size_t) (again.start - body), error);
      }
   }

   for (;;) {
      if (!dot) {
         return opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH, "%s: the %s already has that field (at offset %zu)",
                           seq_name(where, at, id, id_len), body_noun(body_code), off + (size_t) (e.start - body));
      }
      if (e.type != BSON_TYPE_DOCUMENT) {
         return opmsg_fail(
            error, OPMSG_ERR_IDENTIFIER_CLASH, "%s: %s field \"%s\" is not a document, so the path cannot be added",
            seq_name(where, at, id, id_len), body_noun(body_code), opmsg_printable(field, id, (size_t) (dot - id)));
      }
      /* The merge rewrites this sub-document field by field, so each of its
       * fields must be as sound as a top-level one, not only the one on the
       * path (or the merge could lose what lies behind a bad one). */
      if (OPMSG_UNLIKELY(!opmsg_doc_top_ok(e.value, e.value_len))) {
         /* Named on the way to the error only. */
         snprintf(what, sizeof what, "%s sub-document on a sequence's path", body_noun(body_code));
         (void) top_ok(e.value, e.value_len, off + (size_t) (e.value - body), what, body_code, NULL, error);
         return false;
      }
      const char *comp = dot + 1;
      dot = memchr(comp, '.', (size_t) (id_end - comp));
      size_t comp_len = (size_t) ((dot ? dot : id_end) - comp);
      const uint8_t *sub = e.value;
      uint32_t sub_len = e.value_len;
      size_t sub_off = off + (size_t) (sub - body);
      if (!find_key(sub, sub_len, comp, comp_len, &e)) {
         /* The body holds the whole path: the sequence goes at the end of
          * sub. Otherwise the merge creates what is missing. */
         *place = dot ? NULL : sub;
         return true;
      }
      /* Only the body's top level must hold each key once; a sub-document
       * may hold one twice. On a path that would leave two places for the
       * sequence, and the merge one. */
      opmsg_element_t again;
      if (find_key_from(sub, sub_len, e.value + e.value_len, comp, comp_len, &again)) {
         char holder[96];
         snprintf(holder, sizeof holder, "%s sub-document at offset %zu", body_noun(body_code), sub_off);
         return path_twice_fail(seq_name(where, at, id, id_len), holder, comp, comp_len,
                                off + (size_t) (e.start - body), off + (size_t) (again.start - body), error);
      }
   }
}
