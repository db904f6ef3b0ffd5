/* A one-off check of the trixie fixes track's 0009 (docs/debian.md, "Trixie"):
 * each message is parsed by 1.30.4's mcd_rpc_message_from_data_in_place(),
 * then given to mcd_rpc_message_ingress_checked() (the patched tree; with an
 * argument, also to the kept mcd_rpc_message_ingress(), which must return), or
 * with -DCHECK_OLD to mcd_rpc_message_ingress() of deb13u2's tree, which
 * aborts on the first request opcode. Built from the tree's mcd-rpc.c and
 * mongoc-rpc.c only, with the host's libbson, hand-made configuration headers
 * (counters off) and -DMONGOC_COMPILATION -DBSON_COMPILATION
 * -DMCOMMON_NAME_PREFIX=_mongoc_mcommon. Not part of the debdiff. */
#include <mongoc/mcd-rpc.h>
#include <mongoc/mongoc-rpc-private.h>
#include <mongoc/mongoc-error.h>
#include <stdio.h>
#include <string.h>

static size_t
put32(uint8_t *p, int32_t v)
{
   uint32_t u = (uint32_t) v;
   p[0] = u & 0xff, p[1] = (u >> 8) & 0xff, p[2] = (u >> 16) & 0xff, p[3] = u >> 24;
   return 4;
}

/* A message of `op` (the header only plus a body that parses for it). */
static size_t
message(uint8_t *buf, int32_t op, int32_t original)
{
   static const uint8_t doc[] = {5, 0, 0, 0, 0};
   size_t n = 16;
   switch (op) {
   case 2013: /* OP_MSG: flags, kind 0, {} */
      n += put32(buf + n, 0);
      buf[n++] = 0;
      memcpy(buf + n, doc, 5), n += 5;
      break;
   case 1: /* OP_REPLY: flags, cursorID, startingFrom, numberReturned, {} */
      n += put32(buf + n, 0), n += put32(buf + n, 0), n += put32(buf + n, 0);
      n += put32(buf + n, 0), n += put32(buf + n, 1);
      memcpy(buf + n, doc, 5), n += 5;
      break;
   case 2004: /* OP_QUERY: flags, "a.b", skip, return, {} */
      n += put32(buf + n, 0);
      memcpy(buf + n, "a.b", 4), n += 4;
      n += put32(buf + n, 0), n += put32(buf + n, 1);
      memcpy(buf + n, doc, 5), n += 5;
      break;
   case 2007: /* OP_KILL_CURSORS: zero, 1, cursor id */
      n += put32(buf + n, 0), n += put32(buf + n, 1), n += put32(buf + n, 7), n += put32(buf + n, 0);
      break;
   case 2012: /* OP_COMPRESSED (noop): originalOpcode, uncompressedSize, id 0, bytes */
      n += put32(buf + n, original), n += put32(buf + n, 4);
      buf[n++] = 0;
      n += put32(buf + n, 0);
      break;
   }
   put32(buf, (int32_t) n), put32(buf + 4, 1), put32(buf + 8, 0), put32(buf + 12, op);
   return n;
}

int
main(int argc, char **argv)
{
   static const struct {
      int32_t op, original;
      bool reply;
   } cases[] = {{2013, 0, true},  {1, 0, true},        {2012, 2013, true},  {2012, 1, true},     {2004, 0, false},
                {2007, 0, false}, {2012, 2004, false}, {2012, 2012, false}, {2012, 12345, false}};
   int failures = 0;
   (void) argv;
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      uint8_t buf[64];
      const size_t len = message(buf, cases[i].op, cases[i].original);
      mcd_rpc_message *rpc = mcd_rpc_message_new();
      if (!mcd_rpc_message_from_data_in_place(rpc, buf, len, NULL)) {
         printf("case %d/%d: not parsed\n", cases[i].op, cases[i].original);
         failures++;
         mcd_rpc_message_destroy(rpc);
         continue;
      }
#ifdef CHECK_OLD
      mcd_rpc_message_ingress(rpc); /* deb13u2: aborts on a request */
      printf("case %d/%d: returned\n", cases[i].op, cases[i].original);
#else
      bson_error_t error = {0};
      const bool ok = mcd_rpc_message_ingress_checked(rpc, &error);
      const bool right =
         ok == cases[i].reply &&
         (ok || (error.domain == MONGOC_ERROR_PROTOCOL && error.code == MONGOC_ERROR_PROTOCOL_INVALID_REPLY));
      printf("case %d/%d: %s%s%s\n", cases[i].op, cases[i].original,
             ok ? "accepted" : "refused: ", ok ? "" : error.message, right ? "" : "  WRONG");
      failures += !right;
      if (argc > 1) {
         mcd_rpc_message_ingress(rpc); /* the kept entry point: must return */
      }
#endif
      mcd_rpc_message_destroy(rpc);
   }
   printf("failures %d\n", failures);
   return failures != 0;
}
