/*
 * soak-client.c - the soak's libmongoc program (docs/soak.md).
 *
 * An ordinary libmongoc application, linked with the system's libmongoc and
 * knowing nothing of libopmsg (the soak preloads the drop-in into it, or
 * points it at another libmongoc). It runs THREADS threads on one
 * mongoc_client_pool_t with streaming monitors, and SINGLES threads with a
 * single-threaded client each. They are all released at once, so their first
 * calls into libmongoc (and into a preloaded drop-in) are concurrent.
 *
 * Each thread runs its share of OPS operations, chosen from the seed:
 * insert_many (a document sequence on the way out), find and aggregate
 * (cursors with small batches, so getMore; now and then abandoned early, so
 * killCursors) and ping. Every operation puts its id in its command (the
 * field soakOp, which the peer logs), and its outcome is one JSON line of the
 * log: the CRC-32 of every document it was handed, in order, the merged
 * arrays of a command reply, or the error's domain, code and message. The
 * monitors' heartbeats are logged too (the peer numbers each hello reply with
 * soakBeat). Documents are summarised by their CRC-32 because the peer
 * computes the same over the bytes it sent: the comparison is byte for byte.
 *
 * RSS and open descriptors are measured at two quiet moments: after WARMUP
 * operations and at the end, each time after every thread has made one
 * settling ping (which the peer always answers plainly).
 *
 * A crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) writes the signal, the
 * thread and a backtrace (object+offset, nearest exported symbol) to
 * standard error, then the process dies of the signal.
 *
 *   soak-client --uri URI --log FILE --prefix P --seed N [--threads 8]
 *               [--singles 2] [--ops 1000] [--warmup 200] [--no-crash-handler]
 *               [--crash-at N]
 *
 * --crash-at N makes thread 0 fault on purpose at its operation N (the
 * runner's own test that a crash is caught and located).
 *
 * Built twice: as the program soak-client, and as libsoak-client.so, which
 * soak-late dlopen()s after start-up so that libmongoc arrives after a
 * preloaded drop-in has initialised.
 */
#define _GNU_SOURCE 1 /* dladdr, pthread barriers, gettid */
#include <mongoc/mongoc.h>

/* opmsg_append_array_begin (header only: this program links no libopmsg). */
#include "../../tools/opmsg-bson-compat.h"

#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SOAK_MAX_WORKERS 64
#define SOAK_MAX_DOCS 20
#define SOAK_PUSH_EVERY 64 /* a pooled thread gives its client back this often */
#define SOAK_LOG_LINES 20  /* libmongoc's own warnings shown, then counted */
#define SOAK_FD_SAMPLES 20 /* tries to find the descriptor count steady */

typedef struct {
   const char *uri;
   const char *log_path;
   const char *prefix;
   uint64_t seed;
   int threads;
   int singles;
   int ops;
   int warmup;
   bool crash_handler;
   int crash_at;
} soak_options_t;

typedef struct {
   int index;
   bool single;
   unsigned short rng[3]; /* nrand48()'s state: this thread's choices */
   int ops;               /* this thread's share */
   int warm;              /* of which before the first measurement */
   int settles;
} worker_t;

static soak_options_t opt;
static int log_fd = -1;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start_barrier; /* the workers, released together */
static pthread_barrier_t quiet_barrier; /* the workers and main, around a measurement */
static mongoc_uri_t *uri;
static mongoc_client_pool_t *pool;
static atomic_int mongoc_log_lines;

/* ------------------------------------------------------------------------
 * The log: one relaxed Extended JSON document per line, one write each.
 * ---------------------------------------------------------------------- */

static void
log_doc(const bson_t *doc)
{
   size_t len;
   char *json = bson_as_relaxed_extended_json(doc, &len);
   struct iovec iov[2];

   if (!json) {
      return; /* every document here is made of valid UTF-8 and numbers */
   }
   iov[0].iov_base = json;
   iov[0].iov_len = len;
   iov[1].iov_base = (void *) "\n";
   iov[1].iov_len = 1;
   pthread_mutex_lock(&log_lock);
   (void) !writev(log_fd, iov, 2);
   pthread_mutex_unlock(&log_lock);
   bson_free(json);
}

static void
append_error(bson_t *rec, const bson_error_t *error)
{
   BSON_APPEND_BOOL(rec, "ok", false);
   BSON_APPEND_INT32(rec, "domain", (int32_t) error->domain);
   BSON_APPEND_INT32(rec, "code", (int32_t) error->code);
   BSON_APPEND_UTF8(rec, "msg", error->message);
}

static int64_t
crc_of(const uint8_t *data, uint32_t len)
{
   return (int64_t) crc32(0L, data, len);
}

/* key: [CRC-32 of each document element of the array at it] (-1 for an
 * element that is not a document). */
static void
append_crc_array(bson_t *out, const char *key, const bson_iter_t *array)
{
   bson_iter_t child;
   bson_t arr;
   uint32_t i = 0;

   opmsg_append_array_begin(out, key, -1, &arr);
   if (bson_iter_recurse(array, &child)) {
      while (bson_iter_next(&child)) {
         char buf[16];
         const char *k;
         uint32_t len = 0;
         const uint8_t *data = NULL;

         bson_uint32_to_string(i++, &k, buf, sizeof buf);
         if (BSON_ITER_HOLDS_DOCUMENT(&child)) {
            bson_iter_document(&child, &len, &data);
            bson_append_int64(&arr, k, -1, crc_of(data, len));
         } else {
            bson_append_int64(&arr, k, -1, -1);
         }
      }
   }
   bson_append_array_end(out, &arr);
}

/* key: a summary of a reply: its "ok", every array of documents as CRCs,
 * and the same one level down (a merged cursor.firstBatch). */
static void
append_fields(bson_t *out, const char *key, const bson_t *reply, int depth)
{
   bson_iter_t it;
   bson_t sub;

   bson_append_document_begin(out, key, -1, &sub);
   if (bson_iter_init(&it, reply)) {
      while (bson_iter_next(&it)) {
         const char *k = bson_iter_key(&it);

         if (BSON_ITER_HOLDS_ARRAY(&it)) {
            append_crc_array(&sub, k, &it);
         } else if (BSON_ITER_HOLDS_DOCUMENT(&it) && depth == 0) {
            uint32_t len = 0;
            const uint8_t *data = NULL;
            bson_t inner;

            bson_iter_document(&it, &len, &data);
            if (bson_init_static(&inner, data, len)) {
               append_fields(&sub, k, &inner, depth + 1);
            }
         } else if (depth == 0 && strcmp(k, "ok") == 0) {
            BSON_APPEND_DOUBLE(&sub, "ok", bson_iter_as_double(&it));
         }
      }
   }
   bson_append_document_end(out, &sub);
}

/* ------------------------------------------------------------------------
 * Crashes: where, in which thread.
 * ---------------------------------------------------------------------- */

static void
crash_handler(int sig, siginfo_t *info, void *context)
{
   char line[768];
   void *frames[64];
   int n, len;

   (void) context;
   len = snprintf(line, sizeof line, "soak-client: CRASH %s (signal %d) in thread %ld of process %ld, address %p\n",
                  strsignal(sig), sig, (long) syscall(SYS_gettid), (long) getpid(), info ? info->si_addr : NULL);
   (void) !write(STDERR_FILENO, line, (size_t) len);
   n = backtrace(frames, 64);
   for (int i = 0; i < n; i++) {
      Dl_info dl;

      if (dladdr(frames[i], &dl) && dl.dli_fname) {
         len = snprintf(line, sizeof line, "soak-client:   #%d %s+0x%lx (%s+0x%lx)\n", i, dl.dli_fname,
                        (unsigned long) ((uintptr_t) frames[i] - (uintptr_t) dl.dli_fbase),
                        dl.dli_sname ? dl.dli_sname : "?",
                        dl.dli_sname ? (unsigned long) ((uintptr_t) frames[i] - (uintptr_t) dl.dli_saddr) : 0UL);
      } else {
         len = snprintf(line, sizeof line, "soak-client:   #%d %p\n", i, frames[i]);
      }
      (void) !write(STDERR_FILENO, line, (size_t) (len < (int) sizeof line ? len : (int) sizeof line - 1));
   }
   /* The handler was reset to the default on entry: the signal, pending
    * until this returns, ends the process as the original would have. */
   raise(sig);
}

static void
install_crash_handler(void)
{
   static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
   struct sigaction sa;
   void *warm[1];

   /* backtrace() loads libgcc_s on its first call: not inside a handler. */
   (void) backtrace(warm, 1);
   memset(&sa, 0, sizeof sa);
   sa.sa_sigaction = crash_handler;
   sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
   sigemptyset(&sa.sa_mask);
   for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
      sigaction(sigs[i], &sa, NULL);
   }
}

/* A real invalid write, for the runner's test of crash reports (the
 * address is read at run time, so the compiler cannot see the fault). */
static volatile uintptr_t soak_bad_address = 8;

__attribute__((noinline)) static void
soak_crash_on_purpose(void)
{
   *(volatile int *) soak_bad_address = 1;
}

/* ------------------------------------------------------------------------
 * The process: RSS and descriptors.
 * ---------------------------------------------------------------------- */

static long
rss_kib(void)
{
   FILE *f = fopen("/proc/self/status", "r");
   char line[256];
   long kib = -1;

   if (!f) {
      return -1;
   }
   while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "VmRSS:", 6) == 0) {
         kib = strtol(line + 6, NULL, 10);
         break;
      }
   }
   fclose(f);
   return kib;
}

/* The open descriptors, and how many are sockets (when sockets is not
 * NULL). */
static int
open_fds(int *sockets)
{
   DIR *d = opendir("/proc/self/fd");
   struct dirent *e;
   int n = 0;

   if (!d) {
      return -1;
   }
   if (sockets) {
      *sockets = 0;
   }
   while ((e = readdir(d))) {
      char path[300], target[64];
      ssize_t len;

      if (e->d_name[0] == '.') {
         continue;
      }
      n++;
      snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
      len = readlink(path, target, sizeof target - 1);
      if (sockets && len > 0 && strncmp(target, "socket:", 7) == 0) {
         (*sockets)++;
      }
   }
   closedir(d);
   return n - 1; /* the directory's own descriptor */
}

static void
sleep_ms(long ms)
{
   struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
   nanosleep(&ts, NULL);
}

/* RSS and descriptors at a quiet moment: the descriptor count is taken when
 * two readings 150 ms apart agree (a monitor reconnecting after a fault has
 * one socket more or less for a moment), and RSS after malloc_trim(). */
static void
measure(const char *when)
{
   bson_t rec = BSON_INITIALIZER;
   int sockets = 0, fds = open_fds(NULL), again = -1;

   /* The peer answers this process's monitors plainly for a while after the
    * settling pings: give a monitor that failed just before them time to
    * reconnect (it waits minHeartbeatFrequencyMS, 500 ms). */
   sleep_ms(1000);
   fds = open_fds(NULL);
   /* What the allocator keeps free in each thread's arena is not growth of
    * the program: give it back first, so RSS counts what is in use. */
   malloc_trim(0);
   for (int i = 0; i < SOAK_FD_SAMPLES && fds != again; i++) {
      sleep_ms(150);
      again = fds;
      fds = open_fds(&sockets);
   }
   BSON_APPEND_UTF8(&rec, "mem", when);
   BSON_APPEND_INT64(&rec, "rss_kib", rss_kib());
   /* Bytes malloc() has handed out and not had back: a leak grows this. */
   BSON_APPEND_INT64(&rec, "heap_kib", (int64_t) (mallinfo2().uordblks / 1024));
   BSON_APPEND_INT32(&rec, "fds", fds);
   BSON_APPEND_INT32(&rec, "sockets", sockets);
   BSON_APPEND_BOOL(&rec, "steady", fds == again);
   log_doc(&rec);
   bson_destroy(&rec);
}

/* ------------------------------------------------------------------------
 * Operations.
 * ---------------------------------------------------------------------- */

/* A number in [0, n) from the thread's own sequence. */
static int
pick(worker_t *w, int n)
{
   return (int) (nrand48(w->rng) % n);
}

static void
op_insert(worker_t *w, mongoc_collection_t *coll, const char *op_id, bson_t *rec)
{
   int n = 1 + pick(w, SOAK_MAX_DOCS);
   bson_t *docs[SOAK_MAX_DOCS];
   bson_t *opts = BCON_NEW("soakOp", BCON_UTF8(op_id));
   bson_t reply;
   bson_error_t error;

   for (int i = 0; i < n; i++) {
      docs[i] = BCON_NEW("_id", BCON_INT32(i), "t", BCON_INT32(w->index), "op", BCON_UTF8(op_id), "pad",
                         BCON_UTF8("soak soak soak soak"));
   }
   BSON_APPEND_INT32(rec, "sent", n);
   if (mongoc_collection_insert_many(coll, (const bson_t **) docs, (size_t) n, opts, &reply, &error)) {
      bson_iter_t it;

      BSON_APPEND_BOOL(rec, "ok", true);
      BSON_APPEND_INT64(rec, "n", bson_iter_init_find(&it, &reply, "insertedCount") ? bson_iter_as_int64(&it) : -1);
   } else {
      append_error(rec, &error);
   }
   bson_destroy(&reply);
   for (int i = 0; i < n; i++) {
      bson_destroy(docs[i]);
   }
   bson_destroy(opts);
}

/* Reads the cursor (at most limit documents when limit >= 0, then abandons
 * it), recording each document's CRC and the outcome. */
static void
read_cursor(mongoc_cursor_t *cursor, int limit, bson_t *rec)
{
   const bson_t *doc;
   bson_error_t error;
   bson_t arr;
   uint32_t n = 0;

   BSON_APPEND_INT32(rec, "limit", limit);
   opmsg_append_array_begin(rec, "docs", -1, &arr);
   while ((limit < 0 || n < (uint32_t) limit) && mongoc_cursor_next(cursor, &doc)) {
      char buf[16];
      const char *k;

      bson_uint32_to_string(n++, &k, buf, sizeof buf);
      bson_append_int64(&arr, k, -1, crc_of(bson_get_data(doc), doc->len));
   }
   bson_append_array_end(rec, &arr);
   if (mongoc_cursor_error(cursor, &error)) {
      append_error(rec, &error);
   } else {
      BSON_APPEND_BOOL(rec, "ok", true);
   }
}

static void
op_find(worker_t *w, mongoc_collection_t *coll, const char *op_id, bool aggregate, bson_t *rec)
{
   int batch = 1 + pick(w, 8);
   /* One cursor in eight is abandoned after a few documents. */
   int limit = pick(w, 8) == 0 ? 1 + pick(w, 6) : -1;
   bson_t *opts = BCON_NEW("batchSize", BCON_INT32(batch), "soakOp", BCON_UTF8(op_id));
   mongoc_cursor_t *cursor;

   if (aggregate) {
      bson_t *pipeline = BCON_NEW("pipeline", "[", "{", "$match", "{", "t", BCON_INT32(w->index), "}", "}", "]");
      cursor = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, opts, NULL);
      bson_destroy(pipeline);
   } else {
      bson_t *filter = BCON_NEW("t", BCON_INT32(w->index));
      cursor = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
      bson_destroy(filter);
   }
   read_cursor(cursor, limit, rec);
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
}

static void
op_ping(mongoc_client_t *client, const char *op_id, bool settle, bson_t *rec)
{
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "soakOp", BCON_UTF8(op_id));
   bson_t reply;
   bson_error_t error;

   if (settle) {
      BSON_APPEND_BOOL(cmd, "soakSettle", true);
   }
   if (mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error)) {
      BSON_APPEND_BOOL(rec, "ok", true);
      append_fields(rec, "fields", &reply, 0);
   } else {
      append_error(rec, &error);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
}

/* True when the operation's record says the server could not be selected
 * (a single-threaded client rescans no sooner than 500 ms after a failure). */
static bool
not_selected(const bson_t *rec)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, rec, "domain") && bson_iter_as_int64(&it) == MONGOC_ERROR_SERVER_SELECTION;
}

static void
run_op(worker_t *w, mongoc_client_t *client, int i)
{
   char op_id[96];
   bson_t rec = BSON_INITIALIZER;
   int choice = pick(w, 100);
   int64_t start = bson_get_monotonic_time();
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "soak", "c");

   snprintf(op_id, sizeof op_id, "%s-%d-%d", opt.prefix, w->index, i);
   BSON_APPEND_UTF8(&rec, "op", op_id);
   if (w->index == 0 && i == opt.crash_at) {
      soak_crash_on_purpose();
   }
   if (choice < 25) {
      BSON_APPEND_UTF8(&rec, "cmd", "insert");
      op_insert(w, coll, op_id, &rec);
   } else if (choice < 55) {
      BSON_APPEND_UTF8(&rec, "cmd", "find");
      op_find(w, coll, op_id, false, &rec);
   } else if (choice < 70) {
      BSON_APPEND_UTF8(&rec, "cmd", "aggregate");
      op_find(w, coll, op_id, true, &rec);
   } else {
      BSON_APPEND_UTF8(&rec, "cmd", "ping");
      op_ping(client, op_id, false, &rec);
   }
   BSON_APPEND_INT64(&rec, "ms", (bson_get_monotonic_time() - start) / 1000);
   log_doc(&rec);
   if (not_selected(&rec)) {
      sleep_ms(100); /* as an application would before trying again */
   }
   bson_destroy(&rec);
   mongoc_collection_destroy(coll);
}

/* A ping the peer always answers plainly, so that every client has its
 * connection open (and none half-made) when the process is measured. */
static void
settle(worker_t *w, mongoc_client_t *client)
{
   char op_id[96];
   bson_t rec = BSON_INITIALIZER;

   snprintf(op_id, sizeof op_id, "%s-%d-settle%d", opt.prefix, w->index, w->settles++);
   BSON_APPEND_UTF8(&rec, "op", op_id);
   BSON_APPEND_UTF8(&rec, "cmd", "settle");
   op_ping(client, op_id, true, &rec);
   log_doc(&rec);
   bson_destroy(&rec);
}

static void *
worker_main(void *arg)
{
   worker_t *w = arg;
   mongoc_client_t *client;
   bson_t rec = BSON_INITIALIZER;
   int i = 0;

   pthread_barrier_wait(&start_barrier);
   if (w->single) {
      client = mongoc_client_new_from_uri(uri);
      mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   } else {
      client = mongoc_client_pool_pop(pool);
   }
   BSON_APPEND_INT32(&rec, "thread", w->index);
   BSON_APPEND_INT64(&rec, "tid", (int64_t) syscall(SYS_gettid));
   BSON_APPEND_BOOL(&rec, "single", w->single);
   log_doc(&rec);
   bson_destroy(&rec);

   for (int phase = 0; phase < 2; phase++) {
      for (; i < (phase == 0 ? w->warm : w->ops); i++) {
         run_op(w, client, i);
         if (!w->single && i % SOAK_PUSH_EVERY == SOAK_PUSH_EVERY - 1) {
            mongoc_client_pool_push(pool, client);
            client = mongoc_client_pool_pop(pool);
         }
      }
      if (phase == 0 && opt.warmup == 0) {
         continue;
      }
      settle(w, client);
      pthread_barrier_wait(&quiet_barrier); /* main measures */
      pthread_barrier_wait(&quiet_barrier);
   }
   if (w->single) {
      mongoc_client_destroy(client);
   } else {
      mongoc_client_pool_push(pool, client);
   }
   return NULL;
}

/* ------------------------------------------------------------------------
 * Heartbeats and libmongoc's log.
 * ---------------------------------------------------------------------- */

static void
on_heartbeat_succeeded(const mongoc_apm_server_heartbeat_succeeded_t *event)
{
   const bson_t *reply = mongoc_apm_server_heartbeat_succeeded_get_reply(event);
   bson_t rec = BSON_INITIALIZER;
   bson_iter_t it;

   BSON_APPEND_INT64(&rec, "beat", bson_iter_init_find(&it, reply, "soakBeat") ? bson_iter_as_int64(&it) : -1);
   BSON_APPEND_BOOL(&rec, "awaited", mongoc_apm_server_heartbeat_succeeded_get_awaited(event));
   BSON_APPEND_BOOL(&rec, "ok", true);
   append_fields(&rec, "fields", reply, 0);
   log_doc(&rec);
   bson_destroy(&rec);
}

static void
on_heartbeat_failed(const mongoc_apm_server_heartbeat_failed_t *event)
{
   bson_t rec = BSON_INITIALIZER;
   bson_error_t error;

   mongoc_apm_server_heartbeat_failed_get_error(event, &error);
   BSON_APPEND_INT64(&rec, "beat", -1);
   BSON_APPEND_BOOL(&rec, "awaited", mongoc_apm_server_heartbeat_failed_get_awaited(event));
   append_error(&rec, &error);
   log_doc(&rec);
   bson_destroy(&rec);
}

static void
on_mongoc_log(mongoc_log_level_t level, const char *domain, const char *message, void *data)
{
   (void) data;
   if (level <= MONGOC_LOG_LEVEL_WARNING && atomic_fetch_add(&mongoc_log_lines, 1) < SOAK_LOG_LINES) {
      fprintf(stderr, "soak-client: libmongoc %s: %s: %s\n", mongoc_log_level_str(level), domain, message);
   }
}

/* ------------------------------------------------------------------------
 * The program.
 * ---------------------------------------------------------------------- */

static int
usage(void)
{
   fprintf(stderr, "usage: soak-client --uri URI --log FILE --prefix P --seed N [--threads N] [--singles N]\n"
                   "                   [--ops N] [--warmup N] [--no-crash-handler] [--crash-at N]\n");
   return 64;
}

static bool
parse_options(int argc, char **argv)
{
   opt.threads = 8;
   opt.singles = 2;
   opt.ops = 1000;
   opt.warmup = 200;
   opt.crash_handler = true;
   opt.crash_at = -1;
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;

      if (strcmp(a, "--no-crash-handler") == 0) {
         opt.crash_handler = false;
         continue;
      }
      if (!v) {
         return false;
      }
      i++;
      if (strcmp(a, "--uri") == 0) {
         opt.uri = v;
      } else if (strcmp(a, "--log") == 0) {
         opt.log_path = v;
      } else if (strcmp(a, "--prefix") == 0) {
         opt.prefix = v;
      } else if (strcmp(a, "--seed") == 0) {
         opt.seed = strtoull(v, NULL, 10);
      } else if (strcmp(a, "--threads") == 0) {
         opt.threads = atoi(v);
      } else if (strcmp(a, "--singles") == 0) {
         opt.singles = atoi(v);
      } else if (strcmp(a, "--ops") == 0) {
         opt.ops = atoi(v);
      } else if (strcmp(a, "--warmup") == 0) {
         opt.warmup = atoi(v);
      } else if (strcmp(a, "--crash-at") == 0) {
         opt.crash_at = atoi(v);
      } else {
         return false;
      }
   }
   return opt.uri && opt.log_path && opt.prefix && opt.threads >= 0 && opt.singles >= 0 &&
          opt.threads + opt.singles >= 1 && opt.threads + opt.singles <= SOAK_MAX_WORKERS && opt.ops >= 0 &&
          opt.warmup >= 0 && opt.warmup <= opt.ops;
}

static void
log_start(void)
{
   bson_t rec = BSON_INITIALIZER;
   Dl_info dl;
   const char *(*version_fn)(void) = mongoc_get_version;
   void *sym;

   /* ISO C has no conversion from a function pointer to void *: copy the
    * bits (dladdr wants the address; dlsym would not see a libmongoc that
    * soak-late loaded privately). */
   memcpy(&sym, &version_fn, sizeof sym);

   BSON_APPEND_BOOL(&rec, "start", true);
   BSON_APPEND_UTF8(&rec, "version", mongoc_get_version());
   /* Which libmongoc file: the fork's runs check that it is the fork's. */
   BSON_APPEND_UTF8(&rec, "libmongoc", dladdr(sym, &dl) && dl.dli_fname ? dl.dli_fname : "?");
   BSON_APPEND_INT64(&rec, "pid", (int64_t) getpid());
   BSON_APPEND_INT32(&rec, "threads", opt.threads);
   BSON_APPEND_INT32(&rec, "singles", opt.singles);
   BSON_APPEND_INT32(&rec, "ops", opt.ops);
   log_doc(&rec);
   bson_destroy(&rec);
}

/* The streaming monitor: serverMonitoringMode=stream where the option exists
 * (1.28 and later); 1.23 streams whenever the server sends topologyVersion. */
static bool
make_uri(void)
{
   bson_error_t error;

   uri = mongoc_uri_new_with_error(opt.uri, &error);
   if (!uri) {
      fprintf(stderr, "soak-client: %s\n", error.message);
      return false;
   }
   if (mongoc_get_major_version() > 1 || mongoc_get_minor_version() >= 28) {
      mongoc_uri_set_option_as_utf8(uri, "serverMonitoringMode", "stream");
   }
   return true;
}

/* Each thread's sequence follows from the seed, the process's prefix and the
 * thread's index: a seed replays the same operations. */
static void
seed_worker(worker_t *w)
{
   uint64_t s = opt.seed ^ ((uint64_t) crc32(0L, (const Bytef *) opt.prefix, (uInt) strlen(opt.prefix)) << 16) ^
                ((uint64_t) (w->index + 1) << 48);

   for (int i = 0; i < 3; i++) {
      w->rng[i] = (unsigned short) (s >> (16 * i));
   }
}

__attribute__((visibility("default"))) int soak_main(int argc, char **argv);

int
soak_main(int argc, char **argv)
{
   worker_t workers[SOAK_MAX_WORKERS];
   pthread_t tids[SOAK_MAX_WORKERS];
   mongoc_apm_callbacks_t *cbs;
   bson_t rec = BSON_INITIALIZER;
   int n, total = 0;

   if (!parse_options(argc, argv)) {
      return usage();
   }
   if (opt.crash_handler) {
      install_crash_handler();
   }
   log_fd = open(opt.log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
   if (log_fd < 0) {
      perror(opt.log_path);
      return 2;
   }
   mongoc_init();
   mongoc_log_set_handler(on_mongoc_log, NULL);
   log_start();
   if (!make_uri()) {
      return 2;
   }
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_server_heartbeat_succeeded_cb(cbs, on_heartbeat_succeeded);
   mongoc_apm_set_server_heartbeat_failed_cb(cbs, on_heartbeat_failed);
   mongoc_client_pool_set_apm_callbacks(pool, cbs, NULL);

   n = opt.threads + opt.singles;
   pthread_barrier_init(&start_barrier, NULL, (unsigned) n);
   pthread_barrier_init(&quiet_barrier, NULL, (unsigned) n + 1);
   for (int i = 0; i < n; i++) {
      workers[i].index = i;
      workers[i].single = i >= opt.threads;
      seed_worker(&workers[i]);
      workers[i].ops = opt.ops / n + (i < opt.ops % n);
      workers[i].warm = opt.warmup / n + (i < opt.warmup % n);
      workers[i].settles = 0;
      total += workers[i].ops;
      pthread_create(&tids[i], NULL, worker_main, &workers[i]);
   }
   if (opt.warmup > 0) {
      pthread_barrier_wait(&quiet_barrier);
      measure("warm");
      pthread_barrier_wait(&quiet_barrier);
   }
   pthread_barrier_wait(&quiet_barrier);
   measure("end");
   pthread_barrier_wait(&quiet_barrier);
   for (int i = 0; i < n; i++) {
      pthread_join(tids[i], NULL);
   }
   mongoc_client_pool_destroy(pool);
   mongoc_apm_callbacks_destroy(cbs);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   pthread_barrier_destroy(&start_barrier);
   pthread_barrier_destroy(&quiet_barrier);
   BSON_APPEND_INT32(&rec, "done", total);
   BSON_APPEND_INT32(&rec, "mongoc_log_lines", atomic_load(&mongoc_log_lines));
   log_doc(&rec);
   bson_destroy(&rec);
   close(log_fd);
   return 0;
}

#ifdef SOAK_CLIENT_MAIN
int
main(int argc, char **argv)
{
   return soak_main(argc, argv);
}
#endif
