/*
 * dropin-test.h - what the drop-in's C test programs share: a check that
 * counts failures instead of stopping (each program exits 1 when any
 * failed), and little-endian int32 access to crafted wire bytes and to
 * libmongoc's structs. Header only: each program is one file.
 */
#ifndef OPMSG_DROPIN_TEST_H
#define OPMSG_DROPIN_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* DT_NAME names the program in each failure line. */
#ifndef DT_NAME
#error "define DT_NAME before including dropin-test.h"
#endif

static int failures;

#define CHECK(cond)                                                                \
   do {                                                                            \
      if (!(cond)) {                                                               \
         fprintf(stderr, DT_NAME ": check failed line %d: %s\n", __LINE__, #cond); \
         failures++;                                                               \
      }                                                                            \
   } while (0)

static inline void
put_i32(uint8_t *p, int32_t v)
{
   memcpy(p, &v, 4);
}

static inline int32_t
get_i32(const uint8_t *p)
{
   int32_t v;
   memcpy(&v, p, 4);
   return v;
}

#endif /* OPMSG_DROPIN_TEST_H */
