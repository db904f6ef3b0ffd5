/*
 * opmsg.c - the `opmsg` command: merge, check, dump, build and tap MongoDB
 * wire messages. This file is the entry: it sends each command to the file
 * that owns it (cli-common.h says which) and answers help and --version.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The output formats and exit codes are a contract other tools and tests rely
 * on; docs/opmsg.1 and docs/cli.md describe them.
 */
#include "cli-common.h"

#include <string.h>

static int
cli_version(void)
{
   char codecs[64];

   printf("opmsg %s (libopmsg %s, libbson %s, crc32c %s)\n", OPMSG_VERSION_STRING, opmsg_version_string(),
          bson_get_version(), opmsg_crc32c_implementation());
   /* The optional parts, for the scripts (and the tests) that read this
    * line: every build has the commands, and the line stays so that those
    * scripts keep working. The codecs are the build's (OPMSG_WITH_*). */
   printf("features: build compress tap\n");
   printf("codecs: %s\n", cli_codecs(true, codecs, sizeof codecs));
   return CLI_EXIT_OK;
}

static int
cli_help(int argc, char **argv)
{
   if (argc > 1) {
      cli_usage(stdout, argv[1]);
      return CLI_EXIT_OK;
   }
   fputs("opmsg - parse, validate, merge and build MongoDB OP_MSG messages\n\n", stdout);
   cli_usage(stdout, NULL);
   fputs("\nFILE is one raw wire message (or several with --stream); '-' reads"
         " stdin.\n"
         "Exit status: 0 success, 1 invalid message"
         " (\"opmsg: <rule>: <detail>\" on stderr),\n"
         "2 usage or I/O error. See opmsg(1).\n",
         stdout);
   return CLI_EXIT_OK;
}

int
main(int argc, char **argv)
{
   const char *cmd;

   if (argc < 2) {
      return cli_usage_error(NULL, "no command given");
   }
   cmd = argv[1];
   if (strcmp(cmd, "merge") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_merge_one);
   }
   if (strcmp(cmd, "check") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_check_one);
   }
   if (strcmp(cmd, "dump") == 0) {
      return cli_read_command(argc - 1, argv + 1, cli_dump_one);
   }
   if (strcmp(cmd, "build") == 0) {
      return cli_build_main(argc - 1, argv + 1);
   }
   if (strcmp(cmd, "tap") == 0) {
      return cli_tap_main(argc - 1, argv + 1);
   }
   if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
      return cli_help(argc - 1, argv + 1);
   }
   if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
      return cli_version();
   }
   return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
