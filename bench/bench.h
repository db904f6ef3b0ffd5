/*
 * bench.h - shared declarations of opmsg-bench (not installed).
 *
 * opmsg-bench measures, for each case (a wire message), how long each
 * implementation takes to go from the raw message bytes to a usable merged
 * document. Every implementation's output is compared once with opmsg's own
 * merge before it is timed; a difference is fatal.
 */
#ifndef OPMSG_BENCH_H
#define OPMSG_BENCH_H

#include <opmsg/opmsg.h>

#include "opmsg-bson-compat.h" /* tools/: the same libbson API on 1.23, 1.30, 2.x */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------
 * Cases (cases.c)
 * ------------------------------------------------------------------------- */

typedef enum {
   BENCH_KIND_MSG = 0,    /* a plain OP_MSG */
   BENCH_KIND_COMPRESSED, /* an OP_COMPRESSED carrying an OP_MSG */
   BENCH_KIND_ENCODE      /* encoding documents into split messages */
} bench_kind_t;

typedef struct {
   const char *name;
   bench_kind_t kind;

   /* The raw wire message (owned). */
   uint8_t *msg;
   size_t msg_len;

   /* opmsg's merge of msg: the reference every output is compared with
    * (owned). For a compressed case, the merge of the decompressed message. */
   uint8_t *merged;
   size_t merged_len;

   /* A reused output buffer of at least merged_len bytes (owned). */
   uint8_t *out;
   size_t out_cap;

   /* Compressed cases: the decompressed OP_MSG (owned), and a reused buffer
    * for decompressing into. */
   uint8_t *plain;
   size_t plain_len;
   uint8_t *scratch;
   size_t scratch_cap;

   /* big and encode: the documents back to back (pointing into msg). */
   const uint8_t *docs;
   size_t docs_len;
   uint32_t n_docs;

   /* encode: the command and the limits the documents are split with. */
   bson_t *command;
   uint32_t n_batches; /* messages the split gives */

   /* What bench_case_finish() found in the (decompressed) message through
    * opmsg's view, for the checks and the targets: the sequences, their
    * documents, the top-level elements of those documents, and whether an
    * identifier is a dotted path ("cursor.firstBatch"). */
   uint32_t n_sequences;
   uint64_t seq_docs;
   uint64_t seq_elements;
   bool dotted;

   /* The options every opmsg_parse() of an operation uses: the check level
    * the cell measures (see bench_case_at_level()). */
   opmsg_options_t opts;
   /* c->msg parsed with opts, for the operations that start from a parsed
    * message (name_db); set by bench_case_at_level(). */
   opmsg_msg_t parsed;

   /* make() found the case cannot run in this build (a compressed case
    * whose codec it lacks) and said so: skipped, not a failure. */
   bool skipped;
} bench_case_t;

/* One row of the case table (cases.c): the cases, in the order they run.
 * make() fills a zeroed case from its row (the row's name is the case's;
 * arg says which seed file, sequence identifier or codec); false when it
 * cannot (a message says why; with skipped set, the run goes on). */
typedef struct bench_case_def bench_case_def_t;
typedef bool (*bench_make_fn)(bench_case_t *c, const bench_case_def_t *def, const char *data_dir);
struct bench_case_def {
   const char *name;
   bench_make_fn make;
   /* What make() builds the case from: the seed's name (NULL: the case's),
    * a sequence's identifier, or a compressor's name. */
   const char *arg;
   /* The implementation the others are compared with (the "x limit"
    * column): what the operation cannot beat. */
   const char *baseline;
   /* Consecutive cases with the same group run their cells round-robin
    * together, so that a target comparing them (reply_seq with
    * reply_plain) compares cells measured under the same load. NULL: the
    * case runs alone. */
   const char *group;
   const char *what;
};

extern const bench_case_def_t bench_cases[];
extern const size_t bench_n_cases;

/* The makers of the table's rows that live outside cases.c: the seed
 * vectors ("flat", "deep", "seq", from the first data directory that has
 * them), big as OP_COMPRESSED with the codec arg names (compressed.c), and
 * big's documents to encode (encode.c). */
bool bench_case_load_seed(bench_case_t *c, const bench_case_def_t *def, const char *data_dir);
bool bench_case_make_compressed(bench_case_t *c, const bench_case_def_t *def, const char *data_dir);
bool bench_case_make_encode(bench_case_t *c, const bench_case_def_t *def, const char *data_dir);
/* Builds the generated `big` insert (100,000 documents of ~350 bytes). */
void bench_case_make_big(bench_case_t *c);
/* Computes c->merged with opmsg, counts the sequences, their documents and
 * elements, and sizes c->out. Fatal on failure. */
void bench_case_finish(bench_case_t *c);
void bench_case_free(bench_case_t *c);
/* *at becomes a copy of base that parses at the given check level (and has
 * base's message parsed at it in at->parsed). The copy shares base's
 * buffers: it is never freed, and must not outlive base. */
void bench_case_at_level(const bench_case_t *base, opmsg_check_t check, bench_case_t *at);

/* The directory the seed messages were found in, for the report. */
const char *bench_data_dir_used(void);

/* ---------------------------------------------------------------------------
 * Implementations (impls.c, reencode.c)
 * ------------------------------------------------------------------------- */

/* What one operation produced, kept for the one-time comparison. */
typedef struct {
   const uint8_t *data;
   size_t len;
   bson_t *owned; /* destroyed by the caller after the comparison */
} bench_out_t;

/* Performs one operation on c. Returns a value derived from the output (so
 * the work cannot be optimised away) and, when keep is not NULL, leaves the
 * output in *keep instead of freeing it. */
typedef size_t (*bench_op_fn)(bench_case_t *c, bench_out_t *keep);

/* What an implementation does besides its operation (bench_impl_t.flags). */
enum {
   /* It calls opmsg_parse() (with c->opts): it runs once per check level.
    * The others (the limits, the libbson baselines, the encoder) run once
    * per case and are compared with every level's cells. */
   BENCH_PER_LEVEL = 1u << 0,
   /* It writes an output (compared with the reference and reported as
    * bytes_out); the view, the parse and the validation write none. */
   BENCH_WRITES = 1u << 1,
   /* The output is the decompressed message (c->plain), not the merge. */
   BENCH_WRITES_PLAIN = 1u << 2,
   /* Only handles plain identifiers ("documents"): skipped on cases with a
    * dotted one (the libbson baselines, written as libmongoc 1.23 and a
    * careful programmer would, append each sequence at the top level). */
   BENCH_PLAIN_IDS = 1u << 3,
};

/* One row of the implementation table (impls.c). */
typedef struct {
   const char *name;
   bench_op_fn op;
   /* Which case kinds it applies to (bit per bench_kind_t). */
   unsigned kinds;
   unsigned flags; /* BENCH_PER_LEVEL, BENCH_WRITES, ... */
   /* Checks the output instead of the comparison with the reference (NULL:
    * compare when the impl writes an output, nothing otherwise). Fatal on a
    * difference. */
   void (*check)(const bench_case_t *c, const bench_out_t *out);
   const char *what; /* one line for --list and the docs */
} bench_impl_t;

extern const bench_impl_t bench_impls[];
extern const size_t bench_n_impls;

/* The sections of an OP_MSG, found by hand the way a program without opmsg
 * would (wire.c): only the framing is checked. Fatal on a malformed message
 * (the baselines only ever see messages opmsg accepted). */
#define BENCH_MAX_SEQUENCES 8
typedef struct {
   const char *identifier;
   size_t identifier_len;
   const uint8_t *docs; /* the documents back to back */
   size_t docs_len;
} bench_seq_t;

typedef struct {
   const uint8_t *body;
   uint32_t body_len;
   bench_seq_t seqs[BENCH_MAX_SEQUENCES];
   size_t n_seqs;
} bench_sections_t;

void bench_split_sections(const uint8_t *msg, size_t len, bench_sections_t *out);
/* Reads a little-endian uint32. */
uint32_t bench_read_u32(const uint8_t *p);

#define BENCH_KIND_BIT(k) (1u << (k))

/* The implementations of compressed cases (compressed.c). */
size_t bench_op_decompress(bench_case_t *c, bench_out_t *keep);
size_t bench_op_decompress_merge(bench_case_t *c, bench_out_t *keep);
size_t bench_op_merge_compressed(bench_case_t *c, bench_out_t *keep);

/* The encode case's implementation (encode.c): big's documents split into
 * messages. */
size_t bench_op_encode_split(bench_case_t *c, bench_out_t *keep);
void bench_check_encode(const bench_case_t *c, const bench_out_t *out);

/* The libbson decode + re-encode baseline (reencode.c). */
size_t bench_reencode_libbson(bench_case_t *c, bench_out_t *keep);

/* Checks that the view API, on c->msg parsed with c->opts, exposes exactly
 * c->merged, command name and $db included (impls.c). Fatal on a
 * difference; out is not used. */
void bench_check_view(const bench_case_t *c, const bench_out_t *out);

/* ---------------------------------------------------------------------------
 * Check levels, results and targets (bench-util.c, targets.c)
 * ------------------------------------------------------------------------- */

/* The levels in the order they run and are reported: the cheapest first. */
#define BENCH_N_LEVELS 3
extern const opmsg_check_t bench_levels[BENCH_N_LEVELS];
#define BENCH_LEVEL_BIT(check) (1u << (unsigned) (check))
/* The level of a result whose implementation does not parse with opmsg (the
 * limits, the libbson baselines, the encoder): it is compared with the
 * cells of every level. */
#define BENCH_LEVEL_NONE (-1)

/* One measured cell. */
typedef struct {
   const char *case_name;
   const char *impl_name;
   int level; /* an opmsg_check_t, or BENCH_LEVEL_NONE */
   double ns_per_op;
   size_t bytes_out;
   double allocs_per_op;
   size_t peak_bytes;    /* most heap bytes held at once, above the start */
   uint64_t ops;         /* operations timed */
   const char *baseline; /* the impl the "x limit" column divides by */
} bench_result_t;

/* What the targets need to know of a case after it was freed. */
typedef struct {
   const char *name;
   bench_kind_t kind;
   uint64_t seq_elements; /* top-level elements of its sequence documents */
} bench_case_info_t;

/* Everything one run measured. */
typedef struct {
   const bench_result_t *results;
   size_t n_results;
   const bench_case_info_t *cases;
   size_t n_cases;
   unsigned levels; /* BENCH_LEVEL_BIT of every level that ran */
} bench_run_t;

/* The result of impl on case at level: the cell of that level, or the
 * level-independent one. NULL when it was not measured. level
 * BENCH_LEVEL_NONE finds only level-independent results. */
const bench_result_t *bench_find_result(const bench_run_t *run, const char *case_name, const char *impl_name,
                                        int level);
/* "spec", "top-level", "full", or "-" for BENCH_LEVEL_NONE. */
const char *bench_level_name(int level);
/* An allocation count: "1", or "0.50" when it is not whole. */
void bench_format_allocs(char *buf, size_t size, double allocs);
/* Writes s as a JSON string (quoted, escaped) to f. */
void bench_json_string(FILE *f, const char *s);

/* Evaluates the project's targets (the table in targets.c) on the run and
 * prints them to f as a table "target | level | figure | PASS/MISS"; with
 * json, also one {"target": ...} line per target, level and case on
 * stdout. Informative: nothing fails. */
void bench_print_targets(const bench_run_t *run, FILE *f, bool json);
/* The one line of issue 29, from the cells of this run at the default
 * level (what opmsg_options_init() gives): "default level NAME: seq
 * reencode A x, mongoc_append B x; body-only merge_into +C ns flat, +D ns
 * deep; merge_bson +E ns flat, +F ns deep; top-level G ns/element" (G:
 * parse at top-level minus parse at spec on seq, per top-level element of
 * its sequence documents). A figure whose cells did not run is "n/a". */
void bench_print_summary(const bench_run_t *run, FILE *f);

/* ---------------------------------------------------------------------------
 * Allocation counting (alloc.c)
 * ------------------------------------------------------------------------- */

typedef struct {
   uint64_t calls; /* malloc + calloc + realloc + aligned_alloc */
   size_t current; /* bytes outstanding now */
   size_t base;    /* bytes outstanding at the last reset */
   size_t peak;    /* most bytes outstanding since the last reset */
} bench_alloc_stats_t;

/* Installs the counting bson_mem_vtable. Call first thing in main(). */
void bench_alloc_install(void);
/* Starts a measurement: calls = 0, base = peak = current. */
void bench_alloc_reset(void);
void bench_alloc_get(bench_alloc_stats_t *stats);

/* ---------------------------------------------------------------------------
 * Helpers (bench-util.c)
 * ------------------------------------------------------------------------- */

/* Prints "<bench_prog>: <message>" on stderr and exits with status 3. */
/* The program's name in bench_fatal()'s messages ("opmsg-bench" unless a
 * program of bench/ says otherwise). */
extern const char *bench_prog;
_Noreturn void bench_fatal(const char *fmt, ...) BSON_GNUC_PRINTF(1, 2);
/* Allocates with malloc (not counted: set-up, not measured). */
void *bench_xmalloc(size_t n);
/* True when name is one of the comma-separated names in list. */
bool bench_in_list(const char *list, const char *name);
/* Makes c the case name of this kind, its message a malloc copy of bytes
 * (len bytes from libopmsg, bson_free()d here): every case's message lives
 * in the same kind of memory. */
void bench_case_adopt(bench_case_t *c, const char *name, bench_kind_t kind, uint8_t *bytes, size_t len);

/* The helpers of the timed operations are inline: a call into another file
 * would be timed with them. */

/* opmsg_parse() of the case's message with the case's options (its check
 * level); fatal when it fails (every case was checked when it was made). */
static inline void
bench_parse_or_die(const bench_case_t *c, opmsg_msg_t *msg)
{
   bson_error_t error;
   if (!opmsg_parse(c->msg, c->msg_len, &c->opts, msg, &error)) {
      bench_fatal("%s: opmsg_parse: %s", c->name, error.message);
   }
}

/* An operation's output in a buffer it does not own: leaves it in *keep
 * when the caller keeps outputs (keep is not NULL). */
static inline void
bench_keep_bytes(bench_out_t *keep, const uint8_t *data, size_t len)
{
   if (keep) {
      keep->data = data;
      keep->len = len;
   }
}

/* An operation's output as a new bson_t: handed to *keep (the caller
 * destroys it after the comparison) or destroyed. Returns its length, what
 * the operation returns. */
static inline size_t
bench_keep_bson(bench_out_t *keep, bson_t *b)
{
   size_t n = b->len;
   if (keep) {
      keep->owned = b;
      keep->data = bson_get_data(b);
      keep->len = b->len;
   } else {
      bson_destroy(b);
   }
   return n;
}

#endif /* OPMSG_BENCH_H */
