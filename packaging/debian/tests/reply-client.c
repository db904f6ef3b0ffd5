/* Runs one command ({"ping": 1}) against the server at argv[1] with the
 * installed libmongoc and prints "ok" or "error: MESSAGE". Exit status: 0 ok,
 * 1 error, 2 usage; a crash or an abort ends it by a signal. */
#include <mongoc/mongoc.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
   mongoc_client_t *client;
   bson_error_t error;
   bson_t *cmd;
   bson_t reply;
   bool ok;

   if (argc != 2) {
      fprintf(stderr, "usage: %s URI\n", argv[0]);
      return 2;
   }

   mongoc_init();
   client = mongoc_client_new(argv[1]);
   if (!client) {
      fprintf(stderr, "invalid URI %s\n", argv[1]);
      return 2;
   }

   cmd = BCON_NEW("ping", BCON_INT32(1));
   ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error);
   if (ok) {
      printf("ok\n");
   } else {
      printf("error: %s\n", error.message);
   }

   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
   mongoc_cleanup();
   return ok ? 0 : 1;
}
