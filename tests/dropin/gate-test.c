/*
 * gate-test.c - runs under LD_PRELOAD=libopmsg-mongoc.so with a fake
 * libmongoc dlopen()ed at run time (RTLD_GLOBAL or RTLD_LOCAL: in the second
 * case neither RTLD_DEFAULT nor RTLD_NEXT can see it, and the drop-in must
 * find it from its caller).
 *
 *   dropin-gate-test global|local active|forward
 *
 * active: the drop-in's scatter, decompress, get_first_msg and
 * append_payload run (checked on their results); forward: the fake's run.
 *
 *   dropin-gate-test first-calls THREADS
 *
 * The first calls into the drop-in, made at once by THREADS threads of this
 * fresh process: each decompresses an OP_COMPRESSED reply from the fake
 * libmongoc's code, as libmongoc's receive paths do. Whichever thread makes
 * the gate decide, each must get libmongoc's contract (the sequence merged
 * into one section), which depends on who called: a thread that read the
 * gate's answer before the gate had decided took the wrong one. Prints
 * "first-calls: W of THREADS threads got the wrong contract" and exits 1
 * when W > 0.
 */
#define _GNU_SOURCE 1
#include <bson/bson.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_NAME "gate-test"
#include "dropin-test.h"

#define FAKE_MARK 4242

typedef bool (*scatter_fn)(void *, const uint8_t *, size_t);
typedef bool (*decompress_fn)(void *, uint8_t *, size_t);
typedef bool (*first_fn)(void *, bson_t *);
typedef void (*append_fn)(const void *, bson_t *);


static void *
sym(void *h, const char *name)
{
   void *p = dlsym(h, name);
   if (!p) {
      fprintf(stderr, "gate-test: %s missing\n", name);
      exit(2);
   }
   return p;
}

/* dlsym's void * into a function pointer, the way POSIX allows. */
static void
fn_sym(void *fn, size_t fn_size, void *h, const char *name)
{
   void *p = sym(h, name);
   memcpy(fn, &p, fn_size);
}

/* An OP_MSG reply: body {ok: 1.0} then a sequence "extra" of {x: 1}. */
static size_t
build_msg(uint8_t *m)
{
   bson_t *b = BCON_NEW("ok", BCON_DOUBLE(1.0));
   bson_t *x = BCON_NEW("x", BCON_INT32(1));
   size_t off = 20;

   memset(m, 0, 20);
   put_i32(m + 12, 2013);
   m[off++] = 0;
   memcpy(m + off, bson_get_data(b), b->len);
   off += b->len;
   m[off++] = 1;
   put_i32(m + off, (int32_t) (4 + 6 + x->len));
   memcpy(m + off + 4, "extra", 6);
   memcpy(m + off + 10, bson_get_data(x), x->len);
   off += 10 + x->len;
   put_i32(m, (int32_t) off);
   bson_destroy(b);
   bson_destroy(x);
   return off;
}

/* The OP_COMPRESSED (noop) of the len-byte message msg, into comp (at
 * least len + 9 bytes); returns its length. */
static size_t
build_compressed(uint8_t *comp, const uint8_t *msg, size_t len)
{
   size_t usize = len - 16;

   memcpy(comp, msg, 16);
   memcpy(comp + 25, msg + 16, usize);
   put_i32(comp, (int32_t) (25 + usize));
   put_i32(comp + 12, 2012);
   put_i32(comp + 16, 2013);
   put_i32(comp + 20, (int32_t) usize);
   comp[24] = 0;
   return 25 + usize;
}

/* ---------------------------------------------------------------------------
 * first-calls
 * ------------------------------------------------------------------------- */
#define FIRST_CALLS_MAX 64

typedef struct {
   pthread_barrier_t *start;
   decompress_fn decompress;
   const uint8_t *comp; /* the OP_COMPRESSED, shared and read-only */
   size_t comp_len;
   bool right;
} first_call_t;

static void *
first_call(void *arg)
{
   first_call_t *t = arg;
   uint64_t rpc_storage[12] = {0}; /* mongoc_rpc_t: 96 bytes, align 8 */
   uint8_t *rpc = (uint8_t *) rpc_storage;
   const uint8_t *payload = t->comp + 25;
   int32_t payload_len = (int32_t) (t->comp_len - 25);
   size_t out_len = (size_t) get_i32(t->comp + 20) + 16;
   uint8_t *out = malloc(out_len);

   /* The struct as _mongoc_rpc_scatter leaves an OP_COMPRESSED: the 25
    * fixed bytes, then the payload's address and length. */
   memcpy(rpc, t->comp, 25);
   memcpy(rpc + 25, &payload, sizeof payload);
   memcpy(rpc + 33, &payload_len, 4);
   pthread_barrier_wait(t->start);
   /* Merged for libmongoc: one body section that holds the sequence. */
   t->right = t->decompress(rpc, out, out_len) && get_i32(rpc + 88) == 1 && rpc[24] == 0;
   free(out);
   return NULL;
}

static int
first_calls(int n)
{
   void *h = dlopen(FAKE_MONGOC_PATH, RTLD_NOW | RTLD_GLOBAL);
   first_call_t calls[FIRST_CALLS_MAX];
   pthread_t tids[FIRST_CALLS_MAX];
   pthread_barrier_t start;
   uint8_t msg[256], comp[300];
   size_t comp_len;
   decompress_fn decompress;
   int wrong = 0;

   if (!h || n < 1 || n > FIRST_CALLS_MAX) {
      fprintf(stderr, "gate-test: %s\n", h ? "THREADS must be 1 to 64" : dlerror());
      return 2;
   }
   fn_sym(&decompress, sizeof decompress, h, "fake_mongoc_decompress");
   comp_len = build_compressed(comp, msg, build_msg(msg));
   pthread_barrier_init(&start, NULL, (unsigned) n);
   for (int i = 0; i < n; i++) {
      calls[i] = (first_call_t) {&start, decompress, comp, comp_len, false};
      pthread_create(&tids[i], NULL, first_call, &calls[i]);
   }
   for (int i = 0; i < n; i++) {
      pthread_join(tids[i], NULL);
      wrong += !calls[i].right;
   }
   pthread_barrier_destroy(&start);
   printf("first-calls: %d of %d threads got the wrong contract\n", wrong, n);
   return wrong ? 1 : 0;
}

/* ---------------------------------------------------------------------------
 * global|local active|forward
 * ------------------------------------------------------------------------- */
static int
gate_case(int argc, char **argv)
{
   bool local = argc > 1 && strcmp(argv[1], "local") == 0;
   bool active = argc > 2 && strcmp(argv[2], "active") == 0;
   /* FAKE_MONGOC_PATH in the environment: another build of the fake. */
   const char *path = getenv("FAKE_MONGOC_PATH") ? getenv("FAKE_MONGOC_PATH") : FAKE_MONGOC_PATH;
   void *h = dlopen(path, RTLD_NOW | (local ? RTLD_LOCAL : RTLD_GLOBAL));
   uint64_t rpc_storage[12]; /* mongoc_rpc_t: 96 bytes, align 8 */
   uint8_t *rpc = (uint8_t *) rpc_storage;
   uint8_t msg[256], comp[300];
   size_t len;
   scatter_fn scatter;
   decompress_fn decompress;
   first_fn first;
   append_fn append;
   bson_t doc, out;
   bson_iter_t it;

   if (!h) {
      fprintf(stderr, "gate-test: %s\n", dlerror());
      return 2;
   }
   fn_sym(&scatter, sizeof scatter, h, "fake_mongoc_scatter");
   fn_sym(&decompress, sizeof decompress, h, "fake_mongoc_decompress");
   fn_sym(&first, sizeof first, h, "fake_mongoc_get_first_msg");
   fn_sym(&append, sizeof append, h, "fake_mongoc_append_payload");

   len = build_msg(msg);
   CHECK(scatter(rpc, msg, len));
   if (!active) {
      CHECK(get_i32(rpc + 88) == FAKE_MARK);
      CHECK(first(rpc, &doc) && bson_has_field(&doc, "fake"));
      bson_destroy(&doc);
   } else {
      /* Merged: one body, {ok: 1.0, extra: [{x: 1}]}. */
      CHECK(get_i32(rpc + 88) == 1 && rpc[24] == 0);
      CHECK(first(rpc, &doc) && bson_iter_init_find(&it, &doc, "extra") && BSON_ITER_HOLDS_ARRAY(&it));
      /* The same bytes from a caller that is not libmongoc (a mock server
       * parsing a request): the sections as on the wire, not merged. */
      {
         scatter_fn direct;
         const char *id;
         const uint8_t *docs;

         fn_sym(&direct, sizeof direct, RTLD_DEFAULT, "_mongoc_rpc_scatter");
         CHECK(direct(rpc, msg, len));
         CHECK(get_i32(rpc + 88) == 2 && rpc[24] == 0 && rpc[56] == 1);
         memcpy(&id, rpc + 56 + 16, sizeof id);
         memcpy(&docs, rpc + 56 + 24, sizeof docs);
         CHECK(id && strcmp(id, "extra") == 0 && docs == (const uint8_t *) id + 6);
         CHECK(get_i32(rpc + 56 + 8) == (int32_t) (len - (size_t) ((const uint8_t *) id - 4 - msg)));
      }
      /* A truncated message and a length that lies are refused. */
      CHECK(!scatter(rpc, msg, len - 1));
      put_i32(msg, (int32_t) len + 1);
      CHECK(!scatter(rpc, msg, len));
      put_i32(msg, (int32_t) len);
      /* get_first_msg refuses a sequence in sections[0]. */
      rpc[24] = 1;
      CHECK(!first(rpc, &doc));

      /* OP_COMPRESSED, noop: scatter, then decompress into 16 + size. */
      {
         size_t usize = len - 16;
         uint8_t *out_buf = malloc(usize + 16);
         build_compressed(comp, msg, len);
         CHECK(scatter(rpc, comp, 25 + usize));
         CHECK(decompress(rpc, out_buf, usize + 16));
         CHECK(get_i32(rpc + 12) == 2013 && get_i32(rpc + 88) == 1);
         CHECK(first(rpc, &doc) && bson_has_field(&doc, "extra"));
         /* A wrong output size, nesting and a lying noop size fail. */
         CHECK(scatter(rpc, comp, 25 + usize));
         CHECK(!decompress(rpc, out_buf, usize + 15));
         put_i32(comp + 16, 2012);
         CHECK(!scatter(rpc, comp, 25 + usize));
         put_i32(comp + 16, 2013);
         put_i32(comp + 20, (int32_t) usize - 3);
         CHECK(scatter(rpc, comp, 25 + usize));
         CHECK(!decompress(rpc, out_buf, usize + 13));
         free(out_buf);
      }
   }

   /* append_payload: insert with two documents. */
   {
      bson_t *d0 = BCON_NEW("a", BCON_INT32(1));
      bson_t *d1 = BCON_NEW("b", BCON_INT32(2));
      uint8_t payload[64];
      uint64_t cmd_storage[12] = {0}; /* mongoc_cmd_t: 96 bytes */
      uint8_t *cmd = (uint8_t *) cmd_storage;
      const char *name = "insert";
      const uint8_t *pp = payload;
      int32_t size = (int32_t) (d0->len + d1->len);
      bson_iter_t arr;

      memcpy(payload, bson_get_data(d0), d0->len);
      memcpy(payload + d0->len, bson_get_data(d1), d1->len);
      memcpy(cmd + 24, &name, sizeof name);
      memcpy(cmd + 32, &pp, sizeof pp);
      memcpy(cmd + 40, &size, 4);
      bson_init(&out);
      BSON_APPEND_UTF8(&out, "insert", "c");
      append(cmd, &out);
      if (active) {
         CHECK(bson_iter_init_find(&it, &out, "documents") && BSON_ITER_HOLDS_ARRAY(&it) &&
               bson_iter_recurse(&it, &arr));
         CHECK(bson_iter_next(&arr) && strcmp(bson_iter_key(&arr), "0") == 0);
         CHECK(bson_iter_next(&arr) && strcmp(bson_iter_key(&arr), "1") == 0);
         CHECK(!bson_iter_next(&arr));
      } else {
         CHECK(bson_has_field(&out, "fake"));
      }
      bson_destroy(&out);
      bson_destroy(d0);
      bson_destroy(d1);
   }
   dlclose(h);
   printf("gate-test %s %s: %s\n", argv[1], argv[2], failures ? "FAIL" : "ok");
   return failures ? 1 : 0;
}

int
main(int argc, char **argv)
{
   if (argc > 2 && strcmp(argv[1], "first-calls") == 0) {
      return first_calls(atoi(argv[2]));
   }
   return gate_case(argc, argv);
}
