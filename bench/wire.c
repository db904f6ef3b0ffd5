/*
 * wire.c - the hand-written OP_MSG section walk the baselines use.
 *
 * The baselines stand for code written without opmsg, so they do not get to
 * use opmsg_parse(); this is the few lines such code has for the framing.
 */
#include "bench.h"

#include <string.h>

uint32_t
bench_read_u32(const uint8_t *p)
{
   uint32_t v;
   memcpy(&v, p, 4);
   return BSON_UINT32_FROM_LE(v);
}

void
bench_split_sections(const uint8_t *msg, size_t len, bench_sections_t *out)
{
   if (len < OPMSG_HEADER_SIZE + 5 || bench_read_u32(msg) != len || bench_read_u32(msg + 12) != OPMSG_OP_MSG) {
      bench_fatal("baseline: not an OP_MSG");
   }
   uint32_t flags = bench_read_u32(msg + 16);
   const uint8_t *p = msg + OPMSG_HEADER_SIZE + 4;
   const uint8_t *end = msg + len - ((flags & OPMSG_FLAG_CHECKSUM_PRESENT) ? 4 : 0);

   out->body = NULL;
   out->body_len = 0;
   out->n_seqs = 0;
   while (p < end) {
      uint8_t kind = *p++;
      if ((size_t) (end - p) < 4) {
         bench_fatal("baseline: truncated section");
      }
      uint32_t size = bench_read_u32(p);
      if (size < 4 || size > (size_t) (end - p)) {
         bench_fatal("baseline: bad section size");
      }
      if (kind == 0) {
         out->body = p;
         out->body_len = size;
      } else if (kind == 1) {
         if (out->n_seqs == BENCH_MAX_SEQUENCES) {
            bench_fatal("baseline: too many sequences");
         }
         const char *id = (const char *) p + 4;
         const void *nul = memchr(id, 0, size - 4);
         if (!nul) {
            bench_fatal("baseline: unterminated identifier");
         }
         bench_seq_t *s = &out->seqs[out->n_seqs++];
         s->identifier = id;
         s->identifier_len = (size_t) ((const char *) nul - id);
         s->docs = (const uint8_t *) nul + 1;
         s->docs_len = (size_t) (p + size - s->docs);
      } else {
         bench_fatal("baseline: unknown section kind %u", (unsigned) kind);
      }
      p += size;
   }
   if (!out->body) {
      bench_fatal("baseline: no body");
   }
}
