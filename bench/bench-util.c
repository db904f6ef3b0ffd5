/*
 * bench-util.c - what every file of opmsg-bench calls when something goes
 * wrong or needs memory outside the measurements.
 *
 * Kept apart from opmsg-bench.c (which runs the cells and writes the
 * report) so that no file has to call back into the program's main file;
 * the lookups of measured results the report and the targets share are
 * here for the same reason.
 * The helpers that run inside timed operations are static inline in
 * bench.h instead: a call into another file would be timed too.
 */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *bench_prog = "opmsg-bench";

_Noreturn void
bench_fatal(const char *fmt, ...)
{
   va_list ap;
   fflush(stdout);
   fprintf(stderr, "%s: ", bench_prog);
   va_start(ap, fmt);
   vfprintf(stderr, fmt, ap);
   va_end(ap);
   fputc('\n', stderr);
   exit(3);
}

void *
bench_xmalloc(size_t n)
{
   void *p = malloc(n ? n : 1);
   if (!p) {
      bench_fatal("out of memory (%zu bytes)", n);
   }
   return p;
}

const opmsg_check_t bench_levels[BENCH_N_LEVELS] = {
   OPMSG_CHECK_SPEC,
   OPMSG_CHECK_TOP_LEVEL,
   OPMSG_CHECK_FULL,
};

const bench_result_t *
bench_find_result(const bench_run_t *run, const char *case_name, const char *impl_name, int level)
{
   for (size_t i = 0; i < run->n_results; i++) {
      const bench_result_t *r = &run->results[i];
      if ((r->level == level || r->level == BENCH_LEVEL_NONE) && !strcmp(r->case_name, case_name) &&
          !strcmp(r->impl_name, impl_name)) {
         return r;
      }
   }
   return NULL;
}

const char *
bench_level_name(int level)
{
   const char *name = level == BENCH_LEVEL_NONE ? NULL : opmsg_check_name((opmsg_check_t) level);
   return name ? name : "-";
}

void
bench_format_allocs(char *buf, size_t size, double allocs)
{
   if (allocs == floor(allocs) && allocs < 1e15) {
      snprintf(buf, size, "%.0f", allocs);
   } else {
      snprintf(buf, size, "%.2f", allocs);
   }
}

void
bench_json_string(FILE *f, const char *s)
{
   fputc('"', f);
   for (; *s; s++) {
      unsigned char ch = (unsigned char) *s;
      if (ch == '"' || ch == '\\') {
         fprintf(f, "\\%c", ch);
      } else if (ch < 0x20) {
         fprintf(f, "\\u%04x", ch);
      } else {
         fputc(ch, f);
      }
   }
   fputc('"', f);
}

bool
bench_in_list(const char *list, const char *name)
{
   size_t n = strlen(name);
   for (const char *p = list; *p;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t) (comma - p) : strlen(p);
      if (len == n && memcmp(p, name, n) == 0) {
         return true;
      }
      p += len + (comma ? 1 : 0);
   }
   return false;
}

void
bench_case_adopt(bench_case_t *c, const char *name, bench_kind_t kind, uint8_t *bytes, size_t len)
{
   c->name = name;
   c->kind = kind;
   c->msg = bench_xmalloc(len);
   memcpy(c->msg, bytes, len);
   c->msg_len = len;
   bson_free(bytes);
}
