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
 * Every rule reports what broke and where into the caller's report context
 * (opmsg-common.h), whose side (opmsg_side_t) gives the codes and nouns
 * where the parser and the encoder part ways (build.h promises other codes
 * for the encoder's command). A sequence is named by its offset (the
 * parser) or by the index the caller gave it (the encoder): see
 * opmsg_seq_ref_t.
 * ------------------------------------------------------------------------- */

/* A sequence as the rules name it: its identifier (len bytes, no NUL among
 * them) and where it is, n: the offset of its section's kind byte in the
 * message (the parser, which reports its faults there), or the index the
 * caller gave it (is_index: the encoder, whose message is not written yet). */
typedef struct {
   const char *id;
   size_t len;
   size_t n;
   bool is_index;
} opmsg_seq_ref_t;

/* The flag bits opmsg knows: two required ones, two optional. */
#define OPMSG_FLAGS_KNOWN_REQUIRED (OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME)
#define OPMSG_FLAGS_KNOWN \
   (OPMSG_FLAGS_KNOWN_REQUIRED | OPMSG_FLAG_EXHAUST_ALLOWED | OPMSG_FLAG_DOCUMENT_SEQUENCES_ALLOWED)

/* The report of opmsg_rule_flags(), at flagBits. */
bool opmsg_flags_fail(opmsg_report_t *r, uint32_t flags, uint32_t unknown) OPMSG_COLD;

/* flagBits: a required bit (0-15) that opmsg does not know fails the
 * message, as the spec has a receiver refuse it. An unknown optional bit
 * (16-31) is ignored on receipt but never sent, since a sender sets the bits
 * it does not use to 0: when sending (the encoder, whose side refuses every
 * unknown bit) it is the caller's mistake, OPMSG_ERR_INVALID_ARGUMENT. */
static inline bool
opmsg_rule_flags(opmsg_report_t *r, uint32_t flags)
{
   uint32_t unknown = flags & ~(uint32_t) OPMSG_FLAGS_KNOWN & r->side->flags_refused;
   return OPMSG_LIKELY(unknown == 0) || opmsg_flags_fail(r, flags, unknown);
}

/* A sequence document: framed within max_bson; its top-level elements sound
 * when top (the encoder's caller may vouch for them, trust_documents); every
 * nested level too through deep (the limits' at the full level, else NULL). True with its length in
 * *len; on false opmsg_rule_seq_doc() says why. The hot loop of a
 * sequence. */
static OPMSG_ALWAYS_INLINE bool
opmsg_seq_doc_ok(const uint8_t *doc, size_t avail, size_t max_bson, bool top, opmsg_deep_check_fn deep, size_t *len)
{
   /* The full level is the top level and more: deep is only ever set with
    * top, so the spec level tests one flag a document. */
   return OPMSG_LIKELY(opmsg_doc_frame_ok(doc, avail, max_bson, len) &&
                       (!top || (opmsg_doc_top_ok(doc, *len) && (!deep || opmsg_deep_ok(deep, doc, *len)))));
}

/* The checks of opmsg_seq_doc_ok() again, at the limits' level, for a
 * document it refused: returns its length, or 0 with the rule broken
 * named, calling the document "document <index> of sequence "<id>"". A
 * framed document above max_bson_size takes the side's doc_over_limit:
 * OPMSG_ERR_DOCUMENT_TOO_LARGE to the parser (a received document breaks
 * the limit), OPMSG_ERR_DOCUMENT_OVER_LIMIT to the encoder (build.h: one
 * document the server's limits will not take, as the splitter reports it
 * too). */
uint32_t opmsg_rule_seq_doc(opmsg_report_t *r, const opmsg_limits_t *limits, const opmsg_seq_ref_t *seq, size_t index,
                            const uint8_t *doc, size_t avail) OPMSG_COLD;

/* The body's frame within opmsg_body_limit(): stores its length, or names
 * the rule broken. The parser's fast form is opmsg_doc_frame_ok(). */
bool opmsg_rule_body_frame(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *body, size_t avail,
                           uint32_t *len);

/* The body's top-level elements (document.c's walk of a framed body);
 * stores how many there are in *count when count is not NULL. */
bool opmsg_rule_body_top(opmsg_report_t *r, const uint8_t *body, uint32_t len, uint32_t *count);

/* No top-level key twice in a body: which value would the server take?
 * Adds each key of the checked body (len bytes, keys->base at or before
 * it) to keys, empty and sized for them. OPMSG_ERR_DUPLICATE_KEY. */
bool opmsg_rule_unique_keys(opmsg_report_t *r, opmsg_keyset_t *keys, const uint8_t *body, uint32_t len);
/* The body's keys into keys, the first of each name only (the frames
 * level, which lets a key twice through); the body's top level is checked. */
void opmsg_keys_add_all(opmsg_keyset_t *keys, const uint8_t *body, uint32_t len);
/* The report of that rule, for a caller that adds the keys itself (the
 * parser hashes them during its walk): key is the second one, reported at
 * its element's type byte. */
bool opmsg_duplicate_key_fail(opmsg_report_t *r, const char *key) OPMSG_COLD;

/* An identifier: not empty, short enough for a section's int32 size,
 * UTF-8, and when dotted a path of at most OPMSG_MAX_DEPTH components, none
 * empty. Stores in *dotted whether it has a dot.
 * OPMSG_ERR_SEQUENCE_IDENTIFIER. */
bool opmsg_rule_identifier(opmsg_report_t *r, const opmsg_seq_ref_t *seq, bool *dotted);

/* Two sequences fill one field of the merged document when their
 * identifiers are equal, or when one is a path prefix of the other ("a"
 * and "a.b": one would be both an array and a document). True when a (the
 * earlier) and b do not; else OPMSG_ERR_DUPLICATE_IDENTIFIER, reported at
 * b. */
bool opmsg_rule_identifier_pair(opmsg_report_t *r, const opmsg_seq_ref_t *a, const opmsg_seq_ref_t *b);

/* A message with a dotted identifier may hold at most this many sequences:
 * placing paths compares sequences pairwise. mongod accepts 2. */
#define OPMSG_MAX_DOTTED_SEQUENCES 64

/* With a dotted identifier among them, at most OPMSG_MAX_DOTTED_SEQUENCES
 * sequences (their paths are placed pairwise).
 * OPMSG_ERR_SEQUENCE_IDENTIFIER, reported at offset (the parser: the first
 * sequence past the bound). */
bool opmsg_rule_dotted_count(opmsg_report_t *r, size_t n_seq, size_t n_dotted, size_t offset);

/* An identifier must not name a body field: "a" clashes with a body key
 * "a", "a.b" with {a: {b: ...}} and with {a: 5} (no document to put "b"
 * in); {a: {c: 1}} with "a.b" is fine, the merge adds "b". Every
 * sub-document the path enters is checked like a body, since the merge
 * rewrites it field by field. keys holds the body's keys
 * (opmsg_rule_unique_keys()); the body is len bytes. A sub-document on the
 * path must not hold the path's next component twice (the sequence would
 * have two places), and must hold it unless it is the last: a parent is
 * never created. OPMSG_ERR_IDENTIFIER_CLASH, reported at the sequence.
 * When found is not NULL, found->place receives, for a dotted identifier,
 * the sub-document the sequence goes at the end of; NULL for a plain one.
 * The body's top level must be checked before (opmsg_rule_body_top(); the
 * keys are taken by a checked walk). */
typedef struct {
   const uint8_t *place;
} opmsg_path_found_t;
bool opmsg_rule_path(opmsg_report_t *r, opmsg_keyset_t *keys, const uint8_t *body, uint32_t len,
                     const opmsg_seq_ref_t *seq, opmsg_path_found_t *found);

/* The report of opmsg_rule_merged_size(), at offset 0: the message as a
 * whole. */
bool opmsg_merged_size_fail(opmsg_report_t *r, size_t size, bool exact) OPMSG_COLD;

/* The merged document is one BSON document, so at most INT32_MAX bytes.
 * The parser knows its exact size; the encoder, which does not walk the
 * documents it is told to trust, only a bound (exact false), and refuses
 * what could exceed it. OPMSG_ERR_OUTPUT_TOO_LARGE. */
static inline bool
opmsg_rule_merged_size(opmsg_report_t *r, size_t size, bool exact)
{
   return OPMSG_LIKELY(size <= (size_t) INT32_MAX) || opmsg_merged_size_fail(r, size, exact);
}

#endif /* OPMSG_RULES_H */
