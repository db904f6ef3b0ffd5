/*
 * report.c - writing down a fault: the rule broken, where, and the message
 * for the caller (the report context of opmsg-common.h), and the escaping
 * that keeps a message on one line whatever bytes it quotes.
 */
#include "opmsg-common.h"

#include <stdarg.h>
#include <stdio.h>

static void
write_message(bson_error_t *error, opmsg_error_code_t code, const char *fmt, va_list ap)
{
   error->domain = OPMSG_ERROR_DOMAIN;
   error->code = (uint32_t) code;
   vsnprintf(error->message, sizeof error->message, fmt, ap);
}

bool
opmsg_fail(bson_error_t *error, opmsg_error_code_t code, const char *fmt, ...)
{
   if (error) {
      va_list ap;
      va_start(ap, fmt);
      write_message(error, code, fmt, ap);
      va_end(ap);
   }
   return false;
}

bool
opmsg_report(opmsg_report_t *r, opmsg_error_code_t code, size_t offset, const char *fmt, ...)
{
   r->code = code;
   r->offset = offset;
   if (r->error) {
      va_list ap;
      va_start(ap, fmt);
      write_message(r->error, r->code, fmt, ap);
      va_end(ap);
   }
   return false;
}

bool
opmsg_report_as(opmsg_report_t *r, opmsg_error_code_t code)
{
   if (code != OPMSG_OK) {
      r->code = code;
      if (r->error) {
         r->error->code = (uint32_t) code;
      }
   }
   return false;
}

const char *
opmsg_printable(char *out, const char *name, size_t len)
{
   _Static_assert(OPMSG_PRINTABLE_BYTES * 4 + 4 <= OPMSG_PRINTABLE_SIZE, "room for the escaped bytes");
   static const char hex[] = "0123456789abcdef";
   size_t o = 0;
   size_t n = len < OPMSG_PRINTABLE_BYTES ? len : OPMSG_PRINTABLE_BYTES;
   for (size_t i = 0; i < n; i++) {
      unsigned char c = (unsigned char) name[i];
      if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
         out[o++] = (char) c;
      } else {
         out[o++] = '\\';
         out[o++] = 'x';
         out[o++] = hex[c >> 4];
         out[o++] = hex[c & 15];
      }
   }
   if (n < len) {
      memcpy(out + o, "...", 3);
      o += 3;
   }
   out[o] = '\0';
   return out;
}
