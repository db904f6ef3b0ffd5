/*
 * opmsg-private.h - internals shared by the library's source files.
 * Not installed. Tests may include it (they link the static library).
 */
#ifndef OPMSG_PRIVATE_H
#define OPMSG_PRIVATE_H

#include <opmsg/opmsg.h>

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__)
#define OPMSG_LIKELY(x) __builtin_expect(!!(x), 1)
#define OPMSG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OPMSG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define OPMSG_COLD __attribute__((cold))
#define OPMSG_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define OPMSG_LIKELY(x) (x)
#define OPMSG_UNLIKELY(x) (x)
#define OPMSG_PRINTF(f, a)
#define OPMSG_COLD
#define OPMSG_ALWAYS_INLINE inline
#endif

/* The wire is little-endian. memcpy lets the compiler emit one load and keeps
 * unaligned reads defined. */
static inline uint32_t
opmsg_read_u32(const uint8_t *p)
{
   uint32_t v;
   memcpy(&v, p, 4);
   return BSON_UINT32_FROM_LE(v);
}

static inline int32_t
opmsg_read_i32(const uint8_t *p)
{
   return (int32_t) opmsg_read_u32(p);
}

static inline int64_t
opmsg_read_i64(const uint8_t *p)
{
   uint64_t v;
   memcpy(&v, p, 8);
   return (int64_t) BSON_UINT64_FROM_LE(v);
}

static inline void
opmsg_write_u32(uint8_t *p, uint32_t v)
{
   v = BSON_UINT32_TO_LE(v);
   memcpy(p, &v, 4);
}

static inline void
opmsg_write_i64(uint8_t *p, int64_t v)
{
   uint64_t u = BSON_UINT64_TO_LE((uint64_t) v);
   memcpy(p, &u, 8);
}

/* Fills *error (when not NULL) with OPMSG_ERROR_DOMAIN, code and a message.
 * Always returns false so callers can `return opmsg_fail(...)`. */
bool opmsg_fail(bson_error_t *error, opmsg_error_code_t code, const char *fmt,
                ...) OPMSG_PRINTF(3, 4);

/* Copies at most 48 bytes of a key or identifier into out (at least 200
 * bytes) for an error message, escaping every byte that is not printable
 * ASCII as \xNN, so a message stays on one line whatever the wire held.
 * Returns out. */
const char *opmsg_printable(char *out, const char *name, size_t len);

/* The limits in force for one call, with defaults applied. */
typedef struct {
   size_t max_message_size;
   size_t max_bson_size;
   uint32_t flags;
} opmsg_limits_t;

void opmsg_limits_from(const opmsg_options_t *opts, opmsg_limits_t *limits);

/* ---------------------------------------------------------------------------
 * BSON element walking (document.c)
 * ------------------------------------------------------------------------- */

/* One top-level element of a document. */
typedef struct {
   const uint8_t *start; /* the type byte */
   uint8_t type;
   const char *key;      /* NUL-terminated */
   uint32_t key_len;
   const uint8_t *value;
   uint32_t value_len;
} opmsg_element_t;

/*
 * Checks the frame of the document at doc with at most avail bytes:
 * length >= 5, <= avail, <= max_len, and a terminating 0. base is the
 * document's offset in the message, for error messages; what names the
 * document ("body", "document 3 of sequence \"documents\""). Stores the
 * length in *len.
 */
bool opmsg_doc_frame(const uint8_t *doc, size_t avail, size_t max_len,
                     size_t base, const char *what, uint32_t *len,
                     bson_error_t *error);

/*
 * Reads the element at *p (inside a framed document whose terminator is at
 * end: *end must be 0, see opmsg_find_nul()) into *e and advances *p past
 * it. Checks the type, the key's terminator and the value's length (a
 * nested document's length and terminator too, not its contents). base + (p - doc) is the element's
 * offset for errors.
 */
bool opmsg_next_element(const uint8_t **p, const uint8_t *end,
                        opmsg_element_t *e, size_t offset, bson_error_t *error);

/* Walking from document to document of a large sequence is a chain of
 * loads, one or two per document, each waiting on memory: the hardware's
 * prefetcher does not run ahead of a chain. Asking for the lines a few
 * kilobytes ahead of the document at hand (those of [doc, doc + len) moved
 * that far, so that document after document every line is asked for once)
 * keeps the chain in cache. A prefetch never faults, so running past the
 * buffer is harmless. */
#define OPMSG_PREFETCH_DISTANCE 4096

static inline void
opmsg_prefetch_ahead(const uint8_t *doc, size_t len)
{
#if defined(__GNUC__)
   for (size_t o = 0; o < len; o += 64) {
      __builtin_prefetch(doc + OPMSG_PREFETCH_DISTANCE + o);
   }
#else
   (void) doc;
   (void) len;
#endif
}

/* The element walk, inlined where it is hot (document.c, parse.c). */
enum {
   OPMSG_SZ_UNKNOWN = -1,
   OPMSG_SZ_STRING = -2,
   OPMSG_SZ_DOC = -3,
   OPMSG_SZ_BINARY = -4,
   OPMSG_SZ_REGEX = -5,
   OPMSG_SZ_DBPOINTER = -6,
   OPMSG_SZ_CODEWSCOPE = -7,
   OPMSG_SZ_BOOL = -8
};
/* Per type byte: the value's fixed size, or an OPMSG_SZ_* saying how to
 * size it. */
extern const int8_t opmsg_type_sizes[256];
/* Size of a value of the rare variable-length types (regex, DBPointer,
 * code with scope); 0 when it is malformed or does not fit. */
size_t opmsg_variable_size(int8_t how, const uint8_t *v, size_t avail);
/* Works out which rule the element at p breaks and reports it. */
bool opmsg_element_error(const uint8_t *p, const uint8_t *end, size_t offset,
                         bson_error_t *error) OPMSG_COLD;

/* The first NUL in [k, end), or end, where *end is 0: the terminator of a
 * framed document, which every caller has checked. Keys are short, so a
 * call to memchr costs more than it saves: sixteen bytes at a time with
 * SSE2 (every x86-64 has it), eight at a time elsewhere, and the last few
 * bytes one by one.
 * (Measured: loads that look past end, so the last keys of a small document
 * also take the wide path, are slower, not faster; the byte loop's branches
 * are well predicted on the short keys that end a document.) */
static inline const uint8_t *
opmsg_find_nul(const uint8_t *k, const uint8_t *end)
{
#if defined(__SSE2__) && defined(__GNUC__)
   while (end - k >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *) (const void *) k);
      unsigned z = (unsigned) _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
      if (z) {
         return k + __builtin_ctz(z);
      }
      k += 16;
   }
#elif BSON_BYTE_ORDER == BSON_LITTLE_ENDIAN && defined(__GNUC__)
   while (end - k >= 8) {
      uint64_t w;
      memcpy(&w, k, 8);
      uint64_t z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
      if (z) {
         return k + (__builtin_ctzll(z) >> 3);
      }
      k += 8;
   }
#endif
   /* The caller framed the document: *end is its 0 terminator, so the
    * search stops there at the latest without a bounds test per byte. */
   while (*k) {
      k++;
   }
   return k;
}

/* Sizes of the common variable-length values, checked against the avail
 * bytes that follow them; 0 when malformed (none of them can be 0 bytes).
 * Lengths are read as unsigned and compared after subtracting the minimum,
 * so a negative or too-small length wraps around and fails the same single
 * comparison as one that runs past the end. */

/* string, code, symbol: int32 length counting the NUL (>= 1), bytes, NUL. */
static inline size_t
opmsg_string_size(const uint8_t *v, size_t avail)
{
   if (avail < 5) {
      return 0;
   }
   size_t s = opmsg_read_u32(v);
   if (s - 1 >= avail - 4 || v[3 + s] != 0) {
      return 0;
   }
   return 4 + s;
}

/* A nested document or array: its own length (>= 5) and terminator. */
static inline size_t
opmsg_nested_doc_size(const uint8_t *v, size_t avail)
{
   if (avail < 5) {
      return 0;
   }
   size_t n = opmsg_read_u32(v);
   if (n - 5 > avail - 5 || v[n - 1] != 0) {
      return 0;
   }
   return n;
}

/* Binary: int32 length, subtype, bytes. The old subtype 2 nests its own
 * length, which libbson's iterator insists on: accepting a wrong one would
 * let every libbson reader of the merged document stop short of the rest. */
static inline size_t
opmsg_binary_size(const uint8_t *v, size_t avail)
{
   if (avail < 5) {
      return 0;
   }
   size_t b = opmsg_read_u32(v);
   if (b > avail - 5) {
      return 0;
   }
   if (OPMSG_UNLIKELY(v[4] == BSON_SUBTYPE_BINARY_DEPRECATED) &&
       (b < 4 || opmsg_read_u32(v + 5) != b - 4)) {
      return 0;
   }
   return 5 + b;
}

/*
 * The element at p, inside a framed document whose terminator is at end
 * (so *end is 0: every caller has checked the frame first): checks its
 * type, its key's NUL and its value's length, and returns the next
 * element's first byte, or NULL if the element is bad (the caller asks
 * opmsg_element_error() which rule it broke). *key_nul is set to the key's
 * terminating NUL. This is the hot loop of every parse, so the common types
 * are sized here and only the rare ones call opmsg_variable_size().
 */
static OPMSG_ALWAYS_INLINE const uint8_t *
opmsg_skip_element(const uint8_t *p, const uint8_t *end, const uint8_t **key_nul)
{
   int8_t how = opmsg_type_sizes[*p];
   const uint8_t *k = opmsg_find_nul(p + 1, end);
   if (OPMSG_UNLIKELY(how == OPMSG_SZ_UNKNOWN || k == end)) {
      return NULL;
   }
   *key_nul = k;
   const uint8_t *v = k + 1;
   size_t avail = (size_t) (end - v);
   size_t n;
   if (how >= 0) {
      n = (size_t) how;
      return OPMSG_LIKELY(n <= avail) ? v + n : NULL;
   }
   switch (how) {
   case OPMSG_SZ_STRING:
      n = opmsg_string_size(v, avail);
      break;
   case OPMSG_SZ_DOC:
      n = opmsg_nested_doc_size(v, avail);
      break;
   case OPMSG_SZ_BOOL:
      n = (avail >= 1 && *v <= 1) ? 1 : 0;
      break;
   case OPMSG_SZ_BINARY:
      n = opmsg_binary_size(v, avail);
      break;
   default:
      n = opmsg_variable_size(how, v, avail);
      break;
   }
   return OPMSG_LIKELY(n != 0) ? v + n : NULL;
}

static inline bool
opmsg_next_element_inline(const uint8_t **pp, const uint8_t *end,
                          opmsg_element_t *e, size_t offset, bson_error_t *error)
{
   const uint8_t *p = *pp;
   const uint8_t *k;
   const uint8_t *next = opmsg_skip_element(p, end, &k);
   if (OPMSG_UNLIKELY(!next)) {
      opmsg_element_error(p, end, offset, error);
      return false;
   }
   e->start = p;
   e->type = *p;
   e->key = (const char *) p + 1;
   e->key_len = (uint32_t) (k - p - 1);
   e->value = k + 1;
   e->value_len = (uint32_t) (next - k - 1);
   *pp = next;
   return true;
}

/* True when every top-level element of the framed document doc (len bytes)
 * is sound; the fast check of sequence documents. No error message: on
 * false, opmsg_doc_check_top() says what is wrong. */
static inline bool
opmsg_doc_top_ok(const uint8_t *doc, size_t len)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + len - 1;
   const uint8_t *k;
   while (p < end) {
      p = opmsg_skip_element(p, end, &k);
      if (OPMSG_UNLIKELY(!p)) {
         return false;
      }
   }
   return true;
}

/* Checks every top-level element of a framed document. Stores the number of
 * elements in *count if not NULL. */
bool opmsg_doc_check_top(const uint8_t *doc, uint32_t len, size_t base,
                         const char *what, uint32_t *count, bson_error_t *error);

/* Full validation of every nested element (validate.c): at most
 * OPMSG_MAX_DEPTH nested levels below doc. The document has already passed
 * opmsg_doc_frame(). */
bool opmsg_doc_validate_deep(const uint8_t *doc, uint32_t len, size_t base,
                             const char *what, bson_error_t *error);

/* FNV-1a, the hash the duplicate checks use. */
static inline uint32_t
opmsg_hash_step(uint32_t h, uint8_t c)
{
   return (h ^ c) * 16777619u;
}
#define OPMSG_HASH_INIT 2166136261u

/* ---------------------------------------------------------------------------
 * Per-opcode parsers, called by opmsg_parse() after the header checks.
 * msg->data, len, header fields are set; each fills the rest.
 * ------------------------------------------------------------------------- */
bool opmsg_parse_msg(opmsg_msg_t *msg, const opmsg_limits_t *limits,
                     bson_error_t *error);
bool opmsg_parse_query(opmsg_msg_t *msg, const opmsg_limits_t *limits,
                       bson_error_t *error);
bool opmsg_parse_reply(opmsg_msg_t *msg, const opmsg_limits_t *limits,
                       bson_error_t *error);
bool opmsg_parse_compressed(opmsg_msg_t *msg, const opmsg_limits_t *limits,
                            bson_error_t *error);

/* OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS (removed.c). */
bool opmsg_parse_removed(opmsg_msg_t *msg, const opmsg_limits_t *limits,
                         bson_error_t *error);
size_t opmsg_removed_min_length(int32_t opcode);

/* The smallest messageLength each opcode can have. */
size_t opmsg_min_length(int32_t opcode);
/* OP_MSG and OP_REPLY: what a server answers with (OPMSG_PARSE_REPLY; an
 * OP_COMPRESSED reply carries one of them). */
bool opmsg_is_reply_opcode(int32_t opcode);

/* ---------------------------------------------------------------------------
 * Array keys "0", "1", ... without printf (merge.c)
 * ------------------------------------------------------------------------- */

/* Total bytes the keys "0".."count-1" take, NULs included. */
size_t opmsg_array_keys_size(uint32_t count);

/* Writes the decimal digits of i and a NUL at p; returns bytes written. */
size_t opmsg_write_index_key(uint8_t *p, uint32_t i);

/* The portable CRC-32C, always built, so tests can compare it with ISA-L. */
uint32_t opmsg_crc32c_portable(uint32_t crc, const void *data, size_t len);

/* ---------------------------------------------------------------------------
 * Sequences and dotted paths (view.c, merge.c)
 * ------------------------------------------------------------------------- */

/* A message with a dotted identifier may hold at most this many sequences:
 * placing paths compares sequences pairwise. mongod accepts 2. */
#define OPMSG_MAX_DOTTED_SEQUENCES 64

/* opmsg_sequence_iter_next(), counting the documents only when asked. */
bool opmsg_sequence_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq,
                         bool count);

/* The merged size of a message with dotted identifiers (merge.c). */
size_t opmsg_merge_paths_size(const opmsg_msg_t *msg);

#endif /* OPMSG_PRIVATE_H */
