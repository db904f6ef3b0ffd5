/*
 * checksum.c - CRC-32C (Castagnoli), the OP_MSG checksum.
 *
 * ISA-L's crc32_iscsi uses the SSE4.2 crc32 instruction with three-way
 * interleaving (tens of GB/s); the portable version is a slicing-by-8 table
 * walk, built always so tests can compare the two.
 */
#include "opmsg-common.h"
#include "opmsg-checksum.h"

#include <pthread.h>

#ifdef OPMSG_HAVE_ISAL
#include <isa-l/crc.h>
#endif

/* Reflected Castagnoli polynomial. */
#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];

static void
crc_table_build(void)
{
   for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) {
         c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
      }
      crc_table[0][i] = c;
   }
   for (uint32_t i = 0; i < 256; i++) {
      for (int t = 1; t < 8; t++) {
         crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
      }
   }
}

/* The table is a pure function of the polynomial: build it once, race-free. */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

uint32_t
opmsg_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
   const uint8_t *p = data;
   pthread_once(&crc_once, crc_table_build);
   crc = ~crc;
   while (len >= 8) {
      uint32_t lo = crc ^ opmsg_read_u32(p);
      uint32_t hi = opmsg_read_u32(p + 4);
      crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
      p += 8;
      len -= 8;
   }
   while (len--) {
      crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
   }
   return ~crc;
}

uint32_t
opmsg_crc32c(uint32_t crc, const void *data, size_t len)
{
#ifdef OPMSG_HAVE_ISAL
   /* crc32_iscsi takes an int length: feed it in pieces below INT_MAX. It
    * neither inverts on entry nor on exit, hence the ~ on both sides. */
   const uint8_t *p = data;
   crc = ~crc;
   while (len > 0) {
      size_t n = len > 0x40000000u ? 0x40000000u : len;
      crc = crc32_iscsi((unsigned char *) (uintptr_t) p, (int) n, crc);
      p += n;
      len -= n;
   }
   return ~crc;
#else
   return opmsg_crc32c_portable(crc, data, len);
#endif
}

const char *
opmsg_crc32c_implementation(void)
{
#ifdef OPMSG_HAVE_ISAL
   return "isa-l";
#else
   return "portable";
#endif
}
