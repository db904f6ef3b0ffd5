/*
 * legacy.c - OP_QUERY and OP_REPLY: parsing (called by opmsg_parse()), the
 * OP_QUERY handshake builder, the OP_REPLY builder and its document reader.
 *
 * These opcodes only survive for the first handshake of old drivers, but a
 * server or proxy still has to accept them, so they are checked as strictly as
 * OP_MSG: every document is framed and its top-level elements walked.
 */
#include "opmsg-array.h"
#include "opmsg-document.h"
#include "opmsg-parse.h"

/* Frames and checks one document at data[off..end) (document.c). The query
 * (OP_QUERY) and the first reply document are a command or its reply, which
 * may exceed maxBsonObjectSize by the body allowance, as an OP_MSG body may:
 * their max_len is opmsg_body_limit(). */
static bool
legacy_doc(opmsg_report_t *r, const opmsg_msg_t *msg, const opmsg_limits_t *limits, size_t off, size_t max_len,
           const char *what, uint32_t *len)
{
   return opmsg_doc_check(r, limits, msg->data + off, msg->len - off, max_len, what, len);
}

/*
 * OP_QUERY: int32 flags | cstring fullCollectionName | int32 numberToSkip |
 * int32 numberToReturn | document query | [document returnFieldsSelector]
 */
bool
opmsg_parse_query(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   const size_t ns_off = OPMSG_OFF_FULL_COLLECTION_NAME;
   /* The namespace must end early enough to leave room for the two int32s
    * and the smallest document; the header check guarantees len >= 35. */
   const size_t ns_room = msg->len - ns_off - OPMSG_QUERY_SKIP_RETURN_SIZE - 5;
   const uint8_t *ns = msg->data + ns_off;
   const uint8_t *nul = memchr(ns, 0, ns_room);
   size_t off;
   uint32_t len;

   msg->flags = opmsg_read_u32(msg->data + OPMSG_OFF_QUERY_FLAGS);
   if (!nul) {
      return opmsg_report(r, OPMSG_ERR_QUERY_NAMESPACE, ns_off,
                          "OP_QUERY fullCollectionName at offset %zu is not terminated before numberToSkip, "
                          "numberToReturn and the query",
                          ns_off);
   }
   if (nul == ns) {
      return opmsg_report(r, OPMSG_ERR_QUERY_NAMESPACE, ns_off, "OP_QUERY fullCollectionName at offset %zu is empty",
                          ns_off);
   }
   if (opmsg_checks_deep(limits) && !bson_utf8_validate((const char *) ns, (size_t) (nul - ns), false)) {
      return opmsg_report(r, OPMSG_ERR_QUERY_NAMESPACE, ns_off,
                          "OP_QUERY fullCollectionName at offset %zu is not valid UTF-8", ns_off);
   }
   msg->op_query.full_collection_name = (const char *) ns;
   off = (size_t) (nul - msg->data) + 1;
   msg->op_query.number_to_skip = opmsg_read_i32(msg->data + off);
   msg->op_query.number_to_return = opmsg_read_i32(msg->data + off + 4);
   off += OPMSG_QUERY_SKIP_RETURN_SIZE;

   if (!legacy_doc(r, msg, limits, off, opmsg_body_limit(limits), "query", &len)) {
      return false;
   }
   msg->body = msg->data + off;
   msg->body_len = len;
   off += len;

   msg->op_query.field_selector = NULL;
   msg->op_query.field_selector_len = 0;
   if (off == msg->len) {
      return true;
   }
   /* Fewer bytes than the smallest document cannot be a selector. */
   if (msg->len - off < 5) {
      return opmsg_report(r, OPMSG_ERR_TRAILING_BYTES, off, "%zu trailing bytes after the OP_QUERY query at offset %zu",
                          msg->len - off, off);
   }
   if (!legacy_doc(r, msg, limits, off, limits->max_bson_size, "returnFieldsSelector", &len)) {
      return false;
   }
   msg->op_query.field_selector = msg->data + off;
   msg->op_query.field_selector_len = len;
   off += len;
   if (off != msg->len) {
      return opmsg_report(r, OPMSG_ERR_TRAILING_BYTES, off,
                          "%zu trailing bytes after the OP_QUERY returnFieldsSelector at offset %zu", msg->len - off,
                          off);
   }
   return true;
}

/*
 * OP_REPLY: int32 responseFlags | int64 cursorID | int32 startingFrom |
 * int32 numberReturned | document*
 */
bool
opmsg_parse_reply(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   const uint8_t *p = msg->data;
   const size_t docs_off = OPMSG_OFF_REPLY_DOCUMENTS;
   size_t off = docs_off;
   int32_t i;

   msg->flags = opmsg_read_u32(p + OPMSG_OFF_RESPONSE_FLAGS);
   msg->op_reply.cursor_id = opmsg_read_i64(p + OPMSG_OFF_CURSOR_ID);
   msg->op_reply.starting_from = opmsg_read_i32(p + OPMSG_OFF_STARTING_FROM);
   msg->op_reply.number_returned = opmsg_read_i32(p + OPMSG_OFF_NUMBER_RETURNED);
   msg->op_reply.documents = msg->data + docs_off;
   msg->op_reply.documents_len = msg->len - docs_off;
   msg->body = NULL;
   msg->body_len = 0;

   if (msg->op_reply.number_returned < 0) {
      return opmsg_report(r, OPMSG_ERR_REPLY_COUNT, OPMSG_OFF_NUMBER_RETURNED,
                          "OP_REPLY numberReturned %" PRId32 " at offset %d is negative", msg->op_reply.number_returned,
                          OPMSG_OFF_NUMBER_RETURNED);
   }
   /* The loop is bounded by the bytes too: each document takes >= 5. */
   for (i = 0; i < msg->op_reply.number_returned; i++) {
      char what[48];
      uint32_t len;

      if (off == msg->len) {
         /* Reported where the next document should have begun. */
         return opmsg_report(r, OPMSG_ERR_REPLY_COUNT, off,
                             "OP_REPLY numberReturned is %" PRId32 " but the message ends after %" PRId32
                             " documents at offset %zu",
                             msg->op_reply.number_returned, i, off);
      }
      bson_snprintf(what, sizeof what, "reply document %" PRId32, i);
      if (!legacy_doc(r, msg, limits, off, i == 0 ? opmsg_body_limit(limits) : limits->max_bson_size, what, &len)) {
         return false;
      }
      if (i == 0) {
         msg->body = msg->data + off;
         msg->body_len = len;
      }
      off += len;
   }
   if (off != msg->len) {
      size_t len;

      /* A whole document more is a count mismatch; anything else is junk. */
      if (opmsg_doc_frame_ok(msg->data + off, msg->len - off, (size_t) INT32_MAX, &len)) {
         return opmsg_report(r, OPMSG_ERR_REPLY_COUNT, off,
                             "OP_REPLY numberReturned is %" PRId32 " but another document follows at offset %zu",
                             msg->op_reply.number_returned, off);
      }
      return opmsg_report(r, OPMSG_ERR_TRAILING_BYTES, off,
                          "%zu trailing bytes after the last OP_REPLY document at offset %zu", msg->len - off, off);
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * Writing BSON by hand: the builders allocate nothing, so they cannot use a
 * growing bson_t.
 * ------------------------------------------------------------------------- */

/* Bytes of an element's type and key (with its NUL). */
static size_t
elem_head_size(const char *key)
{
   return 1 + strlen(key) + 1;
}

static uint8_t *
put_elem_head(uint8_t *p, bson_type_t type, const char *key, size_t key_len)
{
   *p++ = (uint8_t) type;
   memcpy(p, key, key_len);
   p[key_len] = 0;
   return p + key_len + 1;
}

static uint8_t *
put_i32(uint8_t *p, int32_t v)
{
   opmsg_write_u32(p, (uint32_t) v);
   return p + 4;
}

/* ---------------------------------------------------------------------------
 * The OP_QUERY handshake
 * ------------------------------------------------------------------------- */

void
opmsg_hello_query_init(opmsg_hello_query_t *q)
{
   if (q) {
      memset(q, 0, sizeof *q);
      q->hello_ok = true;
   }
}

static const char *
hello_command(const opmsg_hello_query_t *q)
{
   return q->use_hello ? "hello" : "isMaster";
}

/* Size of the "compression" array's value (the array document). */
static bool
compression_array_size(const opmsg_hello_query_t *q, size_t *size)
{
   size_t n = 4 + 1;
   size_t i;

   if (q->n_compression > 0 && !q->compression) {
      return false;
   }
   if (q->n_compression > (size_t) INT32_MAX) {
      return false;
   }
   n += opmsg_array_keys_size((uint32_t) q->n_compression);
   for (i = 0; i < q->n_compression; i++) {
      if (!q->compression[i]) {
         return false;
      }
      /* type byte, int32 length, the string and its NUL */
      n += 1 + 4 + strlen(q->compression[i]) + 1;
      if (n > (size_t) INT32_MAX) {
         return false;
      }
   }
   *size = n;
   return true;
}

/* Size of the query document, or 0 when it cannot be built. */
static size_t
hello_doc_size(const opmsg_hello_query_t *q)
{
   size_t n = 4 + 1;

   n += elem_head_size(hello_command(q)) + 4;
   if (q->hello_ok) {
      n += elem_head_size("helloOk") + 1;
   }
   if (q->client) {
      n += elem_head_size("client") + q->client->len;
   }
   if (q->send_compression) {
      size_t arr;

      if (!compression_array_size(q, &arr)) {
         return 0;
      }
      n += elem_head_size("compression") + arr;
   }
   if (q->extra) {
      n += q->extra->len - 5;
   }
   return n;
}

/* header, flags, "admin.$cmd", numberToSkip, numberToReturn */
#define HELLO_QUERY_PREFIX (OPMSG_HEADER_SIZE + 4 + sizeof OPMSG_ADMIN_CMD_NS + OPMSG_QUERY_SKIP_RETURN_SIZE)

size_t
opmsg_hello_query_size(const opmsg_hello_query_t *q)
{
   size_t doc;

   if (!q || (doc = hello_doc_size(q)) == 0 || doc > (size_t) INT32_MAX - HELLO_QUERY_PREFIX) {
      return 0;
   }
   return HELLO_QUERY_PREFIX + doc;
}

/* Extra fields must not give a second command or repeat a field written. */
static bool
check_extra(const opmsg_hello_query_t *q, bson_error_t *error)
{
   bson_iter_t it;

   if (!q->extra) {
      return true;
   }
   if (!bson_iter_init(&it, q->extra)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "the extra fields are not a valid document");
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);

      if (!strcmp(key, "isMaster") || !strcmp(key, "ismaster") || !strcmp(key, "hello") ||
          (q->hello_ok && !strcmp(key, "helloOk")) || (q->client && !strcmp(key, "client")) ||
          (q->send_compression && !strcmp(key, "compression"))) {
         return opmsg_fail(error, OPMSG_ERR_DUPLICATE_KEY, "the extra field \"%s\" repeats a handshake field", key);
      }
   }
   return true;
}

static uint8_t *
put_compression(uint8_t *p, const opmsg_hello_query_t *q)
{
   uint8_t *arr;
   size_t i;

   p = put_elem_head(p, BSON_TYPE_ARRAY, "compression", 11);
   arr = p;
   p += 4;
   for (i = 0; i < q->n_compression; i++) {
      size_t len = strlen(q->compression[i]);

      *p++ = (uint8_t) BSON_TYPE_UTF8;
      p += opmsg_write_index_key(p, (uint32_t) i);
      p = put_i32(p, (int32_t) (len + 1));
      memcpy(p, q->compression[i], len + 1);
      p += len + 1;
   }
   *p++ = 0;
   opmsg_write_u32(arr, (uint32_t) (p - arr));
   return p;
}

static void
put_hello_doc(uint8_t *p, const opmsg_hello_query_t *q)
{
   uint8_t *doc = p;
   const char *cmd = hello_command(q);

   p += 4;
   p = put_elem_head(p, BSON_TYPE_INT32, cmd, strlen(cmd));
   p = put_i32(p, 1);
   if (q->hello_ok) {
      p = put_elem_head(p, BSON_TYPE_BOOL, "helloOk", 7);
      *p++ = 1;
   }
   if (q->client) {
      p = put_elem_head(p, BSON_TYPE_DOCUMENT, "client", 6);
      memcpy(p, bson_get_data(q->client), q->client->len);
      p += q->client->len;
   }
   if (q->send_compression) {
      p = put_compression(p, q);
   }
   if (q->extra) {
      memcpy(p, bson_get_data(q->extra) + 4, q->extra->len - 5);
      p += q->extra->len - 5;
   }
   *p++ = 0;
   opmsg_write_u32(doc, (uint32_t) (p - doc));
}

bool
opmsg_build_hello_query(const opmsg_hello_query_t *q, uint8_t *buf, size_t buf_len, size_t *written,
                        bson_error_t *error)
{
   size_t size;
   uint8_t *p;

   if (!q || !buf) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "q and buf must not be NULL");
   }
   if (q->send_compression && !compression_array_size(q, &size)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "the compression list has a NULL name or is NULL");
   }
   if (!check_extra(q, error)) {
      return false;
   }
   size = opmsg_hello_query_size(q);
   if (size == 0) {
      return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE, "the handshake query would exceed 2 GiB - 1 bytes");
   }
   if (buf_len < size) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL,
                        "the handshake query needs %zu bytes, the buffer has "
                        "%zu",
                        size, buf_len);
   }
   p = put_i32(buf, (int32_t) size);
   p = put_i32(p, q->request_id);
   p = put_i32(p, 0);
   p = put_i32(p, OPMSG_OP_QUERY);
   p = put_i32(p, (int32_t) q->flags);
   memcpy(p, OPMSG_ADMIN_CMD_NS, sizeof OPMSG_ADMIN_CMD_NS);
   p += sizeof OPMSG_ADMIN_CMD_NS;
   p = put_i32(p, 0);  /* numberToSkip */
   p = put_i32(p, -1); /* numberToReturn: one reply, close the cursor */
   put_hello_doc(p, q);
   if (written) {
      *written = size;
   }
   return true;
}

/* ---------------------------------------------------------------------------
 * OP_REPLY
 * ------------------------------------------------------------------------- */

#define REPLY_PREFIX OPMSG_OFF_REPLY_DOCUMENTS

void
opmsg_reply_init(opmsg_reply_t *r)
{
   if (r) {
      memset(r, 0, sizeof *r);
   }
}

/* 0 with *why set when r cannot be built. */
static size_t
reply_size(const opmsg_reply_t *r, opmsg_error_code_t *why)
{
   size_t n = REPLY_PREFIX;
   size_t i;

   *why = OPMSG_ERR_INVALID_ARGUMENT;
   if (!r || (r->n_documents > 0 && !r->documents)) {
      return 0;
   }
   for (i = 0; i < r->n_documents; i++) {
      if (!r->documents[i]) {
         return 0;
      }
      n += r->documents[i]->len;
      if (n > (size_t) INT32_MAX) {
         *why = OPMSG_ERR_OUTPUT_TOO_LARGE;
         return 0;
      }
   }
   return n;
}

size_t
opmsg_reply_size(const opmsg_reply_t *r)
{
   opmsg_error_code_t why;

   return reply_size(r, &why);
}

bool
opmsg_build_reply(const opmsg_reply_t *r, uint8_t *buf, size_t buf_len, size_t *written, bson_error_t *error)
{
   opmsg_error_code_t why;
   size_t size = reply_size(r, &why);
   uint8_t *p;
   size_t i;

   if (size == 0 || !buf) {
      return opmsg_fail(error, size ? OPMSG_ERR_INVALID_ARGUMENT : why,
                        why == OPMSG_ERR_OUTPUT_TOO_LARGE ? "the OP_REPLY would exceed 2 GiB - 1 bytes"
                                                          : "bad arguments: NULL reply, buffer or document");
   }
   if (buf_len < size) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "the OP_REPLY needs %zu bytes, the buffer has %zu", size,
                        buf_len);
   }
   p = put_i32(buf, (int32_t) size);
   p = put_i32(p, r->request_id);
   p = put_i32(p, r->response_to);
   p = put_i32(p, OPMSG_OP_REPLY);
   p = put_i32(p, (int32_t) r->response_flags);
   opmsg_write_i64(p, r->cursor_id);
   p += 8;
   p = put_i32(p, r->starting_from);
   /* Each document takes >= 5 bytes of at most 2 GiB: the count fits. */
   p = put_i32(p, (int32_t) r->n_documents);
   for (i = 0; i < r->n_documents; i++) {
      memcpy(p, bson_get_data(r->documents[i]), r->documents[i]->len);
      p += r->documents[i]->len;
   }
   if (written) {
      *written = size;
   }
   return true;
}

bool
opmsg_reply_iter_init(opmsg_reply_iter_t *it, const opmsg_msg_t *msg)
{
   if (!it) {
      return false;
   }
   it->p = NULL;
   it->end = NULL;
   if (!msg || msg->opcode != OPMSG_OP_REPLY || !msg->op_reply.documents) {
      return false;
   }
   it->p = msg->op_reply.documents;
   it->end = msg->op_reply.documents + msg->op_reply.documents_len;
   return true;
}

bool
opmsg_reply_iter_next(opmsg_reply_iter_t *it, bson_t *doc)
{
   uint32_t len;

   /* opmsg_parse() checked every frame; the bounds test guards misuse. */
   if (!it || !it->p || it->end - it->p < 5) {
      return false;
   }
   len = opmsg_read_u32(it->p);
   if (len < 5 || len > (size_t) (it->end - it->p) || !bson_init_static(doc, it->p, len)) {
      it->p = it->end;
      return false;
   }
   it->p += len;
   return true;
}
