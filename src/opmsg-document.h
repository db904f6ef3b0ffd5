/*
 * opmsg-document.h - one level of a BSON document, walked with every bound
 * checked (document.c), and every level below it (validate.c, the full
 * check level).
 *
 * Not installed. What is hot is inline here: the element walk is the inner
 * loop of every parse.
 */
#ifndef OPMSG_DOCUMENT_H
#define OPMSG_DOCUMENT_H

#include "opmsg-common.h"

#if OPMSG_USE_SSE2
#include <emmintrin.h>
#endif

/* One top-level element of a document. */
typedef struct {
   const uint8_t *start; /* the type byte */
   uint8_t type;
   const char *key; /* NUL-terminated */
   uint32_t key_len;
   const uint8_t *value;
   uint32_t value_len;
} opmsg_element_t;

/*
 * The report of the document frame (opmsg_doc_frame_check(), below): true
 * with the length in *len, or the fault reported at the document's first
 * byte (a bad terminator at that byte). what names the document in messages
 * ("body", "document 3 of sequence \"documents\""), limit the bound max_len
 * is (NULL: none named); a document above it takes the code too_large
 * (OPMSG_OK: the rule's own, OPMSG_ERR_DOCUMENT_TOO_LARGE).
 */
bool opmsg_doc_frame(opmsg_report_t *r, const uint8_t *doc, size_t avail, size_t max_len, const char *what,
                     uint32_t *len);
bool opmsg_doc_frame_named(opmsg_report_t *r, const uint8_t *doc, size_t avail, size_t max_len, const char *what,
                           const char *limit, opmsg_error_code_t too_large, uint32_t *len);


/* The first key of a framed document of len bytes whose first key is
 * known to end inside it (a command's name: the body's first key), or NULL
 * when the document is empty. The one read of a command name: the view's
 * (opmsg_command_name()) and the compressor's, which frames the body
 * itself first. */
static inline const char *
opmsg_doc_first_key(const uint8_t *doc, size_t len)
{
   return len > 5 ? (const char *) doc + 5 : NULL;
}

/* Walking from document to document of a large sequence is a chain of
 * loads, one or two per document, each waiting on memory: the hardware's
 * prefetcher does not run ahead of a chain. Asking for the lines a few
 * kilobytes ahead of the document at hand (those of [doc, doc + len) moved
 * that far, so that document after document every line is asked for once)
 * keeps the chain in cache. A prefetch never faults, so running past the
 * buffer is harmless. */
#define OPMSG_PREFETCH_DISTANCE 4096
/* Below this many bytes a sequence is taken to be in cache already (it was
 * just received): no prefetching. */
#define OPMSG_PREFETCH_ABOVE (4u << 20)

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
/* Reports the rule the element at p breaks (opmsg_element_check()'s code)
 * at the element's type byte, the message starting with the name of its
 * document, what (NULL: none). */
bool opmsg_element_error(opmsg_report_t *r, const char *what, const uint8_t *p, const uint8_t *end) OPMSG_COLD;

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
#if OPMSG_USE_SSE2
   while (end - k >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *) (const void *) k);
      unsigned z = (unsigned) _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
      if (z) {
         return k + __builtin_ctz(z);
      }
      k += 16;
   }
#else
   /* Eight bytes as a little-endian number on every machine (a big-endian
    * one swaps them in the load): a zero byte's flag is then exact in the
    * lowest flagged byte, the first in memory; the borrow may flag bytes
    * after it, never before. */
   while (end - k >= 8) {
      uint64_t w = (uint64_t) opmsg_read_i64(k);
      uint64_t z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
      if (z) {
         return k + (opmsg_ctz64(z) >> 3);
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
   if (OPMSG_UNLIKELY(v[4] == BSON_SUBTYPE_BINARY_DEPRECATED) && (b < 4 || opmsg_read_u32(v + 5) != b - 4)) {
      return 0;
   }
   return 5 + b;
}

/*
 * The element rule, the one check of it: the element at p, inside a framed
 * document whose terminator is at end (so *end is 0: every caller has
 * checked the frame first), has a known type (not 0, which ends the
 * document early), a key whose NUL lies before end, and a value whose
 * length fits before end (a boolean's byte 0 or 1). Returns OPMSG_OK with
 * the next element's first byte in *next and the key's NUL in *key_nul, or
 * the rule broken, at the element's type byte: OPMSG_ERR_DOCUMENT_TERMINATOR
 * (a 0 type byte), OPMSG_ERR_INVALID_BOOLEAN, OPMSG_ERR_DOCUMENT_ELEMENT
 * (an unknown type, no NUL, a bad length). This is the hot loop of every
 * parse, so the common types are sized here and only the rare ones call
 * opmsg_variable_size(); which fault it is, is worked out only on the way
 * out. opmsg_skip_element() is its verdict for the walks, and
 * opmsg_element_error() reports this same call's code.
 */
static OPMSG_ALWAYS_INLINE opmsg_error_code_t
opmsg_element_check(const uint8_t *p, const uint8_t *end, const uint8_t **next, const uint8_t **key_nul)
{
   int8_t how = opmsg_type_sizes[*p];
   const uint8_t *k = opmsg_find_nul(p + 1, end);
   if (OPMSG_UNLIKELY(how == OPMSG_SZ_UNKNOWN || k == end)) {
      return *p == 0 ? OPMSG_ERR_DOCUMENT_TERMINATOR : OPMSG_ERR_DOCUMENT_ELEMENT;
   }
   *key_nul = k;
   const uint8_t *v = k + 1;
   size_t avail = (size_t) (end - v);
   size_t n;
   if (how >= 0) {
      n = (size_t) how;
      if (OPMSG_UNLIKELY(n > avail)) {
         return OPMSG_ERR_DOCUMENT_ELEMENT;
      }
      *next = v + n;
      return OPMSG_OK;
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
      if (OPMSG_UNLIKELY(n == 0)) {
         return avail >= 1 ? OPMSG_ERR_INVALID_BOOLEAN : OPMSG_ERR_DOCUMENT_ELEMENT;
      }
      break;
   case OPMSG_SZ_BINARY:
      n = opmsg_binary_size(v, avail);
      break;
   default:
      n = opmsg_variable_size(how, v, avail);
      break;
   }
   if (OPMSG_UNLIKELY(n == 0)) {
      return OPMSG_ERR_DOCUMENT_ELEMENT;
   }
   *next = v + n;
   return OPMSG_OK;
}

/* opmsg_element_check()'s verdict for the walks: the next element's first
 * byte, or NULL when the element is bad (opmsg_element_error() reports
 * which rule it broke). *key_nul is set to the key's terminating NUL. */
static OPMSG_ALWAYS_INLINE const uint8_t *
opmsg_skip_element(const uint8_t *p, const uint8_t *end, const uint8_t **key_nul)
{
   const uint8_t *next;
   return OPMSG_LIKELY(opmsg_element_check(p, end, &next, key_nul) == OPMSG_OK) ? next : NULL;
}

/*
 * Reads the element at *pp (inside a framed document whose terminator is at
 * end: *end must be 0, see opmsg_find_nul()) into *e and advances *pp past
 * it. Checks the type, the key's terminator and the value's length (a
 * nested document's length and terminator too, not its contents); false,
 * with no report, when the element is bad: opmsg_element_error() says why.
 */
static inline bool
opmsg_next_element(const uint8_t **pp, const uint8_t *end, opmsg_element_t *e)
{
   const uint8_t *p = *pp;
   const uint8_t *k;
   const uint8_t *next = opmsg_skip_element(p, end, &k);
   if (OPMSG_UNLIKELY(!next)) {
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

/* opmsg_doc_top_ok() of two framed documents, their walks interleaved:
 * two independent chains of loads, which the processor overlaps. */
static inline bool
opmsg_doc_top_ok2(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
   const uint8_t *pa = a + 4, *ea = a + a_len - 1;
   const uint8_t *pb = b + 4, *eb = b + b_len - 1;
   const uint8_t *k;
   while (pa < ea && pb < eb) {
      pa = opmsg_skip_element(pa, ea, &k);
      pb = opmsg_skip_element(pb, eb, &k);
      if (OPMSG_UNLIKELY(!pa || !pb)) {
         return false;
      }
   }
   while (pa < ea) {
      pa = opmsg_skip_element(pa, ea, &k);
      if (OPMSG_UNLIKELY(!pa)) {
         return false;
      }
   }
   while (pb < eb) {
      pb = opmsg_skip_element(pb, eb, &k);
      if (OPMSG_UNLIKELY(!pb)) {
         return false;
      }
   }
   return true;
}

/* Checks every top-level element of a framed document. Stores the number of
 * elements in *count if not NULL. */
bool opmsg_doc_check_top(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what, uint32_t *count);

/* Full validation of every nested element (validate.c): at most
 * OPMSG_MAX_DEPTH nested levels below doc. The document has already passed
 * opmsg_doc_frame(). Reached through limits->deep only (opmsg_checks_deep()). */
bool opmsg_doc_validate_deep(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what);

/* The full check level: every nested level too (validate.c), for a caller
 * that offers that level. */
void opmsg_limits_full(opmsg_limits_t *limits);

/* The verdict of deep (a limits' deep walk) on the framed document doc, with
 * no report: the fast checks ask it, and make the report again if it is no.
 * Out of line, so that the loops that ask it stay small. */
bool opmsg_deep_ok(opmsg_deep_check_fn deep, const uint8_t *doc, size_t len) OPMSG_NOINLINE;

/* The one check of a whole document, whoever carries it (an OP_MSG
 * sequence document on its error path, the OP_QUERY query and selector,
 * the OP_REPLY documents, the documents of the removed opcodes): its frame
 * within avail and max_len (opmsg_doc_frame()), and as far inside as the
 * limits' check level asks: its top-level elements (opmsg_doc_check_top()),
 * every nested level (opmsg_doc_validate_deep()). what names it in messages;
 * its length goes to *len. The fast form, with no message, is
 * opmsg_seq_doc_ok(); the OP_MSG body's top level is walked by parse.c
 * itself, which hashes its keys on the way. */
bool opmsg_doc_check(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *doc, size_t avail, size_t max_len,
                     const char *what, uint32_t *len);
/* opmsg_doc_check() with the frame's limit named and its code given, as
 * opmsg_doc_frame_named() takes them. */
bool opmsg_doc_check_named(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *doc, size_t avail,
                           size_t max_len, const char *what, const char *limit, opmsg_error_code_t too_large,
                           uint32_t *len);

/* The first element named key at the top level of the framed document
 * doc, or NULL. Each element is checked on the way (opmsg_skip_element()),
 * so on a document whose elements were not, the walk stops with NULL at
 * the first unsound one; a match is a sound element. */
static OPMSG_ALWAYS_INLINE const uint8_t *
opmsg_field_named(const uint8_t *doc, const char *key, size_t key_len)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + opmsg_read_u32(doc) - 1;
   while (p < end) {
      const uint8_t *k = p;
      const uint8_t *next = opmsg_skip_element(p, end, &k);
      if (!next) {
         return NULL; /* an unsound element: the walk stops here */
      }
      if ((size_t) (k - p - 1) == key_len && memcmp(p + 1, key, key_len) == 0) {
         return p;
      }
      p = next;
   }
   return NULL;
}

/* "$db", the database a command names: whether the element at p, whose
 * key's NUL is at k (opmsg_skip_element()), is called that. The one test
 * of the name: the walks that pass the body's keys anyway (the parser's)
 * note the first with it, and opmsg_doc_db() finds it with it. */
static OPMSG_ALWAYS_INLINE bool
opmsg_is_db_key(const uint8_t *p, const uint8_t *k)
{
   return k - p == 4 && memcmp(p + 1, "$db", 3) == 0;
}

/* The string of a "$db" element e (its length in *len when len is not
 * NULL): NULL when e is NULL or not a string. */
static inline const char *
opmsg_db_string(const uint8_t *e, uint32_t *len)
{
   if (!e || *e != BSON_TYPE_UTF8) {
      return NULL;
   }
   if (len) {
      *len = opmsg_read_u32(e + 5) - 1; /* type, "$db", NUL, then the length */
   }
   return (const char *) e + 9;
}

/* The first "$db" element of the framed document doc, as a string (see
 * opmsg_db_string()), or NULL: the one lookup of it, for every opcode (an
 * OP_MSG's body when its parse did not note it, OP_QUERY's query). Each
 * element is checked on the way; the walk stops at an unsound one. */
const char *opmsg_doc_db(const uint8_t *doc, uint32_t *len);

/*
 * The document frame, the one check of it: the document at doc (avail
 * bytes there) has a length of at least 5, within avail and max_len, and a
 * last byte 0. True with the length in *len; false with the rule broken in
 * *fault: its code and the fault's offset from doc (the length's first
 * byte, or the bad terminator): OPMSG_ERR_DOCUMENT_LENGTH (fewer than 5
 * bytes, a length below 5 or past avail), OPMSG_ERR_DOCUMENT_TOO_LARGE
 * (above max_len), OPMSG_ERR_DOCUMENT_TERMINATOR. *len holds the length
 * whenever there were bytes to read it from. The fast paths ask
 * opmsg_doc_frame_ok(), the reports opmsg_doc_frame() (document.c): both
 * this same call, so they cannot disagree. The verdict is one chain of
 * comparisons (the hot loop's: a length below 5 wraps around and fails the
 * first with one past avail, see opmsg_string_size()); which rule broke is
 * worked out after it, in the same order; the fast paths, which do not
 * read *fault, do not pay for it. Written this way, with no branch hints,
 * because gcc 12 -O2 laid the spec level's sequence loop out about 0.2 ns
 * a document slower otherwise (opmsg-bench --cpu-time, reply_plain spec
 * parse: 151-154 ns before the checks were merged; 160-176 ns with a
 * returned code, with OPMSG_LIKELY() on the chain, or with the
 * classification out of line; 152-155 ns so).
 */
static OPMSG_ALWAYS_INLINE bool
opmsg_doc_frame_check(const uint8_t *doc, size_t avail, size_t max_len, size_t *len, opmsg_fault_t *fault)
{
   size_t n = avail < 5 ? 0 : opmsg_read_u32(doc);
   if (avail >= 5) {
      *len = n;
      if (n - 5 <= avail - 5 && n <= max_len && doc[n - 1] == 0) {
         return true;
      }
   }
   fault->at = 0;
   if (avail < 5 || n - 5 > avail - 5) {
      fault->code = OPMSG_ERR_DOCUMENT_LENGTH;
   } else if (n > max_len) {
      fault->code = OPMSG_ERR_DOCUMENT_TOO_LARGE;
   } else {
      fault->code = OPMSG_ERR_DOCUMENT_TERMINATOR;
      fault->at = n - 1;
   }
   return false;
}

/* opmsg_doc_frame_check()'s verdict alone, for the fast paths. */
static OPMSG_ALWAYS_INLINE bool
opmsg_doc_frame_ok(const uint8_t *doc, size_t avail, size_t max_len, size_t *len)
{
   opmsg_fault_t unread;
   return opmsg_doc_frame_check(doc, avail, max_len, len, &unread);
}

#endif /* OPMSG_DOCUMENT_H */
