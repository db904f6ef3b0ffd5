/*
 * rules.c - the rules of OP_MSG that the parser and the encoder both apply:
 * flag bits, limits, identifiers, identifiers against each other and
 * against the body's fields, the duplicate-key set, and the frames of the
 * body and the sequence documents.
 *
 * Each rule is written once, here or (where it is hot) inline in
 * opmsg-rules.h, and both sides call it with the same limits: that is
 * what makes "the encoder never writes what the parser rejects" hold. A
 * rule says what broke and where; where the two sides give that a different
 * code or noun, the report's side (opmsg_side_t, the two in one table
 * below) says which, so no rule asks who calls it.
 */
#include "opmsg-rules.h"
#include "opmsg-msg.h"

#include <stdio.h>

/* Room for seq_name()'s. */
#define SEQ_NAME_BUF (OPMSG_PRINTABLE_SIZE + 48)

/* ---------------------------------------------------------------------------
 * The two sides' codes and words, side by side (opmsg_side_t)
 *
 * The parser: a received message's body, each fault under its rule's own
 * code, and only the required flag bits opmsg does not know refused (the
 * spec has a receiver ignore the optional ones). The encoder: its caller
 * knows the body as the command it handed in, and build.h promises
 * OPMSG_ERR_BAD_COMMAND for a fault in its bytes or a key twice,
 * OPMSG_ERR_DOCUMENT_OVER_LIMIT for a document the server's limits will
 * not take; a sender sets the flag bits it does not use to 0.
 * ------------------------------------------------------------------------- */

/* clang-format off */
/*                                         body       body_fault             duplicate_key            doc_over_limit                  flags_refused */
const opmsg_side_t opmsg_parser_side  = {"body",    OPMSG_OK,              OPMSG_ERR_DUPLICATE_KEY, OPMSG_ERR_DOCUMENT_TOO_LARGE,  OPMSG_FLAG_REQUIRED_MASK};
const opmsg_side_t opmsg_encoder_side = {"command", OPMSG_ERR_BAD_COMMAND, OPMSG_ERR_BAD_COMMAND,   OPMSG_ERR_DOCUMENT_OVER_LIMIT, UINT32_MAX};
/* clang-format on */

/* ---------------------------------------------------------------------------
 * Naming things in messages
 * ------------------------------------------------------------------------- */

/* A sequence as the messages name it: "sequence "docs" at offset 94" for
 * the parser, "sequence 2 "docs"" for the encoder. */
static const char *
seq_name(char *out, const opmsg_seq_ref_t *seq)
{
   char name[OPMSG_PRINTABLE_SIZE];
   opmsg_printable(name, seq->id, seq->len);
   if (seq->is_index) {
      snprintf(out, SEQ_NAME_BUF, "sequence %zu \"%s\"", seq->n, name);
   } else {
      snprintf(out, SEQ_NAME_BUF, "sequence \"%s\" at offset %zu", name, seq->n);
   }
   return out;
}

/* Where a fault of a sequence is reported: its kind byte (the parser); the
 * encoder's has no place in a message yet. */
static size_t
seq_offset(const opmsg_seq_ref_t *seq)
{
   return seq->is_index ? 0 : seq->n;
}

/* What the caller's messages call the body. */
static const char *
body_noun(const opmsg_report_t *r)
{
   return r->side->body;
}

/* document.c names what is wrong with a document by the rule it breaks; a
 * fault it found in the body's bytes takes the side's code for those (the
 * encoder's: OPMSG_ERR_BAD_COMMAND, as build.h promises), in document.c's
 * words. Always false. */
static bool
body_fault(opmsg_report_t *r)
{
   return opmsg_report_as(r, r->side->body_fault);
}

/* A key or identifier, or a part of one: len bytes at s. */
typedef struct {
   const char *s;
   size_t len;
} name_t;

/* ---------------------------------------------------------------------------
 * Flags and the merged size
 * ------------------------------------------------------------------------- */

bool
opmsg_flags_fail(opmsg_report_t *r, uint32_t flags, uint32_t unknown)
{
   /* flagBits is at the same offset of every OP_MSG, read or written. */
   if (unknown & OPMSG_FLAG_REQUIRED_MASK) {
      return opmsg_report(r, OPMSG_ERR_REQUIRED_FLAGS, OPMSG_OFF_FLAG_BITS,
                          "flagBits 0x%08x at offset 16 set unknown required bits 0x%04x (bits 2-15 must be 0)", flags,
                          unknown & OPMSG_FLAG_REQUIRED_MASK);
   }
   return opmsg_report(
      r, OPMSG_ERR_INVALID_ARGUMENT, OPMSG_OFF_FLAG_BITS,
      "flagBits 0x%08x set optional bits 0x%08x opmsg does not define (a sender sets unused bits to 0)", flags,
      unknown);
}

bool
opmsg_merged_size_fail(opmsg_report_t *r, size_t size, bool exact)
{
   return opmsg_report(r, OPMSG_ERR_OUTPUT_TOO_LARGE, 0, "the merged document %s %zu bytes, above BSON's 2 GiB limit",
                       exact ? "would be" : "could be up to", size);
}

/* ---------------------------------------------------------------------------
 * Documents: the body and the sequence documents
 * ------------------------------------------------------------------------- */

bool
opmsg_rule_body_frame(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *body, size_t avail, uint32_t *len)
{
   /* The one frame check (opmsg_doc_frame_check()). Too large is
    * OPMSG_ERR_DOCUMENT_TOO_LARGE on both sides (build.h says so for the
    * command too): it is the limit, not the bytes; any other fault takes
    * the side's code for the body's bytes. */
   if (opmsg_doc_frame_named(r, body, avail, opmsg_body_limit(limits), body_noun(r), "maxBsonObjectSize + 16 KiB",
                             OPMSG_OK, len)) {
      return true;
   }
   return r->code == OPMSG_ERR_DOCUMENT_TOO_LARGE ? false : body_fault(r);
}

/* The top level of the body or of a sub-document of it (document.c). */
static bool
top_ok(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what, uint32_t *count)
{
   return opmsg_doc_check_top(r, doc, len, what, count) || body_fault(r);
}

bool
opmsg_rule_body_top(opmsg_report_t *r, const uint8_t *body, uint32_t len, uint32_t *count)
{
   return top_ok(r, body, len, body_noun(r), count);
}

uint32_t
opmsg_rule_seq_doc(opmsg_report_t *r, const opmsg_limits_t *limits, const opmsg_seq_ref_t *seq, size_t index,
                   const uint8_t *doc, size_t avail)
{
   /* Named here, on the way to an error, not for every document. */
   char name[OPMSG_PRINTABLE_SIZE];
   char what[OPMSG_PRINTABLE_SIZE + 64];
   snprintf(what, sizeof what, "document %zu of sequence \"%s\"", index, opmsg_printable(name, seq->id, seq->len));

   /* Above max_bson_size: the side's code (doc_over_limit). */
   uint32_t len = 0;
   if (!opmsg_doc_check_named(r, limits, doc, avail, limits->max_bson_size, what, "maxBsonObjectSize",
                              r->side->doc_over_limit, &len)) {
      return 0;
   }
   return len;
}

/* ---------------------------------------------------------------------------
 * Duplicate keys
 * ------------------------------------------------------------------------- */

bool
opmsg_duplicate_key_fail(opmsg_report_t *r, const char *key)
{
   char name[OPMSG_PRINTABLE_SIZE];
   /* The element starts at the type byte before its key. */
   size_t off = opmsg_report_at(r, key) - 1;
   return opmsg_report(r, r->side->duplicate_key, off, "%s key \"%s\" at offset %zu appears twice", body_noun(r),
                       opmsg_printable(name, key, strlen(key)), off);
}

/* Every key of the body into keys; with r, a second one is the error
 * reported there, without it only the first of each is kept. */
static bool
add_keys(opmsg_report_t *r, opmsg_keyset_t *keys, const uint8_t *body, uint32_t len)
{
   const uint8_t *p = body + 4;
   const uint8_t *end = body + len - 1;
   opmsg_element_t e;

   while (p < end) {
      if (!opmsg_next_element(&p, end, &e)) {
         return true; /* the caller checked the body: not reached */
      }
      uint32_t key_off = (uint32_t) ((const uint8_t *) e.key - keys->base);
      if (opmsg_keyset_find(keys, e.key, e.key_len, key_off, true) >= 0 && r) {
         return opmsg_duplicate_key_fail(r, e.key);
      }
   }
   return true;
}

bool
opmsg_rule_unique_keys(opmsg_report_t *r, opmsg_keyset_t *keys, const uint8_t *body, uint32_t len)
{
   return add_keys(r, keys, body, len);
}

void
opmsg_keys_add_all(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len)
{
   (void) add_keys(NULL, keys, body, len);
}

/* ---------------------------------------------------------------------------
 * Identifiers
 * ------------------------------------------------------------------------- */

bool
opmsg_rule_identifier(opmsg_report_t *r, const opmsg_seq_ref_t *seq, bool *dotted)
{
   const char *id = seq->id;
   size_t len = seq->len;
   char where[SEQ_NAME_BUF];
   size_t parts = 1;

   if (len == 0) {
      return opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, seq_offset(seq), "%s: the identifier is empty",
                          seq_name(where, seq));
   }
   /* The section's int32 size counts itself, the identifier and its NUL.
    * A parser never meets a longer one; the encoder is given any string. */
   if (len > (size_t) INT32_MAX - 5) {
      return opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, seq_offset(seq),
                          "%s: the identifier's %zu bytes do not fit a section", seq_name(where, seq), len);
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
            return opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, seq_offset(seq),
                                "%s: the identifier has an empty path component", seq_name(where, seq));
         }
         parts++;
      }
   }
   if ((high & 0x80u) && !bson_utf8_validate(id, len, false)) {
      return opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, seq_offset(seq), "%s: the identifier is not valid UTF-8",
                          seq_name(where, seq));
   }
   *dotted = parts > 1;
   /* The parser follows a path at most as deep as it validates documents. */
   if (parts > OPMSG_MAX_DEPTH) {
      return opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, seq_offset(seq),
                          "%s: the identifier has %zu path components, more than %d", seq_name(where, seq), parts,
                          OPMSG_MAX_DEPTH);
   }
   return true;
}

bool
opmsg_rule_identifier_pair(opmsg_report_t *r, const opmsg_seq_ref_t *a, const opmsg_seq_ref_t *b)
{
   size_t n = a->len < b->len ? a->len : b->len;
   char na[SEQ_NAME_BUF], nb[SEQ_NAME_BUF];

   if (memcmp(a->id, b->id, n) != 0) {
      return true;
   }
   if (a->len == b->len) {
      return opmsg_report(r, OPMSG_ERR_DUPLICATE_IDENTIFIER, seq_offset(b), "%s repeats the identifier of %s",
                          seq_name(nb, b), seq_name(na, a));
   }
   if ((a->len > b->len ? a->id[n] : b->id[n]) != '.') {
      return true; /* "x" and "xy" are different fields */
   }
   seq_name(na, a);
   seq_name(nb, b);
   return opmsg_report(r, OPMSG_ERR_DUPLICATE_IDENTIFIER, seq_offset(b), "%s lies inside %s", a->len > b->len ? na : nb,
                       a->len > b->len ? nb : na);
}

bool
opmsg_rule_dotted_count(opmsg_report_t *r, size_t n_seq, size_t n_dotted, size_t offset)
{
   if (n_dotted == 0 || n_seq <= OPMSG_MAX_DOTTED_SEQUENCES) {
      return true;
   }
   return opmsg_report(
      r, OPMSG_ERR_SEQUENCE_IDENTIFIER, offset,
      "%zu document sequences with a dotted identifier among them: more than the %d this implementation places", n_seq,
      OPMSG_MAX_DOTTED_SEQUENCES);
}

/* ---------------------------------------------------------------------------
 * Identifiers against the body
 * ------------------------------------------------------------------------- */

/* A path's component name[0..len) found twice in holder (at a and b): the
 * sequence seq would have two places. */
static OPMSG_COLD bool
path_twice_fail(opmsg_report_t *r, const opmsg_seq_ref_t *seq, const char *holder, name_t name, const uint8_t *a,
                const uint8_t *b)
{
   char where[SEQ_NAME_BUF], field[OPMSG_PRINTABLE_SIZE];
   return opmsg_report(r, OPMSG_ERR_IDENTIFIER_CLASH, seq_offset(seq),
                       "%s: the %s holds \"%s\" twice (at offsets %zu and %zu), so the path has no single place",
                       seq_name(where, seq), holder, opmsg_printable(field, name.s, name.len), opmsg_report_at(r, a),
                       opmsg_report_at(r, b));
}

/* The path of seq up to comp_end names a field the body lacks, so the
 * sequence has no place: the merge never creates a parent. */
static OPMSG_COLD bool
path_missing_fail(opmsg_report_t *r, const opmsg_seq_ref_t *seq, const char *comp_end)
{
   char where[SEQ_NAME_BUF], field[OPMSG_PRINTABLE_SIZE];
   return opmsg_report(r, OPMSG_ERR_IDENTIFIER_CLASH, seq_offset(seq),
                       "%s: the %s has no field \"%s\", so the path has no place (a parent is never created)",
                       seq_name(where, seq), body_noun(r),
                       opmsg_printable(field, seq->id, (size_t) (comp_end - seq->id)));
}

/* What opmsg_rule_path()'s steps share: the report, the body up to its
 * terminator, and the sequence whose path they follow. */
typedef struct {
   opmsg_report_t *r;
   const uint8_t *body;
   const uint8_t *body_end;
   const opmsg_seq_ref_t *seq;
} path_t;

/* The body's element called first, the path's first component, in *e: 1
 * found, 0 not there (no clash), -1 a fault (reported). With keys, looked
 * up there; without (the spec level), searched like any component. Where
 * nothing refused duplicate keys (the spec level), a dotted path's first
 * component may be in the body twice: looked for past its first place. */
static int
path_first(const path_t *w, opmsg_keyset_t *keys, name_t first, bool dotted, opmsg_element_t *e)
{
   const uint32_t len = (uint32_t) (w->body_end + 1 - w->body);
   if (keys) {
      /* The identifier's NUL follows it, in the message or the C string:
       * the hash may read up to there. */
      const uint8_t *id_end = (const uint8_t *) w->seq->id + w->seq->len;
      int64_t key_off =
         opmsg_keyset_find_hashed(keys, opmsg_key_hash(first.s, first.len, id_end + 1), first.s, first.len, 0, false);
      if (key_off < 0) {
         return 0; /* the merge adds the field (a dotted path: refused) */
      }
      /* The stored offset is the key's; its element starts one byte earlier. */
      const uint8_t *p = keys->base + key_off - 1;
      (void) opmsg_next_element(&p, w->body_end, e); /* checked */
   } else if (!opmsg_path_field(w->body, len, w->body + 4, first.s, first.len, e)) {
      return 0;
   }
   opmsg_element_t again;
   if (dotted && (!keys || !keys->unique) &&
       opmsg_path_field(w->body, len, e->value + e->value_len, first.s, first.len, &again)) {
      (void) path_twice_fail(w->r, w->seq, body_noun(w->r), first, e->start, again.start);
      return -1;
   }
   return 1;
}

/* One step down the path: e, the body's (or a sub-document's) field named
 * by the component before dot, must be a sound document that does not hold
 * the next component twice. Stores the next component's element in *e and
 * returns 1 to go on; 0 when the path ends there (*place set), -1 on a
 * fault (reported). */
static int
path_step(const path_t *w, opmsg_element_t *e, const char **dot, const uint8_t **place)
{
   opmsg_report_t *r = w->r;
   const opmsg_seq_ref_t *seq = w->seq;
   const char *id_end = seq->id + seq->len;
   char where[SEQ_NAME_BUF], field[OPMSG_PRINTABLE_SIZE], what[64];

   if (e->type != BSON_TYPE_DOCUMENT) {
      (void) opmsg_report(r, OPMSG_ERR_IDENTIFIER_CLASH, seq_offset(seq),
                          "%s: %s field \"%s\" is not a document, so the path cannot be added", seq_name(where, seq),
                          body_noun(r), opmsg_printable(field, seq->id, (size_t) (*dot - seq->id)));
      return -1;
   }
   /* The merge rewrites this sub-document field by field, so each of its
    * fields must be as sound as a top-level one, not only the one on the
    * path (or the merge could lose what lies behind a bad one). */
   if (OPMSG_UNLIKELY(!opmsg_doc_top_ok(e->value, e->value_len))) {
      /* Named on the way to the error only. */
      snprintf(what, sizeof what, "%s sub-document on a sequence's path", body_noun(r));
      (void) top_ok(r, e->value, e->value_len, what, NULL);
      return -1;
   }
   const char *comp = *dot + 1;
   *dot = memchr(comp, '.', (size_t) (id_end - comp));
   const name_t next = {comp, (size_t) ((*dot ? *dot : id_end) - comp)};
   const uint8_t *sub = e->value;
   uint32_t sub_len = e->value_len;
   if (!opmsg_path_field(sub, sub_len, sub + 4, next.s, next.len, e)) {
      /* The body holds the whole path: the sequence goes at the end of
       * sub. A component missing before the last is refused: the merge
       * never creates a parent. */
      if (*dot) {
         (void) path_missing_fail(r, seq, *dot);
         return -1;
      }
      *place = sub;
      return 0;
   }
   /* Only the body's top level must hold each key once; a sub-document
    * may hold one twice. On a path that would leave two places for the
    * sequence, and the merge one. */
   opmsg_element_t again;
   if (opmsg_path_field(sub, sub_len, e->value + e->value_len, next.s, next.len, &again)) {
      char holder[96];
      snprintf(holder, sizeof holder, "%s sub-document at offset %zu", body_noun(r), opmsg_report_at(r, sub));
      (void) path_twice_fail(r, seq, holder, next, e->start, again.start);
      return -1;
   }
   return 1;
}

bool
opmsg_rule_path(opmsg_report_t *r, opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, const opmsg_seq_ref_t *seq,
                opmsg_path_found_t *found)
{
   opmsg_path_found_t unused = {NULL};
   if (!found) {
      found = &unused;
   }
   found->place = NULL;
   const path_t w = {r, body, body + len - 1, seq};
   const char *dot = memchr(seq->id, '.', seq->len);
   const name_t first = {seq->id, (size_t) ((dot ? dot : seq->id + seq->len) - seq->id)};
   opmsg_element_t e = {0}; /* set on every path that reads it; gcc -O3 cannot tell */

   int step = path_first(&w, keys, first, dot != NULL, &e);
   if (step == 0 && dot) {
      return path_missing_fail(r, seq, dot);
   }
   if (step <= 0) {
      return step == 0;
   }
   /* Each step finds the next component; the last one found is a field
    * the body already has. */
   while (dot) {
      step = path_step(&w, &e, &dot, &found->place);
      if (step <= 0) {
         return step == 0;
      }
   }
   char where[SEQ_NAME_BUF];
   return opmsg_report(r, OPMSG_ERR_IDENTIFIER_CLASH, seq_offset(seq),
                       "%s: the %s already has that field (at offset %zu)", seq_name(where, seq), body_noun(r),
                       opmsg_report_at(r, e.start));
}
