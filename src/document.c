/*
 * document.c - bounds-checked walking of one level of a BSON document.
 *
 * The merger copies nested documents as opaque bytes, so by default only the
 * top level of each document is walked: every element's type, key and value
 * length, and each nested document's own length and terminator. Full
 * validation (validate.c) goes on from here into every level.
 */
#include "opmsg-document.h"


/* The words of a fault opmsg_doc_frame_check() found: the rule and its
 * offset are that check's, this only says them. */
static OPMSG_COLD bool
doc_frame_fail(opmsg_report_t *r, opmsg_error_code_t code, const uint8_t *doc, size_t avail, size_t max_len, size_t at,
               const char *what, const char *limit, opmsg_error_code_t too_large)
{
   size_t base = opmsg_report_at(r, doc);
   int32_t n = avail >= 4 ? opmsg_read_i32(doc) : 0;
   switch (code) {
   case OPMSG_ERR_DOCUMENT_TOO_LARGE:
      return opmsg_report(r, too_large != OPMSG_OK ? too_large : code, base,
                          "%s at offset %zu: length %d is above the limit of %zu%s%s%s", what, base, n, max_len,
                          limit ? " (" : "", limit ? limit : "", limit ? ")" : "");
   case OPMSG_ERR_DOCUMENT_TERMINATOR:
      return opmsg_report(r, code, base + at, "%s at offset %zu: last byte (offset %zu) is 0x%02x, not 0", what, base,
                          base + at, doc[at]);
   default:
      if (avail < 5) {
         return opmsg_report(r, code, base + at, "%s at offset %zu: %zu bytes left, a document needs at least 5", what,
                             base, avail);
      }
      if (n < 5) {
         return opmsg_report(r, code, base + at, "%s at offset %zu: length %d is below the minimum of 5", what, base,
                             n);
      }
      return opmsg_report(r, code, base + at, "%s at offset %zu: length %d runs past the %zu bytes available", what,
                          base, n, avail);
   }
}

bool
opmsg_doc_frame_named(opmsg_report_t *r, const uint8_t *doc, size_t avail, size_t max_len, const char *what,
                      const char *limit, opmsg_error_code_t too_large, uint32_t *len)
{
   size_t n = 0;
   opmsg_fault_t f;
   if (OPMSG_LIKELY(opmsg_doc_frame_check(doc, avail, max_len, &n, &f))) {
      *len = (uint32_t) n;
      return true;
   }
   return doc_frame_fail(r, f.code, doc, avail, max_len, f.at, what, limit, too_large);
}

bool
opmsg_doc_frame(opmsg_report_t *r, const uint8_t *doc, size_t avail, size_t max_len, const char *what, uint32_t *len)
{
   return opmsg_doc_frame_named(r, doc, avail, max_len, what, NULL, OPMSG_OK, len);
}

const char *
opmsg_doc_db(const uint8_t *doc, uint32_t *len)
{
   return opmsg_db_string(opmsg_field_named(doc, "$db", 3), len);
}

bool
opmsg_deep_ok(opmsg_deep_check_fn deep, const uint8_t *doc, size_t len)
{
   opmsg_report_t quiet;
   opmsg_report_init(&quiet, NULL, doc, 0, &opmsg_parser_side);
   return deep(&quiet, doc, (uint32_t) len, "");
}

bool
opmsg_doc_check_named(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *doc, size_t avail, size_t max_len,
                      const char *what, const char *limit, opmsg_error_code_t too_large, uint32_t *len)
{
   return opmsg_doc_frame_named(r, doc, avail, max_len, what, limit, too_large, len) &&
          (!opmsg_checks_top(limits) || opmsg_doc_check_top(r, doc, *len, what, NULL)) &&
          (!opmsg_checks_deep(limits) || limits->deep(r, doc, *len, what));
}

bool
opmsg_doc_check(opmsg_report_t *r, const opmsg_limits_t *limits, const uint8_t *doc, size_t avail, size_t max_len,
                const char *what, uint32_t *len)
{
   return opmsg_doc_check_named(r, limits, doc, avail, max_len, what, NULL, OPMSG_OK, len);
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
   const uint8_t *next, *nul = NULL;
   /* The rule is the check's; what follows only says it in words. */
   opmsg_error_code_t code = opmsg_element_check(p, end, &next, &nul);
   if (code == OPMSG_OK) {
      return true; /* not reached: callers ask about a bad element */
   }
   if (code == OPMSG_ERR_DOCUMENT_TERMINATOR) {
      return opmsg_report(r, code, offset,
                          "%s%selement at offset %zu: a 0 type byte ends the document %zu bytes before its length says",
                          in, sep, offset, (size_t) (end - p));
   }
   if (opmsg_type_sizes[type] == OPMSG_SZ_UNKNOWN) {
      return opmsg_report(r, code, offset, "%s%selement at offset %zu: unknown type 0x%02x", in, sep, offset, type);
   }
   if (!nul) {
      return opmsg_report(r, code, offset, "%s%selement at offset %zu: key has no terminating NUL inside the document",
                          in, sep, offset);
   }
   char name[OPMSG_PRINTABLE_SIZE];
   const char *key = (const char *) p + 1;
   opmsg_printable(name, key, (size_t) ((const char *) nul - key));
   if (code == OPMSG_ERR_INVALID_BOOLEAN) {
      return opmsg_report(r, code, offset, "%s%selement \"%s\" at offset %zu: boolean byte 0x%02x is neither 0 nor 1",
                          in, sep, name, offset, nul[1]);
   }
   return opmsg_report(
      r, code, offset,
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
