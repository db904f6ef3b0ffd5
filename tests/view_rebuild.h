/*
 * view_rebuild.h - the merged document rebuilt from the zero-copy view.
 *
 * The one home of the walk that checks opmsg_view_*() against the merge:
 * the unit tests (tu_view_to_bson()), the fuzz harness and opmsg-bench's
 * view check all call it. It needs libopmsg and libbson only (no cmocka, no
 * fuzz or bench helpers), so every one of them can compile it; each turns a
 * failure into its own kind of report. (examples/view.c walks the view too,
 * but to show the API to users: it is built alone against the installed
 * library and counts fields rather than rebuilding them.)
 */
#ifndef OPMSG_VIEW_REBUILD_H
#define OPMSG_VIEW_REBUILD_H

#include <stddef.h>

#include <opmsg/opmsg.h>

/* Deeper dotted paths than this are not followed (the walk recurses). The
 * parser allows OPMSG_MAX_DEPTH components, so a valid message never gets
 * there. */
#define VIEW_REBUILD_MAX_DEPTH 200

typedef enum {
   VIEW_REBUILD_OK = 0,
   VIEW_REBUILD_TOO_DEEP, /* a path deeper than VIEW_REBUILD_MAX_DEPTH: out is partial */
   VIEW_REBUILD_BROKEN,   /* the view broke a property, or libbson refused an append */
} view_rebuild_status_t;

/*
 * Appends to out (an initialized bson_t) every field of msg's merged
 * document, walking only the view: a body field is copied as its raw bytes
 * (so the result is byte for byte what opmsg_merge_*() writes), a sequence
 * becomes an array of its documents, a path a sub-document walked in turn.
 * It also checks what the view promises: opmsg_view_init() succeeds, a key
 * is never NULL and holds no NUL, a body field's key is its iterator's key,
 * a sequence yields seq.count documents, opmsg_view_enter() opens every
 * path, and a level ends within msg->len fields (each takes at least one
 * byte of the message).
 *
 * On VIEW_REBUILD_BROKEN, why (when not NULL) holds a description of
 * why_size bytes at most.
 */
view_rebuild_status_t view_rebuild(const opmsg_msg_t *msg, bson_t *out, char *why, size_t why_size);

#endif /* OPMSG_VIEW_REBUILD_H */
