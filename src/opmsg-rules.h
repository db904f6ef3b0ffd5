/*
 * opmsg-rules.h - the wire rules of OP_MSG that the parser and the encoder
 * both apply (rules.c).
 *
 * Not installed.
 */
#ifndef OPMSG_RULES_H
#define OPMSG_RULES_H

#include "opmsg-document.h"
#include "opmsg-keyset.h"

/* ---------------------------------------------------------------------------
 * The wire rules both sides apply (rules.c)
 *
 * The parser checks what it reads and the encoder what it is asked to
 * write, with these same functions and the same limits, so that the encoder
 * never writes what the parser rejects. What is hot is inline here; the
 * rest, and every error report, is in rules.c.
 *
 * The two sides name things differently in messages (the parser by offset
 * in the message, the encoder by the index the caller gave a sequence) and,
 * where build.h promises it, report a fault of the body under another code:
 * to the encoder's caller the body is the command it handed in, and any
 * fault in that is OPMSG_ERR_BAD_COMMAND. The rules that check the body take
 * this as body_code: OPMSG_OK reports the code of the rule broken (the
 * parser), OPMSG_ERR_BAD_COMMAND reports that (the encoder).
 * ------------------------------------------------------------------------- */

/* Where a sequence is, for messages: the offset of its section's kind byte
 * in the message (the parser), or the index the caller gave it (the
 * encoder, whose message is not written yet). */
typedef struct {
   size_t n;
   bool is_index;
} opmsg_seq_at_t;

static inline opmsg_seq_at_t
opmsg_seq_at_offset(size_t offset)
{
   opmsg_seq_at_t at = {offset, false};
   return at;
}

static inline opmsg_seq_at_t
opmsg_seq_at_index(size_t index)
{
   opmsg_seq_at_t at = {index, true};
   return at;
}

/* The flag bits opmsg knows: two required ones, one optional. */
#define OPMSG_FLAGS_KNOWN_REQUIRED (OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME)
#define OPMSG_FLAGS_KNOWN (OPMSG_FLAGS_KNOWN_REQUIRED | OPMSG_FLAG_EXHAUST_ALLOWED)

/* The report of opmsg_rule_flags(). */
bool opmsg_flags_fail(uint32_t flags, uint32_t unknown, bson_error_t *error) OPMSG_COLD;

/* flagBits: a required bit (0-15) that opmsg does not know fails the
 * message, as the spec has a receiver refuse it. An unknown optional bit
 * (16-31) is ignored on receipt but never sent, since a sender sets the bits
 * it does not use to 0: when sending (the encoder) it is the caller's
 * mistake, OPMSG_ERR_INVALID_ARGUMENT. */
static inline bool
opmsg_rule_flags(uint32_t flags, bool sending, bson_error_t *error)
{
   uint32_t unknown = flags & ~(uint32_t) OPMSG_FLAGS_KNOWN;
   if (!sending) {
      unknown &= OPMSG_FLAG_REQUIRED_MASK;
   }
   return OPMSG_LIKELY(unknown == 0) || opmsg_flags_fail(flags, unknown, error);
}

/* A sequence document: framed within max_bson; its top-level elements sound
 * when top (the encoder's caller may vouch for them, trust_documents); every
 * nested level too when deep (OPMSG_PARSE_FULL_VALIDATE). True with its
 * length in *len; on false opmsg_rule_seq_doc() says why. The hot loop of a
 * sequence. */
static OPMSG_ALWAYS_INLINE bool
opmsg_seq_doc_ok(const uint8_t *doc, size_t avail, size_t max_bson, bool top, bool deep, size_t *len)
{
   return OPMSG_LIKELY(opmsg_doc_frame_ok(doc, avail, max_bson, len) && (!top || opmsg_doc_top_ok(doc, *len)) &&
                       (!deep || opmsg_doc_validate_deep(doc, (uint32_t) *len, 0, "", NULL)));
}

/* The checks of opmsg_seq_doc_ok() again, for a document it refused:
 * stores the length, or names the rule broken, calling the document
 * "document <index> of sequence "<id>"" at offset off (the parser's: in the
 * message; the encoder's: among the sequence's documents). too_large is the
 * code of a framed document above max_bson: the parser's
 * OPMSG_ERR_DOCUMENT_TOO_LARGE (a received document breaks the limit), the
 * encoder's OPMSG_ERR_DOCUMENT_OVER_LIMIT (build.h: one document the
 * server's limits will not take, as the splitter reports it too). */
bool opmsg_rule_seq_doc(const uint8_t *doc, size_t avail, size_t max_bson, bool top, bool deep, size_t off,
                        const char *id, size_t id_len, size_t index, opmsg_error_code_t too_large, uint32_t *len,
                        bson_error_t *error) OPMSG_COLD;

/* The body's frame within opmsg_body_limit(), the body at offset off of the
 * message: stores its length, or names the rule broken. The parser's fast
 * form is opmsg_doc_frame_ok(). */
bool opmsg_rule_body_frame(const uint8_t *body, size_t avail, const opmsg_limits_t *limits, size_t off,
                           opmsg_error_code_t body_code, uint32_t *len, bson_error_t *error);

/* The body's top-level elements (document.c's walk of a framed body);
 * stores how many there are in *count when count is not NULL. */
bool opmsg_rule_body_top(const uint8_t *body, uint32_t len, size_t off, opmsg_error_code_t body_code, uint32_t *count,
                         bson_error_t *error);
/* No top-level key twice in a body: which value would the server take?
 * Adds each key of the checked body (len bytes at offset off of the
 * message, keys->base at or before it) to keys, empty and sized for them.
 * OPMSG_ERR_DUPLICATE_KEY. */
bool opmsg_rule_unique_keys(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, size_t off,
                            opmsg_error_code_t body_code, bson_error_t *error);
/* The body's keys into keys, the first of each name only (the frames
 * level, which lets a key twice through); the body's top level is checked. */
void opmsg_keys_add_all(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len);
/* The report of that rule, for a caller that adds the keys itself (the
 * parser hashes them during its walk): key is the second one, off the
 * offset of its element. */
bool opmsg_duplicate_key_fail(const char *key, size_t off, opmsg_error_code_t body_code,
                              bson_error_t *error) OPMSG_COLD;

/* An identifier (len bytes, no NUL among them): not empty, short enough
 * for a section's int32 size, UTF-8, and when dotted a path of at most
 * OPMSG_MAX_DEPTH components, none empty. Stores in *dotted whether it has
 * a dot. OPMSG_ERR_SEQUENCE_IDENTIFIER. */
bool opmsg_rule_identifier(const char *id, size_t len, opmsg_seq_at_t at, bool *dotted, bson_error_t *error);

/* Two sequences fill one field of the merged document when their
 * identifiers are equal, or when one is a path prefix of the other ("a"
 * and "a.b": one would be both an array and a document). True when a (the
 * earlier) and b do not; else OPMSG_ERR_DUPLICATE_IDENTIFIER. */
bool opmsg_rule_identifier_pair(const char *a, size_t a_len, opmsg_seq_at_t a_at, const char *b, size_t b_len,
                                opmsg_seq_at_t b_at, bson_error_t *error);

/* A message with a dotted identifier may hold at most this many sequences:
 * placing paths compares sequences pairwise. mongod accepts 2. */
#define OPMSG_MAX_DOTTED_SEQUENCES 64

/* With a dotted identifier among them, at most OPMSG_MAX_DOTTED_SEQUENCES
 * sequences (their paths are placed pairwise).
 * OPMSG_ERR_SEQUENCE_IDENTIFIER. */
bool opmsg_rule_dotted_count(size_t n_seq, size_t n_dotted, bson_error_t *error);

/* An identifier must not name a body field: "a" clashes with a body key
 * "a", "a.b" with {a: {b: ...}} and with {a: 5} (no document to put "b"
 * in); {a: {c: 1}} with "a.b" is fine, the merge adds "b". Every
 * sub-document the path enters is checked like a body, since the merge
 * rewrites it field by field. keys holds the body's keys
 * (opmsg_rule_unique_keys()); the body is len bytes at offset off. A
 * sub-document on the path must not hold the path's next component twice
 * (the sequence would have two places). OPMSG_ERR_IDENTIFIER_CLASH.
 * When place is not NULL it receives, for a dotted identifier whose path
 * the body holds whole, the sub-document the sequence goes at the end of;
 * NULL when the merge creates part of the path, or for a plain one.
 * Without keys the body's top level is walked here; db (if not NULL)
 * receives the first "$db" string element the walk passes, if any. */
bool opmsg_rule_path(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len, size_t off, const char *id, size_t id_len,
                     opmsg_seq_at_t at, opmsg_error_code_t body_code, const uint8_t **place, const uint8_t **db,
                     bson_error_t *error);

/* The report of opmsg_rule_merged_size(). */
bool opmsg_merged_size_fail(size_t size, bool exact, bson_error_t *error) OPMSG_COLD;

/* The merged document is one BSON document, so at most INT32_MAX bytes.
 * The parser knows its exact size; the encoder, which does not walk the
 * documents it is told to trust, only a bound (exact false), and refuses
 * what could exceed it. OPMSG_ERR_OUTPUT_TOO_LARGE. */
static inline bool
opmsg_rule_merged_size(size_t size, bool exact, bson_error_t *error)
{
   return OPMSG_LIKELY(size <= (size_t) INT32_MAX) || opmsg_merged_size_fail(size, exact, error);
}

#endif /* OPMSG_RULES_H */
