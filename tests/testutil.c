/* testutil.c - helpers shared by the unit tests. */
#include "testutil.h"
#include "view_rebuild.h"

#include <stdio.h>
#include <string.h>

static char *
tu_path(const char *rel)
{
   size_t n = strlen(OPMSG_TEST_DATA) + strlen(rel) + 2;
   char *path = malloc(n);
   assert_non_null(path);
   snprintf(path, n, "%s/%s", OPMSG_TEST_DATA, rel);
   return path;
}

int
tu_file_exists(const char *rel)
{
   char *path = tu_path(rel);
   FILE *f = fopen(path, "rb");
   free(path);
   if (f) {
      fclose(f);
   }
   return f != NULL;
}

uint8_t *
tu_read_file(const char *rel, size_t *len)
{
   char *path = tu_path(rel);
   FILE *f = fopen(path, "rb");
   if (!f) {
      fail_msg("cannot open %s", path);
   }
   free(path);
   fseek(f, 0, SEEK_END);
   long n = ftell(f);
   fseek(f, 0, SEEK_SET);
   uint8_t *data = malloc(n > 0 ? (size_t) n : 1);
   assert_non_null(data);
   assert_int_equal(fread(data, 1, (size_t) n, f), (size_t) n);
   fclose(f);
   *len = (size_t) n;
   return data;
}

void
tu_buf_init(tu_buf_t *b)
{
   b->data = NULL;
   b->len = 0;
   b->cap = 0;
}

void
tu_buf_free(tu_buf_t *b)
{
   free(b->data);
   tu_buf_init(b);
}

void
tu_put(tu_buf_t *b, const void *p, size_t n)
{
   if (b->len + n > b->cap) {
      size_t cap = b->cap ? b->cap : 64;
      while (cap < b->len + n) {
         cap *= 2;
      }
      b->data = realloc(b->data, cap);
      assert_non_null(b->data);
      b->cap = cap;
   }
   if (n) {
      memcpy(b->data + b->len, p, n);
   }
   b->len += n;
}

void
tu_put_u8(tu_buf_t *b, uint8_t v)
{
   tu_put(b, &v, 1);
}

void
tu_put_i32(tu_buf_t *b, int32_t v)
{
   uint8_t le[4];
   opmsg_write_u32(le, (uint32_t) v);
   tu_put(b, le, 4);
}

void
tu_put_cstr(tu_buf_t *b, const char *s)
{
   tu_put(b, s, strlen(s) + 1);
}

void
tu_put_bson(tu_buf_t *b, const bson_t *doc)
{
   tu_put(b, bson_get_data(doc), doc->len);
}

void
tu_put_empty_docs(tu_buf_t *b, size_t count)
{
   static const uint8_t empty[5] = {5, 0, 0, 0, 0};
   for (size_t i = 0; i < count; i++) {
      tu_put(b, empty, sizeof empty);
   }
}

void
tu_put_json_doc(tu_buf_t *b, const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *) json, -1, &error);
   if (!doc) {
      fail_msg("bad test JSON %s: %s", json, error.message);
   }
   tu_put_bson(b, doc);
   bson_destroy(doc);
}

void
tu_msg_begin(tu_buf_t *b, uint32_t flags)
{
   tu_put_i32(b, 0); /* messageLength, fixed by tu_msg_end */
   tu_put_i32(b, 7); /* requestID */
   tu_put_i32(b, 0); /* responseTo */
   tu_put_i32(b, OPMSG_OP_MSG);
   tu_put_i32(b, (int32_t) flags);
}

void
tu_msg_body(tu_buf_t *b, const char *json)
{
   tu_put_u8(b, 0);
   tu_put_json_doc(b, json);
}

size_t
tu_msg_seq_begin(tu_buf_t *b, const char *identifier)
{
   tu_put_u8(b, 1);
   size_t mark = b->len;
   tu_put_i32(b, 0);
   tu_put_cstr(b, identifier);
   return mark;
}

void
tu_msg_seq_end(tu_buf_t *b, size_t mark)
{
   opmsg_write_u32(b->data + mark, (uint32_t) (b->len - mark));
}

void
tu_msg_end(tu_buf_t *b)
{
   uint32_t flags = opmsg_read_u32(b->data + 16);
   if (flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      opmsg_write_u32(b->data, (uint32_t) b->len + 4);
      uint32_t crc = opmsg_crc32c(0, b->data, b->len);
      uint8_t le[4];
      opmsg_write_u32(le, crc);
      tu_put(b, le, 4);
   } else {
      opmsg_write_u32(b->data, (uint32_t) b->len);
   }
}

const opmsg_check_t tu_levels[TU_N_LEVELS] = {OPMSG_CHECK_SPEC, OPMSG_CHECK_TOP_LEVEL, OPMSG_CHECK_FULL};

uint32_t
tu_parse_code(const uint8_t *data, size_t len, uint32_t flags, opmsg_check_t check, bson_error_t *error)
{
   opmsg_options_t opts;
   opmsg_msg_t msg;
   opmsg_options_init(&opts);
   opts.flags = flags;
   opts.check = check;
   memset(error, 0, sizeof *error);
   if (opmsg_parse(data, len, &opts, &msg, error)) {
      return OPMSG_OK;
   }
   assert_int_equal(error->domain, OPMSG_ERROR_DOMAIN);
   assert_true(strlen(error->message) > 0);
   return error->code;
}

void
tu_assert_rejects_from(const uint8_t *data, size_t len, uint32_t flags, opmsg_error_code_t code, opmsg_check_t lowest)
{
   bool above = false;
   for (size_t i = 0; i < TU_N_LEVELS; i++) {
      bson_error_t error;
      above = above || tu_levels[i] == lowest;
      uint32_t got = tu_parse_code(data, len, flags, tu_levels[i], &error);
      if (above && got == OPMSG_OK) {
         fail_msg("accepted at %s a message that breaks %s", opmsg_check_name(tu_levels[i]), opmsg_error_name(code));
      }
      if (above && got != (uint32_t) code) {
         fail_msg("at %s: expected %s, got %s (%u): %s", opmsg_check_name(tu_levels[i]), opmsg_error_name(code),
                  opmsg_error_name(got), got, error.message);
      }
      if (!above && got != OPMSG_OK) {
         fail_msg("at %s, below %s: %s should be let through, got %s: %s", opmsg_check_name(tu_levels[i]),
                  opmsg_check_name(lowest), opmsg_error_name(code), opmsg_error_name(got), error.message);
      }
   }
}

void
tu_assert_rejects(const uint8_t *data, size_t len, uint32_t flags, opmsg_error_code_t code)
{
   tu_assert_rejects_from(data, len, flags, code, OPMSG_CHECK_SPEC);
}

char *
tu_canonical_json(const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *) json, -1, &error);
   if (!doc) {
      fail_msg("bad test JSON %s: %s", json, error.message);
   }
   char *out = bson_as_canonical_extended_json(doc, NULL);
   bson_destroy(doc);
   return out;
}

char *
tu_merge_json(const uint8_t *data, size_t len, uint32_t flags)
{
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_init(&opts);
   opts.flags = flags;
   if (!opmsg_parse(data, len, &opts, &msg, &error)) {
      fail_msg("parse failed: %s: %s", opmsg_error_name(error.code), error.message);
   }
   bson_t *merged = opmsg_merge_bson(&msg, &error);
   if (!merged) {
      fail_msg("merge failed: %s", error.message);
   }
   assert_true(bson_validate(merged, BSON_VALIDATE_NONE, NULL));
   char *json = bson_as_canonical_extended_json(merged, NULL);
   bson_destroy(merged);
   return json;
}

void
tu_view_to_bson(const opmsg_msg_t *msg, bson_t *out)
{
   char why[256];
   bson_init(out);
   view_rebuild_status_t st = view_rebuild(msg, out, why, sizeof why);
   if (st == VIEW_REBUILD_TOO_DEEP) {
      fail_msg("view rebuild: paths deeper than %d levels", VIEW_REBUILD_MAX_DEPTH);
   } else if (st != VIEW_REBUILD_OK) {
      fail_msg("view rebuild: %s", why);
   }
}

static size_t alloc_count;

static void *
count_malloc(size_t n)
{
   alloc_count++;
   return malloc(n);
}

static void *
count_calloc(size_t n, size_t m)
{
   alloc_count++;
   return calloc(n, m);
}

static void *
count_realloc(void *p, size_t n)
{
   alloc_count++;
   return realloc(p, n);
}

static void *
count_aligned_alloc(size_t alignment, size_t n)
{
   alloc_count++;
   return aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
}

void
tu_count_allocs_begin(void)
{
   static bson_mem_vtable_t vt = {.malloc = count_malloc,
                                  .calloc = count_calloc,
                                  .realloc = count_realloc,
                                  .free = free,
                                  .aligned_alloc = count_aligned_alloc};
   alloc_count = 0;
   bson_mem_set_vtable(&vt);
}

size_t
tu_count_allocs_end(void)
{
   bson_mem_restore_vtable();
   return alloc_count;
}

size_t
tu_for_each_message(const uint8_t *data, size_t len, void (*fn)(const uint8_t *msg, size_t len, void *ctx), void *ctx)
{
   size_t n = 0, off = 0;
   while (off < len) {
      size_t mlen;
      bson_error_t error;
      if (!opmsg_frame_length(data + off, len - off, NULL, &mlen, &error)) {
         fail_msg("bad frame at %zu: %s", off, error.message);
      }
      assert_true(mlen <= len - off);
      fn(data + off, mlen, ctx);
      off += mlen;
      n++;
   }
   return n;
}

uint8_t *
tu_from_hex(const char *hex, size_t *len)
{
   size_t n = strlen(hex);
   assert_int_equal(n % 2, 0);
   uint8_t *out = malloc(n / 2 + 1);
   assert_non_null(out);
   for (size_t i = 0; i < n / 2; i++) {
      unsigned v;
      char pair[3] = {hex[2 * i], hex[2 * i + 1], 0};
      if (sscanf(pair, "%2x", &v) != 1) {
         fail_msg("bad hex \"%s\"", hex);
      }
      out[i] = (uint8_t) v;
   }
   *len = n / 2;
   return out;
}
