/*
 * gate.c - decides whether, and how, libopmsg-mongoc replaces libmongoc's
 * reply path.
 *
 * The replacements rely on facts about particular libmongoc builds (1.23's
 * private struct layouts; the call order and ownership of the mcd-rpc
 * functions in 1.30 and 2.5), so each runs only inside a libmongoc whose
 * mongoc_get_version() names a series the project tests: 1.23.x takes the
 * _mongoc_rpc_* path (rpc.c), 1.30.x and 2.5.x the mcd-rpc path (mcdrpc.c).
 * Anything else gets its own functions back, untouched.
 * The decision is tried from a constructor (libmongoc is relocated by then
 * when it is a load-time dependency) and otherwise made at the first
 * interposed call, when libmongoc is certainly loaded. It never changes
 * afterwards, so a reply is never parsed by one implementation and
 * decompressed by the other. The environment (OPMSG_MONGOC_DISABLE,
 * OPMSG_MONGOC_DEBUG, OPMSG_MONGOC_CHECK) is read once too.
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

/* What dropin_caller_at() reads (dropin-private.h): the path + 1 once
 * decided, 0 before; and where libmongoc's code is: from the start of its
 * first executable segment to the end of its last (one span, since an
 * object's segments are mapped together and a return address is never in
 * the data between them; 0, 0 when not found). Written by decide() only;
 * the span is read only after decide() has published the path. */
atomic_int dropin_gate_state = 0;
uintptr_t dropin_mongoc_code_lo, dropin_mongoc_code_hi;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static _Atomic(const void *) gate_caller; /* a libmongoc address, for decide() */
static dropin_originals_t originals;
static dropin_mcd_t mcd;
static opmsg_options_t parse_options;
static opmsg_options_t reply_options;
static bool decompress_takes_max;
static int debug_level = -1;
/* OPMSG_MONGOC_CHECK, read once (check_read): the level, and the value
 * when it names none (said once, by decide()). */
static bool check_read;
static opmsg_check_t check_level = OPMSG_CHECK_SPEC;
static bool check_unknown;
static char check_bad[64];

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

/* OPMSG_MONGOC_CHECK: how far inside the documents every message is
 * checked (libopmsg's names, opmsg_check_from_name()); spec when unset
 * or empty. Read once, like OPMSG_MONGOC_DEBUG: first from the constructor.
 * An unknown value never fails the application: it is kept (made printable)
 * for one warning, and the default applies. */
static opmsg_check_t
dropin_check_level(void)
{
   if (!check_read) {
      const char *v = getenv("OPMSG_MONGOC_CHECK");

      check_read = true;
      if (v && v[0] && !opmsg_check_from_name(v, &check_level)) {
         size_t i;

         check_unknown = true;
         for (i = 0; v[i] && i + 1 < sizeof check_bad; i++) {
            unsigned char c = (unsigned char) v[i];
            check_bad[i] = c < 0x20 || c >= 0x7f ? '?' : (char) c;
         }
         check_bad[i] = '\0';
      }
   }
   return check_level;
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

bool
dropin_reject(const char *what, const bson_error_t *error)
{
   if (dropin_debug_level()) {
      dropin_log("rejected %s: %s (%s)", what, error->message, opmsg_error_name(error->code));
   }
   return false;
}

bool
dropin_reject_msg(const char *what, const char *message)
{
   if (dropin_debug_level()) {
      dropin_log("rejected %s: %s", what, message);
   }
   return false;
}

const opmsg_options_t *
dropin_parse_options(bool reply)
{
   return reply ? &reply_options : &parse_options;
}

const dropin_mcd_t *
dropin_mcd(void)
{
   return &mcd;
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
   if (info->dlpi_name && info->dlpi_name[0] && objs->n < 64 && strlen(info->dlpi_name) < sizeof objs->names[0]) {
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

#define RESOLVE(field, name) fn_from_sym(&(field), sizeof(field), find_original(name, handle))
/* The same, counting the mcd-rpc functions libmongoc lacks: the path needs
 * every one (each is called or forwarded to). */
#define RESOLVE_MCD(field, name)                  \
   do {                                           \
      void *sym_ = find_original(name, handle);   \
      mcd_missing += sym_ == NULL;                \
      fn_from_sym(&(field), sizeof(field), sym_); \
   } while (0)

static int mcd_missing;

static void
resolve_originals(void *handle)
{
   RESOLVE(originals.gather, "_mongoc_rpc_gather");
   RESOLVE(originals.scatter, "_mongoc_rpc_scatter");
   RESOLVE(originals.decompress, "_mongoc_rpc_decompress");
   RESOLVE(originals.get_first_msg, "_mongoc_rpc_reply_get_first_msg");
   RESOLVE(originals.append_payload, "_mongoc_cmd_append_payload_as_array");

   RESOLVE_MCD(mcd.from_data_in_place, "mcd_rpc_message_from_data_in_place");
   RESOLVE_MCD(mcd.from_data, "mcd_rpc_message_from_data");
   RESOLVE_MCD(mcd.get_body, "mcd_rpc_message_get_body");
   RESOLVE_MCD(mcd.decompress3, "mcd_rpc_message_decompress");
   RESOLVE_MCD(mcd.decompress4, "mcd_rpc_message_decompress");
   RESOLVE_MCD(mcd.decompress_if_necessary3, "mcd_rpc_message_decompress_if_necessary");
   RESOLVE_MCD(mcd.decompress_if_necessary4, "mcd_rpc_message_decompress_if_necessary");
   RESOLVE_MCD(mcd.ingress, "mcd_rpc_message_ingress");
   RESOLVE_MCD(mcd.flag_bits, "mcd_rpc_op_msg_get_flag_bits");
   RESOLVE_MCD(mcd.message_new, "mcd_rpc_message_new");
   RESOLVE_MCD(mcd.message_destroy, "mcd_rpc_message_destroy");
   RESOLVE_MCD(mcd.message_reset, "mcd_rpc_message_reset");
   RESOLVE_MCD(mcd.message_length, "mcd_rpc_header_get_message_length");
   RESOLVE_MCD(mcd.request_id, "mcd_rpc_header_get_request_id");
   RESOLVE_MCD(mcd.response_to, "mcd_rpc_header_get_response_to");
   RESOLVE_MCD(mcd.op_code, "mcd_rpc_header_get_op_code");
   RESOLVE_MCD(mcd.original_opcode, "mcd_rpc_op_compressed_get_original_opcode");
   RESOLVE_MCD(mcd.compressed_message, "mcd_rpc_op_compressed_get_compressed_message");
   RESOLVE_MCD(mcd.sections_count, "mcd_rpc_op_msg_get_sections_count");
   RESOLVE_MCD(mcd.section_kind, "mcd_rpc_op_msg_section_get_kind");
   RESOLVE_MCD(mcd.section_body, "mcd_rpc_op_msg_section_get_body");
   RESOLVE_MCD(mcd.section_identifier, "mcd_rpc_op_msg_section_get_identifier");
}

#undef RESOLVE
#undef RESOLVE_MCD

/* Records the span of the executable PT_LOAD segments of the object that
 * holds the address in data (mongoc_get_version). */
static int
find_code_span(struct dl_phdr_info *info, size_t size, void *data)
{
   uintptr_t target = (uintptr_t) data;
   uintptr_t lo = UINTPTR_MAX, hi = 0;

   (void) size;
   for (int i = 0; i < info->dlpi_phnum; i++) {
      const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
      uintptr_t start = (uintptr_t) info->dlpi_addr + ph->p_vaddr;

      if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
         lo = start < lo ? start : lo;
         hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
      }
   }
   if (hi == 0 || target < lo || target >= hi) {
      return 0; /* not this object: go on to the next */
   }
   dropin_mongoc_code_lo = lo;
   dropin_mongoc_code_hi = hi;
   return 1;
}

/* mcd_rpc_message_decompress gained max_msg_size in 2.4.0. */
static bool
takes_max(const char *version)
{
   int major = 0, minor = 0;

   if (sscanf(version, "%d.%d", &major, &minor) != 2) {
      return false;
   }
   return major > 2 || (major == 2 && minor >= 4);
}

bool
dropin_mcd_decompress_takes_max(void)
{
   return decompress_takes_max;
}

/* The series this drop-in is tested with, and the path each takes. */
static dropin_path_t
path_for_version(const char *version)
{
   if (strncmp(version, "1.23.", 5) == 0) {
      return DROPIN_RPC_123;
   }
   if (strncmp(version, "1.30.", 5) == 0) {
      return DROPIN_MCD_130;
   }
   if (strncmp(version, "2.5.", 4) == 0) {
      return DROPIN_MCD_25;
   }
   return DROPIN_FORWARD;
}

/* The fork's patched libmongoc (fork/: Debian's packages rebuilt with the
 * pull requests) already merges replies, checks the section rules and turns
 * a peer's surprises into errors, on the very functions the drop-in
 * replaces, so the drop-in must not stand in front of it. The sign is the
 * function the reply-sequences pull request adds, which the receive paths
 * call: mcd_rpc_message_get_reply (2.x and 1.30, where that pull request
 * applies only on top of the section rules and the no-abort one, so its
 * presence means all three), or _mongoc_rpc_copy_reply (1.23's own series).
 * Stock never had either. */
static const char *
fork_function(void *mongoc_handle)
{
   static const char *const names[] = {"mcd_rpc_message_get_reply", "_mongoc_rpc_copy_reply"};

   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      if (find_original(names[i], mongoc_handle)) {
         return names[i];
      }
   }
   return NULL;
}

static void
decide(void)
{
   void *handle = NULL;
   void *sym = find_version_fn(atomic_load(&gate_caller), &handle);
   const char *version = NULL;
   version_fn get_version;
   dropin_path_t path = DROPIN_FORWARD;
   const char *why = NULL;
   const char *fork_fn;
   static char fork_why[160];

   opmsg_options_init(&parse_options);
   opmsg_options_init(&reply_options);
   reply_options.flags = OPMSG_PARSE_REPLY;
   /* Every parse of the drop-in reads its options from these two. */
   parse_options.check = reply_options.check = dropin_check_level();
   if (check_unknown) {
      /* Said whatever OPMSG_MONGOC_DEBUG says: the variable was set for a
       * reason, and the drop-in checks at another level than asked. */
      dropin_log("OPMSG_MONGOC_CHECK=%s is not a check level (%s, %s or %s); "
                 "checking at %s",
                 check_bad, opmsg_check_name(OPMSG_CHECK_SPEC), opmsg_check_name(OPMSG_CHECK_TOP_LEVEL),
                 opmsg_check_name(OPMSG_CHECK_FULL), opmsg_check_name(check_level));
   }
   resolve_originals(handle);
   if (sym) {
      fn_from_sym(&get_version, sizeof get_version, sym);
      version = get_version();
      dl_iterate_phdr(find_code_span, sym);
      decompress_takes_max = takes_max(version);
   }

   if (disabled_by_env()) {
      why = "OPMSG_MONGOC_DISABLE is set";
   } else if (!OPMSG_DROPIN_LAYOUT_KNOWN) {
      why = "built for an ABI whose libmongoc layout is not described";
   } else if (!version) {
      why = "mongoc_get_version() not found";
   } else if ((fork_fn = fork_function(handle)) != NULL) {
      snprintf(fork_why, sizeof fork_why, "libmongoc %s already carries the fix (the fork's patch series: %s)", version,
               fork_fn);
      why = fork_why;
   } else if ((path = path_for_version(version)) == DROPIN_FORWARD) {
      if (dropin_debug_level()) {
         dropin_log("inactive: libmongoc %s is not one this drop-in is tested "
                    "with (1.23.x, 1.30.x, 2.5.x); forwarding to it",
                    version);
      }
   } else if (path == DROPIN_RPC_123 && (!originals.scatter || !originals.decompress)) {
      path = DROPIN_FORWARD;
      why = "libmongoc lacks _mongoc_rpc_scatter or _mongoc_rpc_decompress";
   } else if (path != DROPIN_RPC_123 && mcd_missing > 0) {
      path = DROPIN_FORWARD;
      why = "libmongoc lacks one of the mcd_rpc_* functions";
   } else if (dropin_mongoc_code_hi == 0) {
      path = DROPIN_FORWARD;
      why = "libmongoc's code segments were not found";
   }
   if (why) {
      path = DROPIN_FORWARD;
      if (dropin_debug_level()) {
         dropin_log("inactive: %s; forwarding to libmongoc", why);
      }
   } else if (path != DROPIN_FORWARD && dropin_debug_level()) {
      dropin_log("active: libmongoc %s (%s path), libopmsg %s, CRC-32C %s, "
                 "check %s",
                 version, path == DROPIN_RPC_123 ? "rpc" : "mcd-rpc", opmsg_version_string(),
                 opmsg_crc32c_implementation(), opmsg_check_name(check_level));
   }
   if (handle) {
      dlclose(handle); /* drops the RTLD_NOLOAD reference only */
   }
   atomic_store_explicit(&dropin_gate_state, (int) path + 1, memory_order_release);
}

dropin_caller_t
dropin_caller_first(const void *return_address)
{
   /* Every thread that races here passes a libmongoc address; whichever
    * runs decide() uses its own. */
   atomic_store(&gate_caller, return_address);
   pthread_once(&gate_once, decide);
   return dropin_caller_at(return_address);
}

__attribute__((constructor)) static void
dropin_constructor(void)
{
   (void) dropin_debug_level();
   (void) dropin_check_level();
   if (dlsym(RTLD_DEFAULT, "mongoc_get_version")) {
      pthread_once(&gate_once, decide);
   } else if (dropin_debug_level() >= 2) {
      /* Shells and tools inherit LD_PRELOAD; say nothing there at level 1. */
      dropin_log("libmongoc not loaded yet; deciding at the first call");
   }
}
