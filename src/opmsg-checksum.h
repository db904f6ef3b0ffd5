/*
 * opmsg-checksum.h - the portable CRC-32C (checksum.c).
 *
 * Not installed. opmsg_crc32c() (opmsg.h) is the public one.
 */
#ifndef OPMSG_CHECKSUM_H
#define OPMSG_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The portable CRC-32C, always built, so tests can compare it with ISA-L. */
uint32_t opmsg_crc32c_portable(uint32_t crc, const void *data, size_t len);

#endif /* OPMSG_CHECKSUM_H */
