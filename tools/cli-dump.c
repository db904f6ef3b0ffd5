/*
 * cli-dump.c - `opmsg dump`: one JSON object describing a message.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * The description is read from the raw bytes with libopmsg's bounded reads
 * and section step (opmsg/wire.h), so an invalid message is still described
 * as far as its bytes go; the verdict (and the "error" member) comes from
 * opmsg_parse(). Every read is bounds-checked against the bytes given.
 */
#include "cli-common.h"

#include <string.h>

/* Appends text that may not be UTF-8 (identifiers of broken messages): the
 * JSON printer needs valid UTF-8, so other bytes become "\xNN". */
static void
dump_text(bson_t *out, const char *key, const char *s, size_t len)
{
   char *safe;
   size_t i, o = 0;

   if (bson_utf8_validate(s, len, false)) {
      bson_append_utf8(out, key, -1, s, (int) len);
      return;
   }
   safe = bson_malloc(len * 4 + 1);
   for (i = 0; i < len; i++) {
      unsigned char c = (unsigned char) s[i];

      if (c >= 0x20 && c < 0x7f) {
         safe[o++] = (char) c;
      } else {
         bson_snprintf(safe + o, 5, "\\x%02x", c);
         o += 4;
      }
   }
   safe[o] = '\0';
   bson_append_utf8(out, key, -1, safe, (int) o);
   bson_free(safe);
}

/* Appends {number, name} for an opcode. */
static void
dump_opcode(bson_t *out, const char *key, int32_t opcode)
{
   bson_t child;

   bson_append_document_begin(out, key, -1, &child);
   BSON_APPEND_INT32(&child, "number", opcode);
   BSON_APPEND_UTF8(&child, "name", cli_opcode_text(opcode));
   bson_append_document_end(out, &child);
}

/* Appends the names of the bits set in flags (opmsg_flag_name() of the
 * opcode); the bits without a name go to unknown_* by range. */
static void
dump_flag_names(bson_t *out, int32_t opcode, uint32_t flags, uint32_t required_mask)
{
   bson_t arr, req, opt;
   uint32_t bit, n = 0, nr = 0, no = 0;
   char buf[16];
   const char *k;

   opmsg_append_array_begin(out, "names", -1, &arr);
   for (bit = 0; bit < 32; bit++) {
      const char *name = opmsg_flag_name(opcode, bit);

      if ((flags >> bit & 1u) && name) {
         bson_uint32_to_string(n++, &k, buf, sizeof buf);
         bson_append_utf8(&arr, k, -1, name, -1);
      }
   }
   bson_append_array_end(out, &arr);
   opmsg_append_array_begin(out, "unknownRequiredBits", -1, &req);
   for (bit = 0; bit < 32; bit++) {
      if ((flags >> bit & 1u) && !opmsg_flag_name(opcode, bit) && (required_mask >> bit & 1u)) {
         bson_uint32_to_string(nr++, &k, buf, sizeof buf);
         bson_append_int32(&req, k, -1, (int32_t) bit);
      }
   }
   bson_append_array_end(out, &req);
   opmsg_append_array_begin(out, "unknownOptionalBits", -1, &opt);
   for (bit = 0; bit < 32; bit++) {
      if ((flags >> bit & 1u) && !opmsg_flag_name(opcode, bit) && !(required_mask >> bit & 1u)) {
         bson_uint32_to_string(no++, &k, buf, sizeof buf);
         bson_append_int32(&opt, k, -1, (int32_t) bit);
      }
   }
   bson_append_array_end(out, &opt);
}

static void
dump_flags(bson_t *out, const char *key, int32_t opcode, uint32_t flags, uint32_t required_mask)
{
   bson_t child;

   bson_append_document_begin(out, key, -1, &child);
   BSON_APPEND_INT64(&child, "number", (int64_t) flags);
   dump_flag_names(&child, opcode, flags, required_mask);
   bson_append_document_end(out, &child);
}

/* Length of a framed BSON document at p with avail bytes, or 0 when its
 * length field is missing or out of bounds. */
static uint32_t
dump_doc_len(const uint8_t *p, size_t avail)
{
   int32_t n = opmsg_wire_i32(p, avail, 0);

   return n >= 5 && (size_t) n <= avail ? (uint32_t) n : 0;
}

/* Counts the documents back to back in p[0..len); *exact is false when a
 * document does not fit. */
static uint32_t
dump_count_docs(const uint8_t *p, size_t len, bool *exact)
{
   uint32_t count = 0;
   size_t off = 0;

   while (off < len) {
      uint32_t n = dump_doc_len(p + off, len - off);

      if (n == 0) {
         *exact = false;
         return count;
      }
      off += n;
      count++;
   }
   *exact = true;
   return count;
}

/* The first key of the document at p (framed, n bytes), if it has one. */
static void
dump_first_key(bson_t *out, const char *key, const uint8_t *p, uint32_t n)
{
   const uint8_t *k = p + 5;
   const uint8_t *nul;

   if (n <= 6 || p[4] == 0) {
      return;
   }
   nul = memchr(k, 0, n - 5);
   if (nul) {
      dump_text(out, key, (const char *) k, (size_t) (nul - k));
   }
}

/* One section at d[off..end); returns its size, 0 when it cannot be framed
 * (the entry then says "complete": false and the walk stops). */
static size_t
dump_section(bson_t *arr, const char *k, const uint8_t *d, size_t off, size_t end)
{
   bson_t s;
   size_t size = opmsg_wire_section(d, end, off);
   uint8_t kind = d[off];

   bson_append_document_begin(arr, k, -1, &s);
   BSON_APPEND_INT32(&s, "kind", kind);
   BSON_APPEND_INT64(&s, "offset", (int64_t) off);
   if (size && kind == OPMSG_SECTION_BODY) {
      BSON_APPEND_INT64(&s, "bytes", (int64_t) size);
      BSON_APPEND_INT32(&s, "documents", 1);
      dump_first_key(&s, "command", d + off + 1, (uint32_t) size - 1);
   } else if (size) {
      const uint8_t *id = d + off + OPMSG_SECTION_OFF_IDENTIFIER;
      const uint8_t *nul = memchr(id, 0, size - OPMSG_SECTION_OFF_IDENTIFIER);

      if (nul) {
         const uint8_t *docs = nul + 1;
         bool exact;
         uint32_t count = dump_count_docs(docs, (size_t) (d + off + size - docs), &exact);

         dump_text(&s, "identifier", (const char *) id, (size_t) (nul - id));
         BSON_APPEND_INT64(&s, "bytes", (int64_t) size);
         BSON_APPEND_INT32(&s, "documents", (int32_t) count);
         size = exact ? size : 0;
      } else {
         size = 0;
      }
   }
   if (size == 0) {
      BSON_APPEND_BOOL(&s, "complete", false);
   }
   bson_append_document_end(arr, &s);
   return size;
}

/* OP_MSG: flags, sections in wire order, checksum. end is the message's end
 * (at most the bytes given). */
static void
dump_op_msg(bson_t *out, const uint8_t *d, size_t end)
{
   bson_t arr, ck;
   uint32_t flags;
   size_t off = OPMSG_OFF_SECTIONS, sec_end = end;
   uint32_t i = 0;
   bool has_crc;

   if (end < OPMSG_OFF_SECTIONS) {
      return;
   }
   flags = (uint32_t) opmsg_wire_i32(d, end, OPMSG_OFF_FLAG_BITS);
   dump_flags(out, "flags", OPMSG_OP_MSG, flags, OPMSG_FLAG_REQUIRED_MASK);
   has_crc = (flags & OPMSG_FLAG_CHECKSUM_PRESENT) && end >= OPMSG_OFF_SECTIONS + OPMSG_CHECKSUM_SIZE;
   if (has_crc) {
      sec_end = end - OPMSG_CHECKSUM_SIZE;
   }
   opmsg_append_array_begin(out, "sections", -1, &arr);
   while (off < sec_end) {
      char buf[16];
      const char *k;
      size_t n;

      bson_uint32_to_string(i++, &k, buf, sizeof buf);
      n = dump_section(&arr, k, d, off, sec_end);
      if (n == 0) {
         break;
      }
      off += n;
   }
   bson_append_array_end(out, &arr);

   bson_append_document_begin(out, "checksum", -1, &ck);
   BSON_APPEND_BOOL(&ck, "present", (flags & OPMSG_FLAG_CHECKSUM_PRESENT) != 0);
   if (has_crc) {
      uint32_t stored = (uint32_t) opmsg_wire_i32(d, end, end - OPMSG_CHECKSUM_SIZE);
      uint32_t computed = opmsg_crc32c(0, d, end - OPMSG_CHECKSUM_SIZE);

      BSON_APPEND_INT64(&ck, "stored", (int64_t) stored);
      BSON_APPEND_INT64(&ck, "computed", (int64_t) computed);
      BSON_APPEND_BOOL(&ck, "valid", stored == computed);
   }
   bson_append_document_end(out, &ck);
}

/* OP_QUERY: flags, fullCollectionName, skip, return, query, selector. */
static void
dump_op_query(bson_t *out, const uint8_t *d, size_t end)
{
   bson_t q;
   size_t off = OPMSG_OFF_FULL_COLLECTION_NAME;
   const uint8_t *nul;

   if (end < OPMSG_OFF_FULL_COLLECTION_NAME) {
      return;
   }
   bson_append_document_begin(out, "query", -1, &q);
   dump_flags(&q, "flags", OPMSG_OP_QUERY, (uint32_t) opmsg_wire_i32(d, end, OPMSG_OFF_QUERY_FLAGS), 0);
   nul = memchr(d + off, 0, end - off);
   if (nul) {
      dump_text(&q, "fullCollectionName", (const char *) d + off, (size_t) (nul - (d + off)));
      off = (size_t) (nul - d) + 1;
      if (end - off >= 8) {
         uint32_t n;

         BSON_APPEND_INT32(&q, "numberToSkip", opmsg_wire_i32(d, end, off));
         BSON_APPEND_INT32(&q, "numberToReturn", opmsg_wire_i32(d, end, off + 4));
         off += 8;
         n = dump_doc_len(d + off, end - off);
         if (n) {
            BSON_APPEND_INT64(&q, "queryBytes", (int64_t) n);
            dump_first_key(&q, "command", d + off, n);
            off += n;
            n = dump_doc_len(d + off, end - off);
            BSON_APPEND_INT64(&q, "fieldSelectorBytes", (int64_t) n);
         }
      }
   }
   bson_append_document_end(out, &q);
}

/* OP_REPLY: responseFlags, cursorID, startingFrom, numberReturned, the
 * documents present. */
static void
dump_op_reply(bson_t *out, const uint8_t *d, size_t end)
{
   bson_t r;
   bool exact;

   if (end < OPMSG_OFF_REPLY_DOCUMENTS) {
      return;
   }
   bson_append_document_begin(out, "reply", -1, &r);
   dump_flags(&r, "responseFlags", OPMSG_OP_REPLY, (uint32_t) opmsg_wire_i32(d, end, OPMSG_OFF_RESPONSE_FLAGS), 0);
   BSON_APPEND_INT64(&r, "cursorID", opmsg_wire_i64(d, end, OPMSG_OFF_CURSOR_ID));
   BSON_APPEND_INT32(&r, "startingFrom", opmsg_wire_i32(d, end, OPMSG_OFF_STARTING_FROM));
   BSON_APPEND_INT32(&r, "numberReturned", opmsg_wire_i32(d, end, OPMSG_OFF_NUMBER_RETURNED));
   BSON_APPEND_INT64(&r, "documentsBytes", (int64_t) (end - OPMSG_OFF_REPLY_DOCUMENTS));
   BSON_APPEND_INT32(&r, "documentsFound",
                     (int32_t) dump_count_docs(d + OPMSG_OFF_REPLY_DOCUMENTS, end - OPMSG_OFF_REPLY_DOCUMENTS, &exact));
   bson_append_document_end(out, &r);
}

static bool dump_message(bson_t *out, const uint8_t *d, size_t len, const cli_opts_t *opts, int depth,
                         bson_error_t *first_error);

/* OP_COMPRESSED: its fields, then the message inside when it decompresses
 * (only for a message whose framing opmsg_parse() accepted). */
static bool
dump_op_compressed(bson_t *out, const uint8_t *d, size_t end, const opmsg_msg_t *msg, const cli_opts_t *opts, int depth,
                   bson_error_t *first_error)
{
   bson_t c, inner_doc;
   uint8_t *inner = NULL;
   size_t inner_len = 0;
   bool ok = true;
   const char *codec;

   if (end < OPMSG_COMPRESSED_OVERHEAD) {
      return true;
   }
   codec = opmsg_compressor_name(d[OPMSG_OFF_COMPRESSOR_ID]);
   bson_append_document_begin(out, "compressed", -1, &c);
   dump_opcode(&c, "originalOpcode", opmsg_wire_i32(d, end, OPMSG_OFF_ORIGINAL_OPCODE));
   BSON_APPEND_INT32(&c, "uncompressedSize", opmsg_wire_i32(d, end, OPMSG_OFF_UNCOMPRESSED_SIZE));
   BSON_APPEND_INT32(&c, "compressorId", d[OPMSG_OFF_COMPRESSOR_ID]);
   BSON_APPEND_UTF8(&c, "compressor", codec ? codec : "reserved");
   BSON_APPEND_INT64(&c, "compressedBytes", (int64_t) (end - OPMSG_COMPRESSED_OVERHEAD));
   if (msg && depth == 0) {
      /* The parse bounded uncompressedSize with opts. */
      inner = opmsg_decompress(msg, &inner_len, first_error);
      if (inner) {
         bson_append_document_begin(&c, "inner", -1, &inner_doc);
         ok = dump_message(&inner_doc, inner, inner_len, opts, depth + 1, first_error);
         bson_append_document_end(&c, &inner_doc);
         bson_free(inner);
      } else {
         ok = false;
      }
   }
   bson_append_document_end(out, &c);
   return ok;
}

static void
dump_error(bson_t *out, const bson_error_t *error)
{
   bson_t e;

   bson_append_document_begin(out, "error", -1, &e);
   BSON_APPEND_UTF8(&e, "rule", opmsg_error_name(error->code));
   BSON_APPEND_INT32(&e, "code", (int32_t) error->code);
   dump_text(&e, "message", error->message, strlen(error->message));
   bson_append_document_end(out, &e);
}

/* Describes the message d[0..len) into out. Returns whether it is valid;
 * the first error found is stored in *first_error. */
static bool
dump_message(bson_t *out, const uint8_t *d, size_t len, const cli_opts_t *opts, int depth, bson_error_t *first_error)
{
   opmsg_msg_t msg;
   bson_error_t error;
   bool parsed = opmsg_parse(d, len, &opts->parse, &msg, &error);
   bool ok = parsed;
   int32_t declared, opcode;
   size_t end;
   bson_t h;

   if (!parsed && first_error->code == 0) {
      *first_error = error;
   }
   if (len < OPMSG_HEADER_SIZE) {
      BSON_APPEND_INT64(out, "bytesGiven", (int64_t) len);
   } else {
      declared = opmsg_wire_i32(d, len, OPMSG_OFF_MESSAGE_LENGTH);
      opcode = opmsg_wire_i32(d, len, OPMSG_OFF_OPCODE);
      dump_opcode(out, "opcode", opcode);
      bson_append_document_begin(out, "header", -1, &h);
      BSON_APPEND_INT32(&h, "messageLength", declared);
      BSON_APPEND_INT32(&h, "requestID", opmsg_wire_i32(d, len, OPMSG_OFF_REQUEST_ID));
      BSON_APPEND_INT32(&h, "responseTo", opmsg_wire_i32(d, len, OPMSG_OFF_RESPONSE_TO));
      BSON_APPEND_INT32(&h, "opCode", opcode);
      bson_append_document_end(out, &h);
      BSON_APPEND_INT64(out, "bytesGiven", (int64_t) len);
      /* Describe the message its header announces, or what there is. */
      end = declared >= OPMSG_HEADER_SIZE && (size_t) declared <= len ? (size_t) declared : len;
      switch (opcode) {
      case OPMSG_OP_MSG:
         dump_op_msg(out, d, end);
         if (parsed) {
            const char *db = opmsg_db(&msg, NULL);

            BSON_APPEND_INT64(out, "mergedBytes", (int64_t) opmsg_merged_size(&msg));
            if (db) {
               dump_text(out, "db", db, strlen(db));
            }
         }
         break;
      case OPMSG_OP_QUERY:
         dump_op_query(out, d, end);
         break;
      case OPMSG_OP_REPLY:
         dump_op_reply(out, d, end);
         break;
      case OPMSG_OP_COMPRESSED:
         ok = dump_op_compressed(out, d, end, parsed ? &msg : NULL, opts, depth, first_error) && ok;
         break;
      default:
         break;
      }
   }
   if (depth == 0) {
      /* The level the verdict was reached at (an inner message shares it). */
      BSON_APPEND_UTF8(out, "check", cli_check_text(opts->parse.check));
   }
   BSON_APPEND_BOOL(out, "valid", ok);
   if (!parsed) {
      dump_error(out, &error);
   } else if (!ok && depth == 0) {
      dump_error(out, first_error);
   }
   return ok;
}

int
cli_dump_one(const uint8_t *data, size_t len, const cli_opts_t *opts, const cli_where_t *where)
{
   bson_t out;
   bson_error_t first_error;
   bool ok;
   char *json;
   size_t n = 0;

   memset(&first_error, 0, sizeof first_error);
   bson_init(&out);
   ok = dump_message(&out, data, len, opts, 0, &first_error);
   json = bson_as_relaxed_extended_json(&out, &n);
   if (json) {
      fwrite(json, 1, n, stdout);
      fputc('\n', stdout);
      bson_free(json);
   }
   bson_destroy(&out);
   if (!ok) {
      cli_report(&first_error, where);
      return CLI_EXIT_INVALID;
   }
   return CLI_EXIT_OK;
}
