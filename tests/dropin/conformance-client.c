/*
 * conformance-client.c - one {ping: 1} through the system's libmongoc (with
 * or without LD_PRELOAD=libopmsg-mongoc.so), for the conformance vectors
 * (scripts/dropin-conformance.sh, tests/dropin/conformance_run.py). Linked
 * with the system's libmongoc only, like dropin-client.c.
 *
 *   conformance-client URI
 *
 * Prints one line, in the format of tests/fork/conformance.c's results:
 *   "RESULT accepted <hex of the reply document> -"    the ping succeeded
 *   "RESULT accepted <hex> <domain>.<code> <message>"  a command error the
 *      server's document states (the reply got through the wire checks)
 *   "RESULT rejected - <domain>.<code> <message>"      the reply was refused
 */
#define _POSIX_C_SOURCE 200809L /* struct addrinfo in mongoc-socket.h under -std=c11 */
#include <mongoc/mongoc.h>

#include <stdio.h>
#include <string.h>

static void
one_line(char *s)
{
   for (; *s; s++) {
      if (*s == '\t' || *s == '\n' || *s == '\r') {
         *s = ' ';
      }
   }
}

int
main(int argc, char **argv)
{
   bson_error_t error;
   bson_t reply;
   bson_t *cmd;
   mongoc_uri_t *uri;
   mongoc_client_t *client;
   bool ok;

   if (argc != 2) {
      fprintf(stderr, "usage: %s URI\n", argv[0]);
      return 64;
   }
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      fprintf(stderr, "bad URI: %s\n", error.message);
      return 64;
   }
   client = mongoc_client_new_from_uri(uri);
   memset(&error, 0, sizeof error);
   cmd = BCON_NEW("ping", BCON_INT32(1));
   ok = mongoc_client_command_simple(client, "db", cmd, NULL, &reply, &error);
   one_line(error.message);
   if (ok || error.domain == MONGOC_ERROR_QUERY || error.domain == MONGOC_ERROR_SERVER ||
       error.domain == MONGOC_ERROR_WRITE_CONCERN) {
      const uint8_t *bytes = bson_get_data(&reply);
      uint32_t i;

      printf("RESULT accepted ");
      for (i = 0; i < reply.len; i++) {
         printf("%02x", bytes[i]);
      }
      if (ok) {
         printf(" -\n");
      } else {
         printf(" %u.%u %s\n", error.domain, error.code, error.message);
      }
   } else {
      printf("RESULT rejected - %u.%u %s\n", error.domain, error.code, error.message);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return 0;
}
