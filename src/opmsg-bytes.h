/*
 * opmsg-bytes.h - the little-endian integers of the wire, read and written.
 *
 * Not installed. The smallest of the private headers: the libmongoc drop-in
 * includes it with the array writer (opmsg-array.h) and nothing else of
 * libopmsg's internals.
 */
#ifndef OPMSG_BYTES_H
#define OPMSG_BYTES_H

#include <bson/bson.h>

#include <stdint.h>
#include <string.h>

/* 1 where the SSE2 paths are compiled (every x86-64 compiler targets
 * SSE2), 0 elsewhere and in a build with OPMSG_SIMD=OFF (CMakeLists.txt),
 * which runs the portable code instead: each SSE2 path is a small, pure
 * function beside its portable twin, and `make check-portable` tests the
 * twins (on x86-64 without SIMD and on big-endian s390x). */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(OPMSG_NO_SIMD)
#define OPMSG_USE_SSE2 1
#else
#define OPMSG_USE_SSE2 0
#endif

/* The wire is little-endian. memcpy lets the compiler emit one load and keeps
 * unaligned reads defined. */
static inline uint32_t
opmsg_read_u32(const uint8_t *p)
{
   uint32_t v;
   memcpy(&v, p, 4);
   return BSON_UINT32_FROM_LE(v);
}

static inline int32_t
opmsg_read_i32(const uint8_t *p)
{
   return (int32_t) opmsg_read_u32(p);
}

static inline int64_t
opmsg_read_i64(const uint8_t *p)
{
   uint64_t v;
   memcpy(&v, p, 8);
   return (int64_t) BSON_UINT64_FROM_LE(v);
}

static inline void
opmsg_write_u32(uint8_t *p, uint32_t v)
{
   v = BSON_UINT32_TO_LE(v);
   memcpy(p, &v, 4);
}

static inline void
opmsg_write_i64(uint8_t *p, int64_t v)
{
   uint64_t u = BSON_UINT64_TO_LE((uint64_t) v);
   memcpy(p, &u, 8);
}

#endif /* OPMSG_BYTES_H */
