/*
 * main.c - `opmsg tap`: its command line, and one run from the options to
 * the exit code (docs/tap.md, opmsg(1)).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The run's shared state (tap_t: options, the log file, counters) is set up
 * here and handed to one of the two sources, the live proxy (proxy.c) or a
 * capture (pcap.c); SIGINT and SIGTERM stop either cleanly, with the log
 * flushed and every connection's close line written.
 */
#include "tap-private.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define TAP_DEFAULT_MAX_ARRAY 100u

volatile sig_atomic_t tap_stop;

static void
tap_signal(int sig)
{
   (void) sig;
   tap_stop = 1;
}

/* ---------------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------------- */

static void
tap_usage(FILE *f)
{
   fputs("usage: opmsg tap --listen HOST:PORT --upstream HOST:PORT [--out FILE]\n"
         "                 [--raw DIR] [--max-array N]\n"
         "       opmsg tap --pcap FILE [--port N] [--out FILE] [--raw DIR]\n"
         "                 [--max-array N]\n"
         "  both also take [--check spec|top-level|full] [--full-validate]\n"
         "Forwards MongoDB wire traffic unchanged and logs one JSON line per\n"
         "message (docs/tap.md). --out FILE: the log (default stdout).\n"
         "--raw DIR: also save each message as DIR/<seq>-conn<id>-<c2s|s2c>.bin.\n"
         "--pcap FILE: read a capture instead, the server being on port --port\n"
         "(default 27017). --max-array N: show at most N elements of an array\n"
         "(default 100, 0 = all). --check: how far inside the documents each\n"
         "message is checked (default full; --full-validate is --check full).\n"
         "Stop with Ctrl-C or SIGTERM.\n",
         f);
}

static int
tap_parse_args(int argc, char **argv, tap_opts_t *o)
{
   int64_t v;

   memset(o, 0, sizeof *o);
   o->port = 27017;
   o->max_array = TAP_DEFAULT_MAX_ARRAY;
   o->check = OPMSG_CHECK_FULL;
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *val = i + 1 < argc ? argv[i + 1] : NULL;
      int level = cli_check_option("tap", argc, argv, &i, &o->check);

      if (level < 0) {
         return 2;
      }
      if (level > 0) {
         continue;
      }
      if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
         tap_usage(stdout);
         return 0;
      }
      if (!val) {
         fprintf(stderr, "opmsg tap: unknown option or missing value: %s\n", a);
         return 2;
      }
      i++;
      if (strcmp(a, "--listen") == 0) {
         o->listen = val;
      } else if (strcmp(a, "--upstream") == 0) {
         o->upstream = val;
      } else if (strcmp(a, "--out") == 0) {
         o->out_path = val;
      } else if (strcmp(a, "--raw") == 0) {
         o->raw_dir = val;
      } else if (strcmp(a, "--pcap") == 0) {
         o->pcap_path = val;
      } else if (strcmp(a, "--port") == 0 && cli_parse_int(val, 1, 65535, &v)) {
         o->port = (uint16_t) v;
      } else if (strcmp(a, "--max-array") == 0 && cli_parse_int(val, 0, UINT32_MAX, &v)) {
         o->max_array = (uint32_t) v;
      } else {
         fprintf(stderr, "opmsg tap: bad option: %s %s\n", a, val);
         return 2;
      }
   }
   if (o->pcap_path ? (o->listen || o->upstream) : (!o->listen || !o->upstream)) {
      fprintf(stderr, "opmsg tap: give --listen and --upstream, or --pcap\n");
      tap_usage(stderr);
      return 2;
   }
   return -1;
}

int
cli_tap_main(int argc, char **argv)
{
   tap_t tap;
   struct sigaction sa;
   char missing[64];
   int rc;

   memset(&tap, 0, sizeof tap);
   rc = tap_parse_args(argc, argv, &tap.o);
   if (rc >= 0) {
      return rc;
   }
   opmsg_options_init(&tap.parse);
   tap.parse.check = tap.o.check;
   if (tap.o.raw_dir) {
      struct stat st;

      if (stat(tap.o.raw_dir, &st) != 0 && mkdir(tap.o.raw_dir, 0777) != 0) {
         fprintf(stderr, "opmsg tap: cannot create %s: %s\n", tap.o.raw_dir, strerror(errno));
         return 2;
      }
   }
   tap.out = stdout;
   if (tap.o.out_path && strcmp(tap.o.out_path, "-") != 0) {
      tap.out = fopen(tap.o.out_path, "w");
      if (!tap.out) {
         fprintf(stderr, "opmsg tap: cannot open %s: %s\n", tap.o.out_path, strerror(errno));
         return 2;
      }
   }

   /* A build without a codec cannot show what messages compressed with it
    * carry: say so once, before the log starts. */
   if (cli_codecs(false, missing, sizeof missing)[0]) {
      fprintf(stderr,
              "opmsg tap: this build has no %s: OP_COMPRESSED messages that use it are logged with "
              "\"error\":\"compressor-unavailable\"\n",
              missing);
   }

   /* Whole lines, written in large blocks (see logger.c). */
   setvbuf(tap.out, NULL, _IOFBF, 1u << 20);

   /* No SA_RESTART: the signal must interrupt poll() so the loop can flush
    * the log and close every connection cleanly. */
   memset(&sa, 0, sizeof sa);
   sa.sa_handler = tap_signal;
   sigemptyset(&sa.sa_mask);
   sigaction(SIGINT, &sa, NULL);
   sigaction(SIGTERM, &sa, NULL);
   signal(SIGPIPE, SIG_IGN);

   rc = tap.o.pcap_path ? tap_run_pcap(&tap) : tap_run_proxy(&tap);

   if (fflush(tap.out) != 0) {
      fprintf(stderr, "opmsg tap: writing the log: %s\n", strerror(errno));
      rc = rc ? rc : 2;
   }
   if (tap.out != stdout) {
      fclose(tap.out);
   }
   return rc;
}
