/*
 * opmsg-keyset.h - the key set (keyset.c): the one table of the duplicate
 * rules and of looking a body's field up by name.
 *
 * Not installed. Inline: every parse with sequences makes one.
 */
#ifndef OPMSG_KEYSET_H
#define OPMSG_KEYSET_H

#include "opmsg-common.h"

/* The key set: the one table of the duplicate rules (body keys,
 * identifiers) and of looking up a body's field by name. Open addressing
 * over uint32 offsets into one buffer: names are NUL-terminated there, so a
 * slot is an offset (its length is found again by the comparison) and the
 * name's hash, compared first so that most probes that meet another name
 * need not read it. The caller lends a table for small sets; a larger one is
 * borrowed from the heap. */
typedef struct {
   uint32_t offset; /* the name's offset from base, + 1; 0: empty */
   uint32_t hash;
} opmsg_keyslot_t;

typedef struct {
   const uint8_t *base;
   const uint8_t *limit; /* end of the bytes stored names may be read from */
   opmsg_keyslot_t *slots;
   size_t nslots;
   opmsg_keyslot_t *local; /* the caller's table */
   /* A set of a body's keys: false when duplicates were let in (the
    * spec level), so a name may have a second place the set does not
    * show. */
   bool unique;
} opmsg_keyset_t;

/* Slots of a local table that holds n names without allocating. */
#define OPMSG_KEYSET_LOCAL(n) (2 * (size_t) (n) + 1)

/* The table of a set too large for its local one, from the heap (a few
 * times the size of the message the names are in). */
void opmsg_keyset_alloc(opmsg_keyset_t *s, size_t n);

/* An empty set for n names stored in [base, limit), in local (n_local
 * slots) when they fit, half full so that probes are short. Destroy it
 * with opmsg_keyset_destroy(), as a zeroed one may be. Inline: every parse
 * makes one. */
static inline void
opmsg_keyset_init(opmsg_keyset_t *s, const uint8_t *base, const uint8_t *limit, size_t n, opmsg_keyslot_t *local,
                  size_t n_local)
{
   s->base = base;
   s->limit = limit;
   s->local = local;
   s->slots = local;
   s->unique = true;
   s->nslots = OPMSG_KEYSET_LOCAL(n);
   if (OPMSG_UNLIKELY(s->nslots > n_local)) {
      opmsg_keyset_alloc(s, n);
   }
   memset(s->slots, 0, s->nslots * sizeof(opmsg_keyslot_t));
}

static inline void
opmsg_keyset_destroy(opmsg_keyset_t *s)
{
   if (OPMSG_UNLIKELY(s->slots != s->local)) {
      bson_free(s->slots);
   }
   s->slots = s->local;
}

/* The hash the duplicate checks and the name lookups use: a multiply and
 * fold of the first and last 8 bytes and the length, a few cycles a name,
 * which matters on bodies of hundreds of keys. Reads nothing at or past
 * limit (the end of the buffer the name lies in). */
static OPMSG_ALWAYS_INLINE uint32_t
opmsg_key_hash(const char *name, size_t len, const uint8_t *limit)
{
   /* The bytes are read as little-endian numbers on every machine, so the
    * mask below keeps the name's first bytes (and the hash of a name is the
    * same on any byte order): read as they lie, a big-endian machine kept
    * the bytes after a short name, and the same name hashed differently
    * wherever it stood. */
   uint64_t a = 0, b = 0;
   if (len >= 8) {
      a = (uint64_t) opmsg_read_i64((const uint8_t *) name);
      b = (uint64_t) opmsg_read_i64((const uint8_t *) name + len - 8);
   } else if ((const uint8_t *) name + 8 <= limit) {
      /* One load, then keep only the name's bytes. */
      a = (uint64_t) opmsg_read_i64((const uint8_t *) name) & ((1ull << (8 * len)) - 1);
   } else {
      memcpy(&a, name, len);
      a = BSON_UINT64_FROM_LE(a);
   }
   uint64_t h = (a ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
   h ^= (b + len) * 0x94D049BB133111EBull;
   h ^= h >> 31;
   return (uint32_t) (h ^ (h >> 32));
}

/* Finds name (len bytes, hash h) in the set; if absent and add is true,
 * adds it as the name at offset from base. Returns the stored offset of an
 * equal name, or -1. */
static OPMSG_ALWAYS_INLINE int64_t
opmsg_keyset_find_hashed(opmsg_keyset_t *s, uint32_t h, const char *name, size_t len, uint32_t offset, bool add)
{
   size_t i = (size_t) (((uint64_t) h * s->nslots) >> 32);
   for (;;) {
      opmsg_keyslot_t *slot = &s->slots[i];
      if (slot->offset == 0) {
         if (add) {
            slot->offset = offset + 1;
            slot->hash = h;
         }
         return -1;
      }
      if (slot->hash == h) {
         /* A stored name ends at its NUL; the name looked up may be a
          * component of a dotted identifier, which does not. The bound
          * keeps a longer name with the same hash from reading past the
          * buffer; the cheap rejections come first. */
         const char *stored = (const char *) s->base + slot->offset - 1;
         if (len < (size_t) ((const char *) s->limit - stored) && stored[len] == '\0' && stored[0] == name[0] &&
             memcmp(stored, name, len) == 0) {
            return (int64_t) slot->offset - 1;
         }
      }
      if (++i == s->nslots) {
         i = 0;
      }
   }
}

/* The same, for a name that lies in the set's own buffer. */
static OPMSG_ALWAYS_INLINE int64_t
opmsg_keyset_find(opmsg_keyset_t *s, const char *name, size_t len, uint32_t offset, bool add)
{
   return opmsg_keyset_find_hashed(s, opmsg_key_hash(name, len, s->limit), name, len, offset, add);
}

#endif /* OPMSG_KEYSET_H */
