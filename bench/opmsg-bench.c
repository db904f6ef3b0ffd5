/*
 * opmsg-bench - how fast is opmsg at turning an OP_MSG into one document?
 *
 * For every case (a wire message), every implementation and, for the
 * implementations that parse with opmsg, every check level (spec,
 * top-level, full: opmsg_options_t.check), opmsg-bench checks the output
 * once against opmsg's merge (a difference is fatal), then times it: an
 * adaptive number of operations per repetition so a repetition lasts about
 * 2 ms, as many repetitions as fill --seconds (at least --reps), run
 * round-robin with all the other cells of the case, every level's; the
 * median of the repetitions is reported in ns per operation. Allocations
 * are counted through a counting bson_mem_vtable during the timed
 * repetitions.
 *
 * It is not a test: the targets of the project (targets.c) are printed as
 * PASS or MISS but never change the exit status. Exit 0 on success, 2 on a
 * usage error, 3 when something fails (an output differs, a case cannot be
 * loaded).
 */
#include "bench.h"
#include "opmsg-checksum.h"

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
   bool brief;     /* a short table for people, and the summary line */
   double seconds; /* per cell */
   int reps;
   const char *data_dir;
   const char *cases; /* comma-separated filter, or NULL */
   const char *impls;
   unsigned levels; /* BENCH_LEVEL_BIT of each check level to run */
} options_t;

static void
usage(FILE *f)
{
   fputs("usage: opmsg-bench [--json | --brief] [--quick] [--seconds S] [--reps N] [--cpu-time]\n"
         "                   [--case NAME[,NAME...]] [--impl NAME[,NAME...]]\n"
         "                   [--check LEVEL[,LEVEL...]] [--data DIR] [--list]\n"
         "Times turning OP_MSG messages into one document; see "
         "docs/benchmarks.md.\n"
         "  --json        one JSON object per line instead of the table\n"
         "  --brief       instead of the table, ratios and targets: a short\n"
         "                table of opmsg against the other ways, and the summary\n"
         "  --quick       about 0.05 s per cell instead of 0.3 s\n"
         "  --seconds S   time spent measuring each cell (default 0.3)\n"
         "  --reps N      at least N repetitions per cell (default 5); the\n"
         "                median of the repetitions (~2 ms each) is reported\n"
         "  --cpu-time    time with the thread's CPU clock instead of\n"
         "                CLOCK_MONOTONIC (steadier on a shared machine)\n"
         "  --case, --impl  only these (see --list); case crc32c is the "
         "checksum\n"
         "  --check LEVEL  parse at these levels only: spec (the\n"
         "                default), top-level, full (default: each of them)\n"
         "  --data DIR    where flat.bin, deep.bin, seq.bin are (or "
         "DIR/seed/)\n",
         f);
}

/* True when name is one of the comma-separated names of filter (or no
 * filter is set). */
static bool
selected(const char *filter, const char *name)
{
   return !filter || bench_in_list(filter, name);
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

/* The levels of --check: comma-separated names of opmsg_check_name(). */
static bool
parse_levels(const char *list, unsigned *levels)
{
   *levels = 0;
   for (const char *p = list; *p;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t) (comma - p) : strlen(p);
      char name[32];
      opmsg_check_t check;
      if (len == 0 || len >= sizeof name) {
         return false;
      }
      memcpy(name, p, len);
      name[len] = '\0';
      if (!opmsg_check_from_name(name, &check)) {
         return false;
      }
      *levels |= BENCH_LEVEL_BIT(check);
      p += len + (comma ? 1 : 0);
   }
   return *levels != 0;
}

/* Returns -1 to go on, or an exit status. */
static int
parse_options(int argc, char **argv, options_t *o)
{
   o->json = false;
   o->brief = false;
   o->seconds = 0.3;
   o->reps = 5;
   o->data_dir = NULL;
   o->cases = NULL;
   o->impls = NULL;
   o->levels = 0;
   for (size_t k = 0; k < BENCH_N_LEVELS; k++) {
      o->levels |= BENCH_LEVEL_BIT(bench_levels[k]);
   }
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp(a, "--json")) {
         o->json = true;
      } else if (!strcmp(a, "--brief")) {
         o->brief = true;
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
      } else if (v && !strcmp(a, "--check")) {
         if (!parse_levels(v, &o->levels)) {
            fprintf(stderr, "opmsg-bench: bad --check %s (spec, top-level, full)\n", v);
            return 2;
         }
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

typedef bench_result_t result_t;

#define MAX_RESULTS 1024
static result_t results[MAX_RESULTS];
static size_t n_results;
#define MAX_CASES 32
static bench_case_info_t case_infos[MAX_CASES];
static size_t n_case_infos;
static bench_run_t run = {results, 0, case_infos, 0, 0};

static const result_t *
find_result(const char *case_name, const char *impl_name, int level)
{
   run.n_results = n_results;
   return bench_find_result(&run, case_name, impl_name, level);
}

/* {"case": "seq", "check": "spec", "impl": "merge_into", ...}; "check"
 * is null for an implementation that does not parse with opmsg. */
static void
print_json(const result_t *r)
{
   char allocs[32];
   char check[32] = "null";
   bench_format_allocs(allocs, sizeof allocs, r->allocs_per_op);
   if (r->level != BENCH_LEVEL_NONE) {
      snprintf(check, sizeof check, "\"%s\"", bench_level_name(r->level));
   }
   printf("{\"case\": \"%s\", \"check\": %s, \"impl\": \"%s\", "
          "\"ns_per_op\": %.1f, \"bytes_out\": %zu, \"allocs_per_op\": %s}\n",
          r->case_name, check, r->impl_name, r->ns_per_op, r->bytes_out, allocs);
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

/* One implementation being timed on one case at one level. */
typedef struct {
   bench_op_fn op;
   bench_case_t *c;             /* the case, as the level parses it */
   uint64_t iters;              /* operations per repetition */
   int target;                  /* repetitions to run */
   double samples[MAX_SAMPLES]; /* ns per operation, one per repetition */
   int n_samples;
   uint64_t calls; /* allocations during the repetitions */
   size_t peak;    /* most bytes held at once above the start */
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
cell_calibrate(cell_t *cell, bench_op_fn op, bench_case_t *c, const options_t *o)
{
   memset(cell, 0, sizeof *cell);
   cell->op = op;
   cell->c = c;
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
cell_run(cell_t *cell)
{
   bench_alloc_stats_t st;
   bench_alloc_reset();
   double t = run_batch(cell->op, cell->c, cell->iters);
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
cells_run(cell_t *cells, size_t n)
{
   for (bool more = true; more;) {
      more = false;
      for (size_t i = 0; i < n; i++) {
         if (cells[i].n_samples < cells[i].target) {
            cell_run(&cells[i]);
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
   r->ns_per_op = n % 2 ? cell->samples[n / 2] : (cell->samples[n / 2 - 1] + cell->samples[n / 2]) / 2;
   r->allocs_per_op = (double) cell->calls / (double) ops;
   r->peak_bytes = cell->peak;
   r->ops = ops;
}

/* Whether impl parses with opmsg: it runs once per check level. */
static bool
per_level(const bench_impl_t *impl)
{
   return (impl->flags & BENCH_PER_LEVEL) != 0;
}

/* Runs op once, keeping its output, and compares it with the reference. */
static size_t
check_output(const bench_impl_t *impl, bench_case_t *c)
{
   bench_out_t keep = {NULL, 0, NULL};
   size_t value = impl->op(c, &keep);
   bool writes = (impl->flags & (BENCH_WRITES | BENCH_WRITES_PLAIN)) != 0;
   bool plain = (impl->flags & BENCH_WRITES_PLAIN) != 0;
   size_t bytes_out = writes ? keep.len : 0;
   if (impl->check) {
      impl->check(c, &keep);
   } else if (writes) {
      const uint8_t *want = plain ? c->plain : c->merged;
      size_t want_len = plain ? c->plain_len : c->merged_len;
      if (keep.len != want_len || memcmp(keep.data, want, want_len) != 0) {
         bench_fatal("%s/%s at %s: output (%zu bytes) differs from opmsg's "
                     "merge (%zu bytes)",
                     c->name, impl->name, per_level(impl) ? opmsg_check_name(c->opts.check) : "-", keep.len, want_len);
      }
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
   if (opmsg_crc32c(0, "123456789", 9) != 0xE3069283u || opmsg_crc32c_portable(0, "123456789", 9) != 0xE3069283u ||
       opmsg_crc32c(0, crc_buf, CRC_BYTES) != opmsg_crc32c_portable(0, crc_buf, CRC_BYTES)) {
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
   cells_run(cells, 2);
   cell_finish(&cells[0], &r[0]);
   cell_finish(&cells[1], &r[1]);
   r[0].impl_name = cr->implementation;
   r[1].impl_name = "portable";
   r[0].level = r[1].level = BENCH_LEVEL_NONE;
   /* Kept with the other results, for the target; the portable table once
    * (it is also the default when there is no ISA-L). */
   for (size_t i = 0; i < 2 && n_results < MAX_RESULTS; i++) {
      if (i == 0 || strcmp(r[0].impl_name, r[1].impl_name) != 0) {
         results[n_results] = r[i];
         results[n_results].case_name = "crc32c";
         results[n_results].level = BENCH_LEVEL_NONE;
         results[n_results].bytes_out = 4;
         n_results++;
      }
   }

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

/* t(num) / t(den) on a case at a level; NAN when either is missing. */
static double
ratio(const char *case_name, const char *num, const char *den, int level)
{
   const result_t *a = find_result(case_name, num, level);
   const result_t *b = find_result(case_name, den, level);
   if (!a || !b || b->ns_per_op <= 0) {
      return NAN;
   }
   return a->ns_per_op / b->ns_per_op;
}

static void
print_table_header(void)
{
   printf("%-11s %-9s %-18s %12s %9s %11s %9s %11s\n", "case", "check", "impl", "ns/op", "x limit", "bytes_out",
          "allocs/op", "peak bytes");
}

static void
print_table_row(const result_t *r)
{
   char allocs[32];
   char vs[32] = "";
   bench_format_allocs(allocs, sizeof allocs, r->allocs_per_op);
   double x = r->baseline ? ratio(r->case_name, r->impl_name, r->baseline, r->level) : NAN;
   if (!isnan(x)) {
      snprintf(vs, sizeof vs, "%.2f", x);
   }
   printf("%-11s %-9s %-18s %12.1f %9s %11zu %9s %11zu\n", r->case_name, bench_level_name(r->level), r->impl_name,
          r->ns_per_op, vs, r->bytes_out, allocs, r->peak_bytes);
   fflush(stdout);
}

/* --brief: per case, opmsg's merge to a new bson_t at the default level
 * against decoding and re-encoding every value with libbson and against
 * libmongoc 1.23's append, in ns per message, and how many times faster;
 * then what the top-level level costs on top. */
static void
print_brief(FILE *f)
{
   opmsg_options_t defaults;
   opmsg_options_init(&defaults);
   int d = (int) defaults.check;
   fprintf(f, "\nns per message (%s), opmsg at its default check level, %s:\n\n",
           bench_clock == CLOCK_MONOTONIC ? "wall time" : "thread CPU time", opmsg_check_name(defaults.check));
   fprintf(f, "%-8s %9s %12s %12s %14s %14s %12s\n", "case", "bytes", "memcpy", "opmsg", "libbson", "libmongoc",
           "opmsg at");
   fprintf(f, "%-8s %9s %12s %12s %14s %14s %12s\n", "", "", "(the floor)", "merge_bson", "re-encode", "append",
           "top-level");
   for (size_t i = 0; i < n_case_infos; i++) {
      const char *cn = case_infos[i].name;
      const result_t *m = find_result(cn, "merge_bson", d);
      const result_t *c = find_result(cn, "memcpy", BENCH_LEVEL_NONE);
      const result_t *r = find_result(cn, "reencode_libbson", BENCH_LEVEL_NONE);
      const result_t *a = find_result(cn, "mongoc_append", BENCH_LEVEL_NONE);
      const result_t *t = find_result(cn, "merge_bson", OPMSG_CHECK_TOP_LEVEL);
      if (!m) {
         continue;
      }
      char cs[32] = "-", rs[32] = "-", as[32] = "-", ts[32] = "-";
      if (c) {
         snprintf(cs, sizeof cs, "%.0f", c->ns_per_op);
      }
      if (r) {
         snprintf(rs, sizeof rs, "%.0f (%.0fx)", r->ns_per_op, r->ns_per_op / m->ns_per_op);
      }
      if (a) {
         snprintf(as, sizeof as, "%.0f (%.1fx)", a->ns_per_op, a->ns_per_op / m->ns_per_op);
      }
      if (t) {
         snprintf(ts, sizeof ts, "%.0f", t->ns_per_op);
      }
      fprintf(f, "%-8s %9zu %12s %12.0f %14s %14s %12s\n", cn, m->bytes_out, cs, m->ns_per_op, rs, as, ts);
   }
   fprintf(f, "\n(Nx): how many times longer than opmsg. The default level checks every rule of the\n"
              "OP_MSG spec and every document's frame; top-level also reads each top-level element.\n");
}

/* The ratios of each case at each level (a level-independent pair once). */
static void
print_ratios(FILE *f)
{
   static const struct {
      const char *label, *num, *den;
   } pairs[] = {
      {"merge_into/memcpy", "merge_into", "memcpy"},
      {"merge_bson/alloc_copy", "merge_bson", "alloc_copy"},
      {"view/merge_into", "view", "merge_into"},
      {"reencode/merge_bson", "reencode_libbson", "merge_bson"},
      {"mongoc_append/merge_bson", "mongoc_append", "merge_bson"},
      {"libbson_validate/parse", "libbson_validate", "parse"},
      {"decompress_merge/decompress", "decompress_merge", "decompress"},
      {"encode_split/memcpy", "encode_split", "memcpy"},
   };
   if (n_case_infos == 0) {
      return;
   }
   fprintf(f, "\nratios (time / time):\n");
   for (size_t i = 0; i < n_case_infos; i++) {
      const char *cn = case_infos[i].name;
      for (int k = -1; k < BENCH_N_LEVELS; k++) {
         int level = k < 0 ? BENCH_LEVEL_NONE : (int) bench_levels[k];
         bool any = false;
         for (size_t j = 0; j < sizeof pairs / sizeof pairs[0]; j++) {
            const result_t *a = find_result(cn, pairs[j].num, level);
            const result_t *b = find_result(cn, pairs[j].den, level);
            /* At a level, the pairs with a cell of that level; without
             * one, the pairs of level-independent cells only. */
            if (!a || !b ||
                (level == BENCH_LEVEL_NONE) != (a->level == BENCH_LEVEL_NONE && b->level == BENCH_LEVEL_NONE)) {
               continue;
            }
            double x = a->ns_per_op / b->ns_per_op;
            if (!any) {
               fprintf(f, "  %-11s %-9s", cn, bench_level_name(level));
               any = true;
            }
            fprintf(f, "  %s %.*fx", pairs[j].label, x >= 10 ? 1 : 2, x);
         }
         if (any) {
            fprintf(f, "\n");
         }
      }
   }
}

static void
list_everything(void)
{
   printf("cases:\n");
   for (size_t i = 0; i < bench_n_cases; i++) {
      printf("  %-12s %s\n", bench_cases[i].name, bench_cases[i].what);
   }
   printf("  %-12s opmsg_crc32c over 1 MiB in cache, and the portable table\n", "crc32c");
   printf("impls (* once per check level):\n");
   for (size_t i = 0; i < bench_n_impls; i++) {
      printf("  %-17s %s %s\n", bench_impls[i].name, per_level(&bench_impls[i]) ? "*" : " ", bench_impls[i].what);
   }
   printf("check levels (--check):\n");
   for (size_t k = 0; k < BENCH_N_LEVELS; k++) {
      printf("  %s\n", opmsg_check_name(bench_levels[k]));
   }
}

/* ---------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------- */

/* Whether impl runs on case c (kind, --impl, identifiers). */
static bool
impl_applies(const bench_impl_t *impl, const bench_case_t *c, const options_t *o)
{
   return (impl->kinds & BENCH_KIND_BIT(c->kind)) && selected(o->impls, impl->name) &&
          !((impl->flags & BENCH_PLAIN_IDS) && c->dotted);
}

#define MAX_CELLS 256
#define MAX_GROUP 4

/*
 * Checks and calibrates every cell of the cases of a group (one case, or
 * the consecutive cases of one bench_case_def_t.group): each
 * level-independent implementation once per case, each implementation
 * that parses with opmsg once per case and level (the baseline first in
 * each group, as the other rows are compared with it), then runs all their
 * repetitions round-robin, so that levels and cases are compared under the
 * same load as the implementations.
 */
static void
run_cases(const bench_case_def_t *const *defs, bench_case_t *cs, size_t n_cs, const options_t *o)
{
   /* Each case as each level parses it: copies sharing its buffers. */
   static bench_case_t at[MAX_GROUP][BENCH_N_LEVELS];
   static cell_t cells[MAX_CELLS];
   const bench_impl_t *impls[MAX_CELLS];
   bench_case_t *ctx[MAX_CELLS];
   int levels[MAX_CELLS];
   size_t first_cell[MAX_GROUP + 1];
   size_t n = 0;
   if (n_cs > MAX_GROUP) {
      bench_fatal("a group of more than %d cases", MAX_GROUP);
   }
   for (size_t g = 0; g < n_cs; g++) {
      const bench_case_def_t *def = defs[g];
      bench_case_t *c = &cs[g];
      first_cell[g] = n;
      for (int k = -1; k < BENCH_N_LEVELS; k++) {
         int level = k < 0 ? BENCH_LEVEL_NONE : (int) bench_levels[k];
         if (k >= 0) {
            if (!(o->levels & BENCH_LEVEL_BIT(level))) {
               continue;
            }
            bench_case_at_level(c, (opmsg_check_t) level, &at[g][k]);
         }
         for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < bench_n_impls; i++) {
               const bench_impl_t *impl = &bench_impls[i];
               bool is_baseline = !strcmp(impl->name, def->baseline);
               if ((pass == 0) != is_baseline || per_level(impl) != (k >= 0) || !impl_applies(impl, c, o)) {
                  continue;
               }
               if (n == MAX_CELLS) {
                  bench_fatal("%s: too many cells", c->name);
               }
               impls[n] = impl;
               ctx[n] = k >= 0 ? &at[g][k] : c;
               levels[n] = level;
               n++;
            }
         }
      }
      if (n_case_infos == MAX_CASES) {
         bench_fatal("too many cases");
      }
      case_infos[n_case_infos].name = c->name;
      case_infos[n_case_infos].kind = c->kind;
      case_infos[n_case_infos].seq_elements = c->seq_elements;
      n_case_infos++;
   }
   first_cell[n_cs] = n;
   if (n_results + n > MAX_RESULTS) {
      bench_fatal("too many results");
   }

   result_t *first = &results[n_results];
   for (size_t g = 0; g < n_cs; g++) {
      for (size_t i = first_cell[g]; i < first_cell[g + 1]; i++) {
         result_t *r = &first[i];
         memset(r, 0, sizeof *r);
         r->case_name = cs[g].name;
         r->impl_name = impls[i]->name;
         r->level = levels[i];
         r->baseline = defs[g]->baseline;
         r->bytes_out = check_output(impls[i], ctx[i]);
         cell_calibrate(&cells[i], impls[i]->op, ctx[i], o);
      }
   }
   cells_run(cells, n);
   n_results += n;
   for (size_t i = 0; i < n; i++) {
      cell_finish(&cells[i], &first[i]);
   }
   for (size_t i = 0; i < n; i++) {
      if (o->json) {
         print_json(&first[i]);
      } else if (!o->brief) {
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
         fprintf(stderr, "opmsg-bench: unknown %s \"%.*s\" (see --list)\n", cases ? "case" : "impl", (int) len, p);
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
      char levels[64] = "";
      for (size_t k = 0; k < BENCH_N_LEVELS; k++) {
         if (o.levels & BENCH_LEVEL_BIT(bench_levels[k])) {
            size_t used = strlen(levels);
            snprintf(levels + used, sizeof levels - used, "%s%s", used ? ", " : "", opmsg_check_name(bench_levels[k]));
         }
      }
      printf("opmsg-bench %s: libbson %s, CRC-32C %s; %.2f s per cell, "
             "median of >= %d repetitions, %s; check levels %s\n",
             opmsg_version_string(), bson_get_version(), opmsg_crc32c_implementation(), o.seconds, o.reps,
             bench_clock == CLOCK_MONOTONIC ? "wall time" : "thread CPU time", levels);
   }

   size_t n_selected = 0;
   for (size_t i = 0; i < bench_n_cases;) {
      /* The case, or the selected cases of its group. */
      const char *group = bench_cases[i].group;
      size_t end = i + 1;
      while (group && end < bench_n_cases && bench_cases[end].group && !strcmp(bench_cases[end].group, group)) {
         end++;
      }
      const bench_case_def_t *defs[MAX_GROUP];
      static bench_case_t cs[MAX_GROUP];
      size_t n_cs = 0;
      for (; i < end; i++) {
         const bench_case_def_t *def = &bench_cases[i];
         if (!selected(o.cases, def->name)) {
            continue;
         }
         if (n_cs == MAX_GROUP) {
            bench_fatal("group %s has more than %d cases", group, MAX_GROUP);
         }
         if (!o.json && !o.brief && n_selected == 0) {
            printf("\n");
            print_table_header();
         }
         n_selected++;
         memset(&cs[n_cs], 0, sizeof cs[n_cs]);
         if (!def->make(&cs[n_cs], def, o.data_dir)) {
            if (cs[n_cs].skipped) {
               continue;
            }
            return 3;
         }
         defs[n_cs++] = def;
      }
      if (n_cs) {
         run_cases(defs, cs, n_cs, &o);
      }
      for (size_t g = 0; g < n_cs; g++) {
         bench_case_free(&cs[g]);
      }
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
      fprintf(stderr, "opmsg-bench: no case matches --case %s (see --list)\n", o.cases);
      return 2;
   }

   /* With --json, stdout carries only the JSON lines; the summary goes to
    * stderr for people and for scripts that keep it. */
   FILE *summary = o.json ? stderr : stdout;
   if (!o.json && crc.measured) {
      printf("\nCRC-32C over 1 MiB in cache: %s %.2f GB/s, portable %.2f GB/s\n", crc.implementation, crc.gbps,
             crc.portable_gbps);
   } else if (crc.measured) {
      fprintf(stderr, "CRC-32C over 1 MiB in cache: %s %.2f GB/s, portable %.2f GB/s\n", crc.implementation, crc.gbps,
              crc.portable_gbps);
   }
   run.n_results = n_results;
   run.n_cases = n_case_infos;
   run.levels = o.levels;
   if (o.brief) {
      print_brief(summary);
   } else {
      print_ratios(summary);
      bench_print_targets(&run, summary, o.json);
   }
   bench_print_summary(&run, summary);
   if (!o.json && strcmp(bench_data_dir_used(), "(none)") != 0) {
      printf("\nseed data: %s\n", bench_data_dir_used());
   }
   return 0;
}
