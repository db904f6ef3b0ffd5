/*
 * slot.c - the per-thread home of a merged reply body.
 *
 * libmongoc 1.23's callers read an OP_MSG body scatter points at, and copy
 * what they keep, before the same thread scatters again; they never free it
 * (each OP_MSG receive path in 1.23.1's sources: the command path and the
 * monitor's hellos bson_copy_to() it before they return, the async
 * handshake hands a view of it to its completion callback in the same
 * call). So each thread keeps at most one merged body: freed by its next
 * scatter, and by a pthread key destructor when the thread exits (the
 * library destructor covers the main thread, whose key destructors never
 * run).
 *
 * malloc rather than bson_malloc: the slot never leaves the drop-in, and
 * malloc lets an allocation failure become a clean "invalid reply" instead of
 * bson_malloc's abort().
 */
#include "dropin-private.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static bool slot_key_ok;
/* The thread's slot, also in a thread-local variable that costs one load to
 * read: most replies have no sequence, so there is nothing to release, and
 * pthread_once() and pthread_getspecific() (two calls) were a fifth of what
 * the drop-in added to such a reply. The key stays, for its destructor.
 * Initial-exec: 8 bytes of static TLS, which a preloaded library has (and
 * glibc keeps a surplus of for a dlopen()ed one). */
static __thread uint8_t *held __attribute__((tls_model("initial-exec")));

static void
slot_destroy(void *p)
{
   free(p);
}

static void
slot_key_create(void)
{
   slot_key_ok = pthread_key_create(&slot_key, slot_destroy) == 0;
}

void
dropin_slot_release(void)
{
   uint8_t *p = held;

   if (!p) {
      return;
   }
   held = NULL;
   pthread_setspecific(slot_key, NULL);
   free(p);
}

uint8_t *
dropin_slot_acquire(size_t size)
{
   uint8_t *p;

   dropin_slot_release();
   pthread_once(&slot_once, slot_key_create);
   if (!slot_key_ok || size == 0) {
      return NULL;
   }
   p = malloc(size);
   if (p && pthread_setspecific(slot_key, p) != 0) {
      free(p);
      p = NULL;
   }
   held = p;
   return p;
}

__attribute__((destructor)) static void
slot_at_exit(void)
{
   /* Only the exiting (main) thread's slot: other threads may still run. */
   dropin_slot_release();
}
