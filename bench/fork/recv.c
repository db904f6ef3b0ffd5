/*
 * recv.c - one libmongoc build's side of fork-bench (fork-bench.h): its
 * OP_MSG receive path and its command-started event, called the way
 * libmongoc calls them. Compiled once against the unpatched and once
 * against the patched mongo-c-driver master, with the private headers and
 * the static libraries of each (bench/fork/run.sh), into a shared module
 * that exports fork_bench_module() only.
 *
 * The receive path is what _mongoc_cluster_run_opmsg_recv (mongoc-cluster.c)
 * does with a reply's bytes once they are read: mcd_rpc_message_reset (as
 * mongoc_cluster_run_opmsg does first), mcd_rpc_message_from_data_in_place,
 * mcd_rpc_message_ingress, mcd_rpc_message_decompress_if_necessary, the
 * opcode check, mcd_rpc_message_get_body, the moreToCome flag, and the copy
 * into the caller's reply, which the caller destroys. What it does besides
 * (cluster time, the ok check, the session) reads the reply the same way in
 * both builds and is left out.
 *
 * Where the pull requests change one of these calls, the patched module
 * makes their call instead, as its _mongoc_cluster_run_opmsg_recv does:
 * run.sh looks for their declarations in the build's headers and defines
 *   FORK_BENCH_FROM_DATA_ERROR  (PR 2) mcd_rpc_message_from_data_in_place(rpc, data, len, end, error): the error
 *                               parameter
 *   FORK_BENCH_INGRESS_ERROR    (PR 1) mcd_rpc_message_ingress(rpc, request_op_code, error) returns false for an
 *                               opcode the reply may not have
 *   FORK_BENCH_DECOMPRESS_ERROR (PR 2) mcd_rpc_message_decompress_if_necessary(..., error): the error parameter
 *   FORK_BENCH_GET_REPLY=1|2    (PR 3) mcd_rpc_message_get_reply(rpc, &doc) (1) or
 *                               mcd_rpc_message_get_reply(rpc, &doc, error) (2) instead of mcd_rpc_message_get_body:
 *                               the body with the document sequences merged, which the caller copies into its reply
 *                               and destroys as it does the body
 *   FORK_BENCH_COPY_REPLY       (PR 3) mcd_rpc_message_copy_reply(rpc, reply, error) instead of get_body (or
 *                               get_reply) and bson_copy_to: the merged document written straight into the caller's
 *                               reply, as PR 3's _mongoc_cluster_run_opmsg_recv does; preferred when declared
 */
#include <mongoc/mcd-rpc.h>
#include <mongoc/mongoc-apm-private.h>
#include <mongoc/mongoc-cluster-private.h>
#include <mongoc/mongoc-cmd-private.h>
#include <mongoc/mongoc-rpc-private.h>
#include <mongoc/mongoc-server-description-private.h>
#include <mongoc/mongoc-server-stream-private.h>

#include <mongoc/mongoc.h>

#include <bson/bson.h>

#include "fork-bench.h"

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* libmongoc's default maxMessageSizeBytes, the bound decompression obeys. */
#define MAX_MSG_SIZE 48000000

#ifndef FORK_BENCH_GET_REPLY
#define FORK_BENCH_GET_REPLY 0
#endif

/* --- Allocations ---------------------------------------------------------------------------- */

static uint64_t n_allocs;

static void *
count_malloc(size_t n)
{
   n_allocs++;
   return malloc(n);
}

static void *
count_calloc(size_t n, size_t size)
{
   n_allocs++;
   return calloc(n, size);
}

static void *
count_realloc(void *p, size_t n)
{
   n_allocs++;
   return realloc(p, n);
}

static void *
count_aligned_alloc(size_t alignment, size_t n)
{
   n_allocs++;
   void *p = NULL;
   return posix_memalign(&p, alignment, n) == 0 ? p : NULL;
}

static void
count_allocs(bool on)
{
   static const bson_mem_vtable_t counting = {
      .malloc = count_malloc,
      .calloc = count_calloc,
      .realloc = count_realloc,
      .free = free,
      .aligned_alloc = count_aligned_alloc,
   };

   n_allocs = 0;
   if (on) {
      bson_mem_set_vtable(&counting);
   } else {
      bson_mem_restore_vtable();
   }
}

static uint64_t
allocs(void)
{
   return n_allocs;
}

/* The count before and after the step of the last receive that made the
 * reply document. */
static uint64_t doc_before, doc_after;

static uint64_t
doc_allocs(void)
{
   return doc_after - doc_before;
}

/* --- The receive path --------------------------------------------------------------------------- */

typedef struct {
   uint8_t *buf;
   size_t len;
   mcd_rpc_message *rpc;
} reply_ctx_t;

/* Written by every receive, so that the flag's read is not optimised away. */
static volatile bool in_exhaust;

/* One reply from its bytes to *reply (initialised when true is returned). */
static bool
receive(reply_ctx_t *c, bson_t *reply)
{
   void *decompressed = NULL;
   size_t decompressed_len = 0u;
   bool ok = false;

#if defined(FORK_BENCH_FROM_DATA_ERROR) || defined(FORK_BENCH_INGRESS_ERROR) || FORK_BENCH_GET_REPLY == 2 || \
   defined(FORK_BENCH_COPY_REPLY) || defined(FORK_BENCH_DECOMPRESS_ERROR)
   bson_error_t error;
#endif

   mcd_rpc_message_reset(c->rpc);
#ifdef FORK_BENCH_FROM_DATA_ERROR
   if (!mcd_rpc_message_from_data_in_place(c->rpc, c->buf, c->len, NULL, &error)) {
      return false;
   }
#else
   if (!mcd_rpc_message_from_data_in_place(c->rpc, c->buf, c->len, NULL)) {
      return false;
   }
#endif
#ifdef FORK_BENCH_INGRESS_ERROR
   if (!mcd_rpc_message_ingress(c->rpc, MONGOC_OP_CODE_MSG, &error)) {
      return false;
   }
#else
   mcd_rpc_message_ingress(c->rpc);
#endif
#ifdef FORK_BENCH_DECOMPRESS_ERROR
   if (!mcd_rpc_message_decompress_if_necessary(c->rpc, &decompressed, &decompressed_len, MAX_MSG_SIZE, &error)) {
      return false;
   }
#else
   if (!mcd_rpc_message_decompress_if_necessary(c->rpc, &decompressed, &decompressed_len, MAX_MSG_SIZE)) {
      return false;
   }
#endif
   if (mcd_rpc_header_get_op_code(c->rpc) == MONGOC_OP_CODE_MSG) {
      doc_before = n_allocs;
#ifdef FORK_BENCH_COPY_REPLY
      if (mcd_rpc_message_copy_reply(c->rpc, reply, &error)) {
         in_exhaust = (mcd_rpc_op_msg_get_flag_bits(c->rpc) & MONGOC_OP_MSG_FLAG_MORE_TO_COME) != 0u;
         ok = true;
      }
#else
      bson_t body;

#if FORK_BENCH_GET_REPLY == 2
      const bool have_body = mcd_rpc_message_get_reply(c->rpc, &body, &error);
#elif FORK_BENCH_GET_REPLY == 1
      const bool have_body = mcd_rpc_message_get_reply(c->rpc, &body);
#else
      const bool have_body = mcd_rpc_message_get_body(c->rpc, &body);
#endif
      if (have_body) {
         in_exhaust = (mcd_rpc_op_msg_get_flag_bits(c->rpc) & MONGOC_OP_MSG_FLAG_MORE_TO_COME) != 0u;
         bson_copy_to(&body, reply);
         bson_destroy(&body);
         ok = true;
      }
#endif
      doc_after = n_allocs;
   }
   bson_free(decompressed);
   return ok;
}

static void *
reply_new(const uint8_t *msg, size_t len)
{
   reply_ctx_t *c = bson_malloc0(sizeof *c);

   c->buf = bson_malloc(len);
   memcpy(c->buf, msg, len);
   c->len = len;
   c->rpc = mcd_rpc_message_new();
   return c;
}

static bool
reply_recv(void *ctx)
{
   bson_t reply;

   if (!receive(ctx, &reply)) {
      return false;
   }
   bson_destroy(&reply);
   return true;
}

static uint8_t *
copy_out(const bson_t *doc, size_t *len)
{
   uint8_t *out = malloc(doc->len);

   if (out) {
      memcpy(out, bson_get_data(doc), doc->len);
      *len = doc->len;
   }
   return out;
}

static uint8_t *
reply_result(void *ctx, size_t *len)
{
   bson_t reply;
   uint8_t *out;

   if (!receive(ctx, &reply)) {
      return NULL;
   }
   out = copy_out(&reply, len);
   bson_destroy(&reply);
   return out;
}

static void
reply_free(void *ctx)
{
   reply_ctx_t *c = ctx;

   mcd_rpc_message_destroy(c->rpc);
   bson_free(c->buf);
   bson_free(c);
}

/* --- The command-started event ---------------------------------------------------------------- */

typedef struct {
   uint8_t *command_buf;
   bson_t command;
   char *identifier;
   uint8_t *docs;
   char *command_name;
   mongoc_server_description_t sd;
   mongoc_server_stream_t stream;
   mongoc_cmd_t cmd;
   mongoc_apm_command_started_t event;
} event_ctx_t;

static void *
event_new(const uint8_t *command, size_t command_len, const char *identifier, const uint8_t *docs, size_t docs_len)
{
   event_ctx_t *c = bson_malloc0(sizeof *c);
   bson_iter_t iter;

   c->command_buf = bson_malloc(command_len);
   memcpy(c->command_buf, command, command_len);
   if (!bson_init_static(&c->command, c->command_buf, command_len) || !bson_iter_init(&iter, &c->command) ||
       !bson_iter_next(&iter) || docs_len > INT32_MAX) {
      bson_free(c->command_buf);
      bson_free(c);
      return NULL;
   }
   c->command_name = bson_strdup(bson_iter_key(&iter));
   c->identifier = bson_strdup(identifier);
   c->docs = bson_malloc(docs_len);
   memcpy(c->docs, docs, docs_len);

   /* What the event reads of the server: its description, through the
    * command's server stream. */
   mongoc_server_description_init(&c->sd, "localhost:27017", 1);
   c->stream.sd = &c->sd;

   c->cmd.db_name = "db";
   c->cmd.command = &c->command;
   c->cmd.command_name = c->command_name;
   c->cmd.payloads_count = 1;
   c->cmd.payloads[0].identifier = c->identifier;
   c->cmd.payloads[0].documents = c->docs;
   c->cmd.payloads[0].size = (int32_t) docs_len;
   c->cmd.server_stream = &c->stream;
   c->cmd.operation_id = 1;
   c->cmd.is_acknowledged = true;
   return c;
}

static bool
event_build(void *ctx)
{
   event_ctx_t *c = ctx;
   bool is_redacted = false;

   mongoc_apm_command_started_init_with_cmd(&c->event, &c->cmd, 1, &is_redacted, NULL);
   mongoc_apm_command_started_cleanup(&c->event);
   return !is_redacted;
}

static uint8_t *
event_result(void *ctx, size_t *len)
{
   event_ctx_t *c = ctx;
   bool is_redacted = false;
   uint8_t *out;

   mongoc_apm_command_started_init_with_cmd(&c->event, &c->cmd, 1, &is_redacted, NULL);
   out = copy_out(c->event.command, len);
   mongoc_apm_command_started_cleanup(&c->event);
   return out;
}

static void
event_free(void *ctx)
{
   event_ctx_t *c = ctx;

   mongoc_server_description_cleanup(&c->sd);
   bson_free(c->command_name);
   bson_free(c->identifier);
   bson_free(c->docs);
   bson_free(c->command_buf);
   bson_free(c);
}

/* --- The module ------------------------------------------------------------------------------- */

EXPORT const fork_bench_module_t *
fork_bench_module(void)
{
   static fork_bench_module_t module = {
      .abi = FORK_BENCH_ABI,
      .reply_new = reply_new,
      .reply_recv = reply_recv,
      .reply_result = reply_result,
      .reply_free = reply_free,
      .event_new = event_new,
      .event_build = event_build,
      .event_result = event_result,
      .event_free = event_free,
      .count_allocs = count_allocs,
      .allocs = allocs,
      .doc_allocs = doc_allocs,
   };

   /* Quiet: libmongoc's warning that its counters live in heap memory
    * (a process of its own has no shared memory for them) is no news here. */
   mongoc_log_set_handler(NULL, NULL);
   mongoc_init();
   module.version = mongoc_get_version();
   return &module;
}
