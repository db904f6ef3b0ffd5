/*
 * harness.c - allocation accounting and the properties every accepted
 * message must have, shared by the fuzz targets.
 *
 * The harness's own buffers use malloc(); only opmsg (and libbson on its
 * behalf) goes through bson_malloc(), so the counters see the library alone.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "view_rebuild.h"

#include "opmsg-bson-compat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
fuzz_fail(const char *file, int line, const char *fmt, ...)
{
   va_list ap;
   fprintf(stderr, "\n*** fuzz property failure at %s:%d: ", file, line);
   va_start(ap, fmt);
   vfprintf(stderr, fmt, ap);
   va_end(ap);
   fputc('\n', stderr);
   fflush(stderr);
   abort();
}

bson_t *
fuzz_bson_array(size_t n)
{
   size_t bytes = (n ? n : 1) * sizeof(bson_t); /* a multiple of the alignment */
   bson_t *a = aligned_alloc(BSON_ALIGNOF(bson_t), bytes);
   FUZZ_CHECK(a != NULL);
   memset(a, 0, bytes);
   return a;
}

uint32_t
fuzz_u32(const uint8_t *p)
{
   return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

bool
fuzz_frames_only(const opmsg_options_t *opts)
{
   return !(opts->flags & OPMSG_PARSE_FULL_VALIDATE) && opts->check == OPMSG_CHECK_SPEC;
}

void
fuzz_options_from_byte(uint8_t control, opmsg_options_t *opts)
{
   opmsg_options_init(opts);
   opts->flags = control & (OPMSG_PARSE_FULL_VALIDATE | OPMSG_PARSE_SKIP_CHECKSUM | OPMSG_PARSE_REQUEST);
   if (control & OPMSG_PARSE_FULL_VALIDATE) {
      opts->check = OPMSG_CHECK_FULL;
   } else if (control & 0xc0u) {
      opts->check = OPMSG_CHECK_SPEC;
   } else {
      opts->check = OPMSG_CHECK_TOP_LEVEL;
   }
   switch ((control >> 3) & 3) {
   case 1:
      opts->max_message_size = 4096;
      break;
   case 2:
      opts->max_bson_size = 512;
      break;
   case 3:
      opts->max_message_size = 1024;
      opts->max_bson_size = 128;
      break;
   default:
      break;
   }
}

void
fuzz_check_error(const bson_error_t *error)
{
   FUZZ_CHECK_MSG(error->domain == OPMSG_ERROR_DOMAIN, "error domain %u is not opmsg's (code %u: %s)", error->domain,
                  error->code, error->message);
   FUZZ_CHECK_MSG(error->code > OPMSG_OK && error->code < OPMSG_ERR_COUNT_, "error code %u out of range (%s)",
                  error->code, error->message);
   FUZZ_CHECK_MSG(strcmp(opmsg_error_name(error->code), "unknown") != 0, "error code %u has no name", error->code);
   FUZZ_CHECK_MSG(memchr(error->message, '\0', sizeof error->message) != NULL && error->message[0] != '\0',
                  "error %u has an empty or unterminated message", error->code);
}

/* ---------------------------------------------------------------------------
 * Counting allocator. Each block carries a 16-byte header before the pointer
 * handed out: its requested size and the distance back to the real block
 * (which differs for aligned allocations).
 * ------------------------------------------------------------------------- */

#define FUZZ_HDR 16u

typedef struct {
   size_t size;
   size_t offset;
} fuzz_hdr_t;

static size_t g_live;
static size_t g_base;
static size_t g_peak;
static size_t g_largest;
static size_t g_count;

static void
fuzz_note(size_t n)
{
   g_count++;
   if (n > g_largest) {
      g_largest = n;
   }
   g_live += n;
   if (g_live > g_base && g_live - g_base > g_peak) {
      g_peak = g_live - g_base;
   }
}

static void *
fuzz_finish_block(uint8_t *base, size_t offset, size_t n)
{
   fuzz_hdr_t h = {n, offset};
   memcpy(base + offset - FUZZ_HDR, &h, sizeof h);
   fuzz_note(n);
   return base + offset;
}

static fuzz_hdr_t
fuzz_header(void *mem)
{
   fuzz_hdr_t h;
   memcpy(&h, (uint8_t *) mem - FUZZ_HDR, sizeof h);
   return h;
}

static void *
fuzz_malloc(size_t n)
{
   if (n > SIZE_MAX - FUZZ_HDR) {
      return NULL;
   }
   uint8_t *base = malloc(n + FUZZ_HDR);
   return base ? fuzz_finish_block(base, FUZZ_HDR, n) : NULL;
}

static void *
fuzz_calloc(size_t count, size_t size)
{
   if (size && count > (SIZE_MAX - FUZZ_HDR) / size) {
      return NULL;
   }
   size_t n = count * size;
   uint8_t *base = calloc(1, n + FUZZ_HDR);
   return base ? fuzz_finish_block(base, FUZZ_HDR, n) : NULL;
}

static void
fuzz_free(void *mem)
{
   if (!mem) {
      return;
   }
   fuzz_hdr_t h = fuzz_header(mem);
   g_live -= h.size;
   free((uint8_t *) mem - h.offset);
}

static void *
fuzz_realloc(void *mem, size_t n)
{
   if (!mem) {
      return fuzz_malloc(n);
   }
   fuzz_hdr_t h = fuzz_header(mem);
   if (h.offset != FUZZ_HDR) {
      /* An aligned block: move it into a plain one. */
      void *fresh = fuzz_malloc(n);
      if (fresh) {
         memcpy(fresh, mem, h.size < n ? h.size : n);
         fuzz_free(mem);
      }
      return fresh;
   }
   if (n > SIZE_MAX - FUZZ_HDR) {
      return NULL;
   }
   uint8_t *base = realloc((uint8_t *) mem - FUZZ_HDR, n + FUZZ_HDR);
   if (!base) {
      return NULL;
   }
   g_live -= h.size;
   return fuzz_finish_block(base, FUZZ_HDR, n);
}

static void *
fuzz_aligned_alloc(size_t alignment, size_t n)
{
   size_t offset = alignment < FUZZ_HDR ? FUZZ_HDR : alignment;
   void *base = NULL;
   if (n > SIZE_MAX - offset || posix_memalign(&base, offset, n + offset) != 0) {
      return NULL;
   }
   return fuzz_finish_block(base, offset, n);
}

void
fuzz_init(void)
{
   static bool done;
   if (done) {
      return;
   }
   done = true;
   static const bson_mem_vtable_t vtable = {fuzz_malloc, fuzz_calloc,        fuzz_realloc,
                                            fuzz_free,   fuzz_aligned_alloc, {NULL, NULL, NULL}};
   bson_mem_set_vtable(&vtable);
}

void
fuzz_mem_begin(void)
{
   g_base = g_live;
   g_peak = 0;
   g_largest = 0;
   g_count = 0;
}

void
fuzz_mem_end(fuzz_mem_stats_t *stats)
{
   stats->largest = g_largest;
   stats->peak = g_peak;
   stats->live_delta = g_live >= g_base ? g_live - g_base : 0;
   stats->count = g_count;
}

/* ---------------------------------------------------------------------------
 * Properties of an accepted message.
 * ------------------------------------------------------------------------- */

static bool
fuzz_inside(const opmsg_msg_t *msg, const void *p, size_t n)
{
   const uint8_t *q = p;
   return q >= msg->data && q <= msg->data + msg->len && n <= (size_t) (msg->data + msg->len - q);
}

static bool
fuzz_removed_opcode(int32_t opcode)
{
   return opcode == OPMSG_OP_UPDATE || opcode == OPMSG_OP_INSERT || opcode == OPMSG_OP_GET_MORE ||
          opcode == OPMSG_OP_DELETE || opcode == OPMSG_OP_KILL_CURSORS;
}

static bool
fuzz_known_opcode(int32_t opcode)
{
   return opcode == OPMSG_OP_MSG || opcode == OPMSG_OP_COMPRESSED || opcode == OPMSG_OP_QUERY ||
          opcode == OPMSG_OP_REPLY || fuzz_removed_opcode(opcode);
}

static void
fuzz_check_header(const opmsg_msg_t *msg, const opmsg_options_t *opts)
{
   FUZZ_CHECK(msg->len >= OPMSG_HEADER_SIZE);
   FUZZ_CHECK(msg->message_length >= 0 && (size_t) msg->message_length == msg->len);
   FUZZ_CHECK(fuzz_known_opcode(msg->opcode));

   size_t frame = 0;
   bson_error_t error;
   FUZZ_CHECK_MSG(opmsg_frame_length(msg->data, msg->len, opts, &frame, &error),
                  "frame_length refuses an accepted message: %s", error.message);
   FUZZ_CHECK(frame == msg->len);

   if (msg->opcode == OPMSG_OP_MSG) {
      FUZZ_CHECK((msg->flags & OPMSG_FLAG_REQUIRED_MASK & ~(OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME)) ==
                 0);
      FUZZ_CHECK(msg->checksum_present == !!(msg->flags & OPMSG_FLAG_CHECKSUM_PRESENT));
      FUZZ_CHECK(msg->body != NULL);
   } else {
      FUZZ_CHECK(!msg->checksum_present);
   }
   if (msg->checksum_present) {
      FUZZ_CHECK(msg->checksum == fuzz_u32(msg->data + msg->len - 4));
      if (!(opts->flags & OPMSG_PARSE_SKIP_CHECKSUM)) {
         FUZZ_CHECK(opmsg_crc32c(0, msg->data, msg->len - 4) == msg->checksum);
      }
   }

   bson_t body;
   FUZZ_CHECK(opmsg_body(msg, &body) == (msg->body != NULL));
   if (msg->body) {
      FUZZ_CHECK(fuzz_inside(msg, msg->body, msg->body_len));
      FUZZ_CHECK(msg->body_len >= 5 && fuzz_u32(msg->body) == msg->body_len);
      FUZZ_CHECK(msg->body[msg->body_len - 1] == 0);
      FUZZ_CHECK(body.len == msg->body_len && bson_get_data(&body) == msg->body);

      /* The command name is the body's first key, pointing into the body. */
      const char *name = opmsg_command_name(msg);
      if (msg->body_len == 5) {
         FUZZ_CHECK(name == NULL);
      } else {
         FUZZ_CHECK(name == (const char *) msg->body + 5);
      }
   }
   uint32_t db_len = 0;
   const char *db = opmsg_db(msg, &db_len);
   if (db) {
      FUZZ_CHECK(fuzz_inside(msg, db, (size_t) db_len + 1) && db[db_len] == '\0');
   }
   if (opts->flags & OPMSG_PARSE_REQUEST && msg->opcode == OPMSG_OP_MSG) {
      FUZZ_CHECK(db != NULL);
   }
}

static void
fuzz_check_sequences(const opmsg_msg_t *msg)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   uint32_t n = 0;

   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      FUZZ_CHECK_MSG(++n <= msg->n_sequences, "more sequences than n_sequences");
      FUZZ_CHECK(fuzz_inside(msg, seq.identifier, (size_t) seq.identifier_len + 1));
      FUZZ_CHECK(strlen(seq.identifier) == seq.identifier_len && seq.identifier_len > 0);
      FUZZ_CHECK(seq.offset < msg->len && msg->data[seq.offset] == 1);
      FUZZ_CHECK(fuzz_inside(msg, seq.documents, seq.documents_len));

      /* The documents tile the section exactly. */
      opmsg_document_iter_t dit;
      bson_t doc;
      uint32_t count = 0;
      const uint8_t *expect = seq.documents;
      opmsg_document_iter_init(&dit, &seq);
      while (opmsg_document_iter_next(&dit, &doc)) {
         FUZZ_CHECK(bson_get_data(&doc) == expect);
         FUZZ_CHECK(doc.len >= 5 && fuzz_inside(msg, expect, doc.len));
         expect += doc.len;
         FUZZ_CHECK_MSG(++count <= seq.count, "more documents than seq.count");
      }
      FUZZ_CHECK(count == seq.count);
      FUZZ_CHECK(expect == seq.documents + seq.documents_len);

      opmsg_sequence_t found;
      FUZZ_CHECK(opmsg_sequence_find(msg, seq.identifier, &found));
      FUZZ_CHECK(found.offset == seq.offset);
   }
   FUZZ_CHECK(n == msg->n_sequences);
}

/*
 * For long campaigns only: with OPMSG_FUZZ_TOLERATE=view-iter in the
 * environment, a view/merge mismatch is let through when the merged
 * document holds an element libbson's iterator refuses (the view walks the
 * body with bson_iter_t, so it stops there). That is a known, reported
 * finding (tests/fuzz/regressions/fuzz_parse/view-stops-at-*); tolerating it
 * lets a campaign look for other bugs. `make fuzz` and the replay tests never
 * set it.
 */
/* Can libbson's iterator walk the whole document, nested ones included?
 * (bson_validate() is no oracle here: libbson 1.23 reports a document whose
 * iteration stopped at a bad binary element as valid.) */
static bool
fuzz_iter_walkable(const uint8_t *data, size_t len, int depth)
{
   bson_t doc;
   bson_iter_t it;
   if (depth > 200) {
      return true;
   }
   if (!bson_init_static(&doc, data, len) || !bson_iter_init(&it, &doc)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
         const uint8_t *sub;
         uint32_t sub_len;
         if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_iter_document(&it, &sub_len, &sub);
         } else {
            bson_iter_array(&it, &sub_len, &sub);
         }
         if (!fuzz_iter_walkable(sub, sub_len, depth + 1)) {
            return false;
         }
      }
   }
   return it.err_off == 0;
}

static bool
fuzz_tolerated_view_gap(const uint8_t *merged, size_t merged_len)
{
   static int tolerate = -1;
   if (tolerate < 0) {
      const char *env = getenv("OPMSG_FUZZ_TOLERATE");
      tolerate = env && strstr(env, "view-iter") != NULL;
   }
   return tolerate && !fuzz_iter_walkable(merged, merged_len, 0);
}

/* The merged document rebuilt from the view (view_rebuild(), shared with the
 * unit tests and opmsg-bench) must be the merge, byte for byte. */
static void
fuzz_check_view(const opmsg_msg_t *msg, const opmsg_options_t *opts, const uint8_t *merged, size_t merged_len)
{
   bson_t rebuilt = BSON_INITIALIZER;
   char why[256];
   /* Paths too deep to follow are not compared. */
   view_rebuild_status_t st = view_rebuild(msg, &rebuilt, why, sizeof why);
   FUZZ_CHECK_MSG(st != VIEW_REBUILD_BROKEN, "%s", why);
   if (st == VIEW_REBUILD_OK &&
       (rebuilt.len != merged_len || memcmp(bson_get_data(&rebuilt), merged, merged_len) != 0) &&
       !fuzz_tolerated_view_gap(merged, merged_len) &&
       /* The spec level leaves elements unchecked; the view reads the
        * body through libbson's iterator, which stops at a bad one. */
       !(fuzz_frames_only(opts) && !fuzz_iter_walkable(merged, merged_len, 0))) {
      fuzz_fail(__FILE__, __LINE__, "the view (%u bytes) disagrees with the merge (%zu bytes)", rebuilt.len,
                merged_len);
   }
   bson_destroy(&rebuilt);
}


/* ---------------------------------------------------------------------------
 * An independent raw walk of BSON (neither libbson's iterator nor opmsg's),
 * to check that the merge keeps every body field.
 * ------------------------------------------------------------------------- */

typedef struct {
   const uint8_t *start; /* the type byte */
   const uint8_t *end;   /* one past the value */
   const char *key;
   const uint8_t *value;
   uint8_t type;
} fuzz_elem_t;

/* Length of a NUL-terminated string within n bytes, or -1. */
static long
fuzz_cstr(const uint8_t *p, size_t n)
{
   const uint8_t *nul = memchr(p, 0, n);
   return nul ? (long) (nul - p) : -1;
}

/* Size of the value of type t at p with n bytes left, or -1. */
static long
fuzz_value_size(uint8_t t, const uint8_t *p, size_t n)
{
   long a, b;
   switch (t) {
   case 0x01:
   case 0x09:
   case 0x11:
   case 0x12:
      return 8;
   case 0x02:
   case 0x0D:
   case 0x0E:
      return n >= 4 ? 4 + (long) (int32_t) fuzz_u32(p) : -1;
   case 0x03:
   case 0x04:
   case 0x0F:
      return n >= 4 ? (long) (int32_t) fuzz_u32(p) : -1;
   case 0x05:
      return n >= 4 ? 5 + (long) (int32_t) fuzz_u32(p) : -1;
   case 0x06:
   case 0x0A:
   case 0x7F:
   case 0xFF:
      return 0;
   case 0x07:
      return 12;
   case 0x08:
      return 1;
   case 0x0B:
      if ((a = fuzz_cstr(p, n)) < 0 || (b = fuzz_cstr(p + a + 1, n - (size_t) a - 1)) < 0) {
         return -1;
      }
      return a + b + 2;
   case 0x0C:
      return n >= 4 ? 4 + (long) (int32_t) fuzz_u32(p) + 12 : -1;
   case 0x10:
      return 4;
   case 0x13:
      return 16;
   default:
      return -1;
   }
}

/* Reads the element at *p before end (the document's terminator). */
static bool
fuzz_next_elem(const uint8_t **p, const uint8_t *end, fuzz_elem_t *e)
{
   if (*p >= end) {
      return false;
   }
   e->start = *p;
   e->type = **p;
   long klen = fuzz_cstr(*p + 1, (size_t) (end - *p - 1));
   if (klen < 0) {
      return false;
   }
   e->key = (const char *) *p + 1;
   e->value = *p + 1 + klen + 1;
   long vlen = fuzz_value_size(e->type, e->value, (size_t) (end - e->value));
   if (vlen < 0 || vlen > end - e->value) {
      return false;
   }
   e->end = e->value + vlen;
   *p = e->end;
   return true;
}

/* Is some sequence identifier below the dotted path prefix + key? */
static bool
fuzz_path_used(const opmsg_msg_t *msg, const char *path)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   size_t n = strlen(path);
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_iter_next(&it, &seq)) {
      if (seq.identifier_len > n && seq.identifier[n] == '.' && memcmp(seq.identifier, path, n) == 0) {
         return true;
      }
   }
   return false;
}

/* Every field of the body (sub-)document src is in dst, byte for byte, or
 * (a sub-document that sequences extend) recursively so. */
static void
fuzz_check_kept(const opmsg_msg_t *msg, const uint8_t *src, const uint8_t *dst, char *path, size_t path_len,
                size_t path_cap)
{
   const uint8_t *p = src + 4, *end = src + fuzz_u32(src) - 1;
   fuzz_elem_t e, m, o;
   while (fuzz_next_elem(&p, end, &e)) {
      /* A sub-document may hold a key twice (only the body's top level
       * may not): the n-th field of a name in src is the n-th in dst. */
      size_t occurrence = 0;
      const uint8_t *r = src + 4;
      while (fuzz_next_elem(&r, end, &o) && o.start < e.start) {
         occurrence += strcmp(o.key, e.key) == 0;
      }
      const uint8_t *q = dst + 4, *qend = dst + fuzz_u32(dst) - 1;
      bool found = false;
      while (!found && fuzz_next_elem(&q, qend, &m)) {
         found = strcmp(m.key, e.key) == 0 && occurrence-- == 0;
      }
      if (!found && fuzz_tolerated_view_gap(src, fuzz_u32(src))) {
         return; /* the known finding: libbson's iterator stops in src */
      }
      FUZZ_CHECK_MSG(found, "the merge lost the body field \"%s\" (under \"%s\")", e.key, path);
      if ((size_t) (e.end - e.start) == (size_t) (m.end - m.start) &&
          memcmp(e.start, m.start, (size_t) (e.end - e.start)) == 0) {
         continue;
      }
      size_t klen = strlen(e.key);
      FUZZ_CHECK(path_len + klen + 2 < path_cap);
      size_t saved = path_len;
      if (path_len) {
         path[path_len++] = '.';
      }
      memcpy(path + path_len, e.key, klen + 1);
      path_len += klen;
      FUZZ_CHECK_MSG(e.type == 0x03 && m.type == 0x03 && fuzz_path_used(msg, path),
                     "the merge changed the body field \"%s\"", path);
      fuzz_check_kept(msg, e.value, m.value, path, path_len, path_cap);
      path_len = saved;
      path[path_len] = '\0';
   }
}

/* The merge keeps the body: identical when there are no sequences, every
 * field kept (recursively along dotted paths) otherwise. */
static void
fuzz_check_body_kept(const opmsg_msg_t *msg, const uint8_t *merged, size_t merged_len)
{
   if (msg->opcode != OPMSG_OP_MSG || msg->n_sequences == 0) {
      FUZZ_CHECK_MSG(merged_len == msg->body_len && memcmp(merged, msg->body, merged_len) == 0,
                     "a merge without sequences is not the body");
      return;
   }
   FUZZ_CHECK(merged_len >= msg->body_len);
   char *path = malloc(msg->len + 2);
   FUZZ_CHECK(path != NULL);
   path[0] = '\0';
   fuzz_check_kept(msg, msg->body, merged, path, 0, msg->len + 2);
   free(path);
}

/* Why a message has no merged form: the documented WRONG_OPCODE cases. */
static bool
fuzz_unmergeable(const opmsg_msg_t *msg)
{
   return msg->opcode == OPMSG_OP_COMPRESSED || fuzz_removed_opcode(msg->opcode) ||
          (msg->opcode == OPMSG_OP_REPLY && msg->op_reply.number_returned != 1);
}

uint8_t *
fuzz_check_accepted(const opmsg_msg_t *msg, const opmsg_options_t *opts, size_t *merged_len)
{
   bson_error_t error;

   fuzz_check_header(msg, opts);
   fuzz_check_sequences(msg);

   size_t need = opmsg_merged_size(msg);
   uint8_t *buf = malloc(need ? need : 1);
   FUZZ_CHECK(buf != NULL);
   size_t written = 0;
   if (!opmsg_merge_into(msg, buf, need, &written, &error)) {
      fuzz_check_error(&error);
      FUZZ_CHECK_MSG(error.code == OPMSG_ERR_WRONG_OPCODE && fuzz_unmergeable(msg),
                     "merge_into refuses an accepted message: %s", error.message);
      FUZZ_CHECK(opmsg_merge_bson(msg, &error) == NULL);
      FUZZ_CHECK(error.code == OPMSG_ERR_WRONG_OPCODE);
      free(buf);
      return NULL;
   }
   FUZZ_CHECK(!fuzz_unmergeable(msg));
   FUZZ_CHECK(written == need && need >= 5);
   FUZZ_CHECK(fuzz_u32(buf) == need && buf[need - 1] == 0);

   /* One byte short must be refused, not truncated. */
   size_t ignored = 0;
   FUZZ_CHECK(!opmsg_merge_into(msg, buf, need - 1, &ignored, &error));
   FUZZ_CHECK(error.code == OPMSG_ERR_BUFFER_TOO_SMALL);
   /* The refused call may have scribbled: merge again. */
   FUZZ_CHECK(opmsg_merge_into(msg, buf, need, &written, &error));

   /* merge_bson: the same bytes, in one allocation (a document that fits
    * inside the bson_t) or two (the bson_t, its bytes). */
   fuzz_mem_stats_t mem;
   fuzz_mem_begin();
   bson_t *doc = opmsg_merge_bson(msg, &error);
   fuzz_mem_end(&mem);
   FUZZ_CHECK_MSG(doc != NULL, "merge_bson fails where merge_into worked: %s", error.message);
   FUZZ_CHECK_MSG(mem.count == (need <= 115 ? 1u : 2u), "merge_bson made %zu allocations for %zu bytes", mem.count,
                  need);
   FUZZ_CHECK(doc->len == need && memcmp(bson_get_data(doc), buf, need) == 0);

   if (opts->flags & OPMSG_PARSE_FULL_VALIDATE) {
      /* Every element checked: libbson can walk all of it. */
      FUZZ_CHECK_MSG(fuzz_iter_walkable(buf, need, 0), "libbson's iterator stops inside a fully validated merge");
      size_t off = 0;
      FUZZ_CHECK_MSG(bson_validate(doc, BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL, &off),
                     "bson_validate rejects a fully validated merge at offset %zu", off);
   }
   bson_destroy(doc);

   fuzz_check_body_kept(msg, buf, need);
   fuzz_check_view(msg, opts, buf, need);
   *merged_len = need;
   return buf;
}

void
fuzz_check_reencode(const opmsg_msg_t *msg, const opmsg_options_t *opts, const uint8_t *merged, size_t merged_len)
{
   if (msg->opcode != OPMSG_OP_MSG || !merged) {
      return;
   }
   bson_t body;
   FUZZ_CHECK(opmsg_body(msg, &body));
   size_t n = msg->n_sequences;
   opmsg_sequence_in_t *seqs = calloc(n ? n : 1, sizeof *seqs);
   FUZZ_CHECK(seqs != NULL);
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   size_t i = 0;
   opmsg_sequence_iter_init(&it, msg);
   while (i < n && opmsg_sequence_iter_next(&it, &seq)) {
      seqs[i].identifier = seq.identifier;
      seqs[i].raw = seq.documents;
      seqs[i].raw_len = seq.documents_len;
      i++;
   }
   FUZZ_CHECK(i == n);

   opmsg_build_t b;
   opmsg_build_init(&b, &body);
   b.sequences = seqs;
   b.n_sequences = n;
   b.request_id = msg->request_id;
   b.response_to = msg->response_to;
   b.flags = msg->flags & (OPMSG_FLAG_CHECKSUM_PRESENT | OPMSG_FLAG_MORE_TO_COME | OPMSG_FLAG_EXHAUST_ALLOWED);
   b.max_message_size = opts->max_message_size;
   b.max_bson_size = opts->max_bson_size;
   /* The spec level vouches for the sequence documents' frames only:
    * the encoder is told to trust them as they are. */
   b.trust_documents = fuzz_frames_only(opts);

   bson_error_t error;
   size_t len = 0;
   uint8_t *out = opmsg_build_new(&b, &len, &error);
   if (!out) {
      fuzz_check_error(&error);
      /* The one rule the encoder adds: a command is not empty. */
      /* At the spec level a body alone is only framed; the encoder
       * checks the command's top level and may refuse it. */
      FUZZ_CHECK_MSG(error.code == OPMSG_ERR_BAD_COMMAND && (msg->body_len == 5 || fuzz_frames_only(opts)),
                     "the encoder refuses an accepted message: %s", error.message);
      free(seqs);
      return;
   }
   FUZZ_CHECK_MSG(len == msg->len, "re-encoded as %zu bytes, was %zu", len, msg->len);

   opmsg_options_t strict = *opts;
   strict.flags &= ~OPMSG_PARSE_SKIP_CHECKSUM;
   opmsg_msg_t again;
   FUZZ_CHECK_MSG(opmsg_parse(out, len, &strict, &again, &error), "the re-encoded message does not parse: %s",
                  error.message);
   size_t need = opmsg_merged_size(&again);
   FUZZ_CHECK(need == merged_len);
   uint8_t *buf = malloc(need);
   FUZZ_CHECK(buf != NULL);
   FUZZ_CHECK(opmsg_merge_into(&again, buf, need, NULL, &error));
   FUZZ_CHECK_MSG(memcmp(buf, merged, need) == 0, "the re-encoded message merges differently");
   free(buf);
   bson_free(out);
   free(seqs);
}
