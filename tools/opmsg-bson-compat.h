/*
 * opmsg-bson-compat.h - the libbson API opmsg's programs use, the same on
 * every libbson they build with: Debian 12's 1.23, Debian 13's 1.30 and
 * 2.x (Debian sid). Header only, not installed. The tools' own (the opmsg
 * command); bench/ and the tests borrow it. Not the library's: libopmsg
 * uses only public API that all three keep, and none of this.
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
 * Header only, for the programs that link only libmongoc and libbson
 * (tests/dropin/dropin-client.c) too.
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

#endif /* OPMSG_BSON_COMPAT_H */
