/*
 * test_keyset.c - opmsg_key_hash(), the hash of the key set (the duplicate
 * rules and the lookups by name): a name's hash depends on its bytes and
 * length alone, never on the bytes after it or on where it lies against
 * the limit, and is the same number on every byte order (pinned below as
 * x86-64 computes it; `make check-portable` runs this on s390x).
 */
#include "testutil.h"
#include "opmsg-keyset.h"

#include <string.h>

static const struct {
   const char *name;
   uint32_t hash;
} pinned[] = {
   {"", 0x161a4660u},          {"a", 0xe36dcd34u},
   {"$db", 0x0e9ab6ffu},       {"insert", 0xe300609au},
   {"abcdefg", 0x0989724bu},   {"abcdefgh", 0x0e41222eu},
   {"documents", 0x16643dcau}, {"a somewhat longer field name", 0x133e7191u},
};

/* The hash of name, stored at the start of a 64-byte buffer whose other
 * bytes are fill, with the limit at the buffer's end (the one-load path for
 * a short name), or right after the name (the byte-wise one). */
static uint32_t
hash_in(const char *name, uint8_t fill, bool at_limit)
{
   uint8_t buf[64];
   size_t len = strlen(name);
   memset(buf, fill, sizeof buf);
   memcpy(buf, name, len);
   return opmsg_key_hash((const char *) buf, len, at_limit ? buf + len : buf + sizeof buf);
}

static void
test_hash_is_the_names(void **state)
{
   (void) state;
   for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
      const char *name = pinned[i].name;
      uint32_t h = hash_in(name, 0x00, false);
      if (hash_in(name, 0xFF, false) != h || hash_in(name, 0x5A, false) != h || hash_in(name, 0xFF, true) != h) {
         fail_msg("\"%s\": the hash depends on the bytes after the name or on the limit", name);
      }
      if (h != pinned[i].hash) {
         fail_msg("\"%s\": hash 0x%08x, x86-64's is 0x%08x", name, (unsigned) h, (unsigned) pinned[i].hash);
      }
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash_is_the_names),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
