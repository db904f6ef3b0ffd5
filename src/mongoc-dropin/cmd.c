/*
 * cmd.c - _mongoc_cmd_append_payload_as_array, the request side.
 *
 * libmongoc turns a command's document sequences (documents back to back)
 * into array fields of the command for APM "started" events and for
 * client-side encryption, which sends that array on the wire. The shape
 * must stay exactly the original's, keys "0", "1", ... in order:
 * - 1.23: one payload; the field is named after the command (insert ->
 *   documents, update -> updates, delete -> deletes);
 * - 1.30 and 2.5: up to two payloads (client bulkWrite sends "nsInfo" and
 *   "ops"), each field named by the payload's own identifier.
 * Each array is written once into a buffer of its exact size instead of
 * growing element by element.
 *
 * Everything the original treats as a programming error (an unknown command,
 * an empty payload, a malformed document: all impossible from libmongoc's own
 * callers) goes to the original, so behaviour there is unchanged.
 */
#include "dropin-private.h"
#include "opmsg-array.h"

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
   return opmsg_array_docs_count(payload, size, count) && *count > 0;
}

/* Appends field: [the documents of payload[0..size)] to out. */
static bool
append_one(bson_t *out, const char *field, const uint8_t *payload, int32_t size)
{
   uint32_t count;
   size_t array_size;
   uint8_t *array;
   bson_t array_doc;
   bool ok;

   if (!field || !payload || size <= 0 || !count_documents(payload, (size_t) size, &count)) {
      return false;
   }
   array_size = opmsg_array_doc_size((size_t) size, count);
   if (array_size > INT32_MAX) {
      return false;
   }
   array = bson_malloc(array_size);
   opmsg_write_array_doc(array, payload, (size_t) size);
   ok = bson_init_static(&array_doc, array, array_size) && bson_append_array(out, field, -1, &array_doc);
   bson_free(array);
   return ok;
}

/* 1.23: one payload, named after the command. */
static bool
append_rpc_123(const void *cmd, bson_t *out)
{
   return append_one(out, field_for(dropin_read_ptr(cmd, DROPIN_OFF_CMD_COMMAND_NAME)),
                     dropin_read_ptr(cmd, DROPIN_OFF_CMD_PAYLOAD), dropin_read_i32(cmd, DROPIN_OFF_CMD_PAYLOAD_SIZE));
}

/* 1.30 / 2.5: every payload, named by its identifier. All are checked
 * before the first is appended, so out is either complete or untouched. */
static bool
append_mcd(const void *cmd, bson_t *out)
{
   size_t count = dropin_read_size(cmd, DROPIN_OFF_CMD_PAYLOADS_COUNT);
   uint32_t n_docs;

   if (count == 0 || count > DROPIN_CMD_PAYLOADS_MAX) {
      return false;
   }
   for (size_t i = 0; i < count; i++) {
      size_t base = DROPIN_OFF_CMD_PAYLOADS + i * DROPIN_CMD_PAYLOAD_STRIDE;
      const uint8_t *docs = dropin_read_ptr(cmd, base + DROPIN_OFF_PAYLOAD_DOCUMENTS);
      int32_t size = dropin_read_i32(cmd, base + DROPIN_OFF_PAYLOAD_SIZE);

      if (!dropin_read_ptr(cmd, base + DROPIN_OFF_PAYLOAD_IDENTIFIER) || !docs || size <= 0 ||
          !count_documents(docs, (size_t) size, &n_docs)) {
         return false;
      }
   }
   for (size_t i = 0; i < count; i++) {
      size_t base = DROPIN_OFF_CMD_PAYLOADS + i * DROPIN_CMD_PAYLOAD_STRIDE;

      if (!append_one(out, dropin_read_ptr(cmd, base + DROPIN_OFF_PAYLOAD_IDENTIFIER),
                      dropin_read_ptr(cmd, base + DROPIN_OFF_PAYLOAD_DOCUMENTS),
                      dropin_read_i32(cmd, base + DROPIN_OFF_PAYLOAD_SIZE))) {
         return false; /* only without memory: checked above */
      }
   }
   return true;
}

void
_mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out)
{
   dropin_append_payload_fn original = dropin_originals()->append_payload;
   bool done = false;

   if (cmd && out) {
      switch (DROPIN_CALLER().path) {
      case DROPIN_RPC_123:
         done = append_rpc_123(cmd, out);
         break;
      case DROPIN_MCD_130:
      case DROPIN_MCD_25:
         done = append_mcd(cmd, out);
         break;
      default:
         break;
      }
   }
   if (!done && original) {
      original(cmd, out);
   }
}
