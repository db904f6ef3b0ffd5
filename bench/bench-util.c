/*
 * bench-util.c - what every file of opmsg-bench calls when something goes
 * wrong or needs memory outside the measurements.
 *
 * Kept apart from opmsg-bench.c (which runs the cells and writes the
 * report) so that no file has to call back into the program's main file.
 * The helpers that run inside timed operations are static inline in
 * bench.h instead: a call into another file would be timed too.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

_Noreturn void
bench_fatal(const char *fmt, ...)
{
   va_list ap;
   fflush(stdout);
   fputs("opmsg-bench: ", stderr);
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
