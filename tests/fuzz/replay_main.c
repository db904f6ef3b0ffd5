/*
 * replay_main.c - runs a fuzz target's LLVMFuzzerTestOneInput() over files,
 * without libFuzzer. The normal build links each target with this driver and
 * CTest replays the committed corpus and every regression through it.
 *
 * Usage: fuzz_<target>_replay PATH...   (files, or directories of files;
 * names starting with '.' and README* are skipped). Each input is copied
 * into a buffer of exactly its size so a sanitised build catches over-reads.
 * A directory that does not exist counts as empty (git keeps no empty
 * directories). Exits non-zero when no input was found at all; a broken
 * property aborts.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
replay_file(const char *path)
{
   FILE *f = fopen(path, "rb");
   if (!f) {
      fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
      return -1;
   }
   size_t cap = 4096, len = 0;
   uint8_t *data = malloc(cap);
   size_t n;
   while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
      len += n;
      if (len == cap) {
         cap *= 2;
         uint8_t *bigger = realloc(data, cap);
         if (!bigger) {
            free(data);
         }
         data = bigger;
      }
   }
   fclose(f);
   if (!data) {
      fprintf(stderr, "replay: out of memory reading %s\n", path);
      return -1;
   }
   /* Exactly sized, so one byte too far is an ASan report. */
   uint8_t *exact = malloc(len ? len : 1);
   if (!exact) {
      free(data);
      return -1;
   }
   memcpy(exact, data, len);
   free(data);
   fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
   LLVMFuzzerTestOneInput(exact, len);
   free(exact);
   return 1;
}

static int
skip_name(const struct dirent *e)
{
   return e->d_name[0] != '.' && strncmp(e->d_name, "README", 6) != 0;
}

static int
replay_path(const char *path)
{
   struct stat st;
   if (stat(path, &st) != 0) {
      fprintf(stderr, "replay: %s does not exist, nothing to replay there\n", path);
      return 0;
   }
   if (!S_ISDIR(st.st_mode)) {
      return replay_file(path);
   }
   struct dirent **names = NULL;
   int n = scandir(path, &names, skip_name, alphasort);
   if (n < 0) {
      fprintf(stderr, "replay: cannot list %s: %s\n", path, strerror(errno));
      return -1;
   }
   int total = 0;
   for (int i = 0; i < n; i++) {
      size_t plen = strlen(path) + strlen(names[i]->d_name) + 2;
      char *child = malloc(plen);
      if (child) {
         snprintf(child, plen, "%s/%s", path, names[i]->d_name);
         int r = replay_path(child);
         free(child);
         if (r < 0) {
            total = -1;
         } else if (total >= 0) {
            total += r;
         }
      }
      free(names[i]);
   }
   free(names);
   return total;
}

int
main(int argc, char **argv)
{
   int total = 0;
   bool failed = false;
   for (int i = 1; i < argc; i++) {
      int r = replay_path(argv[i]);
      if (r < 0) {
         failed = true;
      } else {
         total += r;
      }
   }
   printf("replayed %d input(s)\n", total);
   if (failed || total == 0) {
      fprintf(stderr, "replay: %s\n", failed ? "unreadable input" : "no input found");
      return 1;
   }
   return 0;
}
