/*
 * cmd.c - _mongoc_cmd_append_payload_as_array, the request side.
 *
 * libmongoc turns a command's document sequence (cmd->payload, documents back
 * to back) into an array field of the command for APM "started" events and
 * for client-side encryption, which sends that array on the wire. The shape
 * must stay exactly the original's: the field named after the command
 * (insert -> documents, update -> updates, delete -> deletes), keys "0",
 * "1", ... in order. Here the array is written once into a buffer of its
 * exact size instead of growing element by element.
 *
 * Everything the original treats as a programming error (an unknown command,
 * an empty payload, a malformed document: all impossible from libmongoc's own
 * callers) goes to the original, so behaviour there is unchanged.
 */
#include "dropin-private.h"
#include "opmsg-private.h"

#include <string.h>

static const char *
field_for(const char *command_name)
{
   if (!command_name) {
      return NULL;
   }
   if (strcmp(command_name, "insert") == 0) {
      return "documents";
   }
   if (strcmp(command_name, "update") == 0) {
      return "updates";
   }
   if (strcmp(command_name, "delete") == 0) {
      return "deletes";
   }
   return NULL;
}

/* Counts the documents of payload[0..size), checking each frame; false on
 * any malformed one. */
static bool
count_documents(const uint8_t *payload, size_t size, uint32_t *count)
{
   size_t off = 0;
   uint32_t n = 0;
   uint32_t len;

   while (off < size) {
      if (!opmsg_doc_frame(payload + off, size - off, size - off, off,
                           "payload document", &len, NULL)) {
         return false;
      }
      off += len;
      n++;
   }
   *count = n;
   return n > 0;
}

/* Writes the array document (array_size bytes) of the payload documents. */
static void
write_array(uint8_t *out, size_t array_size, const uint8_t *payload,
            size_t size)
{
   uint8_t *p = out + 4;
   size_t off = 0;
   uint32_t i = 0;

   opmsg_write_u32(out, (uint32_t) array_size);
   while (off < size) {
      uint32_t len = opmsg_read_u32(payload + off);

      *p++ = BSON_TYPE_DOCUMENT;
      p += opmsg_write_index_key(p, i++);
      memcpy(p, payload + off, len);
      p += len;
      off += len;
   }
   *p = 0;
}

static bool
append_array(const void *cmd, bson_t *out)
{
   const char *command_name;
   const uint8_t *payload;
   int32_t size;
   const char *field;
   uint32_t count;
   size_t array_size;
   uint8_t *array;
   bson_t array_doc;
   bool ok;

   memcpy(&command_name, (const uint8_t *) cmd + DROPIN_OFF_CMD_COMMAND_NAME,
          sizeof command_name);
   memcpy(&payload, (const uint8_t *) cmd + DROPIN_OFF_CMD_PAYLOAD,
          sizeof payload);
   memcpy(&size, (const uint8_t *) cmd + DROPIN_OFF_CMD_PAYLOAD_SIZE,
          sizeof size);
   field = field_for(command_name);
   if (!field || !payload || size <= 0 || !out ||
       !count_documents(payload, (size_t) size, &count)) {
      return false;
   }
   /* length + (type byte + key + document) per element + terminator */
   array_size = 4 + count + opmsg_array_keys_size(count) + (size_t) size + 1;
   if (array_size > INT32_MAX) {
      return false;
   }
   array = bson_malloc(array_size);
   write_array(array, array_size, payload, (size_t) size);
   ok = bson_init_static(&array_doc, array, array_size) &&
        bson_append_array(out, field, -1, &array_doc);
   bson_free(array);
   return ok;
}

void
_mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out)
{
   dropin_append_payload_fn original = dropin_originals()->append_payload;

   if (dropin_active(__builtin_return_address(0)) && cmd &&
       append_array(cmd, out)) {
      return;
   }
   if (original) {
      original(cmd, out);
   }
}
