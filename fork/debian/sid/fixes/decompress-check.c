/* A one-off check of the sid fixes track's 0003 (docs/debian.md, "sid"):
 * mcd_rpc_message_decompress() on an OP_COMPRESSED (noop) whose
 * uncompressedSize is right and whose OP_MSG has an unknown section kind (2).
 * The caller behaves as the cluster's OP_MSG path: it frees nothing on
 * failure. libmongoc2 2.5.0 exports its mcd_rpc_* functions (their header is
 * private), so this links with the built library and declares them itself:
 *   gcc -fsanitize=address decompress-check.c $(pkg-config --cflags --libs mongoc2)
 * then run with LD_LIBRARY_PATH on a build's libraries (in a sid root). Not
 * part of the debdiff. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct _mcd_rpc_message mcd_rpc_message;
mcd_rpc_message *mcd_rpc_message_new(void);
bool mcd_rpc_message_from_data_in_place(mcd_rpc_message *rpc, const void *data, size_t length, const void **data_end);
bool mcd_rpc_message_decompress(mcd_rpc_message *rpc, void **data, size_t *data_len, int32_t max_msg_size);
void mcd_rpc_message_destroy(mcd_rpc_message *rpc);

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
   const bool ok = mcd_rpc_message_decompress(rpc, &data, &data_len, 48000000 /* MONGOC_DEFAULT_MAX_MSG_SIZE */);
   printf("decompress: %s, data %s\n", ok ? "true" : "false", data ? "handed over" : "not set");
   fflush(stdout);
   mcd_rpc_message_destroy(rpc);
   return ok ? 2 : 0; /* the caller frees nothing on failure */
}
