/*
 * compressed.c - big as OP_COMPRESSED (zstd, snappy): what merging adds to
 * decompressing.
 *
 * Decompression is the limit here: it has to happen whatever the merge
 * does. The question is how much the merge adds on top; ideally no more
 * than a memcpy of the merged document.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

bool
bench_case_make_compressed(bench_case_t *c, const bench_case_def_t *def, const char *data_dir)
{
   (void) data_dir;
   const char *name = def->name;
   int compressor_id = opmsg_compressor_from_name(def->arg);
   if (compressor_id < 0) {
      bench_fatal("%s: no compressor named %s", name, def->arg);
   }
   if (!opmsg_compressor_available(compressor_id)) {
      fprintf(stderr, "opmsg-bench: %s skipped: this build has no %s\n", name, opmsg_compressor_name(compressor_id));
      c->skipped = true;
      return false;
   }
   bench_case_t plain;
   memset(&plain, 0, sizeof plain);
   bench_case_make_big(&plain);

   size_t len = 0;
   bson_error_t error;
   uint8_t *z = opmsg_compress(plain.msg, plain.msg_len, compressor_id, OPMSG_COMPRESS_DEFAULT_LEVEL, &len, &error);
   if (!z) {
      bench_fatal("%s: opmsg_compress: %s", name, error.message);
   }
   /* Keep the compressed message in malloc memory like every other case, and
    * the original as the expected result of decompressing. */
   bench_case_adopt(c, name, BENCH_KIND_COMPRESSED, z, len);
   c->plain = plain.msg;
   c->plain_len = plain.msg_len;
   plain.msg = NULL;
   bench_case_free(&plain);

   c->scratch_cap = c->plain_len;
   c->scratch = bench_xmalloc(c->scratch_cap);
   memset(c->scratch, 0, c->scratch_cap);
   bench_case_finish(c);
   return true;
}

/* Decompressing alone, into a reused buffer: the limit. */
size_t
bench_op_decompress(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bson_error_t error;
   size_t written = 0;
   bench_parse_or_die(c, &msg);
   if (!opmsg_decompress_into(&msg, c->scratch, c->scratch_cap, &written, &error)) {
      bench_fatal("%s: opmsg_decompress_into: %s", c->name, error.message);
   }
   bench_keep_bytes(keep, c->scratch, written);
   return written;
}

/* Decompress into a reused buffer, parse what came out (at the cell's
 * level, like the outer message), merge into another reused buffer: the
 * zero-allocation path. */
size_t
bench_op_decompress_merge(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg, inner;
   bson_error_t error;
   size_t plain_len = 0, written = 0;
   bench_parse_or_die(c, &msg);
   if (!opmsg_decompress_into(&msg, c->scratch, c->scratch_cap, &plain_len, &error) ||
       !opmsg_parse(c->scratch, plain_len, &c->opts, &inner, &error) ||
       !opmsg_merge_into(&inner, c->out, c->out_cap, &written, &error)) {
      bench_fatal("%s: decompress + merge: %s", c->name, error.message);
   }
   bench_keep_bytes(keep, c->out, written);
   return written;
}

/* The one-call API: opmsg_merge_compressed() (one buffer for the
 * decompressed message, one for the merged document), which parses the
 * decompressed message with the cell's options. */
size_t
bench_op_merge_compressed(bench_case_t *c, bench_out_t *keep)
{
   opmsg_msg_t msg;
   bson_error_t error;
   bench_parse_or_die(c, &msg);
   bson_t *b = opmsg_merge_compressed(&msg, &c->opts, &error);
   if (!b) {
      bench_fatal("%s: opmsg_merge_compressed: %s", c->name, error.message);
   }
   return bench_keep_bson(keep, b);
}
