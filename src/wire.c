/*
 * wire.c - bounded reads of a message's fields and the lenient step over
 * its sections (opmsg/wire.h), for the tools and any program that
 * describes messages opmsg_parse() refused: the library's own byte helpers
 * and section step, with the bounds the caller's bytes give.
 */
#include "opmsg-msg.h"

/* Whether n bytes at offset lie inside len bytes. */
static bool
wire_fits(size_t len, size_t offset, size_t n)
{
   return offset <= len && n <= len - offset;
}

int32_t
opmsg_wire_i32(const uint8_t *data, size_t len, size_t offset)
{
   return data && wire_fits(len, offset, 4) ? opmsg_read_i32(data + offset) : 0;
}

int64_t
opmsg_wire_i64(const uint8_t *data, size_t len, size_t offset)
{
   return data && wire_fits(len, offset, 8) ? opmsg_read_i64(data + offset) : 0;
}

size_t
opmsg_wire_section(const uint8_t *data, size_t len, size_t offset)
{
   return data && offset < len ? opmsg_section_frame(data + offset, len - offset) : 0;
}
