/*
 * legacy-crud.c - the legacy CRUD opcodes MongoDB 5.1 removed (OP_UPDATE, OP_INSERT,
 * OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS).
 *
 * No server answers them any more, but old clients still send them and a
 * proxy or tap sees them on the wire, so opmsg checks their framing as
 * strictly as the rest: namespace, every document, no trailing bytes. They
 * have nothing to merge.
 */
#include "opmsg-document.h"
#include "opmsg-parse.h"

size_t
opmsg_removed_min_length(int32_t opcode)
{
   switch (opcode) {
   case OPMSG_OP_UPDATE:
      return OPMSG_HEADER_SIZE + 4 + 2 + 4 + 5 + 5;
   case OPMSG_OP_INSERT:
      return OPMSG_HEADER_SIZE + 4 + 2 + 5;
   case OPMSG_OP_GET_MORE:
      return OPMSG_HEADER_SIZE + 4 + 2 + 4 + 8;
   case OPMSG_OP_DELETE:
      return OPMSG_HEADER_SIZE + 4 + 2 + 4 + 5;
   case OPMSG_OP_KILL_CURSORS:
      return OPMSG_HEADER_SIZE + 4 + 4;
   default:
      return 0;
   }
}

/* A cursor over the message with bounds checks. */
typedef struct {
   const opmsg_msg_t *msg;
   const uint8_t *p;
   const uint8_t *end;
   const opmsg_limits_t *limits;
} rd_t;

static bool
rd_i32(rd_t *r, int32_t *v, const char *what, bson_error_t *error)
{
   if (r->end - r->p < 4) {
      return opmsg_fail(error, OPMSG_ERR_TRUNCATED, "%s at offset %zu: message ends first", what,
                        (size_t) (r->p - r->msg->data));
   }
   *v = opmsg_read_i32(r->p);
   r->p += 4;
   return true;
}

static bool
rd_ns(rd_t *r, opmsg_msg_t *msg, bson_error_t *error)
{
   const uint8_t *nul = memchr(r->p, 0, (size_t) (r->end - r->p));
   if (!nul || nul == r->p) {
      return opmsg_fail(error, OPMSG_ERR_QUERY_NAMESPACE, "fullCollectionName at offset %zu is %s",
                        (size_t) (r->p - msg->data), nul ? "empty" : "not terminated");
   }
   msg->full_collection_name = (const char *) r->p;
   r->p = nul + 1;
   return true;
}

static bool
rd_doc(rd_t *r, const char *what, const uint8_t **doc, uint32_t *len, bson_error_t *error)
{
   size_t off = (size_t) (r->p - r->msg->data);
   if (!opmsg_doc_check(r->p, (size_t) (r->end - r->p), opmsg_body_limit(r->limits), off, what,
                        opmsg_checks_top(r->limits), opmsg_checks_deep(r->limits), len, error)) {
      return false;
   }
   *doc = r->p;
   r->p += *len;
   return true;
}

static bool
rd_done(rd_t *r, bson_error_t *error)
{
   if (r->p != r->end) {
      return opmsg_fail(error, OPMSG_ERR_TRAILING_BYTES, "%zu stray bytes after the last field at offset %zu",
                        (size_t) (r->end - r->p), (size_t) (r->p - r->msg->data));
   }
   return true;
}

bool
opmsg_parse_removed(opmsg_msg_t *msg, const opmsg_limits_t *limits, bson_error_t *error)
{
   rd_t r = {msg, msg->data + OPMSG_HEADER_SIZE, msg->data + msg->len, limits};
   int32_t zero = 0, count = 0;
   const uint8_t *doc;
   uint32_t len;

   switch (msg->opcode) {
   case OPMSG_OP_INSERT:
      if (!rd_i32(&r, (int32_t *) &msg->flags, "flags", error) || !rd_ns(&r, msg, error)) {
         return false;
      }
      msg->documents = r.p;
      do {
         if (!rd_doc(&r, "document", &doc, &len, error)) {
            return false;
         }
         if (!msg->body) {
            msg->body = doc;
            msg->body_len = len;
         }
         msg->number_returned++;
      } while (r.p < r.end);
      msg->documents_len = (size_t) (r.p - msg->documents);
      return true;
   case OPMSG_OP_UPDATE:
   case OPMSG_OP_DELETE:
      if (!rd_i32(&r, &zero, "ZERO", error) || !rd_ns(&r, msg, error) ||
          !rd_i32(&r, (int32_t *) &msg->flags, "flags", error) ||
          !rd_doc(&r, "selector", &msg->body, &msg->body_len, error)) {
         return false;
      }
      if (msg->opcode == OPMSG_OP_UPDATE &&
          !rd_doc(&r, "update", &msg->field_selector, &msg->field_selector_len, error)) {
         return false;
      }
      return rd_done(&r, error);
   case OPMSG_OP_GET_MORE:
      if (!rd_i32(&r, &zero, "ZERO", error) || !rd_ns(&r, msg, error) ||
          !rd_i32(&r, &msg->number_to_return, "numberToReturn", error)) {
         return false;
      }
      if (r.end - r.p < 8) {
         return opmsg_fail(error, OPMSG_ERR_TRUNCATED, "cursorID at offset %zu: message ends first",
                           (size_t) (r.p - msg->data));
      }
      msg->cursor_id = opmsg_read_i64(r.p);
      r.p += 8;
      return rd_done(&r, error);
   default: /* OPMSG_OP_KILL_CURSORS */
      if (!rd_i32(&r, &zero, "ZERO", error) || !rd_i32(&r, &count, "numberOfCursorIDs", error)) {
         return false;
      }
      if (count < 0 || (size_t) (r.end - r.p) != (size_t) count * 8) {
         return opmsg_fail(error, OPMSG_ERR_REPLY_COUNT,
                           "numberOfCursorIDs %d at offset 20 but %zu bytes of cursor IDs follow", count,
                           (size_t) (r.end - r.p));
      }
      msg->number_returned = count;
      msg->cursor_id = count ? opmsg_read_i64(r.p) : 0;
      msg->documents = r.p;
      msg->documents_len = (size_t) count * 8;
      return true;
   }
}
