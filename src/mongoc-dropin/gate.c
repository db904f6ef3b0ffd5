/*
 * gate.c - decides whether libopmsg-mongoc replaces libmongoc's reply path.
 *
 * The replacements describe libmongoc 1.23's private structs, so they may only
 * run inside a libmongoc that reports 1.23.x; anything else (1.24 reworked
 * these files, 1.25 removed _mongoc_rpc_scatter) gets the original functions.
 * The decision is tried from a constructor (libmongoc is relocated by then
 * when it is a load-time dependency) and otherwise made at the first
 * interposed call, when libmongoc is certainly loaded. It never changes
 * afterwards, so a reply is never scattered by one implementation and
 * decompressed by the other.
 */
#define _GNU_SOURCE 1
#include "dropin-private.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GATE_UNDECIDED = 0, GATE_ACTIVE = 1, GATE_FORWARD = 2 };

static atomic_int gate_state = GATE_UNDECIDED;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static _Atomic(const void *) gate_caller; /* a libmongoc address, for decide() */
static dropin_originals_t originals;
static opmsg_options_t parse_options;
static int debug_level = -1;

typedef const char *(*version_fn)(void);

/* OPMSG_MONGOC_DISABLE=1 turns the drop-in off for one process even when
 * /etc/ld.so.preload loads it everywhere. */
static bool
disabled_by_env(void)
{
   const char *v = getenv("OPMSG_MONGOC_DISABLE");
   return v && v[0] && strcmp(v, "0") != 0;
}

int
dropin_debug_level(void)
{
   /* Read once: getenv is not thread-safe against setenv, and the answer
    * must not change mid-run. Called first from the constructor. */
   if (debug_level < 0) {
      const char *v = getenv("OPMSG_MONGOC_DEBUG");
      debug_level = (v && v[0] >= '1' && v[0] <= '9') ? v[0] - '0' : 0;
   }
   return debug_level;
}

void
dropin_log(const char *fmt, ...)
{
   char line[512];
   va_list ap;

   va_start(ap, fmt);
   vsnprintf(line, sizeof line, fmt, ap);
   va_end(ap);
   /* One fprintf per line so lines from several threads do not interleave. */
   fprintf(stderr, "opmsg-mongoc: %s\n", line);
}

const opmsg_options_t *
dropin_parse_options(void)
{
   return &parse_options;
}

const dropin_originals_t *
dropin_originals(void)
{
   return &originals;
}

/* dlsym returns void *; ISO C has no conversion to a function pointer, so
 * copy the bits (what POSIX guarantees to work). */
static void
fn_from_sym(void *fn_out, size_t fn_size, void *sym)
{
   memcpy(fn_out, &sym, fn_size);
}

/* The handle of the object that contains addr (libmongoc, when addr is one
 * of its code addresses), or NULL. RTLD_NOLOAD only takes a reference. */
static void *
handle_of(const void *addr)
{
   Dl_info info;

   if (!addr || !dladdr(addr, &info) || !info.dli_fname) {
      return NULL;
   }
   return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* name from the object after this one, or else from libmongoc's handle. */
static void *
find_original(const char *name, void *mongoc_handle)
{
   void *sym = dlsym(RTLD_NEXT, name);

   if (!sym && mongoc_handle) {
      sym = dlsym(mongoc_handle, name);
   }
   return sym;
}

/* Collects the file names of the loaded objects (dl_iterate_phdr sees
 * RTLD_LOCAL ones too). dlopen is not called from the callback: it runs
 * under the loader's lock. */
typedef struct {
   char names[64][256];
   int n;
} loaded_objects_t;

static int
collect_object(struct dl_phdr_info *info, size_t size, void *data)
{
   loaded_objects_t *objs = data;

   (void) size;
   if (info->dlpi_name && info->dlpi_name[0] && objs->n < 64 &&
       strlen(info->dlpi_name) < sizeof objs->names[0]) {
      strcpy(objs->names[objs->n++], info->dlpi_name);
   }
   return 0;
}

/* The handle of a loaded object that defines mongoc_get_version. */
static void *
scan_for_mongoc(void **sym_out)
{
   static loaded_objects_t objs; /* only ever used inside pthread_once */

   objs.n = 0;
   dl_iterate_phdr(collect_object, &objs);
   for (int i = 0; i < objs.n; i++) {
      void *h = dlopen(objs.names[i], RTLD_LAZY | RTLD_NOLOAD);
      void *sym = h ? dlsym(h, "mongoc_get_version") : NULL;

      if (sym) {
         *sym_out = sym;
         return h;
      }
      if (h) {
         dlclose(h);
      }
   }
   return NULL;
}

/* mongoc_get_version: visible globally; else in the caller's object (a
 * libmongoc dlopen()ed with RTLD_LOCAL); else in any loaded object (the
 * caller was reached by a tail call from elsewhere). */
static void *
find_version_fn(const void *caller, void **handle_out)
{
   void *sym = dlsym(RTLD_DEFAULT, "mongoc_get_version");

   *handle_out = NULL;
   if (!sym && caller) {
      *handle_out = handle_of(caller);
      if (*handle_out) {
         sym = dlsym(*handle_out, "mongoc_get_version");
      }
      if (!sym) {
         if (*handle_out) {
            dlclose(*handle_out);
         }
         *handle_out = scan_for_mongoc(&sym);
      }
   }
   return sym;
}

static void
resolve_originals(void *handle)
{
   fn_from_sym(&originals.scatter, sizeof originals.scatter,
               find_original("_mongoc_rpc_scatter", handle));
   fn_from_sym(&originals.decompress, sizeof originals.decompress,
               find_original("_mongoc_rpc_decompress", handle));
   fn_from_sym(&originals.get_first_msg, sizeof originals.get_first_msg,
               find_original("_mongoc_rpc_reply_get_first_msg", handle));
   fn_from_sym(&originals.append_payload, sizeof originals.append_payload,
               find_original("_mongoc_cmd_append_payload_as_array", handle));
}

static void
decide(void)
{
   void *handle = NULL;
   void *sym = find_version_fn(atomic_load(&gate_caller), &handle);
   const char *version = NULL;
   version_fn get_version;
   int state;

   opmsg_options_init(&parse_options);
   resolve_originals(handle);
   if (sym) {
      fn_from_sym(&get_version, sizeof get_version, sym);
      version = get_version();
   }

   if (disabled_by_env()) {
      state = GATE_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: OPMSG_MONGOC_DISABLE is set; forwarding to libmongoc");
      }
   } else if (!OPMSG_DROPIN_LAYOUT_KNOWN) {
      state = GATE_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: built for an ABI whose libmongoc layout is not "
                    "described; forwarding to libmongoc");
      }
   } else if (!version) {
      state = GATE_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: mongoc_get_version() not found; forwarding");
      }
   } else if (strncmp(version, "1.23.", 5) != 0) {
      state = GATE_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: libmongoc %s is not 1.23.x; forwarding to it",
                    version);
      }
   } else if (!originals.scatter || !originals.decompress) {
      state = GATE_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: libmongoc %s lacks _mongoc_rpc_scatter or "
                    "_mongoc_rpc_decompress; forwarding",
                    version);
      }
   } else {
      state = GATE_ACTIVE;
      if (dropin_debug_level()) {
         dropin_log("active: libmongoc %s, libopmsg %s, CRC-32C %s", version,
                    opmsg_version_string(), opmsg_crc32c_implementation());
      }
   }
   if (handle) {
      dlclose(handle); /* drops the RTLD_NOLOAD reference only */
   }
   atomic_store_explicit(&gate_state, state, memory_order_release);
}

bool
dropin_active(const void *caller)
{
   int state = atomic_load_explicit(&gate_state, memory_order_acquire);

   if (__builtin_expect(state != GATE_UNDECIDED, 1)) {
      return state == GATE_ACTIVE;
   }
   /* Every thread that races here passes a libmongoc address; whichever
    * runs decide() uses its own. */
   atomic_store(&gate_caller, caller);
   pthread_once(&gate_once, decide);
   return atomic_load_explicit(&gate_state, memory_order_acquire) ==
          GATE_ACTIVE;
}

__attribute__((constructor)) static void
dropin_constructor(void)
{
   (void) dropin_debug_level();
   if (dlsym(RTLD_DEFAULT, "mongoc_get_version")) {
      pthread_once(&gate_once, decide);
   } else if (dropin_debug_level() >= 2) {
      /* Shells and tools inherit LD_PRELOAD; say nothing there at level 1. */
      dropin_log("libmongoc not loaded yet; deciding at the first call");
   }
}
