/*
 * parse.c - OP_MSG: flag bits, checksum, sections, and the rules that tie
 * the body and the document sequences together.
 *
 * One pass over the sections checks every frame and records the body; the
 * cross-section rules (duplicate keys, unique identifiers, identifiers that
 * clash with body fields) then run on what it recorded. The rules
 * themselves live in rules.c, which the encoder applies too; this file
 * walks the wire and hands them what they check.
 *
 * Part of the OP_MSG core (opmsg-msg.h): it fills an opmsg_op_msg_t, never
 * the public opmsg_msg_t (msg.c does that from it).
 */
#include "opmsg-array.h"
#include "opmsg-msg.h"
#include "opmsg-rules.h"

/* The body's keys and the identifiers go into key sets (rules.c) that live
 * on the stack for up to SCAN_KEYS names, and the walk that checks the
 * body records its first SCAN_KEYS keys so they need no second walk. */
#define SCAN_KEYS 256
#define LOCAL_SLOTS OPMSG_KEYSET_LOCAL(SCAN_KEYS)
/* At the spec level, up to this many identifiers are looked for in the
 * body one by one, each with a walk of its top level: cheaper than hashing
 * every key for the few a message has, and bounded. */
#define FRAMES_LINEAR_IDS 4
/* A body alone with up to this many keys has them compared pairwise. */
#define PAIRWISE_KEYS 8

/* ---------------------------------------------------------------------------
 * Checksum
 * ------------------------------------------------------------------------- */

/* Sizes of the sections when every one is framed correctly, ignoring
 * content: used only to tell "checksum missing" from "checksum wrong". */
static bool
sections_fill_exactly(const uint8_t *p, const uint8_t *end)
{
   while (p < end) {
      size_t n = opmsg_section_frame(p, (size_t) (end - p));
      if (n == 0) {
         return false;
      }
      p += n;
   }
   return p == end;
}

static bool
check_checksum(opmsg_op_msg_t *m, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   const uint8_t *data = m->data;
   size_t len = m->len;

   /* Missing, the checksum is reported where it should have begun: the
    * message's end. */
   if (len < OPMSG_OP_MSG_MIN_LENGTH + OPMSG_CHECKSUM_SIZE) {
      return opmsg_report(
         r, OPMSG_ERR_CHECKSUM_MISSING, len,
         "checksumPresent is set but the %zu-byte message has no room for a section and 4 checksum bytes", len);
   }
   size_t crc_off = len - OPMSG_CHECKSUM_SIZE;
   m->checksum = opmsg_read_u32(data + crc_off);
   if (limits->flags & OPMSG_PARSE_SKIP_CHECKSUM) {
      return true;
   }
   uint32_t crc = opmsg_crc32c(0, data, crc_off);
   if (crc == m->checksum) {
      return true;
   }
   if (sections_fill_exactly(data + OPMSG_OFF_SECTIONS, data + len)) {
      return opmsg_report(r, OPMSG_ERR_CHECKSUM_MISSING, len,
                          "checksumPresent is set but the sections fill the message: the 4 checksum bytes are missing");
   }
   return opmsg_report(r, OPMSG_ERR_CHECKSUM_MISMATCH, crc_off,
                       "CRC-32C of bytes 0..%zu is 0x%08x, the checksum at offset %zu says 0x%08x", crc_off, crc,
                       crc_off, m->checksum);
}

/* ---------------------------------------------------------------------------
 * Sections
 * ------------------------------------------------------------------------- */

/* What one pass over the sections learns. */
typedef struct {
   uint32_t n_seq;
   uint32_t n_dotted;
   size_t seq_out; /* merged bytes the sequences add (top-level case) */
   uint32_t body_keys;
   /* The first sequence past OPMSG_MAX_DOTTED_SEQUENCES, where a message
    * with dotted identifiers breaks that bound. */
   size_t over_off;
   bool one_dot; /* the last sequence's identifier has one dot */
   /* At the spec level, the walk of the body's keys for the
    * first sequence's identifier, made while its documents are framed (see
    * scan_sequence()): clean when it reached the body's end over sound
    * elements without meeting the identifier, which is then known not to
    * name a body field; db is the body's first "$db" it passed, or NULL. */
   const char *walked_id;
   bool walked_clean;
   const uint8_t *walked_db;
   /* The body's first SCAN_KEYS keys, recorded by the walk that checks them
    * so the duplicate check needs no second walk. */
   const char *key[SCAN_KEYS];
   uint32_t key_len[SCAN_KEYS];
} scan_t;

/* The document at q of a sequence that the fast check refused: either it
 * runs past the section's end at sec_end, or it breaks the rule for
 * sequence documents (rules.c), which names it. Returns the length if it
 * breaks neither, else 0. Out of line, so that the loop over the documents
 * holds only the fast check. */
static OPMSG_COLD OPMSG_NOINLINE uint32_t
sequence_doc_fault(opmsg_report_t *r, const opmsg_limits_t *limits, const opmsg_seq_ref_t *seq, uint32_t count,
                   const uint8_t *q, const uint8_t *sec_end)
{
   size_t left = (size_t) (sec_end - q);
   /* A document that starts inside the section but ends outside it is a
    * framing error of the section, whatever lies beyond. The encoder frames
    * its sections itself and never meets this. */
   if (left < 4 || (opmsg_read_i32(q) >= 0 && (size_t) opmsg_read_i32(q) > left)) {
      char name[OPMSG_PRINTABLE_SIZE];
      size_t doff = opmsg_report_at(r, q);
      (void) opmsg_report(r, OPMSG_ERR_SEQUENCE_OVERRUN, doff,
                          "document %u of sequence \"%s\" at offset %zu runs past the section's end at offset %zu",
                          count, opmsg_printable(name, seq->id, seq->len), doff, opmsg_report_at(r, sec_end));
      return 0;
   }
   return opmsg_rule_seq_doc(r, limits, seq, count, q, left);
}

/* One step of scan_sequence()'s walk of the body's keys for the identifier
 * id: the element at *bp, up to the body's terminator at bend. Past it when
 * it is sound and not called id (noting the first "$db" in *db); otherwise
 * the walk ends there (*bp = bend) and is not clean: rules.c walks again
 * and says what it met. */
static OPMSG_ALWAYS_INLINE void
body_key_step(const uint8_t **bp, const uint8_t *bend, const char *id, size_t id_len, bool *clean, const uint8_t **db)
{
   const uint8_t *p = *bp;
   const uint8_t *k;
   const uint8_t *next = opmsg_skip_element(p, bend, &k);
   if (OPMSG_UNLIKELY(!next || ((size_t) (k - p - 1) == id_len && memcmp(p + 1, id, id_len) == 0))) {
      *clean = false;
      *bp = bend;
      return;
   }
   if (!*db && opmsg_is_db_key(p, k)) {
      *db = p;
   }
   *bp = next;
}

/* The frame of a kind-1 section starting after its kind byte at p (offset
 * off of the kind byte), up to end: returns its size, and its identifier, a
 * sound one, in *seq (whether it is dotted in *dotted); 0 on a fault. The
 * frame is opmsg_section_check()'s, said here in words, at the kind byte;
 * then the identifier's rules. */
static OPMSG_ALWAYS_INLINE int32_t
sequence_frame(const uint8_t *p, const uint8_t *end, size_t off, opmsg_seq_ref_t *seq, bool *dotted, opmsg_report_t *r)
{
   size_t avail = (size_t) (end - p);
   size_t size, at;
   opmsg_error_code_t code = opmsg_section_check(p - 1, avail + 1, &size, &at);
   if (code == OPMSG_ERR_SECTION_TRUNCATED) {
      (void) opmsg_report(r, code, off + at, "document sequence at offset %zu: %zu bytes left, its size needs 4", off,
                          avail);
      return 0;
   }
   if (code != OPMSG_OK) {
      int32_t bad = opmsg_read_i32(p);
      (void) opmsg_report(r, code, off + at, "document sequence at offset %zu: size %d is %s", off, bad,
                          bad < OPMSG_SEQ_MIN_SIZE ? "below the minimum of 5 (size, identifier and NUL)"
                                                   : "past the end of the sections");
      return 0;
   }
   int32_t n = (int32_t) (size - 1);
   const char *id = (const char *) p + 4;
   const uint8_t *nul = memchr(id, 0, (size_t) n - 4);
   if (!nul) {
      (void) opmsg_report(r, OPMSG_ERR_SEQUENCE_IDENTIFIER, off,
                          "document sequence at offset %zu: identifier has no NUL inside the section's %d bytes", off,
                          n);
      return 0;
   }
   const opmsg_seq_ref_t ref = {id, (size_t) ((const char *) nul - id), off, false};
   *seq = ref;
   return opmsg_rule_identifier(r, seq, dotted) ? n : 0;
}

/* What a sound sequence adds to the scan: its share of the merged size
 * (the array field: type byte, the last path component and NUL, and the
 * array document, opmsg_array_doc_size(), the one size formula the writer
 * keeps to), and its count. */
static void
scan_sequence_add(opmsg_op_msg_t *m, scan_t *scan, const opmsg_seq_ref_t *seq, bool dotted, size_t docs_len,
                  uint32_t count)
{
   const char *last = dotted ? strrchr(seq->id, '.') + 1 : seq->id;
   scan->seq_out += 1 + (seq->len - (size_t) (last - seq->id)) + 1 + opmsg_array_doc_size(docs_len, count);
   if (scan->n_seq == OPMSG_MAX_DOTTED_SEQUENCES) {
      scan->over_off = seq->n;
   }
   scan->n_seq++;
   scan->n_dotted += dotted;
   scan->one_dot = dotted && strchr(seq->id, '.') + 1 == last;
   m->seq_count = count;
   m->seq_off = (uint32_t) seq->n;
}

/* Checks one kind-1 section starting after its kind byte at p. Returns the
 * section's size (after the kind byte) in *size. One loop frames the
 * documents, its state in locals the compiler keeps in registers.
 *
 * At the spec level, for the first sequence after the body,
 * the same loop also looks for its identifier among the body's keys, an
 * element per document (bp). Both walks are chains of loads, each step's
 * place known only from the one before; side by side the processor runs
 * the two at once (seq: 148 body keys and 100 documents, the framing then
 * costs nothing). The verdict waits for check_identifiers(), so that the
 * faults are reported in the same order as without it; anything but a
 * clean walk is walked again there, by rules.c, which says what is wrong.
 *
 * At the top-level level the loop takes two documents at a time: walking
 * one document's elements is a chain of loads too, so two documents side
 * by side give the processor two chains. Any fault, or a single document
 * left, goes the one-at-a-time way, in order, so the error is the same.
 *
 * A sequence larger than a cache is prefetched at the spec and frames
 * levels, which read one or two lines of each document, a chain the
 * hardware prefetcher does not run ahead of. Measured: 35 MB of 350-byte
 * documents from 10.8 ms to 0.9 ms; on 1 MB, already in cache, the
 * requests only cost (7-10 ns a document), hence the threshold. */
static bool
scan_sequence(opmsg_op_msg_t *m, const opmsg_limits_t *limits, const uint8_t *p, const uint8_t *end, scan_t *scan,
              size_t *size, opmsg_report_t *r)
{
   opmsg_seq_ref_t seq;
   bool dotted;
   int32_t n = sequence_frame(p, end, (size_t) (p - m->data) - 1, &seq, &dotted, r);
   if (n == 0) {
      return false;
   }
   const char *id = seq.id;
   size_t id_len = seq.len;
   const uint8_t *q = (const uint8_t *) id + id_len + 1;
   const uint8_t *sec_end = p + n;
   size_t docs_len = (size_t) (sec_end - q);
   uint32_t count = 0;
   bool top = opmsg_checks_top(limits);
   opmsg_deep_check_fn deep = limits->deep;
   bool prefetch = !top && docs_len > OPMSG_PREFETCH_ABOVE;
   const uint8_t *bp = NULL, *bend = NULL, *bdb = NULL;
   bool bclean = false;
   if (!top && scan->n_seq == 0 && m->body && !dotted && !prefetch) {
      bp = m->body + 4;
      bend = m->body + m->body_len - 1;
      bclean = true;
   }
   while (q < sec_end) {
      if (bp < bend) {
         body_key_step(&bp, bend, id, id_len, &bclean, &bdb);
      }
      size_t f1, f2;
      if (top && !deep && opmsg_doc_frame_ok(q, (size_t) (sec_end - q), limits->max_bson_size, &f1) &&
          opmsg_doc_frame_ok(q + f1, (size_t) (sec_end - q - f1), limits->max_bson_size, &f2) &&
          OPMSG_LIKELY(opmsg_doc_top_ok2(q, f1, q + f1, f2))) {
         q += f1 + f2;
         count += 2;
         continue;
      }
      /* The common case inline: a sound frame and sound top-level elements.
       * Anything else takes sequence_doc_fault(), which says what is wrong. */
      size_t flen;
      if (prefetch) {
         opmsg_prefetch_ahead(q, opmsg_read_u32(q) & 0xffffu);
      }
      if (OPMSG_UNLIKELY(!opmsg_seq_doc_ok(q, (size_t) (sec_end - q), limits->max_bson_size, top, deep, &flen))) {
         flen = sequence_doc_fault(r, limits, &seq, count, q, sec_end);
         if (flen == 0) {
            return false;
         }
      }
      q += flen;
      count++;
   }
   if (bp) {
      /* What the documents left of the body. */
      while (bp < bend) {
         body_key_step(&bp, bend, id, id_len, &bclean, &bdb);
      }
      scan->walked_id = id;
      scan->walked_clean = bclean;
      scan->walked_db = bdb;
   }
   scan_sequence_add(m, scan, &seq, dotted, docs_len, count);
   *size = (size_t) n;
   return true;
}

/* Walks the framed body's top level: checks each element, records the
 * first SCAN_KEYS keys for the duplicate and clash checks, and notes where
 * "$db" is. */
static bool
walk_body(opmsg_op_msg_t *m, scan_t *scan, opmsg_report_t *r)
{
   const uint8_t *p = m->body;
   uint32_t len = m->body_len;
   const uint8_t *q = p + 4;
   const uint8_t *last = p + len - 1;
   uint32_t n = 0;
   while (q < last) {
      const uint8_t *k;
      const uint8_t *next = opmsg_skip_element(q, last, &k);
      if (!next) {
         /* Again through the checker that names the document. */
         return opmsg_rule_body_top(r, p, len, NULL);
      }
      const char *key = (const char *) q + 1;
      size_t key_len = (size_t) (k - q - 1);
      if (n < SCAN_KEYS) {
         scan->key[n] = key;
         scan->key_len[n] = (uint32_t) key_len;
      }
      /* Remembered so opmsg_op_msg_db() need not walk the body again. */
      if (!m->db && opmsg_is_db_key(q, k)) {
         m->db = (uint32_t) (q - m->data);
      }
      q = next;
      n++;
   }
   scan->body_keys = n;
   m->db_known = true;
   return true;
}

/* Checks the body's frame and, except at the spec level, its top-level
 * elements (walk_body()); at the spec level the walk waits until the
 * sections show whether there are sequences to place (parse_sections()). */
static bool
scan_body(opmsg_op_msg_t *m, const opmsg_limits_t *limits, const uint8_t *p, const uint8_t *end, scan_t *scan,
          opmsg_report_t *r)
{
   size_t off = (size_t) (p - m->data);
   if (m->body) {
      return opmsg_report(r, OPMSG_ERR_MULTIPLE_BODIES, off - 1,
                          "a second body (kind 0) at offset %zu; the first is at offset %zu", off - 1,
                          (size_t) (m->body - m->data) - 1);
   }
   size_t flen;
   uint32_t len;
   if (OPMSG_LIKELY(opmsg_doc_frame_ok(p, (size_t) (end - p), opmsg_body_limit(limits), &flen))) {
      len = (uint32_t) flen;
   } else if (!opmsg_rule_body_frame(r, limits, p, (size_t) (end - p), &len)) {
      return false;
   }
   m->body = p;
   m->body_len = len;
   if (!opmsg_checks_top(limits)) {
      return true;
   }
   /* Frame and top level are checked here, inline (the walk records the
    * keys); the nested levels, when asked, by the one document check. */
   return walk_body(m, scan, r) && (!opmsg_checks_deep(limits) || limits->deep(r, p, len, "body"));
}

static bool
scan_sections(opmsg_op_msg_t *m, const opmsg_limits_t *limits, scan_t *scan, opmsg_report_t *r)
{
   const uint8_t *p = opmsg_op_msg_sections(m);
   const uint8_t *end = m->data + m->sections_end;

   do {
      size_t off = (size_t) (p - m->data);
      size_t left = (size_t) (end - p);
      size_t size = 0;
      if (m->body && left < 6) {
         /* Too short to be any section: the smallest is a kind byte and an
          * empty document. */
         return opmsg_report(r, OPMSG_ERR_TRAILING_BYTES, off, "%zu stray bytes after the last section at offset %zu",
                             left, off);
      }
      switch (*p) {
      case OPMSG_SECTION_BODY:
         if (!scan_body(m, limits, p + 1, end, scan, r)) {
            return false;
         }
         p += 1 + m->body_len;
         break;
      case OPMSG_SECTION_SEQUENCE:
         if (!scan_sequence(m, limits, p + 1, end, scan, &size, r)) {
            return false;
         }
         p += 1 + size;
         break;
      default: {
         /* The kind's rule is the section frame's (opmsg_section_check()). */
         size_t sz, at;
         opmsg_error_code_t code = opmsg_section_check(p, left, &sz, &at);
         return opmsg_report(r, code, off + at,
                             "section kind %u at offset %zu is not 0 (body) or 1 (document sequence)", *p, off);
      }
      }
   } while (p < end);

   if (!m->body) {
      /* Reported where the sections begin: none of them is a body. */
      return opmsg_report(r, OPMSG_ERR_NO_BODY, OPMSG_OFF_SECTIONS,
                          "no body (kind 0 section) among the sections at offsets 20..%zu", (size_t) (end - m->data));
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * Cross-section rules: rules.c states them, for the encoder too; the
 * parser feeds them what its scan recorded.
 * ------------------------------------------------------------------------- */

/* No body key twice: the body's keys into a key set, refusing a second
 * one (unique), or only noting the first of each (the spec level). The
 * scan recorded the body's first SCAN_KEYS keys; the rule walks a larger
 * body again itself. */
static bool
check_body_keys(const opmsg_op_msg_t *m, const scan_t *scan, bool unique, opmsg_keyset_t *keys, opmsg_keyslot_t *local,
                opmsg_report_t *r)
{
   uint32_t nkeys = scan->body_keys;

   if (nkeys <= PAIRWISE_KEYS && m->n_sequences == 0 && unique) {
      /* A small body alone: compared pair by pair, which costs less than
       * hashing every key, and no set is needed afterwards. */
      for (uint32_t i = 1; i < nkeys; i++) {
         for (uint32_t j = 0; j < i; j++) {
            if (scan->key_len[i] == scan->key_len[j] && memcmp(scan->key[i], scan->key[j], scan->key_len[i]) == 0) {
               return opmsg_duplicate_key_fail(r, scan->key[i]);
            }
         }
      }
      return true;
   }
   opmsg_keyset_init(keys, m->data, m->data + m->len, nkeys, local, LOCAL_SLOTS);
   keys->unique = unique;
   if (nkeys > SCAN_KEYS && unique) {
      return opmsg_rule_unique_keys(r, keys, m->body, m->body_len);
   }
   if (nkeys > SCAN_KEYS) {
      opmsg_keys_add_all(keys, m->body, m->body_len);
      return true;
   }
   const uint8_t *limit = m->data + m->len;
   for (uint32_t i = 0; i < nkeys; i++) {
      const char *k = scan->key[i];
      uint32_t h = opmsg_key_hash(k, scan->key_len[i], limit);
      if (opmsg_keyset_find_hashed(keys, h, k, scan->key_len[i], (uint32_t) ((const uint8_t *) k - m->data), true) >=
             0 &&
          unique) {
         return opmsg_duplicate_key_fail(r, k);
      }
   }
   return true;
}

/* Every identifier once (through a key set), none naming a body field nor
 * a path the body cannot hold, and with dotted ones among them none a path
 * prefix of another: pairwise, as there are at most
 * OPMSG_MAX_DOTTED_SEQUENCES sequences then. *place is
 * where the last sequence goes when the body holds its whole dotted path
 * (opmsg_rule_path()). */
static bool
check_identifiers(opmsg_op_msg_t *m, opmsg_keyset_t *keys, const scan_t *scan, const uint8_t **place, opmsg_report_t *r)
{
   opmsg_keyslot_t local[LOCAL_SLOTS];
   opmsg_keyset_t ids;
   const uint8_t *p, *q;
   opmsg_section_t seq, other;
   opmsg_path_found_t found = {NULL};
   const uint8_t *db = NULL;
   bool top_checked = keys != NULL; /* the keys were taken by a checked walk */
   bool ok = false;

   /* One sequence (the common case) has no other to repeat. */
   uint32_t n_ids = scan->n_seq > 1 ? scan->n_seq : 0;
   if (!opmsg_rule_dotted_count(r, scan->n_seq, scan->n_dotted, scan->over_off)) {
      return false;
   }
   opmsg_keyset_init(&ids, m->data, m->data + m->len, n_ids, local, LOCAL_SLOTS);
   /* With dotted identifiers, the pairs first: "a" and "a.b" are one
    * identifier inside another whatever the body holds. */
   if (scan->n_dotted > 0) {
      p = opmsg_op_msg_sections(m);
      while (opmsg_op_msg_next_seq(m, &p, &other)) {
         opmsg_seq_ref_t a = {other.identifier, other.identifier_len, opmsg_op_msg_offset(m, &other), false};
         q = p; /* the sequences after this one */
         while (opmsg_op_msg_next_seq(m, &q, &seq)) {
            opmsg_seq_ref_t b = {seq.identifier, seq.identifier_len, opmsg_op_msg_offset(m, &seq), false};
            if (!opmsg_rule_identifier_pair(r, &a, &b)) {
               goto done;
            }
         }
      }
   }
   p = opmsg_op_msg_sections(m);
   while (opmsg_op_msg_next_seq(m, &p, &seq)) {
      uint32_t id_off = (uint32_t) (seq.identifier - (const char *) m->data);
      opmsg_seq_ref_t b = {seq.identifier, seq.identifier_len, opmsg_op_msg_offset(m, &seq), false};
      int64_t first = n_ids ? opmsg_keyset_find(&ids, seq.identifier, seq.identifier_len, id_off, true) : -1;
      if (first >= 0) {
         /* An identifier lies OPMSG_SECTION_OFF_IDENTIFIER bytes after its
          * section's kind byte. */
         opmsg_seq_ref_t a = {(const char *) m->data + first, seq.identifier_len,
                              (size_t) first - OPMSG_SECTION_OFF_IDENTIFIER, false};
         if (!opmsg_rule_identifier_pair(r, &a, &b)) {
            goto done;
         }
      }
      if (!keys && seq.identifier == scan->walked_id && scan->walked_clean) {
         /* Walked while the documents were framed: not a body field. */
         db = scan->walked_db;
         continue;
      }
      /* The paths read the body's top level: checked once, when the
       * first of them needs it. */
      if (!top_checked) {
         if (!opmsg_rule_body_top(r, m->body, m->body_len, NULL)) {
            goto done;
         }
         top_checked = true;
      }
      if (!opmsg_rule_path(r, keys, m->body, m->body_len, &b, &found)) {
         goto done;
      }
   }
   if (db) {
      /* That walk passed "$db": noted, so opmsg_op_msg_db() need not walk
       * the body again. */
      m->db = (uint32_t) (db - m->data);
      m->db_known = true;
   }
   *place = found.place;
   ok = true;
done:
   opmsg_keyset_destroy(&ids);
   return ok;
}

/* OPMSG_PARSE_REQUEST: a command must name its database. */
static bool
check_db(const opmsg_op_msg_t *m, opmsg_report_t *r)
{
   if (!opmsg_op_msg_db(m, NULL)) {
      size_t off = (size_t) (m->body - m->data);
      return opmsg_report(r, OPMSG_ERR_MISSING_DB, off,
                          "the body at offset %zu has no \"$db\" string: a command must name its database", off);
   }
   return true;
}

/* The end of every way that finds a body alone at the spec level: its
 * merge is the body, and a request must still name its database. */
static bool
alone_done(opmsg_op_msg_t *m, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   m->merged_size = m->body_len;
   return (limits->flags & OPMSG_PARSE_REQUEST) == 0 || check_db(m, r);
}

/* The sections in full: the scan, then the rules across sections. Its
 * frame holds the key tables (some 8 KB of stack), which a body alone at
 * the spec level never needs: opmsg_op_msg_parse() calls it otherwise. */
static OPMSG_NOINLINE bool
parse_sections(opmsg_op_msg_t *m, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   scan_t scan;
   opmsg_keyslot_t local[LOCAL_SLOTS];
   opmsg_keyset_t keys;
   size_t merged;
   bool ok;

   scan.n_seq = scan.n_dotted = scan.body_keys = 0;
   scan.one_dot = false;
   scan.seq_out = scan.over_off = 0;
   scan.walked_id = NULL;
   scan.walked_clean = false;
   scan.walked_db = NULL;
   if (!scan_sections(m, limits, &scan, r)) {
      return false;
   }
   m->n_sequences = scan.n_seq;
   m->dotted = scan.n_dotted > 0;

   opmsg_keyset_t *body_keys = &keys;
   keys.slots = keys.local = NULL;
   if (!opmsg_checks_top(limits)) {
      /* The spec level: a body alone is only framed. With sequences, the
       * body's top level is walked, and checked, to find the identifiers'
       * fields; duplicate keys are not looked for. A few identifiers are
       * looked for one by one in the walk (rules.c); many go through a key
       * set of the body's keys, as at the other levels. */
      if (scan.n_seq == 0) {
         return alone_done(m, limits, r);
      }
      if (scan.n_seq <= FRAMES_LINEAR_IDS) {
         body_keys = NULL;
      } else if (!walk_body(m, &scan, r) || !check_body_keys(m, &scan, false, &keys, local, r)) {
         opmsg_keyset_destroy(&keys);
         return false;
      }
   } else if (!check_body_keys(m, &scan, true, &keys, local, r)) {
      opmsg_keyset_destroy(&keys);
      return false;
   }
   const uint8_t *place = NULL;
   ok = scan.n_seq == 0 || check_identifiers(m, body_keys, &scan, &place, r);
   opmsg_keyset_destroy(&keys);
   if (!ok || ((limits->flags & OPMSG_PARSE_REQUEST) && !check_db(m, r))) {
      return false;
   }

   if (scan.n_seq == 1 && scan.one_dot && place) {
      /* A cursor reply's batch: one sequence at a path of one dot the body
       * holds ("cursor.firstBatch" in {cursor: {id, ns}}). The merge
       * splices it in where rules.c found its place, growing only the
       * body and that sub-document; a deeper path would need every
       * sub-document between them, which opmsg_op_msg_t has no room to
       * keep, so it goes through the merge's walk. */
      m->splice = (uint32_t) (place - m->data);
   }
   /* The body and the arrays: a parent is never created (rules.c), so
    * nothing else is added. */
   merged = m->body_len + scan.seq_out;
   if (!opmsg_rule_merged_size(r, merged, true)) {
      return false;
   }
   m->merged_size = (uint32_t) merged;
   return true;
}

bool
opmsg_op_msg_parse(opmsg_op_msg_t *m, const uint8_t *data, size_t len, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   /* The caller checked the header; a core consumer that did not gets the
    * same answer as opmsg_parse(), at messageLength. */
   if (len < OPMSG_OP_MSG_MIN_LENGTH || len > (size_t) INT32_MAX) {
      return opmsg_report(r, len < OPMSG_OP_MSG_MIN_LENGTH ? OPMSG_ERR_LENGTH_TOO_SMALL : OPMSG_ERR_LENGTH_TOO_LARGE, 0,
                          "an OP_MSG of %zu bytes: it takes %d to %d", len, OPMSG_OP_MSG_MIN_LENGTH, INT32_MAX);
   }
   /* A body alone at the spec level (most replies a driver
    * reads): its frame, filling the sections, is all there is to check.
    * Anything else, or a fault, goes the whole way, which says what is
    * wrong. */
   if (!opmsg_checks_top(limits) && opmsg_op_msg_alone(m, data, len, opmsg_body_limit(limits))) {
      return alone_done(m, limits, r);
   }
   /* Every field not set here is 0, false or NULL until the parse says
    * otherwise. */
   const opmsg_op_msg_t start = {.data = data,
                                 .len = (uint32_t) len,
                                 .flags = opmsg_read_u32(data + OPMSG_OFF_FLAG_BITS),
                                 .sections_end = (uint32_t) len};
   *m = start;
   if (!opmsg_rule_flags(r, m->flags)) {
      return false;
   }
   if (m->flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      if (!check_checksum(m, limits, r)) {
         return false;
      }
      m->sections_end -= OPMSG_CHECKSUM_SIZE;
   }
   /* The same with a checksum, now checked: the one body-alone check, on
    * the sections before it. */
   const uint8_t *p = opmsg_op_msg_sections(m);
   uint32_t body_len;
   if (!opmsg_checks_top(limits) &&
       opmsg_op_msg_body_fills(p, m->sections_end - OPMSG_OFF_SECTIONS, opmsg_body_limit(limits), &body_len)) {
      m->body = p + 1;
      m->body_len = body_len;
      return alone_done(m, limits, r);
   }
   return parse_sections(m, limits, r);
}
