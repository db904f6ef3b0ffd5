/*
 * fork-bench.h - what fork-bench (the runner) asks of each libmongoc build.
 *
 * recv.c is compiled twice, against the unpatched and the patched
 * mongo-c-driver master (their private headers, their static libmongoc and
 * libbson), into two shared modules that keep every libmongoc and libbson
 * symbol to themselves. The runner loads both into one process and calls
 * them in turn, so the two builds are timed side by side under the same
 * load. Only bytes and plain C types cross this interface: each module has
 * its own libbson.
 */
#ifndef FORK_BENCH_H
#define FORK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FORK_BENCH_ABI 1

typedef struct {
   int abi;             /* FORK_BENCH_ABI */
   const char *version; /* mongoc_get_version() of the build */

   /* A reply as _mongoc_cluster_run_opmsg_recv receives it: the wire
    * message is copied into the context, which also holds the mcd_rpc
    * message the receive path fills. NULL when the module cannot. */
   void *(*reply_new)(const uint8_t *msg, size_t len);
   /* One reply, from the bytes to the caller's reply document (destroyed
    * again, as a caller does). False when the receive path refuses it. */
   bool (*reply_recv)(void *ctx);
   /* The same once more, keeping the reply: a malloc()ed copy of its bytes
    * (the caller free()s it), or NULL when the receive path refuses it. */
   uint8_t *(*reply_result)(void *ctx, size_t *len);
   void (*reply_free)(void *ctx);

   /* The command-started event of a command sent with one document
    * sequence (an insert's "documents"): COMMAND is the command document
    * (with $db), DOCS the sequence's documents back to back. */
   void *(*event_new)(const uint8_t *command, size_t command_len, const char *identifier, const uint8_t *docs,
                      size_t docs_len);
   /* Initialises the event (which builds its command), then cleans it up. */
   bool (*event_build)(void *ctx);
   /* The event's command: a malloc()ed copy of its bytes. */
   uint8_t *(*event_result)(void *ctx, size_t *len);
   void (*event_free)(void *ctx);

   /* Counting libbson's allocations (bson_mem_set_vtable) in this module:
    * on, off, and the calls of malloc, calloc, realloc and aligned_alloc
    * since it was turned on; doc_allocs: those of the last receive's step
    * that made the caller's reply document (the copy, or the merge). */
   void (*count_allocs)(bool on);
   uint64_t (*allocs)(void);
   uint64_t (*doc_allocs)(void);
} fork_bench_module_t;

/* The one symbol a module exports. */
typedef const fork_bench_module_t *(*fork_bench_module_fn)(void);
#define FORK_BENCH_MODULE_SYMBOL "fork_bench_module"

#endif
