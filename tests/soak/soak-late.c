/*
 * soak-late.c - runs the soak client with libmongoc loaded late.
 *
 *   soak-late LIBSOAK_CLIENT_SO [soak-client options...]
 *
 * This program does not link libmongoc. It dlopen()s libsoak-client.so (the
 * soak client built as a library, which does) privately, as language
 * bindings load libmongoc, and runs it. A drop-in preloaded into this process
 * initialises before libmongoc exists, so it decides which libmongoc it
 * serves at its first interposed call, and the client's threads, released
 * together, make those first calls concurrently.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*soak_main_fn)(int, char **);

int
main(int argc, char **argv)
{
   void *handle;
   void *sym;
   soak_main_fn fn;

   if (argc < 2) {
      fprintf(stderr, "usage: soak-late LIBSOAK_CLIENT_SO [soak-client options...]\n");
      return 64;
   }
   if (dlsym(RTLD_DEFAULT, "mongoc_get_version")) {
      fprintf(stderr, "soak-late: libmongoc is already loaded: the late start would not be late\n");
      return 2;
   }
   handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
   if (!handle) {
      fprintf(stderr, "soak-late: %s\n", dlerror());
      return 2;
   }
   sym = dlsym(handle, "soak_main");
   if (!sym) {
      fprintf(stderr, "soak-late: %s has no soak_main\n", argv[1]);
      return 2;
   }
   /* ISO C has no conversion from void * to a function pointer: copy the
    * bits, as POSIX guarantees to work. */
   memcpy(&fn, &sym, sizeof fn);
   return fn(argc - 1, argv + 1);
}
