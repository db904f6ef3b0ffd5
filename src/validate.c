/*
 * validate.c - full validation of a BSON document (OPMSG_PARSE_FULL_VALIDATE).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The parser keeps nested documents opaque by default. In full-validation
 * mode it hands every document (body, sequence documents, legacy documents)
 * to opmsg_doc_validate_deep() after opmsg_doc_frame() and
 * opmsg_doc_check_top() have accepted its frame and top level. This file
 * walks every element at every level with opmsg_next_element(), which
 * already proves for one element: a known type, a key terminated inside the
 * document, a value that fits before the terminator, a string (also code,
 * symbol, DBPointer namespace) with length >= 1 ending in NUL, a nested
 * document with length >= 5 ending in 0, a binary length >= 0, a regex of
 * two cstrings, a code_w_scope whose total, string and scope add up, and a
 * boolean of 0 or 1. What only a deep walk adds is done here: the recursion,
 * the UTF-8 of keys and of every string-like value, and binary subtype 2's
 * inner length. The rules are those of the BSON specification as the public
 * BSON corpus exercises them (tests/test_corpus.c). The corpus accepts regex
 * options in any order and array keys other than "0", "1", ... (its
 * "degenerate" forms), so neither is checked.
 *
 * Error codes: those of opmsg_element_error() for an element of any level
 * (OPMSG_ERR_DOCUMENT_ELEMENT, _TERMINATOR, OPMSG_ERR_INVALID_BOOLEAN), and
 *  - OPMSG_ERR_INVALID_UTF8: a key, string, code, symbol, regex pattern or
 *    options, or DBPointer namespace that is not well-formed UTF-8 (RFC 3629:
 *    no overlong forms, no surrogates, nothing above U+10FFFF); the offset is
 *    that of the first bad byte;
 *  - OPMSG_ERR_INVALID_VALUE: binary subtype 2 whose inner length is not the
 *    outer length - 4;
 *  - OPMSG_ERR_NESTING_TOO_DEEP: more than OPMSG_MAX_DEPTH nested documents
 *    (documents, arrays and code_w_scope scopes) below the top level.
 *
 * The walk is iterative with a fixed stack of OPMSG_MAX_DEPTH + 1 levels, so
 * hostile input cannot exhaust the C stack, and it allocates nothing. Every
 * read stays inside the value extent that opmsg_next_element() proved.
 */
#include "opmsg-document.h"

#define BINARY_SUBTYPE_OLD 0x02

/* Where faults go, and the name of the document they are in. */
typedef struct {
   opmsg_report_t *r;
   const char *what;
} vctx_t;

static size_t
vpos(const vctx_t *c, const void *p)
{
   return opmsg_report_at(c->r, p);
}

/* ---------------------------------------------------------------------------
 * UTF-8
 * ------------------------------------------------------------------------- */

/*
 * Returns the index of the first byte of s[0..len) that is not part of
 * well-formed UTF-8 (RFC 3629, the Unicode Standard's table 3-7), or len
 * when all are. NUL is a code point like any other here: string values may
 * hold it (the corpus's "Embedded nulls"); keys and cstrings cannot, since
 * their length comes from their terminator.
 */
static size_t
utf8_check_from(const uint8_t *s, size_t len, size_t i)
{
   while (i < len) {
      if (len - i >= 8) {
         uint64_t w;
         memcpy(&w, s + i, 8);
         if ((w & 0x8080808080808080ull) == 0) {
            i += 8;
            continue;
         }
      }
      uint8_t c = s[i];
      if (c < 0x80) {
         i++;
         continue;
      }
      size_t n;
      uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
      if (c >= 0xC2 && c <= 0xDF) {
         n = 2;
      } else if (c >= 0xE0 && c <= 0xEF) {
         n = 3;
         if (c == 0xE0) {
            lo = 0xA0; /* no overlong forms */
         } else if (c == 0xED) {
            hi = 0x9F; /* no surrogates U+D800..U+DFFF */
         }
      } else if (c >= 0xF0 && c <= 0xF4) {
         n = 4;
         if (c == 0xF0) {
            lo = 0x90; /* no overlong forms */
         } else if (c == 0xF4) {
            hi = 0x8F; /* nothing above U+10FFFF */
         }
      } else {
         return i; /* a continuation byte, C0/C1 or F5..FF as a lead */
      }
      if (len - i < n || s[i + 1] < lo || s[i + 1] > hi) {
         return i;
      }
      for (size_t k = 2; k < n; k++) {
         if ((s[i + k] & 0xC0) != 0x80) {
            return i;
         }
      }
      i += n;
   }
   return len;
}

/* Keys and most strings are short and ASCII: OR-ing every byte answers that
 * with no branch per byte; only other text takes the decoder. */
static inline size_t
utf8_check(const uint8_t *s, size_t len)
{
   size_t i = 0;
   uint64_t acc = 0;
   for (; i + 32 <= len; i += 32) {
      uint64_t w0, w1, w2, w3;
      memcpy(&w0, s + i, 8);
      memcpy(&w1, s + i + 8, 8);
      memcpy(&w2, s + i + 16, 8);
      memcpy(&w3, s + i + 24, 8);
      acc |= (w0 | w1) | (w2 | w3);
   }
   for (; i + 8 <= len; i += 8) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      acc |= w;
   }
   uint8_t tail = 0;
   for (size_t k = i; k < len; k++) {
      tail |= s[k];
   }
   if (OPMSG_LIKELY(((acc & 0x8080808080808080ull) | (tail & 0x80)) == 0)) {
      return len;
   }
   return utf8_check_from(s, len, 0);
}

/* Fails with OPMSG_ERR_INVALID_UTF8 at the first bad byte of s[0..len). */
static inline bool
check_utf8(const vctx_t *c, const uint8_t *s, size_t len, const char *name)
{
   size_t bad = utf8_check(s, len);
   if (OPMSG_LIKELY(bad == len)) {
      return true;
   }
   return opmsg_report(c->r, OPMSG_ERR_INVALID_UTF8, vpos(c, s + bad),
                       "%s: %s is not valid UTF-8: byte 0x%02x at offset %zu", c->what, name, (unsigned) s[bad],
                       vpos(c, s + bad));
}

/* ---------------------------------------------------------------------------
 * Per-type rules, on top of what opmsg_next_element() proved (see above)
 * ------------------------------------------------------------------------- */

/* The characters of a string-like value: int32 n, n - 1 bytes, NUL. */
static bool
check_string_at(const vctx_t *c, const uint8_t *v, const char *name)
{
   uint32_t n = (uint32_t) opmsg_read_i32(v);
   return check_utf8(c, v + 4, n - 1, name);
}

static bool
check_binary(const vctx_t *c, const opmsg_element_t *e)
{
   const uint8_t *v = e->value;
   uint32_t n = e->value_len - 5;
   if (v[4] != BINARY_SUBTYPE_OLD) {
      return true;
   }
   /* The deprecated subtype repeats the length inside the payload. */
   if (n < 4) {
      return opmsg_report(c->r, OPMSG_ERR_INVALID_VALUE, vpos(c, v),
                          "%s: binary subtype 2 of %u bytes has no room for its inner length at offset %zu", c->what,
                          (unsigned) n, vpos(c, v));
   }
   int32_t inner = opmsg_read_i32(v + 5);
   if (inner < 0 || (uint32_t) inner != n - 4) {
      return opmsg_report(c->r, OPMSG_ERR_INVALID_VALUE, vpos(c, v + 5),
                          "%s: binary subtype 2 inner length %d, expected %u at offset %zu", c->what, (int) inner,
                          (unsigned) (n - 4), vpos(c, v + 5));
   }
   return true;
}

static bool
check_regex(const vctx_t *c, const opmsg_element_t *e)
{
   const uint8_t *v = e->value;
   size_t pattern = strlen((const char *) v);
   /* The options end at the value's last byte. */
   return check_utf8(c, v, pattern, "regex pattern") &&
          check_utf8(c, v + pattern + 1, e->value_len - pattern - 2, "regex options");
}

/*
 * Applies the rules of e's type. For a value that holds a document
 * (document, array, code_w_scope's scope) stores it in *child so the walk
 * descends into it.
 */
static bool
check_value(const vctx_t *c, const opmsg_element_t *e, const uint8_t **child, uint32_t *child_len)
{
   switch (e->type) {
   case BSON_TYPE_UTF8:
      return check_string_at(c, e->value, "string");
   case BSON_TYPE_CODE:
      return check_string_at(c, e->value, "code");
   case BSON_TYPE_SYMBOL:
      return check_string_at(c, e->value, "symbol");
   case BSON_TYPE_DBPOINTER:
      return check_string_at(c, e->value, "DBPointer namespace");
   case BSON_TYPE_REGEX:
      return check_regex(c, e);
   case BSON_TYPE_BINARY:
      return check_binary(c, e);
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      *child = e->value;
      *child_len = e->value_len;
      return true;
   case BSON_TYPE_CODEWSCOPE: {
      /* int32 total, string, scope document. */
      uint32_t s = 4 + (uint32_t) opmsg_read_i32(e->value + 4);
      if (!check_string_at(c, e->value + 4, "code_w_scope code")) {
         return false;
      }
      *child = e->value + 4 + s;
      *child_len = e->value_len - 4 - s;
      return true;
   }
   default:
      /* Fixed-size values: any bits are valid (booleans were checked). */
      return true;
   }
}

/* ---------------------------------------------------------------------------
 * The walk
 * ------------------------------------------------------------------------- */

/* One open document: the next element and the document's terminator. */
typedef struct {
   const uint8_t *p;
   const uint8_t *end;
} vlevel_t;

bool
opmsg_doc_validate_deep(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what)
{
   const vctx_t c = {r, what};
   /* Level 0 is doc itself; levels 1..OPMSG_MAX_DEPTH are nested ones. */
   vlevel_t stack[OPMSG_MAX_DEPTH + 1];
   unsigned depth = 0;

   if (len < 5) {
      /* opmsg_doc_frame() rules this out; a direct caller may not have. */
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_LENGTH, vpos(&c, doc),
                          "%s: %u bytes, less than a document's 5 at offset %zu", what, (unsigned) len, vpos(&c, doc));
   }
   if (doc[len - 1] != 0) {
      /* The walk relies on the terminator (opmsg_find_nul()). */
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_TERMINATOR, vpos(&c, doc + len - 1),
                          "%s: no terminating 0 at offset %zu", what, vpos(&c, doc + len - 1));
   }
   stack[0].p = doc + 4;
   stack[0].end = doc + len - 1;

   for (;;) {
      vlevel_t *lv = &stack[depth];
      if (lv->p >= lv->end) {
         if (depth == 0) {
            return true;
         }
         depth--;
         continue;
      }

      opmsg_element_t e;
      const uint8_t *at = lv->p;
      if (!opmsg_next_element(&lv->p, lv->end, &e)) {
         return opmsg_element_error(r, what, at, lv->end);
      }
      if (!check_utf8(&c, (const uint8_t *) e.key, e.key_len, "key")) {
         return false;
      }

      const uint8_t *child = NULL;
      uint32_t child_len = 0;
      if (!check_value(&c, &e, &child, &child_len)) {
         return false;
      }
      if (child != NULL) {
         /* Counted even for an empty document, so the limit does not
          * depend on what the innermost level holds. */
         if (depth == OPMSG_MAX_DEPTH) {
            return opmsg_report(r, OPMSG_ERR_NESTING_TOO_DEEP, vpos(&c, child),
                                "%s: more than %d nested levels at offset %zu", what, OPMSG_MAX_DEPTH, vpos(&c, child));
         }
         depth++;
         stack[depth].p = child + 4;
         stack[depth].end = child + child_len - 1;
      }
   }
}

void
opmsg_limits_full(opmsg_limits_t *limits)
{
   limits->check = OPMSG_CHECK_FULL;
   limits->deep = opmsg_doc_validate_deep;
}
