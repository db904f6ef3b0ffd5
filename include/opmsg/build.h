/*
 * opmsg/build.h - included by <opmsg/opmsg.h>; do not include it on its own.
 */
#ifndef OPMSG_BUILD_H
#define OPMSG_BUILD_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_BUILD_H */
