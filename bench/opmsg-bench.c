/*
 * opmsg-bench - how fast is opmsg at turning an OP_MSG into one document?
 *
 * For every case (a wire message) and every implementation, opmsg-bench
 * checks the implementation's output once against opmsg's merge (a difference
 * is fatal), then times it: an adaptive number of operations per repetition
 * so a repetition lasts about 2 ms, as many repetitions as fill --seconds
 * (at least --reps), run round-robin with the case's other implementations;
 * the median of the repetitions is reported in ns per operation.
 * Allocations are counted through a counting bson_mem_vtable during the
 * timed repetitions.
 *
 * It is not a test: the targets of the project are printed as PASS or MISS
 * but never change the exit status. Exit 0 on success, 2 on a usage error,
 * 3 when something fails (an output differs, a case cannot be loaded).
 */
#include "bench.h"
#include "opmsg-private.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Most repetitions one cell keeps (and the largest --reps). */
#define MAX_SAMPLES 1001

/* ---------------------------------------------------------------------------
 * The clock
 * ------------------------------------------------------------------------- */

/* CLOCK_MONOTONIC (wall time) by default; --cpu-time switches to the
 * thread's CPU time, which leaves out the time other jobs held the CPU. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double
now_ns(void)
{
   struct timespec ts;
   clock_gettime(bench_clock, &ts);
   return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* ---------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------- */

typedef struct {
   bool json;
   double seconds;   /* per cell */
   int reps;
   const char *data_dir;
   const char *cases; /* comma-separated filter, or NULL */
   const char *impls;
} options_t;

static void
usage(FILE *f)
{
   fputs("usage: opmsg-bench [--json] [--quick] [--seconds S] [--reps N] [--cpu-time]\n"
         "                   [--case NAME[,NAME...]] [--impl NAME[,NAME...]]\n"
         "                   [--data DIR] [--list]\n"
         "Times turning OP_MSG messages into one document; see "
         "docs/benchmarks.md.\n"
         "  --json        one JSON object per line instead of the table\n"
         "  --quick       about 0.05 s per cell instead of 0.3 s\n"
         "  --seconds S   time spent measuring each cell (default 0.3)\n"
         "  --reps N      at least N repetitions per cell (default 5); the\n"
         "                median of the repetitions (~2 ms each) is reported\n"
         "  --cpu-time    time with the thread's CPU clock instead of\n"
         "                CLOCK_MONOTONIC (steadier on a shared machine)\n"
         "  --case, --impl  only these (see --list); case crc32c is the "
         "checksum\n"
         "  --data DIR    where flat.bin, deep.bin, seq.bin are (or "
         "DIR/seed/)\n",
         f);
}

/* True when name is one of the comma-separated names of filter (or no
 * filter is set). */
static bool
selected(const char *filter, const char *name)
{
   if (!filter) {
      return true;
   }
   size_t n = strlen(name);
   const char *p = filter;
   while (*p) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t) (comma - p) : strlen(p);
      if (len == n && memcmp(p, name, n) == 0) {
         return true;
      }
      p += len + (comma ? 1 : 0);
   }
   return false;
}

static bool
parse_double(const char *s, double *out)
{
   char *end;
   errno = 0;
   double v = strtod(s, &end);
   if (errno || end == s || *end || !(v > 0) || v > 3600) {
      return false;
   }
   *out = v;
   return true;
}

static void list_everything(void);

/* Returns -1 to go on, or an exit status. */
static int
parse_options(int argc, char **argv, options_t *o)
{
   o->json = false;
   o->seconds = 0.3;
   o->reps = 5;
   o->data_dir = NULL;
   o->cases = NULL;
   o->impls = NULL;
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp(a, "--json")) {
         o->json = true;
      } else if (!strcmp(a, "--quick")) {
         o->seconds = 0.05;
         o->reps = 3;
      } else if (!strcmp(a, "--cpu-time")) {
         bench_clock = CLOCK_THREAD_CPUTIME_ID;
      } else if (!strcmp(a, "--list")) {
         list_everything();
         return 0;
      } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
         usage(stdout);
         return 0;
      } else if (v && !strcmp(a, "--seconds")) {
         if (!parse_double(v, &o->seconds)) {
            fprintf(stderr, "opmsg-bench: bad --seconds %s\n", v);
            return 2;
         }
         i++;
      } else if (v && !strcmp(a, "--reps")) {
         char *end;
         long r = strtol(v, &end, 10);
         if (*end || r < 1 || r > MAX_SAMPLES) {
            fprintf(stderr, "opmsg-bench: bad --reps %s\n", v);
            return 2;
         }
         o->reps = (int) r;
         i++;
      } else if (v && !strcmp(a, "--data")) {
         o->data_dir = v;
         i++;
      } else if (v && !strcmp(a, "--case")) {
         o->cases = v;
         i++;
      } else if (v && !strcmp(a, "--impl")) {
         o->impls = v;
         i++;
      } else {
         fprintf(stderr, "opmsg-bench: unknown or incomplete option %s\n", a);
         usage(stderr);
         return 2;
      }
   }
   return -1;
}

/* ---------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------- */

typedef struct {
   const char *case_name;
   const char *impl_name;
   double ns_per_op;
   size_t bytes_out;
   double allocs_per_op;
   size_t peak_bytes;   /* most heap bytes held at once, above the start */
   uint64_t ops;        /* operations timed */
   const char *baseline; /* the impl the "x" column divides by */
} result_t;

#define MAX_RESULTS 256
static result_t results[MAX_RESULTS];
static size_t n_results;

static const result_t *
find_result(const char *case_name, const char *impl_name)
{
   for (size_t i = 0; i < n_results; i++) {
      if (!strcmp(results[i].case_name, case_name) &&
          !strcmp(results[i].impl_name, impl_name)) {
         return &results[i];
      }
   }
   return NULL;
}

static void
format_allocs(char *buf, size_t size, double allocs)
{
   if (allocs == floor(allocs) && allocs < 1e15) {
      snprintf(buf, size, "%.0f", allocs);
   } else {
      snprintf(buf, size, "%.2f", allocs);
   }
}

static void
print_json(const result_t *r)
{
   char allocs[32];
   format_allocs(allocs, sizeof allocs, r->allocs_per_op);
   printf("{\"case\": \"%s\", \"impl\": \"%s\", \"ns_per_op\": %.1f, "
          "\"bytes_out\": %zu, \"allocs_per_op\": %s}\n",
          r->case_name, r->impl_name, r->ns_per_op, r->bytes_out, allocs);
   fflush(stdout);
}

/* ---------------------------------------------------------------------------
 * Timing
 * ------------------------------------------------------------------------- */

/* Keeps every operation's result alive. */
static volatile size_t sink;

static double
run_batch(bench_op_fn op, bench_case_t *c, uint64_t iters)
{
   size_t acc = 0;
   double t0 = now_ns();
   for (uint64_t i = 0; i < iters; i++) {
      acc += op(c, NULL);
   }
   double t1 = now_ns();
   sink = sink + acc;
   return t1 - t0;
}

static int
compare_double(const void *a, const void *b)
{
   double x = *(const double *) a, y = *(const double *) b;
   return (x > y) - (x < y);
}

/* One implementation being timed on one case. */
typedef struct {
   bench_op_fn op;
   uint64_t iters;       /* operations per repetition */
   int target;           /* repetitions to run */
   double samples[MAX_SAMPLES]; /* ns per operation, one per repetition */
   int n_samples;
   uint64_t calls;       /* allocations during the repetitions */
   size_t peak;          /* most bytes held at once above the start */
} cell_t;

/* A repetition lasts about this long, or one operation when that is longer.
 * Short repetitions matter on a shared machine: most of them then run
 * without being descheduled, and the median is their time, not the time
 * the machine spent on other jobs. */
#define REP_NS 2e6

/* Finds how many operations fill one repetition (grows the batch until it
 * is long enough to time, then sizes it to REP_NS) and how many
 * repetitions fill the cell's time: --seconds, but at least --reps. */
static void
cell_calibrate(cell_t *cell, bench_op_fn op, bench_case_t *c,
               const options_t *o)
{
   memset(cell, 0, sizeof *cell);
   cell->op = op;
   uint64_t iters = 1;
   double t = run_batch(op, c, iters);
   while (t < REP_NS / 4 && iters < (UINT64_C(1) << 40)) {
      iters *= t > 0 && REP_NS / 4 / t < 10 ? 2 : 10;
      t = run_batch(op, c, iters);
   }
   double per_op = t / (double) iters;
   iters = (uint64_t) (REP_NS / (per_op > 0 ? per_op : 1));
   cell->iters = iters ? iters : 1;
   double rep = per_op * (double) cell->iters;
   double n = o->seconds * 1e9 / (rep > 0 ? rep : 1);
   cell->target = n < o->reps ? o->reps : n > MAX_SAMPLES ? MAX_SAMPLES : (int) n;
}

/* One repetition, with allocation counting. */
static void
cell_run(cell_t *cell, bench_case_t *c)
{
   bench_alloc_stats_t st;
   bench_alloc_reset();
   double t = run_batch(cell->op, c, cell->iters);
   bench_alloc_get(&st);
   cell->samples[cell->n_samples++] = t / (double) cell->iters;
   cell->calls += st.calls;
   if (st.peak - st.base > cell->peak) {
      cell->peak = st.peak - st.base;
   }
}

/* Runs the repetitions of several cells round-robin (1, 2, ..., 1, 2, ...)
 * so that a burst of load from elsewhere hits them alike instead of skewing
 * their ratios. */
static void
cells_run(cell_t *cells, size_t n, bench_case_t *c)
{
   for (bool more = true; more;) {
      more = false;
      for (size_t i = 0; i < n; i++) {
         if (cells[i].n_samples < cells[i].target) {
            cell_run(&cells[i], c);
            more = true;
         }
      }
   }
}

static void
cell_finish(cell_t *cell, result_t *r)
{
   int n = cell->n_samples;
   qsort(cell->samples, (size_t) n, sizeof cell->samples[0], compare_double);
   uint64_t ops = cell->iters * (uint64_t) n;
   r->ns_per_op = n % 2 ? cell->samples[n / 2]
                        : (cell->samples[n / 2 - 1] + cell->samples[n / 2]) / 2;
   r->allocs_per_op = (double) cell->calls / (double) ops;
   r->peak_bytes = cell->peak;
   r->ops = ops;
}

/* Runs op once, keeping its output, and compares it with the reference. */
static size_t
check_output(const bench_impl_t *impl, bench_case_t *c)
{
   bench_out_t keep = {NULL, 0, NULL};
   size_t value = impl->op(c, &keep);
   size_t bytes_out = 0;
   if (!impl->writes_output) {
      bench_check_view(c);
   } else if (impl->check) {
      impl->check(c, &keep);
      bytes_out = keep.len;
   } else {
      const uint8_t *want = impl->expects_plain ? c->plain : c->merged;
      size_t want_len = impl->expects_plain ? c->plain_len : c->merged_len;
      if (keep.len != want_len || memcmp(keep.data, want, want_len) != 0) {
         bench_fatal("%s/%s: output (%zu bytes) differs from opmsg's merge "
                     "(%zu bytes)",
                     c->name, impl->name, keep.len, want_len);
      }
      bytes_out = keep.len;
   }
   if (keep.owned) {
      bson_destroy(keep.owned);
   }
   sink = sink + value;
   return bytes_out;
}

/* ---------------------------------------------------------------------------
 * CRC-32C
 * ------------------------------------------------------------------------- */

#define CRC_BYTES ((size_t) 1 << 20)

static uint8_t *crc_buf;

static size_t
op_crc_default(bench_case_t *c, bench_out_t *keep)
{
   (void) c;
   (void) keep;
   return opmsg_crc32c(0, crc_buf, CRC_BYTES);
}

static size_t
op_crc_portable(bench_case_t *c, bench_out_t *keep)
{
   (void) c;
   (void) keep;
   return opmsg_crc32c_portable(0, crc_buf, CRC_BYTES);
}

typedef struct {
   bool measured;
   const char *implementation;
   double gbps;          /* opmsg_crc32c */
   double portable_gbps; /* the portable table */
} crc_result_t;

static void
measure_crc(const options_t *o, crc_result_t *cr)
{
   crc_buf = bench_xmalloc(CRC_BYTES);
   uint64_t x = 0x2545F4914F6CDD1Du;
   for (size_t i = 0; i < CRC_BYTES; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      crc_buf[i] = (uint8_t) x;
   }
   if (opmsg_crc32c(0, "123456789", 9) != 0xE3069283u ||
       opmsg_crc32c_portable(0, "123456789", 9) != 0xE3069283u ||
       opmsg_crc32c(0, crc_buf, CRC_BYTES) !=
          opmsg_crc32c_portable(0, crc_buf, CRC_BYTES)) {
      bench_fatal("crc32c: wrong check value");
   }

   bench_case_t none;
   memset(&none, 0, sizeof none);
   none.name = "crc32c";
   cr->implementation = opmsg_crc32c_implementation();

   /* Round-robin, like the cases, so the two are compared under the same
    * load. */
   result_t r[2];
   static cell_t cells[2];
   memset(r, 0, sizeof r);
   cell_calibrate(&cells[0], op_crc_default, &none, o);
   cell_calibrate(&cells[1], op_crc_portable, &none, o);
   cells_run(cells, 2, &none);
   cell_finish(&cells[0], &r[0]);
   cell_finish(&cells[1], &r[1]);
   r[0].impl_name = cr->implementation;
   r[1].impl_name = "portable";
   cr->gbps = (double) CRC_BYTES / r[0].ns_per_op;
   cr->portable_gbps = (double) CRC_BYTES / r[1].ns_per_op;
   cr->measured = true;
   if (o->json) {
      for (size_t i = 0; i < 2; i++) {
         r[i].case_name = "crc32c";
         r[i].bytes_out = 4;
         print_json(&r[i]);
      }
   }
   free(crc_buf);
   crc_buf = NULL;
}

/* ---------------------------------------------------------------------------
 * Report
 * ------------------------------------------------------------------------- */

static double
ratio(const char *case_name, const char *num, const char *den)
{
   const result_t *a = find_result(case_name, num);
   const result_t *b = find_result(case_name, den);
   if (!a || !b || b->ns_per_op <= 0) {
      return NAN;
   }
   return a->ns_per_op / b->ns_per_op;
}

static void
print_table_header(void)
{
   printf("%-10s %-17s %14s %10s %11s %10s %12s\n", "case", "impl", "ns/op",
          "x limit", "bytes_out", "allocs/op", "peak bytes");
}

static void
print_table_row(const result_t *r)
{
   char allocs[32];
   char vs[32] = "";
   format_allocs(allocs, sizeof allocs, r->allocs_per_op);
   double x = r->baseline ? ratio(r->case_name, r->impl_name, r->baseline) : NAN;
   if (!isnan(x)) {
      snprintf(vs, sizeof vs, "%.2f", x);
   }
   printf("%-10s %-17s %14.1f %10s %11zu %10s %12zu\n", r->case_name,
          r->impl_name, r->ns_per_op, vs, r->bytes_out, allocs, r->peak_bytes);
   fflush(stdout);
}

/* The project's speed targets (issues 2 and 3). */
typedef enum { AT_MOST, AT_LEAST } sense_t;

typedef struct {
   const char *case_name;
   const char *num;  /* ratio num/den ... */
   const char *den;
   sense_t sense;
   double bound;
   const char *text;
} target_t;

static const target_t speed_targets[] = {
   {"big", "merge_into", "memcpy", AT_MOST, 1.2, "merge_into <= 1.2x memcpy on big"},
   {"seq", "merge_into", "memcpy", AT_MOST, 3.0, "merge_into <= 3x memcpy on seq"},
   {"flat", "reencode_libbson", "merge_bson", AT_LEAST, 100, "merge_bson >= 100x faster than reencode_libbson on flat"},
   {"deep", "reencode_libbson", "merge_bson", AT_LEAST, 100, "merge_bson >= 100x faster than reencode_libbson on deep"},
   {"seq", "reencode_libbson", "merge_bson", AT_LEAST, 30, "merge_bson >= 30x faster than reencode_libbson on seq"},
   {"seq", "mongoc_append", "merge_bson", AT_LEAST, 3, "merge_bson >= 3x faster than mongoc_append on seq"},
};

typedef struct {
   const char *impl;
   double allocs;
} alloc_target_t;

static const alloc_target_t alloc_targets[] = {
   {"merge_bson", 1}, {"merge_into", 0}, {"view", 0},
};

static void
print_ratios(FILE *f)
{
   if (n_results == 0) {
      return;
   }
   fprintf(f, "\nratios (time / time):\n");
   for (size_t i = 0; i < n_results; i++) {
      const char *cn = results[i].case_name;
      bool first = true;
      for (size_t j = 0; j < i; j++) {
         if (!strcmp(results[j].case_name, cn)) {
            first = false;
         }
      }
      if (!first) {
         continue;
      }
      double x[5] = {
         ratio(cn, "merge_into", "memcpy"),
         ratio(cn, "reencode_libbson", "merge_bson"),
         ratio(cn, "mongoc_append", "merge_bson"),
         ratio(cn, "decompress_merge", "decompress"),
         ratio(cn, "encode_split", "memcpy"),
      };
      static const char *const label[5] = {
         "merge_into/memcpy", "reencode/merge_bson", "mongoc_append/merge_bson",
         "decompress_merge/decompress", "encode_split/memcpy",
      };
      bool any = false;
      for (size_t k = 0; k < 5; k++) {
         if (isnan(x[k])) {
            continue;
         }
         if (!any) {
            fprintf(f, "  %-10s", cn);
            any = true;
         }
         fprintf(f, "  %s %.*fx", label[k], x[k] >= 10 ? 1 : 2, x[k]);
      }
      if (!any) {
         continue;
      }
      fprintf(f, "\n");
   }
}

static void
print_targets(FILE *f, const crc_result_t *crc)
{
   fprintf(f, "\ntargets (informative, never fatal):\n");
   for (size_t i = 0; i < sizeof speed_targets / sizeof speed_targets[0]; i++) {
      const target_t *t = &speed_targets[i];
      double x = ratio(t->case_name, t->num, t->den);
      if (isnan(x)) {
         fprintf(f, "  SKIP %s (not measured)\n", t->text);
         continue;
      }
      bool pass = t->sense == AT_MOST ? x <= t->bound : x >= t->bound;
      fprintf(f, "  %s %s: %.2fx\n", pass ? "PASS" : "MISS", t->text, x);
      /* A target against merge_bson leaves a time budget; the bare
       * allocation and copy take part of it, and what is left is for
       * parsing and checking, which the view alone (parse, no copy) shows. */
      const result_t *num = find_result(t->case_name, t->num);
      const result_t *floor = find_result(t->case_name, "alloc_copy");
      const result_t *view = find_result(t->case_name, "view");
      const result_t *copy = find_result(t->case_name, "memcpy");
      if (strcmp(t->num, "merge_into") == 0 && copy && t->sense == AT_MOST) {
         fprintf(f, "       leaves %.1f ns beside the copy for parsing and checking; the view (parse, no copy) takes %.1f ns\n",
                 (t->bound - 1) * copy->ns_per_op, view ? view->ns_per_op : NAN);
      }
      if (strcmp(t->den, "merge_bson") == 0 && num && floor && t->sense == AT_LEAST) {
         double left = num->ns_per_op / t->bound - floor->ns_per_op;
         if (left <= 0) {
            fprintf(f, "       out of reach: alloc_copy alone (no parse, no check) takes %.1f ns of the %.1f ns allowed\n",
                    floor->ns_per_op, num->ns_per_op / t->bound);
         } else {
            fprintf(f, "       leaves %.1f ns beside alloc_copy for parsing and checking; the view (parse, no copy) takes %.1f ns\n",
                    left, view ? view->ns_per_op : NAN);
         }
      }
   }
   /* Issue 3: merging a compressed message adds no more than a memcpy of
    * the merged document to decompressing it. */
   static const char *const compressed[] = {"big_zstd", "big_snappy"};
   for (size_t i = 0; i < sizeof compressed / sizeof compressed[0]; i++) {
      const result_t *both = find_result(compressed[i], "decompress_merge");
      const result_t *alone = find_result(compressed[i], "decompress");
      const result_t *copy = find_result(compressed[i], "memcpy");
      if (!both || !alone || !copy) {
         fprintf(f, "  SKIP merging adds <= a memcpy to decompressing on %s (not measured)\n",
                 compressed[i]);
         continue;
      }
      double added = both->ns_per_op - alone->ns_per_op;
      fprintf(f, "  %s merging adds <= a memcpy to decompressing on %s: +%.0f ns vs memcpy %.0f ns (%.2fx)\n",
              added <= copy->ns_per_op ? "PASS" : "MISS", compressed[i], added,
              copy->ns_per_op, added / copy->ns_per_op);
   }
   for (size_t i = 0; i < sizeof alloc_targets / sizeof alloc_targets[0]; i++) {
      const alloc_target_t *t = &alloc_targets[i];
      bool any = false, pass = true;
      char seen[256] = "";
      for (size_t j = 0; j < n_results; j++) {
         const result_t *r = &results[j];
         if (strcmp(r->impl_name, t->impl) != 0) {
            continue;
         }
         any = true;
         char allocs[32];
         format_allocs(allocs, sizeof allocs, r->allocs_per_op);
         size_t used = strlen(seen);
         snprintf(seen + used, sizeof seen - used, "%s%s %s", used ? ", " : "",
                  r->case_name, allocs);
         if (r->allocs_per_op != t->allocs) {
            pass = false;
         }
      }
      if (!any) {
         fprintf(f, "  SKIP %s: exactly %.0f allocation(s) per op (not measured)\n",
                 t->impl, t->allocs);
      } else {
         fprintf(f, "  %s %s: exactly %.0f allocation(s) per op: %s\n",
                 pass ? "PASS" : "MISS", t->impl, t->allocs, seen);
      }
   }
   if (!crc->measured) {
      fprintf(f, "  SKIP CRC-32C >= 40 GB/s on 1 MiB (not measured)\n");
   } else if (strcmp(crc->implementation, "isa-l") != 0) {
      fprintf(f, "  SKIP CRC-32C >= 40 GB/s on 1 MiB (built without ISA-L: %.2f GB/s)\n",
              crc->gbps);
   } else {
      fprintf(f, "  %s CRC-32C >= 40 GB/s on 1 MiB with ISA-L: %.2f GB/s\n",
              crc->gbps >= 40 ? "PASS" : "MISS", crc->gbps);
   }
}

static void
list_everything(void)
{
   printf("cases:\n");
   for (size_t i = 0; i < bench_n_cases; i++) {
      printf("  %-12s %s\n", bench_cases[i].name, bench_cases[i].what);
   }
   printf("  %-12s opmsg_crc32c over 1 MiB in cache, and the portable table\n",
          "crc32c");
   printf("impls:\n");
   for (size_t i = 0; i < bench_n_impls; i++) {
      printf("  %-17s %s\n", bench_impls[i].name, bench_impls[i].what);
   }
}

/* ---------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------- */

/* Checks and calibrates every implementation that applies to the case (the
 * baseline first, as the other rows are compared with it), then runs their
 * repetitions round-robin. */
static void
run_case(const bench_case_def_t *def, bench_case_t *c, const options_t *o)
{
   const bench_impl_t *impls[32];
   size_t n = 0;
   for (int pass = 0; pass < 2; pass++) {
      for (size_t i = 0; i < bench_n_impls && n < 32; i++) {
         const bench_impl_t *impl = &bench_impls[i];
         bool is_baseline = !strcmp(impl->name, def->baseline);
         if ((pass == 0) == is_baseline &&
             (impl->kinds & BENCH_KIND_BIT(c->kind)) &&
             selected(o->impls, impl->name)) {
            impls[n++] = impl;
         }
      }
   }
   if (n_results + n > MAX_RESULTS) {
      bench_fatal("too many results");
   }

   static cell_t cells[32];
   result_t *first = &results[n_results];
   for (size_t i = 0; i < n; i++) {
      result_t *r = &results[n_results + i];
      memset(r, 0, sizeof *r);
      r->case_name = c->name;
      r->impl_name = impls[i]->name;
      r->baseline = def->baseline;
      r->bytes_out = check_output(impls[i], c);
      cell_calibrate(&cells[i], impls[i]->op, c, o);
   }
   cells_run(cells, n, c);
   n_results += n;
   for (size_t i = 0; i < n; i++) {
      cell_finish(&cells[i], &first[i]);
   }
   for (size_t i = 0; i < n; i++) {
      if (o->json) {
         print_json(&first[i]);
      } else {
         print_table_row(&first[i]);
      }
   }
}

/* Every name of a --case or --impl filter must exist: a typo would
 * otherwise measure nothing and look like a result. */
static bool
filter_known(const char *filter, bool cases)
{
   const char *p = filter;
   while (p && *p) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t) (comma - p) : strlen(p);
      bool known = cases && len == 6 && !memcmp(p, "crc32c", 6);
      size_t n = cases ? bench_n_cases : bench_n_impls;
      for (size_t i = 0; i < n && !known; i++) {
         const char *name = cases ? bench_cases[i].name : bench_impls[i].name;
         known = strlen(name) == len && !memcmp(name, p, len);
      }
      if (!known) {
         fprintf(stderr, "opmsg-bench: unknown %s \"%.*s\" (see --list)\n",
                 cases ? "case" : "impl", (int) len, p);
         return false;
      }
      p += len + (comma ? 1 : 0);
   }
   return true;
}

int
main(int argc, char **argv)
{
   /* Before libbson allocates anything: blocks must be freed by the
    * allocator that made them. */
   bench_alloc_install();

   options_t o;
   int status = parse_options(argc, argv, &o);
   if (status >= 0) {
      return status;
   }

   if (!filter_known(o.cases, true) || !filter_known(o.impls, false)) {
      return 2;
   }
   if (!o.json) {
      printf("opmsg-bench %s: libbson %s, CRC-32C %s; %.2f s per cell, "
             "median of >= %d repetitions, %s\n",
             opmsg_version_string(), bson_get_version(),
             opmsg_crc32c_implementation(), o.seconds, o.reps,
             bench_clock == CLOCK_MONOTONIC ? "wall time" : "thread CPU time");
   }

   size_t n_selected = 0;
   for (size_t i = 0; i < bench_n_cases; i++) {
      const bench_case_def_t *def = &bench_cases[i];
      if (!selected(o.cases, def->name)) {
         continue;
      }
      if (!o.json && n_selected == 0) {
         printf("\n");
         print_table_header();
      }
      n_selected++;
      bench_case_t c;
      memset(&c, 0, sizeof c);
      if (!def->make(&c, o.data_dir)) {
         return 3;
      }
      run_case(def, &c, &o);
      bench_case_free(&c);
   }

   crc_result_t crc;
   memset(&crc, 0, sizeof crc);
   /* The checksum is not an implementation of the merge: it runs unless a
    * filter leaves it out (an --impl filter does, unless --case names it). */
   if (o.cases ? selected(o.cases, "crc32c") : !o.impls) {
      n_selected++;
      measure_crc(&o, &crc);
   }
   if (n_selected == 0) {
      fprintf(stderr, "opmsg-bench: no case matches --case %s (see --list)\n",
              o.cases);
      return 2;
   }

   /* With --json, stdout carries only the JSON lines; the summary goes to
    * stderr for people and for scripts that keep it. */
   FILE *summary = o.json ? stderr : stdout;
   if (!o.json && crc.measured) {
      printf("\nCRC-32C over 1 MiB in cache: %s %.2f GB/s, portable %.2f GB/s\n",
             crc.implementation, crc.gbps, crc.portable_gbps);
   } else if (crc.measured) {
      fprintf(stderr, "CRC-32C over 1 MiB in cache: %s %.2f GB/s, portable %.2f GB/s\n",
              crc.implementation, crc.gbps, crc.portable_gbps);
   }
   print_ratios(summary);
   print_targets(summary, &crc);
   if (!o.json && strcmp(bench_data_dir_used(), "(none)") != 0) {
      printf("\nseed data: %s\n", bench_data_dir_used());
   }
   return 0;
}
