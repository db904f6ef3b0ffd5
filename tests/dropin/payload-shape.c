/*
 * payload-shape.c - calls libmongoc 1.23's _mongoc_cmd_append_payload_as_array
 * (exported, internal) the way libmongoc does, for insert, update and delete
 * payloads, and prints each result as hex. Run stock and with the drop-in
 * preloaded: the bytes must be identical (the array feeds APM events and is
 * sent on the wire by client-side encryption).
 */
#include <bson/bson.h>

#include <stdio.h>
#include <string.h>

/* libmongoc 1.23, no installed header: mongoc_cmd_t is 96 bytes; the
 * function reads command_name (24), payload (32) and payload_size (40). */
void _mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out);
const char *mongoc_get_version(void);

static void
print_hex(const char *name, const bson_t *b)
{
   const uint8_t *p = bson_get_data(b);

   printf("%s ", name);
   for (uint32_t i = 0; i < b->len; i++) {
      printf("%02x", p[i]);
   }
   printf("\n");
}

static void
shape(const char *command_name, int n_docs)
{
   uint64_t cmd_storage[12] = {0};
   uint8_t *cmd = (uint8_t *) cmd_storage;
   uint8_t payload[4096];
   const uint8_t *pp = payload;
   int32_t size = 0;
   bson_t out;

   for (int i = 0; i < n_docs; i++) {
      bson_t *d = BCON_NEW("_id", BCON_INT32(i), "q", "{", "k", BCON_UTF8("v"), "}",
                           "pad", BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *) "xyz", 3));
      memcpy(payload + size, bson_get_data(d), d->len);
      size += (int32_t) d->len;
      bson_destroy(d);
   }
   memcpy(cmd + 24, &command_name, sizeof command_name);
   memcpy(cmd + 32, &pp, sizeof pp);
   memcpy(cmd + 40, &size, sizeof size);

   bson_init(&out);
   BSON_APPEND_UTF8(&out, command_name, "coll");
   BSON_APPEND_BOOL(&out, "ordered", true);
   _mongoc_cmd_append_payload_as_array(cmd, &out);
   print_hex(command_name, &out);
   bson_destroy(&out);
}

int
main(void)
{
   if (strncmp(mongoc_get_version(), "1.23.", 5) != 0) {
      printf("SKIP: libmongoc %s is not 1.23.x\n", mongoc_get_version());
      return 77;
   }
   shape("insert", 1);
   shape("insert", 12); /* keys "10", "11": two digits */
   shape("update", 3);
   shape("delete", 2);
   return 0;
}
