/*
 * document.c - bounds-checked walking of one level of a BSON document.
 *
 * The merger copies nested documents as opaque bytes, so by default only the
 * top level of each document is walked: every element's type, key and value
 * length, and each nested document's own length and terminator. Full
 * validation (validate.c) goes on from here into every level.
 */
#include "opmsg-document.h"


bool
opmsg_doc_frame(opmsg_report_t *r, const uint8_t *doc, size_t avail, size_t max_len, const char *what, uint32_t *len)
{
   size_t base = opmsg_report_at(r, doc);
   if (avail < 5) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_LENGTH, base,
                          "%s at offset %zu: %zu bytes left, a document needs at least 5", what, base, avail);
   }
   int32_t n = opmsg_read_i32(doc);
   if (n < 5) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_LENGTH, base, "%s at offset %zu: length %d is below the minimum of 5",
                          what, base, n);
   }
   if ((size_t) n > avail) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_LENGTH, base,
                          "%s at offset %zu: length %d runs past the %zu bytes available", what, base, n, avail);
   }
   if ((size_t) n > max_len) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_TOO_LARGE, base,
                          "%s at offset %zu: length %d is above the limit of %zu", what, base, n, max_len);
   }
   if (doc[n - 1] != 0) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_TERMINATOR, base + (size_t) n - 1,
                          "%s at offset %zu: last byte (offset %zu) is 0x%02x, not 0", what, base,
                          base + (size_t) n - 1, doc[n - 1]);
   }
   *len = (uint32_t) n;
   return true;
}

bool
opmsg_deep_ok(opmsg_deep_check_fn deep, const uint8_t *doc, size_t len)
{
   opmsg_report_t quiet;
   opmsg_report_init(&quiet, NULL, doc, 0, &opmsg_parser_side);
   return deep(&quiet, doc, (uint32_t) len, "");
}

bool
opmsg_doc_check(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *doc, size_t avail, size_t max_len,
                const char *what, uint32_t *len)
{
   return opmsg_doc_frame(r, doc, avail, max_len, what, len) &&
          (!opmsg_checks_top(limits) || opmsg_doc_check_top(r, doc, *len, what, NULL)) &&
          (!opmsg_checks_deep(limits) || limits->deep(r, doc, *len, what));
}

/* code_w_scope: int32 total, string, document, and the total must add up. */
static size_t
code_w_scope_size(const uint8_t *v, size_t avail)
{
   if (avail < 14) {
      return 0;
   }
   int32_t total = opmsg_read_i32(v);
   if (total < 14 || (size_t) total > avail) {
      return 0;
   }
   size_t s = opmsg_string_size(v + 4, (size_t) total - 4);
   if (s == 0) {
      return 0;
   }
   size_t d = opmsg_nested_doc_size(v + 4 + s, (size_t) total - 4 - s);
   if (d == 0 || 4 + s + d != (size_t) total) {
      return 0;
   }
   return (size_t) total;
}

/* Indexed by type byte (C11 has no range designators, hence the grid). */
#define U OPMSG_SZ_UNKNOWN
#define S OPMSG_SZ_STRING
#define D OPMSG_SZ_DOC
#define B OPMSG_SZ_BINARY
#define R OPMSG_SZ_REGEX
#define P OPMSG_SZ_DBPOINTER
#define W OPMSG_SZ_CODEWSCOPE
#define L OPMSG_SZ_BOOL
const int8_t opmsg_type_sizes[256] = {
   U, 8, S, D,  D, B, 0, 12, L, 8, 0, R, P, S, S, W, /* 0x00 */
   4, 8, 8, 16, U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x10 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x20 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x30 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x40 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x50 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x60 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, 0, /* 0x70 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x80 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0x90 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0xA0 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0xB0 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0xC0 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0xD0 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, U, /* 0xE0 */
   U, U, U, U,  U, U, U, U,  U, U, U, U, U, U, U, 0, /* 0xF0 */
};
#undef U
#undef S
#undef D
#undef B
#undef R
#undef P
#undef W
#undef L

/* Size of a value of the rare variable-length types; 0 when it does not
 * fit in avail bytes or is malformed (no such value can be 0 bytes). The
 * common ones are sized inline by opmsg_skip_element(). */
size_t
opmsg_variable_size(int8_t how, const uint8_t *v, size_t avail)
{
   const uint8_t *nul;
   size_t n;

   switch (how) {
   case OPMSG_SZ_REGEX:
      nul = memchr(v, 0, avail);
      if (!nul) {
         return 0;
      }
      n = (size_t) (nul - v) + 1;
      nul = memchr(v + n, 0, avail - n);
      return nul ? (size_t) (nul - v) + 1 : 0;
   case OPMSG_SZ_DBPOINTER:
      n = opmsg_string_size(v, avail);
      return (n && avail - n >= 12) ? n + 12 : 0;
   case OPMSG_SZ_CODEWSCOPE:
      return code_w_scope_size(v, avail);
   default:
      return 0;
   }
}

/* The error paths, kept out of the loop. what names the document the
 * element is in ("body", "document 3 of sequence \"documents\"") and
 * starts the message when given: the element's offset alone does not tell
 * a body from the 90,000th document of a sequence. */
bool
opmsg_element_error(opmsg_report_t *r, const char *what, const uint8_t *p, const uint8_t *end)
{
   const char *in = what ? what : "";
   const char *sep = what ? ": " : "";
   size_t offset = opmsg_report_at(r, p);
   uint8_t type = *p;
   if (type == 0) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_TERMINATOR, offset,
                          "%s%selement at offset %zu: a 0 type byte ends the document %zu bytes before its length says",
                          in, sep, offset, (size_t) (end - p));
   }
   if (opmsg_type_sizes[type] == OPMSG_SZ_UNKNOWN) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_ELEMENT, offset, "%s%selement at offset %zu: unknown type 0x%02x", in,
                          sep, offset, type);
   }
   const char *key = (const char *) p + 1;
   const uint8_t *nul = memchr(key, 0, (size_t) (end - p) - 1);
   if (!nul) {
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_ELEMENT, offset,
                          "%s%selement at offset %zu: key has no terminating NUL inside the document", in, sep, offset);
   }
   char name[OPMSG_PRINTABLE_SIZE];
   opmsg_printable(name, key, (size_t) ((const char *) nul - key));
   if (type == BSON_TYPE_BOOL && nul + 1 < end) {
      return opmsg_report(r, OPMSG_ERR_INVALID_BOOLEAN, offset,
                          "%s%selement \"%s\" at offset %zu: boolean byte 0x%02x is neither 0 nor 1", in, sep, name,
                          offset, nul[1]);
   }
   return opmsg_report(
      r, OPMSG_ERR_DOCUMENT_ELEMENT, offset,
      "%s%selement \"%s\" at offset %zu: value of type 0x%02x has a bad length or runs past the document's end", in,
      sep, name, offset, type);
}

bool
opmsg_doc_check_top(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what, uint32_t *count)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + len - 1;
   uint32_t n = 0;
   opmsg_element_t e;

   /* Callers frame the document first; the walk relies on the terminator. */
   if (len < 5 || doc[len - 1] != 0) {
      size_t base = opmsg_report_at(r, doc);
      return opmsg_report(r, OPMSG_ERR_DOCUMENT_TERMINATOR, base, "%s at offset %zu: not a framed document", what,
                          base);
   }
   if (!count && OPMSG_LIKELY(opmsg_doc_top_ok(doc, len))) {
      return true;
   }
   while (p < end) {
      const uint8_t *at = p;
      if (!opmsg_next_element(&p, end, &e)) {
         return opmsg_element_error(r, what, at, end);
      }
      n++;
   }
   if (count) {
      *count = n;
   }
   return true;
}
