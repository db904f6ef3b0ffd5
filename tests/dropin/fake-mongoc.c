/*
 * fake-mongoc.c - a stand-in for libmongoc in the gate test: it exports the
 * four functions the drop-in replaces, each leaving a recognisable mark, and
 * mongoc_get_version() answering $FAKE_MONGOC_VERSION. The fake_mongoc_*
 * entry points call them through the PLT, as libmongoc's own callers do.
 * Built a second time with FAKE_FORK, it also exports the function the
 * fork's 1.23 series adds (_mongoc_rpc_copy_reply), as the fork's patched
 * libmongoc does: the drop-in must then stand aside.
 */
#include <bson/bson.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MARK 4242 /* written at mongoc_rpc_t's n_sections by the fake */

FAKE_EXPORT const char *mongoc_get_version(void);
FAKE_EXPORT bool _mongoc_rpc_scatter(void *rpc, const uint8_t *buf, size_t len);
FAKE_EXPORT bool _mongoc_rpc_decompress(void *rpc, uint8_t *buf, size_t len);
FAKE_EXPORT bool _mongoc_rpc_reply_get_first_msg(void *msg, bson_t *b);
FAKE_EXPORT void _mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out);
FAKE_EXPORT bool fake_mongoc_scatter(void *rpc, const uint8_t *buf, size_t len);
FAKE_EXPORT bool fake_mongoc_decompress(void *rpc, uint8_t *buf, size_t len);
FAKE_EXPORT bool fake_mongoc_get_first_msg(void *msg, bson_t *b);
FAKE_EXPORT void fake_mongoc_append_payload(const void *cmd, bson_t *out);

const char *
mongoc_get_version(void)
{
   const char *v = getenv("FAKE_MONGOC_VERSION");
   return v ? v : "1.23.1";
}

static void
mark(void *rpc)
{
   int32_t m = FAKE_MARK;
   memcpy((uint8_t *) rpc + 88, &m, 4);
}

bool
_mongoc_rpc_scatter(void *rpc, const uint8_t *buf, size_t len)
{
   (void) buf;
   (void) len;
   memset(rpc, 0, 96);
   mark(rpc);
   return true;
}

bool
_mongoc_rpc_decompress(void *rpc, uint8_t *buf, size_t len)
{
   (void) buf;
   (void) len;
   mark(rpc);
   return true;
}

bool
_mongoc_rpc_reply_get_first_msg(void *msg, bson_t *b)
{
   (void) msg;
   bson_init(b);
   BSON_APPEND_BOOL(b, "fake", true);
   return true;
}

void
_mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out)
{
   (void) cmd;
   BSON_APPEND_BOOL(out, "fake", true);
}

/* What libmongoc's callers do: call through the PLT. */
bool
fake_mongoc_scatter(void *rpc, const uint8_t *buf, size_t len)
{
   return _mongoc_rpc_scatter(rpc, buf, len);
}

bool
fake_mongoc_decompress(void *rpc, uint8_t *buf, size_t len)
{
   return _mongoc_rpc_decompress(rpc, buf, len);
}

bool
fake_mongoc_get_first_msg(void *msg, bson_t *b)
{
   return _mongoc_rpc_reply_get_first_msg(msg, b);
}

void
fake_mongoc_append_payload(const void *cmd, bson_t *out)
{
   _mongoc_cmd_append_payload_as_array(cmd, out);
}

#ifdef FAKE_FORK
FAKE_EXPORT bool _mongoc_rpc_copy_reply(void *rpc, bson_t *reply);

bool
_mongoc_rpc_copy_reply(void *rpc, bson_t *reply)
{
   (void) rpc;
   bson_init(reply);
   return true;
}
#endif
