/*
 * opmsg/compress.h - included by <opmsg/opmsg.h>; do not include it on its own.
 */
#ifndef OPMSG_COMPRESS_H
#define OPMSG_COMPRESS_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_COMPRESS_H */
