/*
 * parse.c - OP_MSG: flag bits, checksum, sections, and the rules that tie
 * the body and the document sequences together.
 *
 * One pass over the sections checks every frame and records the body; the
 * cross-section rules (duplicate keys, unique identifiers, identifiers that
 * clash with body fields) then use a small hash set of names that lives on
 * the stack for ordinary messages.
 */
#include "opmsg-private.h"

#include <stdio.h>

/* ---------------------------------------------------------------------------
 * A set of names: open addressing over uint32 offsets into one buffer.
 * Names are NUL-terminated in the buffer, or end at a '.' for identifier
 * components, so an entry is (offset) and its length is found again by the
 * comparison. Up to 255 names need no allocation; beyond that a table of
 * 8 bytes per 3/4 name is borrowed from the heap (a name takes at least
 * 3 bytes of the message, so that is under 4 bytes per message byte).
 * ------------------------------------------------------------------------- */

#define NAMESET_LOCAL 512

/* A slot: the name's offset + 1 (0 = empty) and its hash, compared first so
 * that most probes that meet another name need not read it. */
typedef struct {
   uint32_t offset;
   uint32_t hash;
} nameslot_t;

typedef struct {
   const uint8_t *base;
   const uint8_t *limit; /* end of the bytes names may be read from */
   nameslot_t *slots;
   size_t nslots;
   nameslot_t local[NAMESET_LOCAL];
} nameset_t;

static bool
nameset_init(nameset_t *s, const uint8_t *base, const uint8_t *limit, size_t n,
             bson_error_t *error)
{
   s->base = base;
   s->limit = limit;
   /* Half full on the stack, where space is free and probes are short;
    * three quarters full on the heap, where the bound matters more. */
   s->nslots = 2 * n + 1;
   if (s->nslots <= NAMESET_LOCAL) {
      s->slots = s->local;
   } else {
      s->nslots = n + n / 3 + 1;
      s->slots = bson_malloc(s->nslots * sizeof(nameslot_t));
      if (!s->slots) {
         return opmsg_fail(error, OPMSG_ERR_NO_MEMORY,
                           "no memory for the name table of %zu names", n);
      }
   }
   memset(s->slots, 0, s->nslots * sizeof(nameslot_t));
   return true;
}

static void
nameset_destroy(nameset_t *s)
{
   if (s->slots != s->local) {
      bson_free(s->slots);
   }
}

/* A multiply-and-fold hash of the first and last 8 bytes and the length:
 * a few cycles per name, which matters on bodies with hundreds of keys. */
static OPMSG_ALWAYS_INLINE uint32_t
name_hash(const char *name, size_t len, const uint8_t *limit)
{
   uint64_t a = 0, b = 0;
   if (len >= 8) {
      memcpy(&a, name, 8);
      memcpy(&b, name + len - 8, 8);
   } else if ((const uint8_t *) name + 8 <= limit) {
      /* One load, then keep only the name's bytes (little-endian). */
      memcpy(&a, name, 8);
      a &= (1ull << (8 * len)) - 1;
   } else {
      memcpy(&a, name, len);
   }
   uint64_t h = (a ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
   h ^= (b + len) * 0x94D049BB133111EBull;
   h ^= h >> 31;
   return (uint32_t) (h ^ (h >> 32));
}

/* Stored names are NUL-terminated in the message; the name looked up may be
 * a component of a dotted identifier, which is not. */
static inline bool
name_equal(const char *stored, const char *name, size_t len)
{
   /* Cheap rejections first: most probes meet a different name. */
   return stored[len] == '\0' && stored[0] == name[0] &&
          memcmp(stored, name, len) == 0;
}

/* Finds name in the set; if absent and add is true, adds it (at offset).
 * Returns the stored offset of an equal name, or -1. */
static OPMSG_ALWAYS_INLINE int64_t
nameset_find_hashed(nameset_t *s, uint32_t h, const char *name, size_t len,
                    uint32_t offset, bool add)
{
   size_t i = (size_t) (((uint64_t) h * s->nslots) >> 32);
   for (;;) {
      nameslot_t *slot = &s->slots[i];
      if (slot->offset == 0) {
         if (add) {
            slot->offset = offset + 1;
            slot->hash = h;
         }
         return -1;
      }
      if (slot->hash == h &&
          name_equal((const char *) s->base + slot->offset - 1, name, len)) {
         return (int64_t) slot->offset - 1;
      }
      if (++i == s->nslots) {
         i = 0;
      }
   }
}

static OPMSG_ALWAYS_INLINE int64_t
nameset_find(nameset_t *s, const char *name, size_t len, uint32_t offset, bool add)
{
   return nameset_find_hashed(s, name_hash(name, len, s->limit), name, len, offset, add);
}

/* ---------------------------------------------------------------------------
 * Flags and checksum
 * ------------------------------------------------------------------------- */

static bool
check_flags(uint32_t flags, bson_error_t *error)
{
   uint32_t unknown = flags & OPMSG_FLAG_REQUIRED_MASK &
                      ~(OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME);
   if (unknown) {
      return opmsg_fail(error, OPMSG_ERR_REQUIRED_FLAGS,
                        "flagBits 0x%08x at offset 16 set unknown required bits 0x%04x (bits 2-15 must be 0)",
                        flags, unknown);
   }
   return true;
}

/* Sizes of the sections when every one is framed correctly, ignoring
 * content: used only to tell "checksum missing" from "checksum wrong". */
static bool
sections_fill_exactly(const uint8_t *p, const uint8_t *end)
{
   while (p < end) {
      size_t avail = (size_t) (end - p);
      int32_t n;
      if (avail < 6) {
         return false;
      }
      n = opmsg_read_i32(p + 1);
      if ((*p != 0 && *p != 1) || n < 5 || (size_t) n > avail - 1) {
         return false;
      }
      p += 1 + (size_t) n;
   }
   return p == end;
}

static bool
check_checksum(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error)
{
   const uint8_t *data = msg->data;
   size_t len = msg->len;

   if (len < opmsg_min_length(OPMSG_OP_MSG) + 4) {
      return opmsg_fail(error, OPMSG_ERR_CHECKSUM_MISSING,
                        "checksumPresent is set but the %zu-byte message has no room for a section and 4 checksum bytes",
                        len);
   }
   msg->checksum_present = true;
   msg->checksum = opmsg_read_u32(data + len - 4);
   if (limits->flags & OPMSG_PARSE_SKIP_CHECKSUM) {
      return true;
   }
   uint32_t crc = opmsg_crc32c(0, data, len - 4);
   if (crc == msg->checksum) {
      return true;
   }
   if (sections_fill_exactly(data + 20, data + len)) {
      return opmsg_fail(error, OPMSG_ERR_CHECKSUM_MISSING,
                        "checksumPresent is set but the sections fill the message: the 4 checksum bytes are missing");
   }
   return opmsg_fail(error, OPMSG_ERR_CHECKSUM_MISMATCH,
                     "CRC-32C of bytes 0..%zu is 0x%08x, the checksum at offset %zu says 0x%08x",
                     len - 4, crc, len - 4, msg->checksum);
}

/* ---------------------------------------------------------------------------
 * Sections
 * ------------------------------------------------------------------------- */

/* What one pass over the sections learns. */
#define SCAN_KEYS 256

typedef struct {
   uint32_t n_seq;
   uint32_t n_dotted;
   size_t seq_out;       /* merged bytes the sequences add (top-level case) */
   uint32_t body_keys;
   /* The body's first SCAN_KEYS keys, recorded by the walk that checks them
    * so the duplicate check needs no second walk. */
   const char *key[SCAN_KEYS];
   uint32_t key_len[SCAN_KEYS];
   uint32_t key_hash[SCAN_KEYS]; /* hashed while the key is in hand */
} scan_t;

/* Checks an identifier: non-empty, UTF-8, and as a dotted path no empty
 * component and at most OPMSG_MAX_DEPTH of them. */
static bool
check_identifier(const char *id, size_t len, size_t off, bool *dotted,
                 bson_error_t *error)
{
   size_t parts = 1;
   if (len == 0) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "document sequence at offset %zu has an empty identifier", off);
   }
   if (!bson_utf8_validate(id, len, false)) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "identifier of the document sequence at offset %zu is not valid UTF-8", off);
   }
   *dotted = false;
   if (!memchr(id, '.', len)) {
      return true;
   }
   *dotted = true;
   char name[200];
   opmsg_printable(name, id, len);
   for (size_t i = 0; i < len; i++) {
      if (id[i] == '.') {
         if (i == 0 || i + 1 == len || id[i + 1] == '.') {
            return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                              "identifier \"%s\" at offset %zu has an empty path component", name, off);
         }
         parts++;
      }
   }
   if (parts > OPMSG_MAX_DEPTH) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "identifier \"%s\" at offset %zu has %zu path components, more than %d",
                        name, off, parts, OPMSG_MAX_DEPTH);
   }
   return true;
}

static bool
check_sequence_doc(const uint8_t *q, size_t left, const opmsg_limits_t *limits,
                   size_t doff, const char *what, uint32_t *dlen, bson_error_t *error)
{
   return opmsg_doc_frame(q, left, limits->max_bson_size, doff, what, dlen, error) &&
          opmsg_doc_check_top(q, *dlen, doff, what, NULL, error) &&
          (!(limits->flags & OPMSG_PARSE_FULL_VALIDATE) ||
           opmsg_doc_validate_deep(q, *dlen, doff, what, error));
}

/* Checks one kind-1 section starting after its kind byte at p (offset off of
 * the kind byte). Returns the section's size (after the kind byte) in *size. */
static bool
scan_sequence(const opmsg_msg_t *msg, const opmsg_limits_t *limits,
              const uint8_t *p, const uint8_t *end, scan_t *scan,
              size_t *size, bson_error_t *error)
{
   size_t off = (size_t) (p - msg->data) - 1;
   size_t avail = (size_t) (end - p);
   if (avail < 4) {
      return opmsg_fail(error, OPMSG_ERR_SECTION_TRUNCATED,
                        "document sequence at offset %zu: %zu bytes left, its size needs 4", off, avail);
   }
   int32_t n = opmsg_read_i32(p);
   if (n < 5 || (size_t) n > avail) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_SIZE,
                        "document sequence at offset %zu: size %d is %s", off, n,
                        n < 5 ? "below the minimum of 5 (size, identifier and NUL)"
                              : "past the end of the sections");
   }
   const uint8_t *sec_end = p + n;
   const char *id = (const char *) p + 4;
   const uint8_t *nul = memchr(id, 0, (size_t) n - 4);
   if (!nul) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "document sequence at offset %zu: identifier has no NUL inside the section's %d bytes",
                        off, n);
   }
   size_t id_len = (size_t) ((const char *) nul - id);
   bool dotted;
   if (!check_identifier(id, id_len, off, &dotted, error)) {
      return false;
   }

   const uint8_t *q = nul + 1;
   uint32_t count = 0;
   size_t docs_len = (size_t) (sec_end - q);
   bool full = (limits->flags & OPMSG_PARSE_FULL_VALIDATE) != 0;
   while (q < sec_end) {
      size_t left = (size_t) (sec_end - q);
      /* The common case inline: a sound frame and sound top-level elements.
       * Anything else takes the checks below, which say what is wrong. */
      if (OPMSG_LIKELY(left >= 5)) {
         size_t flen = opmsg_read_u32(q);
         if (OPMSG_LIKELY(flen - 5 <= left - 5 && flen <= limits->max_bson_size &&
                          q[flen - 1] == 0 && opmsg_doc_top_ok(q, flen) &&
                          (!full || opmsg_doc_validate_deep(q, (uint32_t) flen, 0, "", NULL)))) {
            q += flen;
            count++;
            continue;
         }
      }
      size_t doff = (size_t) (q - msg->data);
      char what[260];
      uint32_t dlen;
      /* A document that starts inside the section but ends outside it is a
       * framing error of the section, whatever lies beyond. */
      if (left < 4 || (opmsg_read_i32(q) >= 0 && (size_t) opmsg_read_i32(q) > left)) {
         char name[200];
         return opmsg_fail(error, OPMSG_ERR_SEQUENCE_OVERRUN,
                           "document %u of sequence \"%s\" at offset %zu runs past the section's end at offset %zu",
                           count, opmsg_printable(name, id, id_len), doff,
                           (size_t) (sec_end - msg->data));
      }
      if (!check_sequence_doc(q, left, limits, doff, "sequence document", &dlen, error)) {
         /* Only now is it worth naming the document and its sequence:
          * check it again under that name to rebuild the message. */
         char name[200];
         snprintf(what, sizeof what, "document %u of sequence \"%s\"", count,
                  opmsg_printable(name, id, id_len));
         return check_sequence_doc(q, left, limits, doff, what, &dlen, error);
      }
      q += dlen;
      count++;
   }

   /* Merged: type byte, the last path component and NUL, the array's
    * length and terminator, and per document a type byte, key and NUL. */
   const char *last = dotted ? strrchr(id, '.') + 1 : id;
   scan->seq_out += 1 + strlen(last) + 1 + 4 + 1 + docs_len + count +
                    opmsg_array_keys_size(count);
   scan->n_seq++;
   scan->n_dotted += dotted;
   *size = (size_t) n;
   return true;
}

/* Checks the body's frame and top-level elements. */
static bool
scan_body(opmsg_msg_t *msg, const opmsg_limits_t *limits, const uint8_t *p,
          const uint8_t *end, scan_t *scan, bson_error_t *error)
{
   size_t off = (size_t) (p - msg->data);
   uint32_t len;
   if (msg->body) {
      return opmsg_fail(error, OPMSG_ERR_MULTIPLE_BODIES,
                        "a second body (kind 0) at offset %zu; the first is at offset %zu",
                        off - 1, (size_t) (msg->body - msg->data) - 1);
   }
   if (!opmsg_doc_frame(p, (size_t) (end - p), limits->max_bson_size + OPMSG_BODY_ALLOWANCE,
                        off, "body", &len, error)) {
      return false;
   }
   const uint8_t *q = p + 4;
   const uint8_t *last = p + len - 1;
   const uint8_t *limit = msg->data + msg->len;
   uint32_t n = 0;
   while (q < last) {
      const uint8_t *k;
      const uint8_t *next = opmsg_skip_element(q, last, &k);
      if (!next) {
         /* Again through the checker that names the document. */
         return opmsg_doc_check_top(p, len, off, "body", NULL, error);
      }
      const char *key = (const char *) q + 1;
      size_t key_len = (size_t) (k - q - 1);
      if (n < SCAN_KEYS) {
         scan->key[n] = key;
         scan->key_len[n] = (uint32_t) key_len;
         scan->key_hash[n] = name_hash(key, key_len, limit);
      }
      /* Remembered so opmsg_db() need not walk the body again. */
      if (key_len == 3 && *q == BSON_TYPE_UTF8 && memcmp(key, "$db", 3) == 0) {
         msg->priv_db = q;
      }
      q = next;
      n++;
   }
   scan->body_keys = n;
   if ((limits->flags & OPMSG_PARSE_FULL_VALIDATE) &&
       !opmsg_doc_validate_deep(p, len, off, "body", error)) {
      return false;
   }
   msg->body = p;
   msg->body_len = len;
   return true;
}

static bool
scan_sections(opmsg_msg_t *msg, const opmsg_limits_t *limits, scan_t *scan,
              bson_error_t *error)
{
   const uint8_t *p = msg->priv_sections;
   const uint8_t *end = p + msg->priv_sections_len;

   do {
      size_t off = (size_t) (p - msg->data);
      size_t left = (size_t) (end - p);
      size_t size = 0;
      if (msg->body && left < 6) {
         /* Too short to be any section: the smallest is a kind byte and an
          * empty document. */
         return opmsg_fail(error, OPMSG_ERR_TRAILING_BYTES,
                           "%zu stray bytes after the last section at offset %zu", left, off);
      }
      switch (*p) {
      case 0:
         if (!scan_body(msg, limits, p + 1, end, scan, error)) {
            return false;
         }
         p += 1 + msg->body_len;
         break;
      case 1:
         if (!scan_sequence(msg, limits, p + 1, end, scan, &size, error)) {
            return false;
         }
         p += 1 + size;
         break;
      default:
         return opmsg_fail(error, OPMSG_ERR_UNKNOWN_SECTION,
                           "section kind %u at offset %zu is not 0 (body) or 1 (document sequence)",
                           *p, off);
      }
   } while (p < end);

   if (!msg->body) {
      return opmsg_fail(error, OPMSG_ERR_NO_BODY,
                        "no body (kind 0 section) among the sections at offsets 20..%zu",
                        (size_t) (end - msg->data));
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * Cross-section rules
 * ------------------------------------------------------------------------- */

static bool
duplicate_key(const opmsg_msg_t *msg, const char *key, bson_error_t *error)
{
   char name[200];
   return opmsg_fail(error, OPMSG_ERR_DUPLICATE_KEY,
                     "body key \"%s\" at offset %zu appears twice",
                     opmsg_printable(name, key, strlen(key)),
                     (size_t) ((const uint8_t *) key - msg->data) - 1);
}

static bool
check_body_keys(const opmsg_msg_t *msg, const scan_t *scan, nameset_t *keys,
                bson_error_t *error)
{
   const uint8_t *p = msg->body + 4;
   const uint8_t *end = msg->body + msg->body_len - 1;
   opmsg_element_t e;
   uint32_t nkeys = scan->body_keys;

   if (!nameset_init(keys, msg->data, msg->data + msg->len, nkeys, error)) {
      return false;
   }
   if (nkeys <= SCAN_KEYS) {
      for (uint32_t i = 0; i < nkeys; i++) {
         const char *k = scan->key[i];
         if (nameset_find_hashed(keys, scan->key_hash[i], k, scan->key_len[i],
                                 (uint32_t) ((const uint8_t *) k - msg->data), true) >= 0) {
            return duplicate_key(msg, k, error);
         }
      }
      return true;
   }
   while (p < end) {
      size_t off = (size_t) (p - msg->data);
      (void) opmsg_next_element(&p, end, &e, off, NULL); /* checked already */
      (void) off;
      if (nameset_find(keys, e.key, e.key_len, (uint32_t) (e.key - (const char *) msg->data), true) >= 0) {
         return duplicate_key(msg, e.key, error);
      }
   }
   return true;
}

/* Looks up key (key_len bytes) among the top-level elements of the document
 * doc (framed and top-level checked, or checked here on the way). */
static bool
find_in_doc(const uint8_t *doc, uint32_t len, const char *key, size_t key_len,
            size_t base, opmsg_element_t *found, bool *present, bson_error_t *error)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + len - 1;
   *present = false;
   while (p < end) {
      if (!opmsg_next_element(&p, end, found, base + (size_t) (p - doc), error)) {
         return false;
      }
      if (found->key_len == key_len && memcmp(found->key, key, key_len) == 0) {
         *present = true;
         return true;
      }
   }
   return true;
}

/* A dotted identifier a.b.c clashes when the body has a.b.c, or when one of
 * a or a.b exists and is not a document (it could not take the field). */
static bool
check_dotted_path(const opmsg_msg_t *msg, const opmsg_sequence_t *seq,
                  const opmsg_element_t *top, bson_error_t *error)
{
   opmsg_element_t e = *top;
   const char *comp = seq->identifier + top->key_len + 1;
   const char *id_end = seq->identifier + seq->identifier_len;
   char name[200], field[200];

   opmsg_printable(name, seq->identifier, seq->identifier_len);
   for (;;) {
      if (e.type != BSON_TYPE_DOCUMENT) {
         opmsg_printable(field, seq->identifier, (size_t) (comp - 1 - seq->identifier));
         return opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH,
                           "sequence \"%s\" at offset %u: body field \"%s\" is not a document, so the path cannot be added",
                           name, seq->offset, field);
      }
      const char *dot = memchr(comp, '.', (size_t) (id_end - comp));
      size_t clen = (size_t) ((dot ? dot : id_end) - comp);
      bool present;
      /* The merge rewrites this sub-document field by field, so every one of
       * its fields must be as sound as a top-level one, not only the one on
       * the path (or the merge could lose what lies behind a bad one). */
      if (!opmsg_doc_check_top(e.value, e.value_len, (size_t) (e.value - msg->data),
                               "body sub-document on a sequence's path", NULL, error)) {
         return false;
      }
      if (!find_in_doc(e.value, e.value_len, comp, clen, (size_t) (e.value - msg->data),
                       &e, &present, error)) {
         return false;
      }
      if (!present) {
         return true; /* the merge creates the rest of the path */
      }
      if (!dot) {
         return opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH,
                           "sequence \"%s\" at offset %u: the body already has that field (at offset %zu)",
                           name, seq->offset, (size_t) (e.start - msg->data));
      }
      comp = dot + 1;
   }
}

/* A body element named key, looked up through the body's name set. */
static bool
body_element(const opmsg_msg_t *msg, nameset_t *keys, const char *key,
             size_t key_len, opmsg_element_t *e)
{
   int64_t off = nameset_find(keys, key, key_len, 0, false);
   if (off < 0) {
      return false;
   }
   /* The stored offset is the key's; its element starts one byte earlier. */
   const uint8_t *p = msg->data + off - 1;
   (void) opmsg_next_element(&p, msg->body + msg->body_len - 1, e, 0, NULL);
   return true;
}

/* With dotted identifiers (at most OPMSG_MAX_DOTTED_SEQUENCES sequences in
 * all, so pairs are cheap), "a" and "a.b" cannot both be sequences, nor "a.b"
 * and "a.b.c": one would have to be both an array and a document. */
static bool
check_prefix_identifiers(const opmsg_msg_t *msg, bson_error_t *error)
{
   opmsg_sequence_iter_t it, jt;
   opmsg_sequence_t a, b;

   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_next(&it, &a, false)) {
      opmsg_sequence_iter_init(&jt, msg);
      while (opmsg_sequence_next(&jt, &b, false)) {
         if (b.identifier_len > a.identifier_len &&
             b.identifier[a.identifier_len] == '.' &&
             memcmp(a.identifier, b.identifier, a.identifier_len) == 0) {
            char na[200], nb[200];
            return opmsg_fail(error, OPMSG_ERR_DUPLICATE_IDENTIFIER,
                              "sequence \"%s\" at offset %u lies inside sequence \"%s\" at offset %u",
                              opmsg_printable(nb, b.identifier, b.identifier_len), b.offset,
                              opmsg_printable(na, a.identifier, a.identifier_len), a.offset);
         }
      }
   }
   return true;
}

static bool
check_identifiers(const opmsg_msg_t *msg, nameset_t *keys, const scan_t *scan,
                  bson_error_t *error)
{
   nameset_t ids;
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   bool ok = false;

   if (scan->n_dotted > 0 && scan->n_seq > OPMSG_MAX_DOTTED_SEQUENCES) {
      return opmsg_fail(error, OPMSG_ERR_SEQUENCE_IDENTIFIER,
                        "%u document sequences with a dotted identifier among them: more than the %d this implementation places",
                        scan->n_seq, OPMSG_MAX_DOTTED_SEQUENCES);
   }
   if (!nameset_init(&ids, msg->data, msg->data + msg->len, scan->n_seq, error)) {
      return false;
   }
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_next(&it, &seq, false)) {
      uint32_t id_off = (uint32_t) (seq.identifier - (const char *) msg->data);
      int64_t prev = nameset_find(&ids, seq.identifier, seq.identifier_len, id_off, true);
      char name[200];
      opmsg_printable(name, seq.identifier, seq.identifier_len);
      if (prev >= 0) {
         /* The identifier sits 5 bytes after its section's kind byte. */
         opmsg_fail(error, OPMSG_ERR_DUPLICATE_IDENTIFIER,
                    "sequence \"%s\" at offset %u repeats the identifier of the one at offset %lld",
                    name, seq.offset, (long long) prev - 5);
         goto done;
      }
      const char *dot = memchr(seq.identifier, '.', seq.identifier_len);
      size_t first_len = dot ? (size_t) (dot - seq.identifier) : seq.identifier_len;
      opmsg_element_t e;
      if (body_element(msg, keys, seq.identifier, first_len, &e)) {
         if (!dot) {
            opmsg_fail(error, OPMSG_ERR_IDENTIFIER_CLASH,
                       "sequence \"%s\" at offset %u: the body already has that field (at offset %zu)",
                       name, seq.offset, (size_t) (e.start - msg->data));
            goto done;
         }
         if (!check_dotted_path(msg, &seq, &e, error)) {
            goto done;
         }
      }
   }
   if (scan->n_dotted > 0 && !check_prefix_identifiers(msg, error)) {
      goto done;
   }
   ok = true;
done:
   nameset_destroy(&ids);
   return ok;
}

/* OPMSG_PARSE_REQUEST: a command must name its database. */
static bool
check_db(const opmsg_msg_t *msg, bson_error_t *error)
{
   if (!opmsg_db(msg, NULL)) {
      return opmsg_fail(error, OPMSG_ERR_MISSING_DB,
                        "the body at offset %zu has no \"$db\" string: a command must name its database",
                        (size_t) (msg->body - msg->data));
   }
   return true;
}

bool
opmsg_parse_msg(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error)
{
   scan_t scan;
   nameset_t keys;
   bool ok;

   scan.n_seq = scan.n_dotted = scan.body_keys = 0;
   scan.seq_out = 0;
   msg->flags = opmsg_read_u32(msg->data + 16);
   if (!check_flags(msg->flags, error)) {
      return false;
   }
   msg->priv_sections = msg->data + 20;
   msg->priv_sections_len = msg->len - 20;
   if (msg->flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      if (!check_checksum(msg, limits, error)) {
         return false;
      }
      msg->priv_sections_len -= 4;
   }
   if (!scan_sections(msg, limits, &scan, error)) {
      return false;
   }
   msg->n_sequences = scan.n_seq;
   msg->priv_n_dotted = scan.n_dotted;

   if (!check_body_keys(msg, &scan, &keys, error)) {
      nameset_destroy(&keys);
      return false;
   }
   ok = scan.n_seq == 0 || check_identifiers(msg, &keys, &scan, error);
   nameset_destroy(&keys);
   if (!ok || ((limits->flags & OPMSG_PARSE_REQUEST) && !check_db(msg, error))) {
      return false;
   }

   if (scan.n_dotted == 0) {
      msg->priv_merged_size = msg->body_len + scan.seq_out;
   } else {
      msg->priv_merged_size = opmsg_merge_paths_size(msg);
   }
   if (msg->priv_merged_size > (size_t) INT32_MAX) {
      return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE,
                        "the merged document would be %zu bytes, above BSON's 2 GiB limit",
                        msg->priv_merged_size);
   }
   return true;
}
