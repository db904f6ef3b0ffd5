/*
 * opmsg-bson-compat.h - the libbson API opmsg's programs use, the same on
 * every libbson it builds with: Debian 12's 1.23, Debian 13's 1.30 and 2.x
 * (Debian sid). Header only, not installed. The library itself uses only
 * API all three keep, and from here only opmsg_bson_own_static(): the one
 * place it touches libbson's internals.
 *
 *  - opmsg_strbuf_t: a small growing string that stands in for libbson's
 *    bson_string_t, which 1.30 deprecates and 2.0 removes. Names and
 *    semantics follow bson_string_t's (str is always NUL-terminated, len
 *    excludes the NUL); memory comes from bson_malloc()/bson_realloc(),
 *    which abort when out of memory, as bson_string_t's did.
 *  - opmsg_append_array_begin(): bson_append_array_begin(), which libbson 2
 *    deprecates in favour of bson_append_array_unsafe_begin(), the same
 *    function under a name that says the caller writes the keys "0", "1",
 *    ... (as every caller here does).
 *
 * Used by tools/, bench/ and the tests, including programs that link only
 * libmongoc and libbson (tests/dropin/dropin-client.c): hence header only.
 */
#ifndef OPMSG_BSON_COMPAT_H
#define OPMSG_BSON_COMPAT_H

#include <bson/bson.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Headers that have bson_append_array_unsafe_begin() define this macro
 * beside it (libbson 2.x); older ones only have bson_append_array_begin(). */
#ifdef BSON_APPEND_ARRAY_UNSAFE_BEGIN
#define opmsg_append_array_begin bson_append_array_unsafe_begin
#else
#define opmsg_append_array_begin bson_append_array_begin
#endif

typedef struct {
   char *str;  /* NUL-terminated contents */
   size_t len; /* bytes before the NUL */
   size_t cap; /* bytes allocated at str */
} opmsg_strbuf_t;

/* Room for extra more bytes and the NUL. */
static inline void
opmsg_strbuf_reserve(opmsg_strbuf_t *b, size_t extra)
{
   size_t need = b->len + extra + 1;
   if (need <= b->cap) {
      return;
   }
   size_t cap = b->cap ? b->cap : 64;
   while (cap < need) {
      cap *= 2;
   }
   b->str = (char *) bson_realloc(b->str, cap);
   b->cap = cap;
}

static inline void
opmsg_strbuf_append_len(opmsg_strbuf_t *b, const char *s, size_t n)
{
   opmsg_strbuf_reserve(b, n);
   if (n) {
      memcpy(b->str + b->len, s, n);
   }
   b->len += n;
   b->str[b->len] = '\0';
}

static inline void
opmsg_strbuf_append(opmsg_strbuf_t *b, const char *s)
{
   opmsg_strbuf_append_len(b, s, strlen(s));
}

static inline void
opmsg_strbuf_append_c(opmsg_strbuf_t *b, char c)
{
   opmsg_strbuf_append_len(b, &c, 1);
}

/* A new string holding init (which may be NULL: empty). */
static inline opmsg_strbuf_t *
opmsg_strbuf_new(const char *init)
{
   opmsg_strbuf_t *b = (opmsg_strbuf_t *) bson_malloc0(sizeof *b);
   opmsg_strbuf_append(b, init ? init : "");
   return b;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void
opmsg_strbuf_append_printf(opmsg_strbuf_t *b, const char *format, ...)
{
   va_list ap;
   char small[128];

   va_start(ap, format);
   int n = vsnprintf(small, sizeof small, format, ap);
   va_end(ap);
   if (n < 0) {
      return;
   }
   if ((size_t) n < sizeof small) {
      opmsg_strbuf_append_len(b, small, (size_t) n);
      return;
   }
   opmsg_strbuf_reserve(b, (size_t) n);
   va_start(ap, format);
   vsnprintf(b->str + b->len, (size_t) n + 1, format, ap);
   va_end(ap);
   b->len += (size_t) n;
}

/* Frees b; returns its contents (to be bson_free()d) unless free_str. */
static inline char *
opmsg_strbuf_free(opmsg_strbuf_t *b, bool free_str)
{
   char *str = b->str;
   bson_free(b);
   if (free_str) {
      bson_free(str);
      return NULL;
   }
   return str;
}

/* The one place opmsg touches libbson's internals: a bson_t that
 * bson_destroy() frees together with its bytes in one block, for
 * opmsg_merge_bson()'s single allocation, which no public libbson function
 * makes. bson_init_static() marks a bson_t with two private flags,
 * BSON_FLAG_STATIC (do not free the struct) and BSON_FLAG_RDONLY (do not
 * free the bytes, refuse appends), values unchanged from libbson 1.0 to
 * 2.x (bson-private.h). Clearing STATIC alone makes bson_destroy() free the
 * struct, and with it the bytes behind it. Returns false, changing
 * nothing, when b does not carry the flags as that libbson would: the
 * caller then takes the public way. */
#define OPMSG_BSON_FLAG_STATIC (1u << 1)
#define OPMSG_BSON_FLAG_RDONLY (1u << 2)

static inline bool
opmsg_bson_own_static(bson_t *b)
{
   const uint32_t both = OPMSG_BSON_FLAG_STATIC | OPMSG_BSON_FLAG_RDONLY;
   if ((b->flags & both) != both) {
      return false;
   }
   b->flags &= ~OPMSG_BSON_FLAG_STATIC;
   return true;
}

/* Makes block (from bson_aligned_alloc(), a bson_t and room for size bytes
 * behind it, whose first 4 bytes and last byte are the document's length
 * and terminator already) the bson_t of those bytes, which bson_destroy()
 * frees whole; the rest of the document may be written after. False when
 * this libbson's flags are not the ones opmsg knows: then the caller takes
 * opmsg_bson_adopt_block()'s way. */
static inline bool
opmsg_bson_take_block(bson_t *block, size_t size)
{
   return bson_init_static(block, (const uint8_t *) (block + 1), size) && opmsg_bson_own_static(block);
}

/* The bson_t opmsg_merge_bson() returns, from block: one allocation from
 * bson_aligned_alloc() holding a bson_t and, right behind it, the size
 * bytes of a document already written. own is opmsg_bson_own_static(); a
 * test passes a stand-in for a libbson whose flags differ, to take the
 * other way. When own() takes the block, it is the result (bson_destroy()
 * frees it whole); otherwise the document is copied the public way
 * (bson_new_from_data(): two more allocations) and the block freed. NULL
 * (block freed) when libbson refuses the bytes as a document. */
static inline bson_t *
opmsg_bson_adopt_block(bson_t *block, size_t size, bool (*own)(bson_t *))
{
   const uint8_t *data = (const uint8_t *) (block + 1);
   bson_t *copy;

   if (!bson_init_static(block, data, size)) {
      bson_free(block);
      return NULL;
   }
   if (own(block)) {
      return block;
   }
   copy = bson_new_from_data(data, size);
   bson_free(block);
   return copy;
}

#endif /* OPMSG_BSON_COMPAT_H */
