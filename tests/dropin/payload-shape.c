/*
 * payload-shape.c - calls libmongoc's _mongoc_cmd_append_payload_as_array
 * (exported, internal) the way libmongoc does, and prints each result as
 * hex. Run stock and with the drop-in preloaded: the bytes must be identical
 * (the array feeds APM events and is sent on the wire by client-side
 * encryption).
 * - 1.23: one payload in mongoc_cmd_t, the field named after the command
 *   (insert, update and delete payloads);
 * - 1.30 and 2.5: up to two payloads, each named by its identifier (an
 *   insert's "documents", and client bulkWrite's "nsInfo" + "ops").
 */
#include <bson/bson.h>

#include <stdio.h>
#include <string.h>

/* No installed header: in 1.23 mongoc_cmd_t is 96 bytes and the function
 * reads command_name (24), payload (32) and payload_size (40); in 1.30 and
 * 2.5 it is 128 bytes with payloads_count (32, size_t) and two payloads of
 * {int32 size, const char *identifier, const uint8_t *documents} at 40 and
 * 64. */
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

/* n_docs documents back to back into payload; returns their size. */
static int32_t
fill(uint8_t *payload, int n_docs)
{
   int32_t size = 0;

   for (int i = 0; i < n_docs; i++) {
      bson_t *d = BCON_NEW("_id", BCON_INT32(i), "q", "{", "k", BCON_UTF8("v"), "}", "pad",
                           BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *) "xyz", 3));
      memcpy(payload + size, bson_get_data(d), d->len);
      size += (int32_t) d->len;
      bson_destroy(d);
   }
   return size;
}

static void
shape(const char *command_name, int n_docs)
{
   uint64_t cmd_storage[12] = {0};
   uint8_t *cmd = (uint8_t *) cmd_storage;
   uint8_t payload[4096];
   const uint8_t *pp = payload;
   int32_t size = fill(payload, n_docs);
   bson_t out;

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

/* 1.30 / 2.5: payloads named id0 (n0 documents) and, when id1 is not NULL,
 * id1 (n1 documents). */
static void
shape2(const char *command_name, const char *id0, int n0, const char *id1, int n1)
{
   uint64_t cmd_storage[16] = {0};
   uint8_t *cmd = (uint8_t *) cmd_storage;
   uint8_t payload0[4096], payload1[4096];
   const uint8_t *p0 = payload0, *p1 = payload1;
   int32_t size0 = fill(payload0, n0), size1 = id1 ? fill(payload1, n1) : 0;
   size_t count = id1 ? 2 : 1;
   bson_t out;

   memcpy(cmd + 24, &command_name, sizeof command_name);
   memcpy(cmd + 32, &count, sizeof count);
   memcpy(cmd + 40, &size0, sizeof size0);
   memcpy(cmd + 48, &id0, sizeof id0);
   memcpy(cmd + 56, &p0, sizeof p0);
   if (id1) {
      memcpy(cmd + 64, &size1, sizeof size1);
      memcpy(cmd + 72, &id1, sizeof id1);
      memcpy(cmd + 80, &p1, sizeof p1);
   }
   bson_init(&out);
   BSON_APPEND_UTF8(&out, command_name, "coll");
   BSON_APPEND_BOOL(&out, "ordered", true);
   _mongoc_cmd_append_payload_as_array(cmd, &out);
   print_hex(id1 ? id1 : id0, &out);
   bson_destroy(&out);
}

int
main(void)
{
   const char *v = mongoc_get_version();

   if (strncmp(v, "1.23.", 5) == 0) {
      shape("insert", 1);
      shape("insert", 12); /* keys "10", "11": two digits */
      shape("update", 3);
      shape("delete", 2);
   } else if (strncmp(v, "1.30.", 5) == 0 || strncmp(v, "2.5.", 4) == 0) {
      shape2("insert", "documents", 1, NULL, 0);
      shape2("insert", "documents", 12, NULL, 0);
      shape2("update", "updates", 3, NULL, 0);
      shape2("bulkWrite", "nsInfo", 2, "ops", 11);
   } else {
      printf("SKIP: libmongoc %s: its mongoc_cmd_t layout is not described here\n", v);
      return 77;
   }
   return 0;
}
