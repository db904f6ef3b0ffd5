/* test_compress.c - OP_COMPRESSED: framing checks, every codec in both
 * directions, every error, the forbidden commands, the allocation bound,
 * and a build without codecs (OPMSG_WITH_*=OFF): what it lacks is
 * OPMSG_ERR_COMPRESSOR_UNAVAILABLE everywhere, the rest works. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#ifdef OPMSG_HAVE_ZSTD
#include <zstd.h>
#endif

/* What the library was built with (tests/CMakeLists.txt passes its
 * OPMSG_HAVE_*): opmsg_compressor_available() must say exactly this
 * (test_names), so a build that loses a codec by accident fails here
 * instead of skipping its tests. */
#ifdef OPMSG_HAVE_SNAPPY
#define BUILT_SNAPPY true
#else
#define BUILT_SNAPPY false
#endif
#ifdef OPMSG_HAVE_ZLIB
#define BUILT_ZLIB true
#else
#define BUILT_ZLIB false
#endif
#ifdef OPMSG_HAVE_ZSTD
#define BUILT_ZSTD true
#else
#define BUILT_ZSTD false
#endif
#define N_IDS 4
static const bool built[N_IDS] = {true, BUILT_SNAPPY, BUILT_ZLIB, BUILT_ZSTD};

/* The codecs of this build, which the tests of every codec run over. */
static int codecs[N_IDS];
static int N_CODECS;

static void
list_codecs(void)
{
   for (int id = 0; id < N_IDS; id++) {
      if (built[id]) {
         codecs[N_CODECS++] = id;
      }
   }
}

/* A codec that really compresses when the build has one (zlib, else
 * zstd, else snappy), noop otherwise: for the checks any codec makes. */
static int
some_codec(void)
{
   const int order[] = {OPMSG_COMPRESSOR_ZLIB, OPMSG_COMPRESSOR_ZSTD, OPMSG_COMPRESSOR_SNAPPY};
   for (size_t i = 0; i < 3; i++) {
      if (built[order[i]]) {
         return order[i];
      }
   }
   return OPMSG_COMPRESSOR_NOOP;
}

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

static void
fix_length(tu_buf_t *b)
{
   opmsg_write_u32(b->data, (uint32_t) b->len);
}

/* An OP_COMPRESSED message with these fields, built by hand. */
static void
make_compressed(tu_buf_t *b, int32_t orig, int32_t usize, uint8_t id, const void *payload, size_t plen)
{
   tu_buf_init(b);
   tu_put_i32(b, 0);
   tu_put_i32(b, 9);
   tu_put_i32(b, 4);
   tu_put_i32(b, OPMSG_OP_COMPRESSED);
   tu_put_i32(b, orig);
   tu_put_i32(b, usize);
   tu_put_u8(b, id);
   tu_put(b, payload, plen);
   fix_length(b);
}

/* A small command as an OP_MSG. */
static void
make_command(tu_buf_t *b, const char *json, uint32_t flags)
{
   tu_buf_init(b);
   tu_msg_begin(b, flags);
   tu_msg_body(b, json);
   tu_msg_end(b);
}

/* An insert of n small documents: body plus a "documents" sequence. */
static void
make_insert(tu_buf_t *b, uint32_t n, uint32_t flags)
{
   bson_t doc;
   char s[32];

   tu_buf_init(b);
   tu_msg_begin(b, flags);
   tu_msg_body(b, "{\"insert\": \"coll\", \"ordered\": true, \"$db\": \"test\"}");
   size_t mark = tu_msg_seq_begin(b, "documents");
   for (uint32_t i = 0; i < n; i++) {
      bson_init(&doc);
      BSON_APPEND_INT32(&doc, "_id", (int32_t) i);
      snprintf(s, sizeof s, "item-%u", i * 7919u);
      BSON_APPEND_UTF8(&doc, "name", s);
      BSON_APPEND_DOUBLE(&doc, "price", i * 0.25);
      tu_put_bson(b, &doc);
      bson_destroy(&doc);
   }
   tu_msg_seq_end(b, mark);
   tu_msg_end(b);
   /* A requestID/responseTo pair to check they travel. */
   opmsg_write_u32(b->data + 4, 0x01020304u);
   opmsg_write_u32(b->data + 8, 0x0a0b0c0du);
   if (flags & OPMSG_FLAG_CHECKSUM_PRESENT) {
      opmsg_write_u32(b->data + b->len - 4, opmsg_crc32c(0, b->data, b->len - 4));
   }
}

static void
parse_ok(const uint8_t *data, size_t len, const opmsg_options_t *opts, opmsg_msg_t *msg)
{
   bson_error_t error;
   if (!opmsg_parse(data, len, opts, msg, &error)) {
      fail_msg("parse failed: %s (%s)", error.message, opmsg_error_name(error.code));
   }
}

static void
assert_error(const bson_error_t *error, opmsg_error_code_t code)
{
   if (error->domain != OPMSG_ERROR_DOMAIN || error->code != code) {
      fail_msg("expected %s, got %s: %s", opmsg_error_name(code), opmsg_error_name(error->code), error->message);
   }
}

/* Compresses with opmsg and returns the OP_COMPRESSED bytes in *out. */
static void
compress_ok(const uint8_t *msg, size_t len, int id, int level, tu_buf_t *out)
{
   bson_error_t error;
   size_t clen;
   uint8_t *c = opmsg_compress(msg, len, id, level, &clen, &error);
   if (!c) {
      fail_msg("compress with %d failed: %s", id, error.message);
   }
   tu_buf_init(out);
   tu_put(out, c, clen);
   bson_free(c);
}

/* Parses an OP_COMPRESSED message and asserts decompressing it fails with
 * code, through each entry point, without leaking. */
static void
assert_decompress_fails(const tu_buf_t *b, opmsg_error_code_t code)
{
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_decompressed_t d;
   size_t total;
   uint8_t *buf;

   parse_ok(b->data, b->len, NULL, &msg);
   assert_null(opmsg_decompress(&msg, NULL, &error));
   assert_error(&error, code);
   assert_null(opmsg_merge_compressed(&msg, NULL, &error));
   assert_error(&error, code);
   assert_false(opmsg_decompress_parse(&msg, NULL, &d, &error));
   assert_error(&error, code);
   assert_null(d.data);

   /* Into a buffer of exactly the size announced: any write past it would
    * be caught by the sanitizers. */
   total = opmsg_decompressed_size(&msg);
   buf = malloc(total);
   assert_false(opmsg_decompress_into(&msg, buf, total, NULL, &error));
   assert_error(&error, code);
   free(buf);
}

/* ---------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------- */

static void
test_names(void **state)
{
   (void) state;
   const char *names[] = {"noop", "snappy", "zlib", "zstd"};
   for (int i = 0; i < N_IDS; i++) {
      assert_string_equal(opmsg_compressor_name(i), names[i]);
      assert_int_equal(opmsg_compressor_from_name(names[i]), i);
      if (opmsg_compressor_available(i) != built[i]) {
         fail_msg("opmsg_compressor_available(%s) is %d, the build says %d", names[i], !built[i], built[i]);
      }
   }
   assert_int_equal(OPMSG_COMPRESSOR_SNAPPY, 1);
   assert_int_equal(OPMSG_COMPRESSOR_ZLIB, 2);
   assert_int_equal(OPMSG_COMPRESSOR_ZSTD, 3);
   assert_null(opmsg_compressor_name(4));
   assert_null(opmsg_compressor_name(255));
   assert_null(opmsg_compressor_name(-1));
   assert_false(opmsg_compressor_available(4));
   assert_false(opmsg_compressor_available(-1));
   assert_int_equal(opmsg_compressor_from_name("none"), -1);
   assert_int_equal(opmsg_compressor_from_name("ZSTD"), -1);
   assert_int_equal(opmsg_compressor_from_name(""), -1);
   assert_int_equal(opmsg_compressor_from_name(NULL), -1);
}

/* ---------------------------------------------------------------------------
 * The third-party vector
 * ------------------------------------------------------------------------- */

/* mongo-c-driver's OP_COMPRESSED: noop around a 20-byte OP_MSG payload
 * (flags 0, body {kind: 0}); requestID 0x01020304, responseTo 0x05060708. */
static void
test_mcdrpc_vector(void **state)
{
   (void) state;
   size_t len, dlen;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_compressed.bin", &len);
   opmsg_msg_t msg;
   bson_error_t error;

   assert_int_equal(len, 45);
   parse_ok(data, len, NULL, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_COMPRESSED);
   assert_int_equal(msg.request_id, 0x01020304);
   assert_int_equal(msg.response_to, 0x05060708);
   assert_int_equal(msg.op_compressed.original_opcode, OPMSG_OP_MSG);
   assert_int_equal(msg.op_compressed.uncompressed_size, 20);
   assert_int_equal(msg.op_compressed.compressor_id, OPMSG_COMPRESSOR_NOOP);
   assert_ptr_equal(msg.op_compressed.compressed, data + 25);
   assert_int_equal(msg.op_compressed.compressed_len, 20);
   assert_null(msg.body);
   assert_int_equal(opmsg_decompressed_size(&msg), 36);

   uint8_t *d = opmsg_decompress(&msg, &dlen, &error);
   assert_non_null(d);
   assert_int_equal(dlen, 36);
   assert_int_equal(opmsg_read_i32(d), 36);
   assert_int_equal(opmsg_read_i32(d + 4), 0x01020304);
   assert_int_equal(opmsg_read_i32(d + 8), 0x05060708);
   assert_int_equal(opmsg_read_i32(d + 12), OPMSG_OP_MSG);
   assert_memory_equal(d + 16, data + 25, 20);
   char *json = tu_merge_json(d, dlen, 0);
   assert_string_equal(json, "{ \"kind\" : { \"$numberInt\" : \"0\" } }");
   bson_free(json);
   bson_free(d);

   bson_t *merged = opmsg_merge_compressed(&msg, NULL, &error);
   assert_non_null(merged);
   json = bson_as_canonical_extended_json(merged, NULL);
   assert_string_equal(json, "{ \"kind\" : { \"$numberInt\" : \"0\" } }");
   bson_free(json);
   bson_destroy(merged);

   /* Compressing the rebuilt message with noop gives the vector back. */
   opmsg_decompressed_t dec;
   uint8_t out[64];
   size_t olen;
   assert_true(opmsg_decompress_parse(&msg, NULL, &dec, &error));
   assert_int_equal(dec.inner.opcode, OPMSG_OP_MSG);
   assert_string_equal(opmsg_command_name(&dec.inner), "kind");
   assert_true(opmsg_compress_into(dec.data, dec.len, OPMSG_COMPRESSOR_NOOP, -1, out, sizeof out, &olen, &error));
   assert_int_equal(olen, len);
   assert_memory_equal(out, data, len);
   opmsg_decompressed_destroy(&dec);
   assert_null(dec.data);
   opmsg_decompressed_destroy(&dec);
   opmsg_decompressed_destroy(NULL);
   free(data);
}

/* Vectors from pymongo and the zstd CLI (tests/data/compressed/README.md):
 * decompressing and merging gives the document the generator encoded. */
static void
check_independent_vector(const char *name, int32_t original_opcode, int id)
{
   char rel[96];
   size_t len, elen;
   opmsg_msg_t msg;
   bson_error_t error;

   snprintf(rel, sizeof rel, "compressed/%s.bin", name);
   uint8_t *data = tu_read_file(rel, &len);
   snprintf(rel, sizeof rel, "compressed/%s.merged.bson", name);
   uint8_t *expected = tu_read_file(rel, &elen);

   parse_ok(data, len, NULL, &msg);
   assert_int_equal(msg.opcode, OPMSG_OP_COMPRESSED);
   assert_int_equal(msg.op_compressed.original_opcode, original_opcode);
   assert_int_equal(msg.op_compressed.compressor_id, id);
   assert_int_equal(msg.op_compressed.compressed_len, len - 25);
   if (!built[id]) {
      /* A build without the codec: a valid message it cannot open. */
      tu_buf_t b = {.data = data, .len = len};
      assert_decompress_fails(&b, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
      free(expected);
      free(data);
      return;
   }

   opmsg_decompressed_t dec;
   assert_true(opmsg_decompress_parse(&msg, NULL, &dec, &error));
   assert_int_equal(dec.inner.opcode, original_opcode);
   assert_int_equal(dec.inner.request_id, msg.request_id);
   assert_int_equal(dec.len, 16 + (size_t) msg.op_compressed.uncompressed_size);
   opmsg_decompressed_destroy(&dec);

   bson_t *merged = opmsg_merge_compressed(&msg, NULL, &error);
   if (!merged) {
      fail_msg("%s: %s", name, error.message);
   }
   assert_int_equal(merged->len, elen);
   assert_memory_equal(bson_get_data(merged), expected, elen);
   bson_destroy(merged);
   free(expected);
   free(data);
}

static void
test_independent_vectors(void **state)
{
   (void) state;
   check_independent_vector("pymongo_zlib_op_msg", OPMSG_OP_MSG, OPMSG_COMPRESSOR_ZLIB);
   check_independent_vector("pymongo_zlib_op_query", OPMSG_OP_QUERY, OPMSG_COMPRESSOR_ZLIB);
   check_independent_vector("zstdcli_op_msg", OPMSG_OP_MSG, OPMSG_COMPRESSOR_ZSTD);
}

/* ---------------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------------- */

/* Compresses orig with id, then checks parse, decompress (bytes identical),
 * decompress_parse, and merge_compressed against merging orig directly. */
static void
roundtrip(const uint8_t *orig, size_t len, int id, int level)
{
   opmsg_msg_t omsg, cmsg;
   bson_error_t error;
   tu_buf_t c;
   size_t dlen, olen;

   parse_ok(orig, len, NULL, &omsg);
   compress_ok(orig, len, id, level, &c);
   assert_true(c.len <= opmsg_compress_bound(len, id));
   if (id == OPMSG_COMPRESSOR_NOOP) {
      assert_int_equal(c.len, len + 9);
   }

   parse_ok(c.data, c.len, NULL, &cmsg);
   assert_int_equal(cmsg.opcode, OPMSG_OP_COMPRESSED);
   assert_int_equal(cmsg.request_id, omsg.request_id);
   assert_int_equal(cmsg.response_to, omsg.response_to);
   assert_int_equal(cmsg.op_compressed.original_opcode, omsg.opcode);
   assert_int_equal(cmsg.op_compressed.uncompressed_size, (int32_t) len - 16);
   assert_int_equal(cmsg.op_compressed.compressor_id, id);
   assert_int_equal(opmsg_decompressed_size(&cmsg), len);

   uint8_t *d = opmsg_decompress(&cmsg, &dlen, &error);
   assert_non_null(d);
   assert_int_equal(dlen, len);
   assert_memory_equal(d, orig, len);

   /* Into a caller buffer: exact size works, one byte less writes nothing. */
   memset(d, 0x5A, len);
   assert_false(opmsg_decompress_into(&cmsg, d, len - 1, NULL, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_int_equal(d[0], 0x5A);
   assert_true(opmsg_decompress_into(&cmsg, d, len, &dlen, &error));
   assert_int_equal(dlen, len);
   assert_memory_equal(d, orig, len);
   bson_free(d);

   bson_t *expected = opmsg_merge_bson(&omsg, &error);
   assert_non_null(expected);
   bson_t *merged = opmsg_merge_compressed(&cmsg, NULL, &error);
   if (!merged) {
      fail_msg("merge_compressed: %s", error.message);
   }
   assert_int_equal(merged->len, expected->len);
   assert_memory_equal(bson_get_data(merged), bson_get_data(expected), expected->len);
   bson_destroy(merged);

   opmsg_decompressed_t dec;
   assert_true(opmsg_decompress_parse(&cmsg, NULL, &dec, &error));
   assert_int_equal(dec.len, len);
   assert_int_equal(dec.inner.opcode, omsg.opcode);
   assert_int_equal(dec.inner.flags, omsg.flags);
   assert_int_equal(dec.inner.n_sequences, omsg.n_sequences);
   assert_int_equal(opmsg_merged_size(&dec.inner), expected->len);
   opmsg_decompressed_destroy(&dec);
   bson_destroy(expected);

   /* The exact output size is enough for noop and zlib (snappy and zstd
    * may want their bound); one byte less is refused by all. */
   uint8_t *out = malloc(c.len);
   if (id == OPMSG_COMPRESSOR_NOOP || id == OPMSG_COMPRESSOR_ZLIB) {
      if (!opmsg_compress_into(orig, len, id, level, out, c.len, &olen, &error)) {
         fail_msg("codec %d, exact size %zu: %s", id, c.len, error.message);
      }
      assert_int_equal(olen, c.len);
      assert_memory_equal(out, c.data, c.len);
   }
   assert_false(opmsg_compress_into(orig, len, id, level, out, c.len - 1, &olen, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   free(out);
   tu_buf_free(&c);
}

static void
test_roundtrip_small(void **state)
{
   (void) state;
   for (int checksum = 0; checksum < 2; checksum++) {
      tu_buf_t b;
      make_insert(&b, 1, checksum ? OPMSG_FLAG_CHECKSUM_PRESENT : 0);
      for (int i = 0; i < N_CODECS; i++) {
         roundtrip(b.data, b.len, codecs[i], OPMSG_COMPRESS_DEFAULT_LEVEL);
      }
      tu_buf_free(&b);
   }
}

static void
test_roundtrip_100000(void **state)
{
   (void) state;
   for (int checksum = 0; checksum < 2; checksum++) {
      tu_buf_t b;
      opmsg_msg_t msg;
      make_insert(&b, 100000, checksum ? OPMSG_FLAG_CHECKSUM_PRESENT : 0);
      parse_ok(b.data, b.len, NULL, &msg);
      assert_int_equal(msg.checksum_present, checksum);
      for (int i = 0; i < N_CODECS; i++) {
         roundtrip(b.data, b.len, codecs[i], OPMSG_COMPRESS_DEFAULT_LEVEL);
      }
      tu_buf_free(&b);
   }
}

static void
test_roundtrip_levels(void **state)
{
   (void) state;
   tu_buf_t b;
   bson_error_t error;
   uint8_t out[4096];

   make_insert(&b, 20, 0);
   if (built[OPMSG_COMPRESSOR_ZLIB]) {
      for (int level = -1; level <= 9; level++) {
         roundtrip(b.data, b.len, OPMSG_COMPRESSOR_ZLIB, level);
      }
      /* Out of range. */
      const int bad_zlib[] = {-2, 10, 100};
      for (size_t i = 0; i < 3; i++) {
         assert_false(
            opmsg_compress_into(b.data, b.len, OPMSG_COMPRESSOR_ZLIB, bad_zlib[i], out, sizeof out, NULL, &error));
         assert_error(&error, OPMSG_ERR_INVALID_ARGUMENT);
      }
   }
#ifdef OPMSG_HAVE_ZSTD
   roundtrip(b.data, b.len, OPMSG_COMPRESSOR_ZSTD, 1);
   roundtrip(b.data, b.len, OPMSG_COMPRESSOR_ZSTD, 19);
   roundtrip(b.data, b.len, OPMSG_COMPRESSOR_ZSTD, -5);
   assert_false(
      opmsg_compress_into(b.data, b.len, OPMSG_COMPRESSOR_ZSTD, ZSTD_maxCLevel() + 1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_INVALID_ARGUMENT);
#endif
   tu_buf_free(&b);
}

/* Legacy messages travel compressed too; replies have no command, so even a
 * hello reply may be compressed. */
static void
test_roundtrip_legacy(void **state)
{
   (void) state;
   const char *files[] = {"thirdparty/mcdrpc_op_query.bin", "thirdparty/ferretdb_handshake2.bin",
                          "thirdparty/mcdrpc_op_reply.bin"};
   for (size_t f = 0; f < 3; f++) {
      size_t len;
      uint8_t *data = tu_read_file(files[f], &len);
      for (int i = 0; i < N_CODECS; i++) {
         if (f == 2) {
            /* Two documents: nothing to merge, check the bytes only. */
            tu_buf_t c;
            opmsg_msg_t m;
            bson_error_t error;
            size_t dlen;
            compress_ok(data, len, codecs[i], -1, &c);
            parse_ok(c.data, c.len, NULL, &m);
            assert_int_equal(m.op_compressed.original_opcode, OPMSG_OP_REPLY);
            uint8_t *d = opmsg_decompress(&m, &dlen, &error);
            assert_non_null(d);
            assert_int_equal(dlen, len);
            assert_memory_equal(d, data, len);
            bson_free(d);
            tu_buf_free(&c);
         } else {
            roundtrip(data, len, codecs[i], -1);
         }
      }
      free(data);
   }
}

/* Sections in any order: the body after a sequence is still found. */
static void
test_roundtrip_sequence_first(void **state)
{
   (void) state;
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/ferretdb_multisection_insert_crc.bin", &len);
   for (int i = 0; i < N_CODECS; i++) {
      roundtrip(data, len, codecs[i], -1);
   }
   free(data);
}

/* ---------------------------------------------------------------------------
 * Framing errors (opmsg_parse)
 * ------------------------------------------------------------------------- */

static void
test_parse_compressor_ids(void **state)
{
   (void) state;
   tu_buf_t b;
   uint8_t payload[10] = {0, 0, 0, 0, 0, 5, 0, 0, 0, 0};

   for (int id = 0; id < 256; id++) {
      make_compressed(&b, OPMSG_OP_MSG, 10, (uint8_t) id, payload, 10);
      if (id <= 3) {
         opmsg_msg_t msg;
         parse_ok(b.data, b.len, NULL, &msg);
         assert_int_equal(msg.op_compressed.compressor_id, id);
      } else {
         tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_UNKNOWN_COMPRESSOR);
      }
      tu_buf_free(&b);
   }
}

static void
test_parse_original_opcode(void **state)
{
   (void) state;
   tu_buf_t b;
   uint8_t payload[32] = {0};
   const int32_t bad[] = {0, -1, 2, 2001, 2002, 2005, 2006, 2007, 2010, 2011, 2014, INT32_MIN, INT32_MAX};

   make_compressed(&b, OPMSG_OP_COMPRESSED, 20, 0, payload, 20);
   tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_NESTED_COMPRESSION);
   tu_buf_free(&b);
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      make_compressed(&b, bad[i], 20, 0, payload, 20);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_BAD_ORIGINAL_OPCODE);
      tu_buf_free(&b);
   }

   /* A nested OP_COMPRESSED that got past framing (by hand, in a noop
    * payload) still cannot be decompressed into a message. */
   size_t len;
   uint8_t *inner = tu_read_file("thirdparty/mcdrpc_op_compressed.bin", &len);
   make_compressed(&b, OPMSG_OP_MSG, (int32_t) len - 16, 0, inner + 16, len - 16);
   opmsg_write_u32(b.data + 16, OPMSG_OP_MSG);
   {
      opmsg_msg_t msg;
      bson_error_t error;
      parse_ok(b.data, b.len, NULL, &msg);
      /* The rebuilt header says OP_MSG, so the payload (originalOpcode
       * 2013...) is parsed as OP_MSG and fails there, not silently. */
      assert_null(opmsg_merge_compressed(&msg, NULL, &error));
      assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
   }
   tu_buf_free(&b);
   free(inner);
}

static void
test_parse_uncompressed_size(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   opmsg_options_t opts;
   bson_error_t error;
   uint8_t payload[40] = {0};
   struct {
      int32_t opcode;
      int32_t min_body;
   } mins[] = {{OPMSG_OP_MSG, 4 + 1 + 5}, {OPMSG_OP_QUERY, 4 + 2 + 4 + 4 + 5}, {OPMSG_OP_REPLY, 20}};

   for (size_t i = 0; i < 3; i++) {
      make_compressed(&b, mins[i].opcode, mins[i].min_body - 1, 0, payload, 10);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_UNCOMPRESSED_SIZE);
      tu_buf_free(&b);
      make_compressed(&b, mins[i].opcode, mins[i].min_body, 0, payload, 10);
      parse_ok(b.data, b.len, NULL, &msg);
      tu_buf_free(&b);
   }

   const int32_t negative[] = {-1, -16, INT32_MIN};
   for (size_t i = 0; i < 3; i++) {
      make_compressed(&b, OPMSG_OP_MSG, negative[i], 0, payload, 10);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_UNCOMPRESSED_SIZE);
      tu_buf_free(&b);
   }

   /* The default limit: 16 + uncompressedSize <= 48,000,000. */
   make_compressed(&b, OPMSG_OP_MSG, 48000000 - 16, 0, payload, 10);
   parse_ok(b.data, b.len, NULL, &msg);
   tu_buf_free(&b);
   const int32_t over[] = {48000000 - 15, 48000000, INT32_MAX - 16, INT32_MAX - 15, INT32_MAX};
   for (size_t i = 0; i < 5; i++) {
      make_compressed(&b, OPMSG_OP_MSG, over[i], 0, payload, 10);
      tu_assert_rejects(b.data, b.len, 0, OPMSG_ERR_UNCOMPRESSED_SIZE);
      tu_buf_free(&b);
   }

   /* A configured limit. */
   opmsg_options_init(&opts);
   opts.max_message_size = 1000;
   make_compressed(&b, OPMSG_OP_MSG, 984, 0, payload, 10);
   assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   tu_buf_free(&b);
   make_compressed(&b, OPMSG_OP_MSG, 985, 0, payload, 10);
   assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
   assert_error(&error, OPMSG_ERR_UNCOMPRESSED_SIZE);
   tu_buf_free(&b);
}

/* ---------------------------------------------------------------------------
 * No allocation above the limit
 * ------------------------------------------------------------------------- */

static size_t largest_alloc;

static void
note(size_t n)
{
   if (n > largest_alloc) {
      largest_alloc = n;
   }
}

static void *
big_malloc(size_t n)
{
   note(n);
   return malloc(n);
}

static void *
big_calloc(size_t n, size_t m)
{
   note(n * m);
   return calloc(n, m);
}

static void *
big_realloc(void *p, size_t n)
{
   note(n);
   return realloc(p, n);
}

static void *
big_aligned(size_t a, size_t n)
{
   note(n);
   return aligned_alloc(a, n);
}

static void
watch_allocs(void)
{
   static bson_mem_vtable_t vt;
   vt.malloc = big_malloc;
   vt.calloc = big_calloc;
   vt.realloc = big_realloc;
   vt.free = free;
   vt.aligned_alloc = big_aligned;
   largest_alloc = 0;
   bson_mem_set_vtable(&vt);
}

static void
test_no_allocation_above_limit(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_msg_t msg;
   opmsg_options_t opts;
   bson_error_t error;
   opmsg_decompressed_t dec;
   uint8_t payload[40] = {0};
   const int32_t lies[] = {100000 - 15, 48000000, INT32_MAX - 16, INT32_MAX};

   opmsg_options_init(&opts);
   /* Above zlib's fixed working memory (about 40 KB), which is allocated
    * through libbson too. */
   opts.max_message_size = 100000;

   /* Rejected by parse: nothing allocated at all. */
   for (size_t i = 0; i < 4; i++) {
      make_compressed(&b, OPMSG_OP_MSG, lies[i], OPMSG_COMPRESSOR_ZSTD, payload, 40);
      tu_count_allocs_begin();
      assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &error));
      assert_int_equal(tu_count_allocs_end(), 0);
      assert_error(&error, OPMSG_ERR_UNCOMPRESSED_SIZE);
      tu_buf_free(&b);
   }

   /* Parsed with the default limit, decompressed under a smaller one: the
    * bound is checked again before allocating. */
   make_compressed(&b, OPMSG_OP_MSG, 40000000, (uint8_t) some_codec(), payload, 40);
   parse_ok(b.data, b.len, NULL, &msg);
   watch_allocs();
   assert_null(opmsg_merge_compressed(&msg, &opts, &error));
   assert_false(opmsg_decompress_parse(&msg, &opts, &dec, &error));
   bson_mem_restore_vtable();
   assert_error(&error, OPMSG_ERR_UNCOMPRESSED_SIZE);
   assert_true(largest_alloc <= 100000);
   tu_buf_free(&b);

   /* Within the limit but a lying payload: the lie is caught from the
    * payload itself (noop's length, snappy's preamble, zstd's frame header,
    * zlib's largest ratio) before anything of the announced size is
    * allocated. */
   for (int i = 0; i < N_CODECS; i++) {
      make_compressed(&b, OPMSG_OP_MSG, 100000 - 16, (uint8_t) codecs[i], payload, 40);
      assert_true(opmsg_parse(b.data, b.len, &opts, &msg, &error));
      watch_allocs();
      assert_null(opmsg_merge_compressed(&msg, &opts, &error));
      bson_mem_restore_vtable();
      assert_true(largest_alloc < 1000);
      assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
      tu_buf_free(&b);
   }
}

/* ---------------------------------------------------------------------------
 * Payload errors, per codec
 * ------------------------------------------------------------------------- */

static void
set_usize(tu_buf_t *b, int32_t usize)
{
   opmsg_write_u32(b->data + 20, (uint32_t) usize);
}

/* A decompressed length other than uncompressedSize, both ways. */
static void
test_size_mismatch(void **state)
{
   (void) state;
   tu_buf_t m, c;

   make_insert(&m, 3, 0);
   for (int i = 0; i < N_CODECS; i++) {
      int32_t usize = (int32_t) m.len - 16;

      compress_ok(m.data, m.len, codecs[i], -1, &c);
      set_usize(&c, usize + 1); /* the stream gives fewer bytes */
      assert_decompress_fails(&c, OPMSG_ERR_UNCOMPRESSED_SIZE);
      set_usize(&c, usize - 1); /* the stream gives more bytes */
      assert_decompress_fails(&c, OPMSG_ERR_UNCOMPRESSED_SIZE);
      set_usize(&c, 10);
      assert_decompress_fails(&c, OPMSG_ERR_UNCOMPRESSED_SIZE);
      set_usize(&c, usize);
      opmsg_msg_t msg;
      bson_error_t error;
      parse_ok(c.data, c.len, NULL, &msg);
      bson_t *merged = opmsg_merge_compressed(&msg, NULL, &error);
      assert_non_null(merged);
      bson_destroy(merged);
      tu_buf_free(&c);
   }
   tu_buf_free(&m);
}

/* A zstd frame that does not declare its size: the overrun is found while
 * decompressing, not before. */
static void
test_zstd_without_content_size(void **state)
{
   (void) state;
#ifndef OPMSG_HAVE_ZSTD
   skip();
#else
   tu_buf_t m, c;
   ZSTD_CCtx *cctx = ZSTD_createCCtx();
   uint8_t frame[4096];
   size_t n;

   assert_non_null(cctx);
   make_insert(&m, 3, 0);
   assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
   n = ZSTD_compress2(cctx, frame, sizeof frame, m.data + 16, m.len - 16);
   assert_false(ZSTD_isError(n));
   assert_true(ZSTD_getFrameContentSize(frame, n) == ZSTD_CONTENTSIZE_UNKNOWN);

   make_compressed(&c, OPMSG_OP_MSG, (int32_t) m.len - 16, OPMSG_COMPRESSOR_ZSTD, frame, n);
   opmsg_msg_t msg;
   bson_error_t error;
   size_t dlen;
   parse_ok(c.data, c.len, NULL, &msg);
   uint8_t *d = opmsg_decompress(&msg, &dlen, &error);
   assert_non_null(d);
   assert_memory_equal(d + 16, m.data + 16, m.len - 16);
   bson_free(d);

   set_usize(&c, (int32_t) m.len - 17);
   assert_decompress_fails(&c, OPMSG_ERR_UNCOMPRESSED_SIZE);
   set_usize(&c, (int32_t) m.len - 15);
   assert_decompress_fails(&c, OPMSG_ERR_UNCOMPRESSED_SIZE);
   tu_buf_free(&c);
   tu_buf_free(&m);
   ZSTD_freeCCtx(cctx);
#endif
}

static void
test_truncated_stream(void **state)
{
   (void) state;
   tu_buf_t m, c;

   make_insert(&m, 5, 0);
   for (int i = 0; i < N_CODECS; i++) {
      compress_ok(m.data, m.len, codecs[i], -1, &c);
      size_t full = c.len;
      const size_t cuts[] = {1, 4, (full - 25) / 2, full - 26};
      for (size_t k = 0; k < 4; k++) {
         c.len = full - cuts[k];
         fix_length(&c);
         /* noop has no stream: a short payload is a size mismatch. */
         assert_decompress_fails(&c, codecs[i] == OPMSG_COMPRESSOR_NOOP ? OPMSG_ERR_UNCOMPRESSED_SIZE
                                                                        : OPMSG_ERR_DECOMPRESS);
      }
      /* Nothing at all after the header. */
      c.len = 25;
      fix_length(&c);
      assert_decompress_fails(&c,
                              codecs[i] == OPMSG_COMPRESSOR_NOOP ? OPMSG_ERR_UNCOMPRESSED_SIZE : OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);
   }
   tu_buf_free(&m);
}

static void
test_trailing_garbage(void **state)
{
   (void) state;
   tu_buf_t m, c;

   make_insert(&m, 5, 0);
   for (int i = 0; i < N_CODECS; i++) {
      compress_ok(m.data, m.len, codecs[i], -1, &c);
      tu_put(&c, "JUNKJUNK", 8);
      fix_length(&c);
      assert_decompress_fails(&c,
                              codecs[i] == OPMSG_COMPRESSOR_NOOP ? OPMSG_ERR_UNCOMPRESSED_SIZE : OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);
   }
   tu_buf_free(&m);
}

static void
test_corrupt_stream(void **state)
{
   (void) state;
   tu_buf_t m, c;

   make_insert(&m, 5, 0);

   /* zlib: a bad header, and a bad Adler-32 trailer. */
   if (built[OPMSG_COMPRESSOR_ZLIB]) {
      compress_ok(m.data, m.len, OPMSG_COMPRESSOR_ZLIB, -1, &c);
      c.data[25] ^= 0xFF;
      assert_decompress_fails(&c, OPMSG_ERR_DECOMPRESS);
      c.data[25] ^= 0xFF;
      c.data[c.len - 1] ^= 0x01;
      assert_decompress_fails(&c, OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);
   }

   /* zstd: a bad magic number, and a reserved block type. */
   if (built[OPMSG_COMPRESSOR_ZSTD]) {
      compress_ok(m.data, m.len, OPMSG_COMPRESSOR_ZSTD, -1, &c);
      c.data[25] ^= 0xFF;
      assert_decompress_fails(&c, OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);
   }

   /* snappy: a length preamble that never ends, and a copy that reaches
    * before the start of the output. */
   if (built[OPMSG_COMPRESSOR_SNAPPY]) {
      uint8_t bad[12];
      memset(bad, 0xFF, sizeof bad);
      make_compressed(&c, OPMSG_OP_MSG, 40, OPMSG_COMPRESSOR_SNAPPY, bad, sizeof bad);
      assert_decompress_fails(&c, OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);

      /* preamble 40, then tag 0x01: a copy of 4 bytes at offset 0x10 with
       * nothing written yet. */
      const uint8_t copy_before_start[] = {40, 0x01, 0x10};
      make_compressed(&c, OPMSG_OP_MSG, 40, OPMSG_COMPRESSOR_SNAPPY, copy_before_start, sizeof copy_before_start);
      assert_decompress_fails(&c, OPMSG_ERR_DECOMPRESS);
      tu_buf_free(&c);
   }

   /* All codecs: a payload of random-looking bytes never crashes and never
    * passes as the original. */
   for (int i = 0; i < N_CODECS; i++) {
      if (codecs[i] == OPMSG_COMPRESSOR_NOOP) {
         continue;
      }
      uint8_t noise[64];
      uint32_t x = 2463534242u;
      for (size_t k = 0; k < sizeof noise; k++) {
         x ^= x << 13;
         x ^= x >> 17;
         x ^= x << 5;
         noise[k] = (uint8_t) x;
      }
      make_compressed(&c, OPMSG_OP_MSG, 100, (uint8_t) codecs[i], noise, sizeof noise);
      opmsg_msg_t msg;
      bson_error_t error;
      parse_ok(c.data, c.len, NULL, &msg);
      assert_null(opmsg_merge_compressed(&msg, NULL, &error));
      assert_int_equal(error.domain, OPMSG_ERROR_DOMAIN);
      tu_buf_free(&c);
   }
   tu_buf_free(&m);
}

/* The inner message obeys every rule of opmsg_parse(). */
static void
test_inner_message_checked(void **state)
{
   (void) state;
   tu_buf_t m, c;
   opmsg_msg_t msg;
   bson_error_t error;
   opmsg_options_t opts;

   /* A required flag bit. */
   make_command(&m, "{\"ping\": 1, \"$db\": \"admin\"}", 0x4);
   make_compressed(&c, OPMSG_OP_MSG, (int32_t) m.len - 16, 0, m.data + 16, m.len - 16);
   parse_ok(c.data, c.len, NULL, &msg);
   assert_null(opmsg_merge_compressed(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_REQUIRED_FLAGS);
   tu_buf_free(&c);
   tu_buf_free(&m);

   /* A wrong checksum. */
   make_command(&m, "{\"ping\": 1, \"$db\": \"admin\"}", OPMSG_FLAG_CHECKSUM_PRESENT);
   m.data[m.len - 1] ^= 1;
   make_compressed(&c, OPMSG_OP_MSG, (int32_t) m.len - 16, 0, m.data + 16, m.len - 16);
   parse_ok(c.data, c.len, NULL, &msg);
   assert_null(opmsg_merge_compressed(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_CHECKSUM_MISMATCH);

   /* The options reach the inner parse. */
   opmsg_options_init(&opts);
   opts.flags = OPMSG_PARSE_SKIP_CHECKSUM;
   bson_t *merged = opmsg_merge_compressed(&msg, &opts, &error);
   assert_non_null(merged);
   bson_destroy(merged);
   tu_buf_free(&c);
   tu_buf_free(&m);

   /* Not an OP_COMPRESSED message at all. */
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/ferretdb_handshake5.bin", &len);
   parse_ok(data, len, NULL, &msg);
   assert_int_equal(opmsg_decompressed_size(&msg), 0);
   assert_null(opmsg_decompress(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_WRONG_OPCODE);
   assert_null(opmsg_merge_compressed(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_WRONG_OPCODE);
   assert_null(opmsg_decompress(NULL, NULL, &error));
   assert_error(&error, OPMSG_ERR_INVALID_ARGUMENT);
   free(data);

   /* A hand-filled msg cannot smuggle a nested OP_COMPRESSED. */
   data = tu_read_file("thirdparty/mcdrpc_op_compressed.bin", &len);
   parse_ok(data, len, NULL, &msg);
   msg.op_compressed.original_opcode = OPMSG_OP_COMPRESSED;
   assert_null(opmsg_merge_compressed(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_NESTED_COMPRESSION);
   msg.op_compressed.original_opcode = 2002;
   assert_null(opmsg_decompress(&msg, NULL, &error));
   assert_error(&error, OPMSG_ERR_BAD_ORIGINAL_OPCODE);
   assert_int_equal(opmsg_decompressed_size(NULL), 0);
   free(data);
}

/* ---------------------------------------------------------------------------
 * Compression rules
 * ------------------------------------------------------------------------- */

static void
upper(char *s)
{
   for (; *s; s++) {
      if (*s >= 'a' && *s <= 'z') {
         *s = (char) (*s - 'a' + 'A');
      }
   }
}

static void
lower(char *s)
{
   for (; *s; s++) {
      if (*s >= 'A' && *s <= 'Z') {
         *s = (char) (*s - 'A' + 'a');
      }
   }
}

/* Builds {name: 1, $db: "admin"} as an OP_MSG (optionally after a
 * sequence, with a checksum) and asserts every codec refuses it. */
static void
assert_forbidden(const char *name, bool sequence_first, uint32_t flags)
{
   tu_buf_t b;
   bson_t body = BSON_INITIALIZER;
   bson_error_t error;
   uint8_t out[512];

   BSON_APPEND_INT32(&body, name, 1);
   BSON_APPEND_UTF8(&body, "$db", "admin");
   tu_buf_init(&b);
   tu_msg_begin(&b, flags);
   if (sequence_first) {
      size_t mark = tu_msg_seq_begin(&b, "payload");
      tu_put_json_doc(&b, "{\"x\": 1}");
      tu_msg_seq_end(&b, mark);
   }
   tu_put_u8(&b, 0);
   tu_put_bson(&b, &body);
   tu_msg_end(&b);

   assert_false(opmsg_compression_allowed(name));
   for (int i = 0; i < N_CODECS; i++) {
      memset(out, 0xEE, sizeof out);
      assert_false(opmsg_compress_into(b.data, b.len, codecs[i], -1, out, sizeof out, NULL, &error));
      assert_error(&error, OPMSG_ERR_COMPRESSION_FORBIDDEN);
      assert_int_equal(out[0], 0xEE);
      tu_count_allocs_begin();
      assert_null(opmsg_compress(b.data, b.len, codecs[i], -1, NULL, &error));
      assert_int_equal(tu_count_allocs_end(), 0);
      assert_error(&error, OPMSG_ERR_COMPRESSION_FORBIDDEN);
   }
   tu_buf_free(&b);
   bson_destroy(&body);
}

static void
test_forbidden_commands(void **state)
{
   (void) state;
   const char *names[] = {"hello",        "isMaster",   "ismaster",   "saslStart",       "saslContinue",   "getnonce",
                          "authenticate", "createUser", "updateUser", "copydbSaslStart", "copydbgetnonce", "copydb"};
   char variant[32];

   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      assert_forbidden(names[i], false, 0);
      assert_forbidden(names[i], true, OPMSG_FLAG_CHECKSUM_PRESENT);
      snprintf(variant, sizeof variant, "%s", names[i]);
      upper(variant);
      assert_forbidden(variant, false, 0);
      lower(variant);
      assert_forbidden(variant, true, 0);
      /* Alternating case. */
      snprintf(variant, sizeof variant, "%s", names[i]);
      for (size_t k = 0; variant[k]; k += 2) {
         char one[2] = {variant[k], 0};
         upper(one);
         variant[k] = one[0];
      }
      assert_forbidden(variant, false, 0);
   }

   /* The legacy handshake is refused too. */
   size_t len;
   bson_error_t error;
   uint8_t out[1024];
   uint8_t *data = tu_read_file("thirdparty/ferretdb_handshake1.bin", &len);
   assert_false(opmsg_compress_into(data, len, some_codec(), -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_COMPRESSION_FORBIDDEN);
   free(data);
}

static void
test_allowed_commands(void **state)
{
   (void) state;
   const char *names[] = {"ping", "find",    "insert", "helloo",  "hell",     "isMasterX",
                          "sasl", "copydbX", "xhello", "getMore", "buildInfo"};
   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char json[96];
      tu_buf_t b;
      assert_true(opmsg_compression_allowed(names[i]));
      snprintf(json, sizeof json, "{\"%s\": 1, \"$db\": \"admin\"}", names[i]);
      make_command(&b, json, 0);
      for (int k = 0; k < N_CODECS; k++) {
         roundtrip(b.data, b.len, codecs[k], -1);
      }
      tu_buf_free(&b);
   }
   assert_true(opmsg_compression_allowed(NULL));
   assert_true(opmsg_compression_allowed(""));

   /* An empty body has no command: allowed. */
   tu_buf_t b;
   make_command(&b, "{}", 0);
   roundtrip(b.data, b.len, some_codec(), -1);
   tu_buf_free(&b);
}

static void
test_compress_errors(void **state)
{
   (void) state;
   tu_buf_t b;
   bson_error_t error;
   uint8_t out[1024];

   make_command(&b, "{\"ping\": 1, \"$db\": \"admin\"}", 0);
   const int any = some_codec();

   /* Reserved ids. */
   const int ids[] = {4, 255, -1, 1000};
   for (size_t i = 0; i < 4; i++) {
      assert_int_equal(opmsg_compress_bound(b.len, ids[i]), 0);
      assert_false(opmsg_compress_into(b.data, b.len, ids[i], -1, out, sizeof out, NULL, &error));
      assert_error(&error, OPMSG_ERR_UNKNOWN_COMPRESSOR);
      assert_null(opmsg_compress(b.data, b.len, ids[i], -1, NULL, &error));
      assert_error(&error, OPMSG_ERR_UNKNOWN_COMPRESSOR);
   }

   /* Lengths. */
   assert_false(opmsg_compress_into(b.data, b.len - 1, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_LENGTH_MISMATCH);
   assert_false(opmsg_compress_into(b.data, 15, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_TRUNCATED);
   assert_int_equal(opmsg_compress_bound(15, any), 0);

   /* NULLs and tiny buffers. */
   assert_false(opmsg_compress_into(NULL, 0, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_INVALID_ARGUMENT);
   assert_false(opmsg_compress_into(b.data, b.len, any, -1, NULL, 100, NULL, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);
   assert_false(opmsg_compress_into(b.data, b.len, 0, -1, out, 24, NULL, &error));
   assert_error(&error, OPMSG_ERR_BUFFER_TOO_SMALL);

   /* Already compressed. */
   tu_buf_t c;
   compress_ok(b.data, b.len, any, -1, &c);
   assert_false(opmsg_compress_into(c.data, c.len, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_NESTED_COMPRESSION);
   tu_buf_free(&c);

   /* Opcodes that cannot be carried. */
   size_t len;
   uint8_t *data = tu_read_file("thirdparty/mcdrpc_op_insert.bin", &len);
   assert_false(opmsg_compress_into(data, len, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_BAD_ORIGINAL_OPCODE);
   free(data);

   /* A body whose length runs past the message. */
   opmsg_write_u32(b.data + 21, 500);
   assert_false(opmsg_compress_into(b.data, b.len, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_DOCUMENT_LENGTH);

   /* No body: an unknown section kind stops the scan. */
   b.data[20] = 7;
   assert_false(opmsg_compress_into(b.data, b.len, any, -1, out, sizeof out, NULL, &error));
   assert_error(&error, OPMSG_ERR_NO_BODY);
   tu_buf_free(&b);
}

/* Incompressible input still fits the bound, for every codec. */
static void
test_bound(void **state)
{
   (void) state;
   tu_buf_t b;
   bson_t doc = BSON_INITIALIZER;
   uint8_t noise[5000];
   uint32_t x = 88172645u;

   for (size_t k = 0; k < sizeof noise; k++) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      noise[k] = (uint8_t) x;
   }
   BSON_APPEND_INT32(&doc, "insert", 1);
   BSON_APPEND_BINARY(&doc, "noise", BSON_SUBTYPE_BINARY, noise, sizeof noise);
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   tu_put_bson(&b, &doc);
   tu_msg_end(&b);
   for (int i = 0; i < N_CODECS; i++) {
      size_t bound = opmsg_compress_bound(b.len, codecs[i]);
      uint8_t *out = malloc(bound);
      size_t olen;
      bson_error_t error;
      assert_true(bound >= b.len + 9);
      assert_true(opmsg_compress_into(b.data, b.len, codecs[i], -1, out, bound, &olen, &error));
      assert_true(olen <= bound);
      free(out);
      roundtrip(b.data, b.len, codecs[i], -1);
   }
   tu_buf_free(&b);
   bson_destroy(&doc);
}

/* ---------------------------------------------------------------------------
 * A build without codecs (OPMSG_WITH_SNAPPY/ZLIB/ZSTD=OFF)
 * ------------------------------------------------------------------------- */

/* Every codec the build lacks: a message that uses it still parses (its
 * framing is the wire's), and every function that would run the codec
 * refuses with OPMSG_ERR_COMPRESSOR_UNAVAILABLE before allocating
 * anything; so does the stream reader's decompressing reply. The full
 * build has nothing to check here. */
static void
test_unavailable(void **state)
{
   (void) state;
   int missing = 0;
   tu_buf_t m, c;
   bson_error_t error;
   uint8_t out[4096];
   uint8_t payload[64];
   opmsg_exhaust_t x;
   const uint8_t *data;
   size_t len;

   make_insert(&m, 3, 0);
   memset(payload, 0x5A, sizeof payload);
   for (int id = 1; id < N_IDS; id++) {
      if (built[id]) {
         continue;
      }
      missing++;
      assert_false(opmsg_compressor_available(id));
      assert_non_null(opmsg_compressor_name(id));

      /* Receiving. */
      make_compressed(&c, OPMSG_OP_MSG, (int32_t) m.len - 16, (uint8_t) id, payload, sizeof payload);
      assert_decompress_fails(&c, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
      opmsg_msg_t msg;
      parse_ok(c.data, c.len, NULL, &msg);
      tu_count_allocs_begin();
      assert_null(opmsg_decompress(&msg, NULL, &error));
      assert_null(opmsg_merge_compressed(&msg, NULL, &error));
      assert_int_equal(tu_count_allocs_end(), 0);
      assert_error(&error, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
      assert_non_null(strstr(error.message, opmsg_compressor_name(id)));

      /* The same message as a reply in a stream. */
      opmsg_write_u32(c.data + OPMSG_OFF_RESPONSE_TO, 77);
      opmsg_exhaust_init(&x, 77);
      opmsg_reader_t *r = opmsg_reader_new(NULL);
      assert_int_equal(opmsg_reader_feed(r, c.data, c.len), c.len);
      assert_int_equal(opmsg_reader_next_reply(r, &x, &data, &len, &error), OPMSG_READER_ERROR);
      assert_error(&error, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
      opmsg_reader_destroy(r);
      tu_buf_free(&c);

      /* Sending: refused before a byte is written or allocated. */
      assert_int_equal(opmsg_compress_bound(m.len, id), 0);
      memset(out, 0xEE, sizeof out);
      assert_false(opmsg_compress_into(m.data, m.len, id, -1, out, sizeof out, NULL, &error));
      assert_error(&error, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
      assert_int_equal(out[0], 0xEE);
      tu_count_allocs_begin();
      assert_null(opmsg_compress(m.data, m.len, id, -1, NULL, &error));
      assert_int_equal(tu_count_allocs_end(), 0);
      assert_error(&error, OPMSG_ERR_COMPRESSOR_UNAVAILABLE);
   }
   tu_buf_free(&m);
   if (!missing) {
      skip(); /* every codec is built: test_names holds them to it */
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_mcdrpc_vector),
      cmocka_unit_test(test_independent_vectors),
      cmocka_unit_test(test_roundtrip_small),
      cmocka_unit_test(test_roundtrip_100000),
      cmocka_unit_test(test_roundtrip_levels),
      cmocka_unit_test(test_roundtrip_legacy),
      cmocka_unit_test(test_roundtrip_sequence_first),
      cmocka_unit_test(test_parse_compressor_ids),
      cmocka_unit_test(test_parse_original_opcode),
      cmocka_unit_test(test_parse_uncompressed_size),
      cmocka_unit_test(test_no_allocation_above_limit),
      cmocka_unit_test(test_size_mismatch),
      cmocka_unit_test(test_zstd_without_content_size),
      cmocka_unit_test(test_truncated_stream),
      cmocka_unit_test(test_trailing_garbage),
      cmocka_unit_test(test_corrupt_stream),
      cmocka_unit_test(test_inner_message_checked),
      cmocka_unit_test(test_forbidden_commands),
      cmocka_unit_test(test_allowed_commands),
      cmocka_unit_test(test_compress_errors),
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_unavailable),
   };
   list_codecs();
   return cmocka_run_group_tests(tests, NULL, NULL);
}
