/*
 * tap.h - `opmsg tap`, a logging TCP proxy (and pcap reader) for the MongoDB
 * wire protocol. See docs/tap.md.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#ifndef OPMSG_TAP_H
#define OPMSG_TAP_H

/* Runs `opmsg tap`; argv[0] is "tap". Returns the process exit code:
 * 0 after a clean stop (SIGINT/SIGTERM, or the end of a --pcap file),
 * 1 when a --pcap file cannot be read completely, 2 for usage errors or
 * when it cannot listen. */
int opmsg_tap_main(int argc, char **argv);

#endif /* OPMSG_TAP_H */
