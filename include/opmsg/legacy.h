/*
 * opmsg/legacy.h - included by <opmsg/opmsg.h>; do not include it on its own.
 */
#ifndef OPMSG_LEGACY_H
#define OPMSG_LEGACY_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* OPMSG_LEGACY_H */
