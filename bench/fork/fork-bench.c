/*
 * fork-bench.c - the fork's benchmark (docs/benchmarks.md, "The fork"): the
 * cost of libmongoc's OP_MSG receive path per reply, and of the
 * command-started event of an insert, on mongo-c-driver master unpatched
 * and patched, side by side in one run.
 *
 *   fork-bench --unpatched MODULE --patched MODULE [--cpu-time] [--quick]
 *              [--reps N] [--batch-ms MS] [--case A,B] [--instructions N]
 *
 * MODULE is bench/fork/recv.c built against one of the two builds
 * (bench/fork/run.sh; `make bench-fork` does it all). Both are loaded into
 * this process and timed in turn, batch after batch, the order swapped
 * every repetition, so that load from elsewhere hits them alike. Before
 * timing, each build's output is compared with libopmsg's merge of the
 * same bytes, and its libbson allocations are counted.
 *
 * It measures, never asserts: the targets are printed as PASS or MISS, then
 * one line "fork-bench summary: ..." that bench/fork/run.sh reads, and the
 * exit status is 0 unless the benchmark itself cannot run (2: usage, 3: a
 * module or a case fails).
 *
 * --instructions N runs each selected case N times per build inside
 * fork_bench_measured() and nothing else is timed: under
 * `valgrind --tool=callgrind --toggle-collect=fork_bench_measured`, with the
 * same module given for both builds, the instructions of one operation are
 * the collected total / 2N (run.sh does it).
 */
#define _POSIX_C_SOURCE 200809L
#include "../bench.h" /* bench_fatal, bench_in_list, bench_xmalloc */
#include "fork-bench.h"
#include "opmsg-bson-compat.h" /* opmsg_append_array_begin */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- Options and helpers --------------------------------------------------------------------- */

static clockid_t clock_id = CLOCK_MONOTONIC;
static int reps = 101;
static double batch_ms = 2.0;
static const char *only_cases;
static long instructions_n;

static double
now_ns(void)
{
   struct timespec ts;
   clock_gettime(clock_id, &ts);
   return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

static int
compare_double(const void *a, const void *b)
{
   double x = *(const double *) a, y = *(const double *) b;
   return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
   qsort(v, (size_t) n, sizeof v[0], compare_double);
   return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- The two builds -------------------------------------------------------------------------- */

typedef struct {
   const char *label;
   const fork_bench_module_t *m;
} side_t;

static side_t sides[2] = {{"unpatched", NULL}, {"patched", NULL}};

static const fork_bench_module_t *
load(const char *path)
{
   /* RTLD_LOCAL: each module keeps its libmongoc and libbson to itself. */
   void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
   if (!h) {
      bench_fatal("cannot load %s: %s", path, dlerror());
   }
   fork_bench_module_fn fn;
   *(void **) &fn = dlsym(h, FORK_BENCH_MODULE_SYMBOL);
   if (!fn) {
      bench_fatal("%s has no %s()", path, FORK_BENCH_MODULE_SYMBOL);
   }
   const fork_bench_module_t *m = fn();
   if (!m || m->abi != FORK_BENCH_ABI) {
      bench_fatal("%s was built for another fork-bench", path);
   }
   return m;
}

/* --- Messages -------------------------------------------------------------------------------- */

static void
put_i32(uint8_t *p, int32_t v)
{
   uint32_t u = (uint32_t) v;
   p[0] = (uint8_t) u;
   p[1] = (uint8_t) (u >> 8);
   p[2] = (uint8_t) (u >> 16);
   p[3] = (uint8_t) (u >> 24);
}

/* An OP_MSG reply: BODY, then a document sequence IDENTIFIER of DOCS when
 * IDENTIFIER is not NULL. */
static uint8_t *
wire_msg(const bson_t *body, const char *identifier, const uint8_t *docs, size_t docs_len, size_t *len)
{
   size_t id_len = identifier ? strlen(identifier) + 1 : 0;
   size_t seq_len = identifier ? 1 + 4 + id_len + docs_len : 0;
   size_t n = 16 + 4 + 1 + body->len + seq_len;
   uint8_t *m = bench_xmalloc(n);
   memset(m, 0, n);
   put_i32(m, (int32_t) n);
   put_i32(m + 4, 7);     /* requestID */
   put_i32(m + 8, 1);     /* responseTo */
   put_i32(m + 12, 2013); /* OP_MSG */
   size_t off = 20;       /* flagBits 0 */
   m[off++] = 0;          /* kind 0: body */
   memcpy(m + off, bson_get_data(body), body->len);
   off += body->len;
   if (identifier) {
      m[off++] = 1; /* kind 1: document sequence */
      put_i32(m + off, (int32_t) (4 + id_len + docs_len));
      off += 4;
      memcpy(m + off, identifier, id_len);
      off += id_len;
      memcpy(m + off, docs, docs_len);
   }
   *len = n;
   return m;
}

/* N documents of about 100 bytes, back to back. */
static uint8_t *
make_docs(int n, size_t *len)
{
   size_t cap = 128 * (size_t) n, used = 0;
   uint8_t *out = bench_xmalloc(cap);
   for (int i = 0; i < n; i++) {
      char name[32];
      snprintf(name, sizeof name, "doc-%06d", i);
      bson_t *d = BCON_NEW("_id", BCON_INT32(i), "name", BCON_UTF8(name), "n", BCON_INT64((int64_t) i * 1000), "tags",
                           "[", BCON_UTF8("red"), BCON_INT32(i % 7), "]", "sub", "{", "x", BCON_DOUBLE(i * 0.5), "y",
                           BCON_UTF8("yyyyyyyy"), "}");
      if (used + d->len > cap) {
         bench_fatal("documents larger than planned");
      }
      memcpy(out + used, bson_get_data(d), d->len);
      used += d->len;
      bson_destroy(d);
   }
   *len = used;
   return out;
}

/* libopmsg's merge of a message: the reference for every output. */
static uint8_t *
opmsg_merged(const uint8_t *msg, size_t len, size_t *out_len)
{
   opmsg_options_t opts;
   opmsg_msg_t parsed;
   bson_error_t error;
   opmsg_options_init(&opts);
   if (!opmsg_parse(msg, len, &opts, &parsed, &error)) {
      bench_fatal("a case's message does not parse: %s", error.message);
   }
   size_t n = opmsg_merged_size(&parsed);
   uint8_t *out = bench_xmalloc(n);
   if (!opmsg_merge_into(&parsed, out, n, out_len, &error)) {
      bench_fatal("merging a case's message: %s", error.message);
   }
   return out;
}

/* --- Cases ----------------------------------------------------------------------------------- */

typedef enum { CASE_REPLY, CASE_EVENT } case_kind_t;

/* reply_small: a replica set member's answer to a write (about 150 bytes);
 * reply_find101: a find's reply with 101 documents in cursor.firstBatch;
 * reply_seq101: the same with the documents as the document sequence
 * cursor.firstBatch; event_insert1k: the command-started event of an
 * insert of 1,000 documents sent as the sequence "documents". */
typedef struct {
   const char *name;
   case_kind_t kind;
   bool sequences; /* a reply with document sequences */
   uint8_t *msg;   /* the wire message (a reply, or the command as sent) */
   size_t msg_len;
   uint8_t *merged; /* libopmsg's merge of msg */
   size_t merged_len;
   /* CASE_EVENT: the command and its sequence */
   bson_t *command;
   uint8_t *docs;
   size_t docs_len;
   void *ctx[2];
   /* results per side */
   const char *output[2];
   double allocs[2];     /* per operation */
   double doc_allocs[2]; /* replies: those of the step that made the document */
   double ns[2];
   double diff_ns; /* median of the paired differences, patched - unpatched */
} case_t;

static bson_t *
reply_body_find(bool with_batch, const uint8_t *docs, size_t docs_len)
{
   bson_t *b = bson_new(), cursor, batch;
   BSON_APPEND_DOCUMENT_BEGIN(b, "cursor", &cursor);
   if (with_batch) {
      opmsg_append_array_begin(&cursor, "firstBatch", -1, &batch);
      size_t off = 0;
      for (int i = 0; off < docs_len; i++) {
         bson_t d;
         char key[16];
         int32_t l;
         memcpy(&l, docs + off, 4);
         bson_init_static(&d, docs + off, (size_t) l);
         snprintf(key, sizeof key, "%d", i);
         bson_append_document(&batch, key, -1, &d);
         off += (size_t) l;
      }
      bson_append_array_end(&cursor, &batch);
   }
   BSON_APPEND_INT64(&cursor, "id", 0);
   BSON_APPEND_UTF8(&cursor, "ns", "db.coll");
   bson_append_document_end(b, &cursor);
   BSON_APPEND_DOUBLE(b, "ok", 1.0);
   return b;
}

static bson_t *
reply_body_small(void)
{
   /* A replica set member's answer to a write: ok, the cluster time and the
    * operation time (about 150 bytes: more than a bson_t holds inline). */
   static const uint8_t hash[20] = {0};
   return BCON_NEW("n", BCON_INT32(1), "electionId", BCON_INT64(0x7fffffff00000001), "opTime", "{", "ts",
                   BCON_TIMESTAMP(1700000000, 1), "t", BCON_INT64(1), "}", "ok", BCON_DOUBLE(1.0), "$clusterTime", "{",
                   "clusterTime", BCON_TIMESTAMP(1700000000, 1), "signature", "{", "hash",
                   BCON_BIN(BSON_SUBTYPE_BINARY, hash, sizeof hash), "keyId", BCON_INT64(0), "}", "}", "operationTime",
                   BCON_TIMESTAMP(1700000000, 1));
}

static void
case_make(case_t *c)
{
   size_t docs_len;
   uint8_t *docs;
   bson_t *body;

   if (!strcmp(c->name, "reply_small")) {
      body = reply_body_small();
      c->msg = wire_msg(body, NULL, NULL, 0, &c->msg_len);
      bson_destroy(body);
   } else if (!strcmp(c->name, "reply_find101")) {
      docs = make_docs(101, &docs_len);
      body = reply_body_find(true, docs, docs_len);
      c->msg = wire_msg(body, NULL, NULL, 0, &c->msg_len);
      bson_destroy(body);
      free(docs);
   } else if (!strcmp(c->name, "reply_seq101")) {
      docs = make_docs(101, &docs_len);
      body = reply_body_find(false, docs, docs_len);
      c->msg = wire_msg(body, "cursor.firstBatch", docs, docs_len, &c->msg_len);
      bson_destroy(body);
      free(docs);
   } else {
      c->docs = make_docs(1000, &c->docs_len);
      c->command = BCON_NEW("insert", BCON_UTF8("coll"), "ordered", BCON_BOOL(true), "$db", BCON_UTF8("db"));
      c->msg = wire_msg(c->command, "documents", c->docs, c->docs_len, &c->msg_len);
   }
   c->merged = opmsg_merged(c->msg, c->msg_len, &c->merged_len);
   for (int s = 0; s < 2; s++) {
      const fork_bench_module_t *m = sides[s].m;
      c->ctx[s] = c->kind == CASE_REPLY
                     ? m->reply_new(c->msg, c->msg_len)
                     : m->event_new(bson_get_data(c->command), c->command->len, "documents", c->docs, c->docs_len);
      if (!c->ctx[s]) {
         bench_fatal("%s: the %s build cannot set the case up", c->name, sides[s].label);
      }
   }
}

static bool
op(const case_t *c, int s)
{
   const fork_bench_module_t *m = sides[s].m;
   return c->kind == CASE_REPLY ? m->reply_recv(c->ctx[s]) : m->event_build(c->ctx[s]);
}

/* What a side's output is: libopmsg's merge, the reply's body alone (the
 * document sequences dropped), or something else. Counts the allocations
 * of one operation on the way. */
static void
case_check(case_t *c)
{
   for (int s = 0; s < 2; s++) {
      const fork_bench_module_t *m = sides[s].m;
      size_t len = 0;
      uint8_t *out = c->kind == CASE_REPLY ? m->reply_result(c->ctx[s], &len) : m->event_result(c->ctx[s], &len);
      if (!out) {
         bench_fatal("%s: the %s build refuses the message", c->name, sides[s].label);
      }
      const uint8_t *body = c->msg + 21;
      int32_t body_len;
      memcpy(&body_len, body, 4);
      if (len == c->merged_len && !memcmp(out, c->merged, len)) {
         c->output[s] = c->sequences || c->kind == CASE_EVENT ? "merged" : "body";
      } else if (c->kind == CASE_REPLY && len == (size_t) body_len && !memcmp(out, body, len)) {
         c->output[s] = "body only (sequence dropped)";
      } else {
         c->output[s] = "OTHER";
      }
      free(out);

      m->count_allocs(true);
      bool ok = op(c, s);
      c->allocs[s] = (double) m->allocs();
      c->doc_allocs[s] = c->kind == CASE_REPLY ? (double) m->doc_allocs() : c->allocs[s];
      m->count_allocs(false);
      if (!ok) {
         bench_fatal("%s: the %s build fails", c->name, sides[s].label);
      }
   }
}

static double
batch(const case_t *c, int s, long n)
{
   double t0 = now_ns();
   for (long i = 0; i < n; i++) {
      if (!op(c, s)) {
         bench_fatal("%s: the %s build fails", c->name, sides[s].label);
      }
   }
   return now_ns() - t0;
}

/* N operations of one side, for callgrind's --toggle-collect: not inlined, so
 * that its instructions are those of the operations (and the loop). */
__attribute__((noinline)) void fork_bench_measured(const case_t *c, int s, long n);

__attribute__((noinline)) void
fork_bench_measured(const case_t *c, int s, long n)
{
   for (long i = 0; i < n; i++) {
      if (!op(c, s)) {
         bench_fatal("%s: the %s build fails", c->name, sides[s].label);
      }
   }
}

/* Both sides, the same number of operations per batch, alternately. */
static void
case_time(case_t *c)
{
   long n = 1;
   while (n < (1L << 30)) {
      double t = batch(c, 0, n) + batch(c, 1, n);
      if (t >= 2 * batch_ms * 1e6) {
         break;
      }
      n *= 2;
   }
   double *v[2], *d;
   v[0] = bench_xmalloc((size_t) reps * sizeof(double));
   v[1] = bench_xmalloc((size_t) reps * sizeof(double));
   d = bench_xmalloc((size_t) reps * sizeof(double));
   for (int r = 0; r < reps; r++) {
      int first = r % 2;
      v[first][r] = batch(c, first, n) / (double) n;
      v[!first][r] = batch(c, !first, n) / (double) n;
      d[r] = v[1][r] - v[0][r];
   }
   c->ns[0] = median(v[0], reps);
   c->ns[1] = median(v[1], reps);
   c->diff_ns = median(d, reps);
   free(v[0]);
   free(v[1]);
   free(d);
}

/* --- Main ------------------------------------------------------------------------------------ */

static void
usage(FILE *f)
{
   fputs("usage: fork-bench --unpatched MODULE --patched MODULE [--cpu-time] [--quick]\n"
         "                  [--reps N] [--batch-ms MS] [--case A,B] [--instructions N]\n"
         "  --cpu-time    the thread's CPU clock instead of CLOCK_MONOTONIC\n"
         "  --quick       11 repetitions instead of 101\n"
         "  --reps N      repetitions per case and build (the median is reported)\n"
         "  --batch-ms MS a repetition's length per build (default 2)\n"
         "  --case A,B    only these cases (reply_small, reply_find101, reply_seq101, event_insert1k)\n"
         "  --instructions N  run each case N times per build in fork_bench_measured() and stop\n"
         "                (for callgrind --toggle-collect=fork_bench_measured; nothing is timed)\n",
         f);
}

int
main(int argc, char **argv)
{
   const char *paths[2] = {NULL, NULL};
   bench_prog = "fork-bench";
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *next = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp(a, "--unpatched") && next) {
         paths[0] = argv[++i];
      } else if (!strcmp(a, "--patched") && next) {
         paths[1] = argv[++i];
      } else if (!strcmp(a, "--cpu-time")) {
         clock_id = CLOCK_THREAD_CPUTIME_ID;
      } else if (!strcmp(a, "--quick")) {
         reps = 11;
      } else if (!strcmp(a, "--reps") && next) {
         reps = atoi(argv[++i]);
      } else if (!strcmp(a, "--batch-ms") && next) {
         batch_ms = atof(argv[++i]);
      } else if (!strcmp(a, "--case") && next) {
         only_cases = argv[++i];
      } else if (!strcmp(a, "--instructions") && next) {
         instructions_n = atol(argv[++i]);
         if (instructions_n < 1) {
            usage(stderr);
            return 2;
         }
      } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
         usage(stdout);
         return 0;
      } else {
         usage(stderr);
         return 2;
      }
   }
   if (!paths[0] || !paths[1] || reps < 1 || !(batch_ms > 0)) {
      usage(stderr);
      return 2;
   }
   for (int s = 0; s < 2; s++) {
      sides[s].m = load(paths[s]);
   }

   case_t cases[] = {
      {.name = "reply_small", .kind = CASE_REPLY},
      {.name = "reply_find101", .kind = CASE_REPLY},
      {.name = "reply_seq101", .kind = CASE_REPLY, .sequences = true},
      {.name = "event_insert1k", .kind = CASE_EVENT},
   };
   size_t n_cases = sizeof cases / sizeof cases[0];

   if (instructions_n > 0) {
      for (size_t i = 0; i < n_cases; i++) {
         case_t *c = &cases[i];
         if (only_cases && !bench_in_list(only_cases, c->name)) {
            continue;
         }
         case_make(c);
         case_check(c);
         for (int s = 0; s < 2; s++) {
            fork_bench_measured(c, s, instructions_n);
         }
         printf("fork-bench: %s: %ld operations per build in fork_bench_measured()\n", c->name, instructions_n);
      }
      return 0;
   }

   printf("fork-bench: unpatched libmongoc %s, patched libmongoc %s; %s; %d repetitions of about %.1f ms per build\n",
          sides[0].m->version, sides[1].m->version, clock_id == CLOCK_MONOTONIC ? "wall time" : "thread CPU time", reps,
          batch_ms);
   printf("\n| case | bytes | unpatched ns | patched ns | patched - unpatched | speed-up | allocations unpatched | "
          "allocations patched | unpatched gives | patched gives |\n|---|---|---|---|---|---|---|---|---|---|\n");
   for (size_t i = 0; i < n_cases; i++) {
      case_t *c = &cases[i];
      if (only_cases && !bench_in_list(only_cases, c->name)) {
         c->name = NULL;
         continue;
      }
      case_make(c);
      case_check(c);
      case_time(c);
      /* (For a reply: all of the receive's, and in brackets the document's.) */
      char a[2][48];
      for (int s = 0; s < 2; s++) {
         if (c->kind == CASE_REPLY) {
            snprintf(a[s], sizeof a[s], "%.0f (%.0f)", c->allocs[s], c->doc_allocs[s]);
         } else {
            snprintf(a[s], sizeof a[s], "%.0f", c->allocs[s]);
         }
      }
      printf("| %s | %zu | %.1f | %.1f | %+.1f | %.2fx | %s | %s | %s | %s |\n", c->name, c->msg_len, c->ns[0],
             c->ns[1], c->diff_ns, c->ns[0] / c->ns[1], a[0], a[1], c->output[0], c->output[1]);
      fflush(stdout);
   }

   /* The targets of the series (docs/benchmarks.md, "The fork"). The
    * instructions and the stack frames are measured by run.sh. */
   const case_t *small = NULL, *find = NULL, *seq = NULL, *event = NULL;
   for (size_t i = 0; i < n_cases; i++) {
      const case_t *c = &cases[i];
      if (!c->name) {
         continue;
      }
      if (!strcmp(c->name, "reply_small")) {
         small = c;
      } else if (!strcmp(c->name, "reply_find101")) {
         find = c;
      } else if (!strcmp(c->name, "reply_seq101")) {
         seq = c;
      } else {
         event = c;
      }
   }
   printf("\nTargets (patched against unpatched):\n");
   if (small) {
      printf("%s  reply_small: a reply without sequences within 5 ns of unpatched: %+.1f ns\n",
             small->diff_ns <= 5 ? "PASS" : "MISS", small->diff_ns);
   }
   if (find) {
      printf("%s  reply_find101: a reply without sequences within 5 ns of unpatched: %+.1f ns\n",
             find->diff_ns <= 5 ? "PASS" : "MISS", find->diff_ns);
   }
   double seq_x = 0;
   if (seq && find) {
      seq_x = seq->ns[1] / find->ns[0];
      bool ok = seq_x <= 6 && !strcmp(seq->output[1], "merged");
      printf("%s  reply_seq101: merged (%s) in at most 6x the unpatched time of the same documents in the body: "
             "%.1f against %.1f ns, %.2fx\n",
             ok ? "PASS" : "MISS", seq->output[1], seq->ns[1], find->ns[0], seq_x);
   }
   double event_x = 0;
   if (event) {
      event_x = event->ns[0] / event->ns[1];
      bool ok = event_x >= 3 && event->allocs[1] <= 2 && !strcmp(event->output[1], "merged");
      printf("%s  event_insert1k: the event's command at least 3x faster, at most 2 allocations: %.2fx, %.0f "
             "allocation(s) (%s)\n",
             ok ? "PASS" : "MISS", event_x, event->allocs[1], event->output[1]);
   }
   /* For run.sh: "-" where a case was not run. */
   char f[5][32] = {"-", "-", "-", "-", "-"};
   if (small) {
      snprintf(f[0], sizeof f[0], "%+.1f", small->diff_ns);
   }
   if (find) {
      snprintf(f[1], sizeof f[1], "%+.1f", find->diff_ns);
   }
   if (seq && find) {
      snprintf(f[2], sizeof f[2], "%.2f", seq_x);
   }
   if (event) {
      snprintf(f[3], sizeof f[3], "%.2f", event_x);
      snprintf(f[4], sizeof f[4], "%.0f", event->allocs[1]);
   }
   printf("fork-bench summary: plain_ns %s find101_ns %s seq101_x %s started_x %s allocations %s seq101_output %s\n",
          f[0], f[1], f[2], f[3], f[4], seq ? (!strcmp(seq->output[1], "merged") ? "merged" : "not-merged") : "-");
   for (size_t i = 0; i < n_cases; i++) {
      case_t *c = &cases[i];
      if (!c->name) {
         continue;
      }
      for (int s = 0; s < 2; s++) {
         if (c->kind == CASE_REPLY) {
            sides[s].m->reply_free(c->ctx[s]);
         } else {
            sides[s].m->event_free(c->ctx[s]);
         }
      }
      free(c->msg);
      free(c->merged);
      free(c->docs);
      if (c->command) {
         bson_destroy(c->command);
      }
   }
   return 0;
}
