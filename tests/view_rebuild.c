/*
 * view_rebuild.c - the merged document rebuilt from the zero-copy view (see
 * view_rebuild.h). Its own buffers use malloc(), never bson_malloc(), so a
 * caller counting libbson's allocations sees the library's alone.
 */
#include "view_rebuild.h"

#include "opmsg-bson-compat.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
   size_t limit; /* the most fields a level can have: msg->len */
   char *why;
   size_t why_size;
} rebuild_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static view_rebuild_status_t
broken(rebuild_t *r, const char *fmt, ...)
{
   if (r->why != NULL && r->why_size > 0) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(r->why, r->why_size, fmt, ap);
      va_end(ap);
   }
   return VIEW_REBUILD_BROKEN;
}

#define REBUILD_CHECK(r, cond)                                  \
   do {                                                         \
      if (!(cond)) {                                            \
         return broken((r), "view property broken: %s", #cond); \
      }                                                         \
   } while (0)

/* The element under it, copied as its raw bytes: bson_append_iter() would
 * rewrite some values (it sorts a regex's options, for one). */
static view_rebuild_status_t
append_raw(rebuild_t *r, bson_t *out, const bson_iter_t *it)
{
   REBUILD_CHECK(r, it->next_off > it->type && it->next_off <= it->len);
   size_t n = it->next_off - it->type;
   uint8_t *tmp = malloc(n + 5);
   REBUILD_CHECK(r, tmp != NULL);
   uint32_t total = (uint32_t) (n + 5);
   tmp[0] = (uint8_t) total;
   tmp[1] = (uint8_t) (total >> 8);
   tmp[2] = (uint8_t) (total >> 16);
   tmp[3] = (uint8_t) (total >> 24);
   memcpy(tmp + 4, it->raw + it->type, n);
   tmp[n + 4] = 0;
   bson_t one;
   bool ok = bson_init_static(&one, tmp, n + 5) && bson_concat(out, &one);
   free(tmp);
   REBUILD_CHECK(r, ok);
   return VIEW_REBUILD_OK;
}

static view_rebuild_status_t
append_sequence(rebuild_t *r, bson_t *out, const opmsg_field_t *field)
{
   bson_t arr;
   REBUILD_CHECK(r, opmsg_append_array_begin(out, field->key, (int) field->key_len, &arr));
   opmsg_document_iter_t dit;
   bson_t doc;
   uint32_t i = 0;
   opmsg_document_iter_init(&dit, &field->seq);
   while (opmsg_document_iter_next(&dit, &doc)) {
      char buf[16];
      const char *key;
      size_t key_len = bson_uint32_to_string(i++, &key, buf, sizeof buf);
      REBUILD_CHECK(r, bson_append_document(&arr, key, (int) key_len, &doc));
   }
   REBUILD_CHECK(r, i == field->seq.count);
   REBUILD_CHECK(r, bson_append_array_end(out, &arr));
   return VIEW_REBUILD_OK;
}

/* One level of the merged document, from the view into out. */
static view_rebuild_status_t
rebuild_level(rebuild_t *r, const opmsg_view_t *view_in, bson_t *out, int depth)
{
   opmsg_view_t view = *view_in;
   opmsg_field_t field;
   size_t fields = 0;
   view_rebuild_status_t st;

   if (depth > VIEW_REBUILD_MAX_DEPTH) {
      return VIEW_REBUILD_TOO_DEEP;
   }
   while (opmsg_view_next(&view, &field)) {
      if (++fields > r->limit) {
         return broken(r, "the view does not end");
      }
      REBUILD_CHECK(r, field.key != NULL && memchr(field.key, '\0', field.key_len) == NULL);
      switch (field.kind) {
      case OPMSG_FIELD_BODY:
         REBUILD_CHECK(r, strlen(bson_iter_key(&field.iter)) == field.key_len &&
                             memcmp(bson_iter_key(&field.iter), field.key, field.key_len) == 0);
         st = append_raw(r, out, &field.iter);
         break;
      case OPMSG_FIELD_SEQUENCE:
         st = append_sequence(r, out, &field);
         break;
      case OPMSG_FIELD_PATH: {
         opmsg_view_t child_view;
         bson_t child;
         if (!opmsg_view_enter(&view, &field, &child_view)) {
            return broken(r, "view: cannot enter \"%.*s\"", (int) field.key_len, field.key);
         }
         REBUILD_CHECK(r, bson_append_document_begin(out, field.key, (int) field.key_len, &child));
         st = rebuild_level(r, &child_view, &child, depth + 1);
         REBUILD_CHECK(r, bson_append_document_end(out, &child));
         break;
      }
      default:
         return broken(r, "view field of unknown kind %d", (int) field.kind);
      }
      if (st != VIEW_REBUILD_OK) {
         return st;
      }
   }
   return VIEW_REBUILD_OK;
}

view_rebuild_status_t
view_rebuild(const opmsg_msg_t *msg, bson_t *out, char *why, size_t why_size)
{
   rebuild_t r = {.limit = msg->len, .why = why, .why_size = why_size};
   opmsg_view_t view;
   if (why != NULL && why_size > 0) {
      why[0] = '\0';
   }
   if (!opmsg_view_init(&view, msg)) {
      return broken(&r, "opmsg_view_init failed");
   }
   return rebuild_level(&r, &view, out, 0);
}
