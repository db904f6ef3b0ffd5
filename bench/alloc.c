/*
 * alloc.c - a counting bson_mem_vtable for opmsg-bench.
 *
 * Every allocation libbson and opmsg make goes through bson_malloc() and
 * friends, so counting at the vtable counts them all. The bookkeeping is two
 * additions per call: cheap enough to stay installed while timing, so the
 * counts come from the very operations that are timed.
 *
 * Bytes are the allocator's usable size (malloc_usable_size), which can be a
 * little more than what was asked for but needs no header in front of each
 * block (a header would change the allocations being measured).
 */
#include "bench.h"

#include <malloc.h>
#include <stdlib.h>

static bench_alloc_stats_t stats;

static void
note_alloc(void *p)
{
   if (p) {
      stats.calls++;
      stats.current += malloc_usable_size(p);
      if (stats.current > stats.peak) {
         stats.peak = stats.current;
      }
   }
}

static void
note_free(void *p)
{
   if (p) {
      stats.current -= malloc_usable_size(p);
   }
}

static void *
count_malloc(size_t n)
{
   void *p = malloc(n);
   note_alloc(p);
   return p;
}

static void *
count_calloc(size_t n, size_t size)
{
   void *p = calloc(n, size);
   note_alloc(p);
   return p;
}

static void *
count_realloc(void *old, size_t n)
{
   /* The old block's size must be taken before realloc frees it. A failed
    * realloc keeps the old block, so only then is it given back. */
   size_t old_size = old ? malloc_usable_size(old) : 0;
   void *p = realloc(old, n);
   if (p || n == 0) {
      stats.current -= old_size;
      note_alloc(p);
   }
   return p;
}

static void
count_free(void *p)
{
   note_free(p);
   free(p);
}

static void *
count_aligned_alloc(size_t alignment, size_t n)
{
   /* C11 aligned_alloc wants a size that is a multiple of the alignment. */
   size_t rounded = (n + alignment - 1) / alignment * alignment;
   void *p = aligned_alloc(alignment, rounded ? rounded : alignment);
   note_alloc(p);
   return p;
}

void
bench_alloc_install(void)
{
   static const bson_mem_vtable_t vtable = {
      .malloc = count_malloc,
      .calloc = count_calloc,
      .realloc = count_realloc,
      .free = count_free,
      .aligned_alloc = count_aligned_alloc,
   };
   bson_mem_set_vtable(&vtable);
}

void
bench_alloc_reset(void)
{
   stats.calls = 0;
   stats.base = stats.current;
   stats.peak = stats.current;
}

void
bench_alloc_get(bench_alloc_stats_t *out)
{
   *out = stats;
}
