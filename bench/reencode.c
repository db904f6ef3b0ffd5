/*
 * reencode.c - the baseline: decode every value with bson_iter and encode it
 * again with bson_append_*.
 *
 * This is how the merge is written when the top level is not trusted to be
 * copied as bytes: walk each document recursively and rebuild it value by
 * value. It is written the way a careful C programmer would: one output
 * buffer sized from the message up front, sub-documents and arrays built in
 * place with *_begin/_end (no temporary documents), keys of the sequence
 * arrays from bson_uint32_to_string(), and every append checked.
 */
#include "bench.h"

#include <string.h>

static void reencode_fields(bson_iter_t *it, bson_t *out);

static void
reencode_nested(const bson_iter_t *it, bson_t *out, const char *key, int klen, bool array)
{
   bson_iter_t child;
   bson_t sub;
   if (!bson_iter_recurse(it, &child)) {
      bench_fatal("reencode: corrupt %s \"%s\"", array ? "array" : "document", key);
   }
   bool ok = array ? opmsg_append_array_begin(out, key, klen, &sub) : bson_append_document_begin(out, key, klen, &sub);
   if (!ok) {
      bench_fatal("reencode: cannot open \"%s\"", key);
   }
   reencode_fields(&child, &sub);
   ok = array ? bson_append_array_end(out, &sub) : bson_append_document_end(out, &sub);
   if (!ok) {
      bench_fatal("reencode: cannot close \"%s\"", key);
   }
}

/* Re-encodes a code-with-scope value: the scope is a document too, so it is
 * decoded and rebuilt like any other. */
static bool
reencode_codewscope(const bson_iter_t *it, bson_t *out, const char *key, int klen)
{
   uint32_t code_len, scope_len;
   const uint8_t *scope_data;
   const char *code = bson_iter_codewscope(it, &code_len, &scope_len, &scope_data);
   bson_iter_t scope_it;
   if (!bson_iter_init_from_data(&scope_it, scope_data, scope_len)) {
      bench_fatal("reencode: corrupt scope \"%s\"", key);
   }
   bson_t scope = BSON_INITIALIZER;
   reencode_fields(&scope_it, &scope);
   bool ok = bson_append_code_with_scope(out, key, klen, code, &scope);
   bson_destroy(&scope);
   return ok;
}

/* Appends the value under the iterator, decoded into C values first. */
static void
reencode_value(const bson_iter_t *it, bson_t *out)
{
   const char *key = bson_iter_key(it);
   int klen = (int) bson_iter_key_len(it);
   uint32_t len;
   bool ok;

   switch (bson_iter_type(it)) {
   case BSON_TYPE_DOCUMENT:
      reencode_nested(it, out, key, klen, false);
      return;
   case BSON_TYPE_ARRAY:
      reencode_nested(it, out, key, klen, true);
      return;
   case BSON_TYPE_DOUBLE:
      ok = bson_append_double(out, key, klen, bson_iter_double(it));
      break;
   case BSON_TYPE_UTF8: {
      const char *s = bson_iter_utf8(it, &len);
      ok = bson_append_utf8(out, key, klen, s, (int) len);
      break;
   }
   case BSON_TYPE_BINARY: {
      bson_subtype_t subtype;
      const uint8_t *bin;
      bson_iter_binary(it, &subtype, &len, &bin);
      ok = bson_append_binary(out, key, klen, subtype, bin, len);
      break;
   }
   case BSON_TYPE_UNDEFINED:
      ok = bson_append_undefined(out, key, klen);
      break;
   case BSON_TYPE_OID:
      ok = bson_append_oid(out, key, klen, bson_iter_oid(it));
      break;
   case BSON_TYPE_BOOL:
      ok = bson_append_bool(out, key, klen, bson_iter_bool(it));
      break;
   case BSON_TYPE_DATE_TIME:
      ok = bson_append_date_time(out, key, klen, bson_iter_date_time(it));
      break;
   case BSON_TYPE_NULL:
      ok = bson_append_null(out, key, klen);
      break;
   case BSON_TYPE_REGEX: {
      const char *options;
      const char *regex = bson_iter_regex(it, &options);
      ok = bson_append_regex(out, key, klen, regex, options);
      break;
   }
   case BSON_TYPE_DBPOINTER: {
      const char *collection;
      const bson_oid_t *oid;
      bson_iter_dbpointer(it, &len, &collection, &oid);
      ok = bson_append_dbpointer(out, key, klen, collection, oid);
      break;
   }
   case BSON_TYPE_CODE:
      ok = bson_append_code(out, key, klen, bson_iter_code(it, &len));
      break;
   case BSON_TYPE_SYMBOL: {
      const char *s = bson_iter_symbol(it, &len);
      ok = bson_append_symbol(out, key, klen, s, (int) len);
      break;
   }
   case BSON_TYPE_CODEWSCOPE:
      ok = reencode_codewscope(it, out, key, klen);
      break;
   case BSON_TYPE_INT32:
      ok = bson_append_int32(out, key, klen, bson_iter_int32(it));
      break;
   case BSON_TYPE_TIMESTAMP: {
      uint32_t t, inc;
      bson_iter_timestamp(it, &t, &inc);
      ok = bson_append_timestamp(out, key, klen, t, inc);
      break;
   }
   case BSON_TYPE_INT64:
      ok = bson_append_int64(out, key, klen, bson_iter_int64(it));
      break;
   case BSON_TYPE_DECIMAL128: {
      bson_decimal128_t d;
      bson_iter_decimal128(it, &d);
      ok = bson_append_decimal128(out, key, klen, &d);
      break;
   }
   case BSON_TYPE_MAXKEY:
      ok = bson_append_maxkey(out, key, klen);
      break;
   case BSON_TYPE_MINKEY:
      ok = bson_append_minkey(out, key, klen);
      break;
   case BSON_TYPE_EOD:
   default:
      bench_fatal("reencode: unknown type 0x%02x at \"%s\"", (unsigned) bson_iter_type(it), key);
   }
   if (!ok) {
      bench_fatal("reencode: cannot append \"%s\"", key);
   }
}

static void
reencode_fields(bson_iter_t *it, bson_t *out)
{
   while (bson_iter_next(it)) {
      reencode_value(it, out);
   }
   /* bson_iter_next() also stops on corrupt data; a careful caller tells
    * the two apart. */
   if (it->err_off != 0) {
      bench_fatal("reencode: corrupt document at offset %u", (unsigned) it->err_off);
   }
}

size_t
bench_reencode_libbson(bench_case_t *c, bench_out_t *keep)
{
   bench_sections_t s;
   bench_split_sections(c->msg, c->msg_len, &s);

   bson_t *out = bson_sized_new(c->msg_len);
   bson_iter_t it;
   if (!bson_iter_init_from_data(&it, s.body, s.body_len)) {
      bench_fatal("reencode: corrupt body");
   }
   reencode_fields(&it, out);

   for (size_t i = 0; i < s.n_seqs; i++) {
      const bench_seq_t *seq = &s.seqs[i];
      if (memchr(seq->identifier, '.', seq->identifier_len)) {
         bench_fatal("reencode: dotted identifiers are not supported");
      }
      bson_t array;
      if (!opmsg_append_array_begin(out, seq->identifier, (int) seq->identifier_len, &array)) {
         bench_fatal("reencode: cannot open array \"%s\"", seq->identifier);
      }
      const uint8_t *p = seq->docs;
      const uint8_t *end = seq->docs + seq->docs_len;
      for (uint32_t n = 0; p < end; n++) {
         uint32_t doc_len = (size_t) (end - p) >= 4 ? bench_read_u32(p) : 0;
         bson_iter_t doc_it;
         if (doc_len < 5 || doc_len > (size_t) (end - p) || !bson_iter_init_from_data(&doc_it, p, doc_len)) {
            bench_fatal("reencode: corrupt sequence document %u", n);
         }
         char buf[16];
         const char *key;
         size_t klen = bson_uint32_to_string(n, &key, buf, sizeof buf);
         bson_t sub;
         if (!bson_append_document_begin(&array, key, (int) klen, &sub)) {
            bench_fatal("reencode: cannot open document %u", n);
         }
         reencode_fields(&doc_it, &sub);
         if (!bson_append_document_end(&array, &sub)) {
            bench_fatal("reencode: cannot close document %u", n);
         }
         p += doc_len;
      }
      if (!bson_append_array_end(out, &array)) {
         bench_fatal("reencode: cannot close array \"%s\"", seq->identifier);
      }
   }

   return bench_keep_bson(keep, out);
}
