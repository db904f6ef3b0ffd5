/*
 * opmsg/reader.h - included by <opmsg/opmsg.h>; do not include it on its own.
 */
#ifndef OPMSG_READER_H
#define OPMSG_READER_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_READER_H */
