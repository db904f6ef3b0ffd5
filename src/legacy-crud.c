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
#include <stddef.h>
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
   opmsg_report_t *report; /* faults are reported at the field */
} rd_t;

static bool
rd_i32(rd_t *r, int32_t *v, const char *what)
{
   if (r->end - r->p < 4) {
      size_t off = opmsg_report_at(r->report, r->p);
      return opmsg_report(r->report, OPMSG_ERR_TRUNCATED, off, "%s at offset %zu: message ends first", what, off);
   }
   *v = opmsg_read_i32(r->p);
   r->p += 4;
   return true;
}

static bool
rd_ns(rd_t *r, const char **ns)
{
   const uint8_t *nul = memchr(r->p, 0, (size_t) (r->end - r->p));
   if (!nul || nul == r->p) {
      size_t off = opmsg_report_at(r->report, r->p);
      return opmsg_report(r->report, OPMSG_ERR_QUERY_NAMESPACE, off, "fullCollectionName at offset %zu is %s", off,
                          nul ? "empty" : "not terminated");
   }
   *ns = (const char *) r->p;
   r->p = nul + 1;
   return true;
}

static bool
rd_doc(rd_t *r, const char *what, const uint8_t **doc, uint32_t *len)
{
   if (!opmsg_doc_check(r->report, r->limits, r->p, (size_t) (r->end - r->p), opmsg_body_limit(r->limits), what, len)) {
      return false;
   }
   *doc = r->p;
   r->p += *len;
   return true;
}

static bool
rd_done(rd_t *r)
{
   if (r->p != r->end) {
      size_t off = opmsg_report_at(r->report, r->p);
      return opmsg_report(r->report, OPMSG_ERR_TRAILING_BYTES, off,
                          "%zu stray bytes after the last field at offset %zu", (size_t) (r->end - r->p), off);
   }
   return true;
}

/* OP_UPDATE and OP_DELETE share their first fields, parsed once. */
_Static_assert(offsetof(opmsg_msg_t, op_update.full_collection_name) ==
                  offsetof(opmsg_msg_t, op_delete.full_collection_name),
               "OP_UPDATE's and OP_DELETE's namespace");

bool
opmsg_parse_removed(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *report)
{
   rd_t r = {msg, msg->data + OPMSG_HEADER_SIZE, msg->data + msg->len, limits, report};
   int32_t zero = 0, count = 0;
   const uint8_t *doc;
   uint32_t len;

   switch (msg->opcode) {
   case OPMSG_OP_INSERT:
      if (!rd_i32(&r, (int32_t *) &msg->flags, "flags") || !rd_ns(&r, &msg->op_insert.full_collection_name)) {
         return false;
      }
      msg->op_insert.documents = r.p;
      do {
         if (!rd_doc(&r, "document", &doc, &len)) {
            return false;
         }
         if (!msg->body) {
            msg->body = doc;
            msg->body_len = len;
         }
         msg->op_insert.count++;
      } while (r.p < r.end);
      msg->op_insert.documents_len = (size_t) (r.p - msg->op_insert.documents);
      return true;
   case OPMSG_OP_UPDATE:
   case OPMSG_OP_DELETE:
      /* fullCollectionName is where both views have it (asserted above). */
      if (!rd_i32(&r, &zero, "ZERO") || !rd_ns(&r, &msg->op_delete.full_collection_name) ||
          !rd_i32(&r, (int32_t *) &msg->flags, "flags") || !rd_doc(&r, "selector", &msg->body, &msg->body_len)) {
         return false;
      }
      if (msg->opcode == OPMSG_OP_UPDATE && !rd_doc(&r, "update", &msg->op_update.update, &msg->op_update.update_len)) {
         return false;
      }
      return rd_done(&r);
   case OPMSG_OP_GET_MORE:
      if (!rd_i32(&r, &zero, "ZERO") || !rd_ns(&r, &msg->op_get_more.full_collection_name) ||
          !rd_i32(&r, &msg->op_get_more.number_to_return, "numberToReturn")) {
         return false;
      }
      if (r.end - r.p < 8) {
         size_t off = opmsg_report_at(report, r.p);
         return opmsg_report(report, OPMSG_ERR_TRUNCATED, off, "cursorID at offset %zu: message ends first", off);
      }
      msg->op_get_more.cursor_id = opmsg_read_i64(r.p);
      r.p += 8;
      return rd_done(&r);
   default: /* OPMSG_OP_KILL_CURSORS */
      if (!rd_i32(&r, &zero, "ZERO") || !rd_i32(&r, &count, "numberOfCursorIDs")) {
         return false;
      }
      if (count < 0 || (size_t) (r.end - r.p) != (size_t) count * 8) {
         /* Reported at the count when the IDs it promises are not all there,
          * else after them, where the bytes nobody asked for begin (where
          * libmongoc's parser stops too). */
         size_t ids = opmsg_report_at(report, r.p);
         size_t at = count >= 0 && (size_t) count * 8 < (size_t) (r.end - r.p) ? ids + (size_t) count * 8 : ids - 4;
         return opmsg_report(report, OPMSG_ERR_REPLY_COUNT, at,
                             "numberOfCursorIDs %d at offset %zu but %zu bytes of cursor IDs follow", count, ids - 4,
                             (size_t) (r.end - r.p));
      }
      msg->op_kill_cursors.number_of_cursor_ids = count;
      msg->op_kill_cursors.cursor_ids = r.p;
      msg->op_kill_cursors.cursor_ids_len = (size_t) count * 8;
      return true;
   }
}
