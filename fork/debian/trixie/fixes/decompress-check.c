/* A one-off check of the trixie fixes track's 0010 (docs/debian.md, "Trixie"):
 * mcd_rpc_message_decompress() on an OP_COMPRESSED (noop) whose
 * uncompressedSize is right and whose OP_MSG has an unknown section kind (2).
 * The caller behaves as the cluster's OP_MSG path: it frees nothing on
 * failure. DECOMPRESS_INC names the function's text taken out of a tree's
 * mongoc-cluster.c (awk, from its definition to the first line "}"); built
 * with that tree's mcd-rpc.c and mongoc-compression.c, the host's libbson and
 * zlib, -fsanitize=address and the flags of ingress-check.c. Not part of the
 * debdiff. */
#include <mongoc/mcd-rpc.h>
#include <mongoc/mongoc-cluster-private.h>
#include <mongoc/mongoc-compression-private.h>
#include <stdio.h>
#include <string.h>

#include DECOMPRESS_INC

/* mongoc-compression.c's warnings: not under test. */
void
mongoc_log(mongoc_log_level_t log_level, const char *log_domain, const char *format, ...)
{
   (void) log_level, (void) log_domain, (void) format;
}

static size_t
put32(uint8_t *p, int32_t v)
{
   uint32_t u = (uint32_t) v;
   p[0] = u & 0xff, p[1] = (u >> 8) & 0xff, p[2] = (u >> 16) & 0xff, p[3] = u >> 24;
   return 4;
}

int
main(void)
{
   /* The inner OP_MSG without its header: flags, kind 2 (unknown), {}. */
   uint8_t inner[10] = {0};
   size_t m = put32(inner, 0);
   inner[m++] = 2;
   inner[m++] = 5;
   m += 4;
   uint8_t buf[64];
   size_t n = 16;
   n += put32(buf + n, 2013);
   n += put32(buf + n, (int32_t) m);
   buf[n++] = 0; /* noop */
   memcpy(buf + n, inner, m), n += m;
   put32(buf, (int32_t) n), put32(buf + 4, 1), put32(buf + 8, 0), put32(buf + 12, 2012);

   mcd_rpc_message *rpc = mcd_rpc_message_new();
   if (!mcd_rpc_message_from_data_in_place(rpc, buf, n, NULL)) {
      printf("outer message not parsed\n");
      return 2;
   }
   void *data = NULL;
   size_t data_len = 0u;
   const bool ok = mcd_rpc_message_decompress(rpc, &data, &data_len);
   printf("decompress: %s, data %s\n", ok ? "true" : "false", data ? "handed over" : "not set");
   fflush(stdout);
   mcd_rpc_message_destroy(rpc);
   return ok ? 2 : 0; /* the caller frees nothing on failure */
}
