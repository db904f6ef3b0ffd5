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
#define OPMSG_NOINLINE __attribute__((noinline))
#define OPMSG_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define OPMSG_LIKELY(x) (x)
#define OPMSG_UNLIKELY(x) (x)
#define OPMSG_PRINTF(f, a)
#define OPMSG_COLD
#define OPMSG_NOINLINE
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
bool opmsg_fail(bson_error_t *error, opmsg_error_code_t code, const char *fmt, ...) OPMSG_PRINTF(3, 4);

/* Copies at most 48 bytes of a key or identifier into out (at least 200
 * bytes) for an error message, escaping every byte that is not printable
 * ASCII as \xNN, so a message stays on one line whatever the wire held.
 * Returns out. */
const char *opmsg_printable(char *out, const char *name, size_t len);

/* What opmsg_parse() keeps in opmsg_msg_t.priv_ for the merge and view
 * functions (OP_MSG only). The public struct reserves the room; the layout
 * is ours to change. */
typedef struct {
   const uint8_t *sections; /* the sections (checksum excluded) */
   size_t sections_len;
   size_t merged_size; /* exact size of the merged document */
   const uint8_t *db;  /* the body's "$db" element, NULL if none */
   /* One dotted sequence whose path the body holds whole: the body's
    * sub-document it goes at the end of (merge.c splices it in), else NULL. */
   const uint8_t *splice;
   uint32_t n_dotted; /* sequences whose identifier has a dot */
   /* The last sequence's document count, which the scan found, so that
    * iterating a message's only sequence (most have one) need not count
    * again; seq_off is its kind byte's offset. */
   uint32_t seq_count;
   uint32_t seq_off;
   /* db is known: a walk of the body's whole top level, or one that met
    * "$db", went before (not so at the frames level for a body alone). */
   bool db_known;
} opmsg_msg_priv_t;

_Static_assert(sizeof(opmsg_msg_priv_t) <= sizeof(((opmsg_msg_t *) 0)->priv_),
               "opmsg_msg_t.priv_ holds opmsg_msg_priv_t");

static inline opmsg_msg_priv_t *
opmsg_priv(opmsg_msg_t *msg)
{
   return (opmsg_msg_priv_t *) (void *) msg->priv_;
}

static inline const opmsg_msg_priv_t *
opmsg_cpriv(const opmsg_msg_t *msg)
{
   return (const opmsg_msg_priv_t *) (const void *) msg->priv_;
}

/* The limits in force for one call, with defaults applied: the parser's
 * from opmsg_options_t, the encoder's from opmsg_build_t, both through
 * opmsg_limits_set() (rules.c), so both sides hold a message to one bound. */
typedef struct {
   size_t max_message_size;
   size_t max_bson_size;
   uint32_t flags; /* OPMSG_PARSE_* bits, as the caller gave them */
   /* The level (OPMSG_PARSE_FULL_VALIDATE in flags makes it full): ask it
    * through opmsg_checks_top() and opmsg_checks_deep(). */
   opmsg_check_t check;
} opmsg_limits_t;

/* 0 means the default; messageLength is an int32, and so is the length of
 * a body, which may be OPMSG_BODY_ALLOWANCE above max_bson_size: both are
 * capped to fit. */
void opmsg_limits_set(opmsg_limits_t *limits, size_t max_message_size, size_t max_bson_size, uint32_t flags);
/* opmsg_limits_set() from the caller's options (NULL: the defaults), with
 * the check level (an unknown level counts as the default here; parsing
 * refuses it first through opmsg_options_valid()). */
void opmsg_limits_from(const opmsg_options_t *opts, opmsg_limits_t *limits);
/* False with OPMSG_ERR_INVALID_ARGUMENT when opts asks for a check level
 * that does not exist. NULL is valid. */
bool opmsg_options_valid(const opmsg_options_t *opts, bson_error_t *error);

/* What the check level asks of a document beyond its frame: its top-level
 * elements (every level but frames), every nested one (full). The one
 * mapping from opmsg_check_t to the checks, for every opcode. */
static inline bool
opmsg_checks_top(const opmsg_limits_t *limits)
{
   return limits->check != OPMSG_CHECK_FRAMES;
}

static inline bool
opmsg_checks_deep(const opmsg_limits_t *limits)
{
   return limits->check == OPMSG_CHECK_FULL;
}

/* The largest body (command) the limits allow. */
static inline size_t
opmsg_body_limit(const opmsg_limits_t *limits)
{
   return limits->max_bson_size + OPMSG_BODY_ALLOWANCE;
}

/* ---------------------------------------------------------------------------
 * BSON element walking (document.c)
 * ------------------------------------------------------------------------- */

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
 * Checks the frame of the document at doc with at most avail bytes:
 * length >= 5, <= avail, <= max_len, and a terminating 0. base is the
 * document's offset in the message, for error messages; what names the
 * document ("body", "document 3 of sequence \"documents\""). Stores the
 * length in *len.
 */
bool opmsg_doc_frame(const uint8_t *doc, size_t avail, size_t max_len, size_t base, const char *what, uint32_t *len,
                     bson_error_t *error);

/*
 * Reads the element at *p (inside a framed document whose terminator is at
 * end: *end must be 0, see opmsg_find_nul()) into *e and advances *p past
 * it. Checks the type, the key's terminator and the value's length (a
 * nested document's length and terminator too, not its contents). base + (p - doc) is the element's
 * offset for errors.
 */
bool opmsg_next_element(const uint8_t **p, const uint8_t *end, opmsg_element_t *e, size_t offset, bson_error_t *error);

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
/* Works out which rule the element at p breaks and reports it, the
 * message starting with the name of its document, what (NULL: none). */
bool opmsg_element_error(const char *what, const uint8_t *p, const uint8_t *end, size_t offset,
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
   if (OPMSG_UNLIKELY(v[4] == BSON_SUBTYPE_BINARY_DEPRECATED) && (b < 4 || opmsg_read_u32(v + 5) != b - 4)) {
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
opmsg_next_element_inline(const uint8_t **pp, const uint8_t *end, opmsg_element_t *e, size_t offset,
                          bson_error_t *error)
{
   const uint8_t *p = *pp;
   const uint8_t *k;
   const uint8_t *next = opmsg_skip_element(p, end, &k);
   if (OPMSG_UNLIKELY(!next)) {
      opmsg_element_error(NULL, p, end, offset, error);
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
bool opmsg_doc_check_top(const uint8_t *doc, uint32_t len, size_t base, const char *what, uint32_t *count,
                         bson_error_t *error);

/* Full validation of every nested element (validate.c): at most
 * OPMSG_MAX_DEPTH nested levels below doc. The document has already passed
 * opmsg_doc_frame(). */
bool opmsg_doc_validate_deep(const uint8_t *doc, uint32_t len, size_t base, const char *what, bson_error_t *error);

/* The one check of a whole document, whoever carries it (an OP_MSG
 * sequence document on its error path, the OP_QUERY query and selector,
 * the OP_REPLY documents, the documents of the removed opcodes): its frame
 * within avail and max_len (opmsg_doc_frame()), its top-level elements when
 * top (opmsg_doc_check_top()), every nested level when deep (the caller's
 * OPMSG_PARSE_FULL_VALIDATE, opmsg_doc_validate_deep()). off is its offset
 * in the message and what its name, for messages; its length goes to *len.
 * The fast form, with no message, is opmsg_seq_doc_ok(); the OP_MSG body's
 * top level is walked by parse.c itself, which hashes its keys on the way. */
bool opmsg_doc_check(const uint8_t *doc, size_t avail, size_t max_len, size_t off, const char *what, bool top,
                     bool deep, uint32_t *len, bson_error_t *error);

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

/* True when the document at doc (avail bytes there) is framed: its length
 * at least 5, within avail and max_len, its last byte 0; the length goes to
 * *len whenever there are bytes to read it from. The fast form of
 * opmsg_doc_frame(), which says what is wrong. A length below 5 wraps around and fails the first comparison (see
 * opmsg_string_size()). */
static OPMSG_ALWAYS_INLINE bool
opmsg_doc_frame_ok(const uint8_t *doc, size_t avail, size_t max_len, size_t *len)
{
   if (OPMSG_UNLIKELY(avail < 5)) {
      return false;
   }
   size_t n = opmsg_read_u32(doc);
   *len = n;
   return n - 5 <= avail - 5 && n <= max_len && doc[n - 1] == 0;
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
    * frames level), so a name may have a second place the set does not
    * show. */
   bool unique;
} opmsg_keyset_t;

/* Slots of a local table that holds n names without allocating. */
#define OPMSG_KEYSET_LOCAL(n) (2 * (size_t) (n) + 1)

/* The table of a set too large for its local one, from the heap. */
bool opmsg_keyset_alloc(opmsg_keyset_t *s, size_t n, bson_error_t *error);

/* An empty set for n names stored in [base, limit), in local (n_local
 * slots) when they fit, half full so that probes are short.
 * OPMSG_ERR_NO_MEMORY if the heap fails; the set may be destroyed either
 * way, and so may a zeroed one. Inline: every parse makes one. */
static inline bool
opmsg_keyset_init(opmsg_keyset_t *s, const uint8_t *base, const uint8_t *limit, size_t n, opmsg_keyslot_t *local,
                  size_t n_local, bson_error_t *error)
{
   s->base = base;
   s->limit = limit;
   s->local = local;
   s->slots = local;
   s->unique = true;
   s->nslots = OPMSG_KEYSET_LOCAL(n);
   if (OPMSG_UNLIKELY(s->nslots > n_local) && !opmsg_keyset_alloc(s, n, error)) {
      return false;
   }
   memset(s->slots, 0, s->nslots * sizeof(opmsg_keyslot_t));
   return true;
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

/* ---------------------------------------------------------------------------
 * Per-opcode parsers, called by opmsg_parse() after the header checks.
 * msg->data, len, header fields are set; each fills the rest.
 * ------------------------------------------------------------------------- */
bool opmsg_parse_msg(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error);
bool opmsg_parse_query(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error);
bool opmsg_parse_reply(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error);
bool opmsg_parse_compressed(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error);

/* OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS (legacy-crud.c). */
bool opmsg_parse_removed(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error);
size_t opmsg_removed_min_length(int32_t opcode);

/* The smallest messageLength each opcode can have. */
size_t opmsg_min_length(int32_t opcode);
/* OP_MSG and OP_REPLY: what a server answers with (OPMSG_PARSE_REPLY; an
 * OP_COMPRESSED reply carries one of them). */
bool opmsg_is_reply_opcode(int32_t opcode);

/* ---------------------------------------------------------------------------
 * OP_MSG sections (parse.c owns their layout)
 *
 * A section is a kind byte and an int32 size: kind 0 a body document (the
 * size is its own length), kind 1 a document sequence (size, identifier,
 * NUL, documents). Two walkers, one per kind of input:
 * - opmsg_section_frame(): one bounded step over bytes nobody has checked
 *   (the checksum's "missing or wrong" verdict, the compressor's search for
 *   the command);
 * - opmsg_section_next(): the walk over the sections of a message
 *   opmsg_parse_msg() accepted (opmsg_cpriv(msg)->sections), trusting every frame:
 *   the sequence iterators (view.c), and through them the cross-section
 *   rules and the merge.
 * The parse itself (scan_sections() in parse.c) says which rule a section
 * breaks, so it walks on its own.
 * ------------------------------------------------------------------------- */

/* The bytes (kind byte included) of the section at p, avail bytes there,
 * when it has a known kind and a size that fits: 0 when it does not. */
static inline size_t
opmsg_section_frame(const uint8_t *p, size_t avail)
{
   if (avail < 5 || (*p != 0 && *p != 1)) {
      return 0;
   }
   int32_t n = opmsg_read_i32(p + 1);
   return n >= 5 && (size_t) n <= avail - 1 ? 1 + (size_t) n : 0;
}

/* One section of a parsed OP_MSG. For kind 0 body and body_len; for kind 1
 * identifier (NUL-terminated), identifier_len, documents, documents_len. */
typedef struct {
   uint8_t kind;
   const uint8_t *start; /* the kind byte */
   const uint8_t *end;   /* the byte after the section */
   const uint8_t *body;
   uint32_t body_len;
   const char *identifier;
   uint32_t identifier_len;
   const uint8_t *documents;
   uint32_t documents_len;
} opmsg_section_t;

/* The section at p, within the validated sections (p before their end),
 * into *s; returns the next section's first byte. kind_only: a body's or a
 * sequence's fields are filled only for that kind (OPMSG_SECTION_ANY for
 * both), so that a caller after sequences does not pay for bodies. */
enum { OPMSG_SECTION_ANY = 2 };

static OPMSG_ALWAYS_INLINE const uint8_t *
opmsg_section_next(const uint8_t *p, opmsg_section_t *s, int kind_only)
{
   uint32_t size = opmsg_read_u32(p + 1);
   s->kind = *p;
   s->start = p;
   s->end = p + 1 + size;
   if (s->kind == 0) {
      if (kind_only != 1) {
         s->body = p + 1;
         s->body_len = size;
      }
   } else if (kind_only != 0) {
      s->identifier = (const char *) p + 5;
      s->identifier_len = (uint32_t) strlen(s->identifier);
      s->documents = p + 5 + s->identifier_len + 1;
      s->documents_len = (uint32_t) (s->end - s->documents);
   }
   return s->end;
}

/* ---------------------------------------------------------------------------
 * Array keys "0", "1", ... without printf (merge.c)
 * ------------------------------------------------------------------------- */

/* Total bytes the keys "0".."count-1" take, NULs included. */
size_t opmsg_array_keys_size(uint32_t count);

/* Writes the decimal digits of i and a NUL at p; returns bytes written. */
size_t opmsg_write_index_key(uint8_t *p, uint32_t i);

/* The array document of count documents that lie back to back in
 * docs[0..docs_len) (keys "0", "1", ...): its exact size, and writing it
 * into out, which has that size. The merge writes each sequence with the
 * same code; the libmongoc drop-in builds its command arrays with it. The
 * documents must have been framed. */
size_t opmsg_array_doc_size(size_t docs_len, uint32_t count);
void opmsg_write_array_doc(uint8_t *out, const uint8_t *docs, size_t docs_len);

/* The portable CRC-32C, always built, so tests can compare it with ISA-L. */
uint32_t opmsg_crc32c_portable(uint32_t crc, const void *data, size_t len);

/* ---------------------------------------------------------------------------
 * Sequences and dotted paths (view.c, merge.c)
 * ------------------------------------------------------------------------- */

/* A message with a dotted identifier may hold at most this many sequences:
 * placing paths compares sequences pairwise. mongod accepts 2. */
#define OPMSG_MAX_DOTTED_SEQUENCES 64

/* opmsg_sequence_iter_next(), counting the documents only when asked. */
bool opmsg_sequence_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq, bool count);

/* Paths (view.c), for the view and the merge alike. A path is a prefix of
 * an identifier (path_len bytes; 0: the top level). */
/* The rest of identifier id after "path.", or id itself at the top; NULL
 * when id does not lie under path. */
const char *opmsg_path_rest(const char *id, size_t id_len, const char *path, size_t path_len);
/* The identifier of a sequence that goes on below path through the
 * component key, or NULL (always NULL for a key holding a dot). */
const char *opmsg_path_through(const opmsg_msg_t *msg, const char *path, size_t path_len, const char *key,
                               size_t key_len);
/* The first element named key at the top level of the framed document
 * doc, or NULL. Each element is checked on the way (opmsg_skip_element()),
 * so on a document whose elements were not, the walk stops with NULL at
 * the first unsound one; a match is a sound element. */
const uint8_t *opmsg_field_named(const uint8_t *doc, const char *key, size_t key_len);
/* Whether a sequence before the one at offset seq_off goes through path's
 * component comp: the sub-document the merge creates for it exists. */
bool opmsg_path_created_before(const opmsg_msg_t *msg, uint32_t seq_off, const char *path, size_t path_len,
                               const char *comp, size_t comp_len);

/* The merged size of a message with dotted identifiers (merge.c), given
 * seq_out, the bytes the sequences' arrays add (parse.c's count). */
size_t opmsg_merge_paths_size(const opmsg_msg_t *msg, size_t seq_out);

#endif /* OPMSG_PRIVATE_H */
