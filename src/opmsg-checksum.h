/*
 * opmsg-checksum.h - the portable CRC-32C (checksum.c).
 *
 * Not installed. opmsg_crc32c() (opmsg.h) is the public one: ISA-L when the
 * library is built with it, this one otherwise.
 */
#ifndef OPMSG_CHECKSUM_H
#define OPMSG_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The portable CRC-32C, always built, so tests can compare it with ISA-L.
 * The same contract as opmsg_crc32c(): start with crc = 0. */
uint32_t opmsg_crc32c_portable(uint32_t crc, const void *data, size_t len);

/* Its slicing-by-8 table, a constant (no run-time set-up, no lock): row 0
 * is the CRC of each byte value, row t that byte followed by t zero bytes. */
extern const uint32_t opmsg_crc32c_table[8][256];

#endif /* OPMSG_CHECKSUM_H */
