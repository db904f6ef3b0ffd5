/* testutil.h - helpers shared by the unit tests. */
#ifndef OPMSG_TESTUTIL_H
#define OPMSG_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <opmsg/opmsg.h>
#include "opmsg-array.h"
#include "opmsg-checksum.h"
#include "opmsg-document.h"
#include "opmsg-msg.h"
#include "opmsg-parse.h"
#include "opmsg-rules.h"
#include "opmsg-bson-compat.h"

/* Reads tests/data/<rel> into a new buffer (free with free()); fails the test
 * when it is missing. */
uint8_t *tu_read_file(const char *rel, size_t *len);
/* The bytes of a hex string (an even number of digits), in a buffer the
 * caller frees; fails the test on a bad digit. */
uint8_t *tu_from_hex(const char *hex, size_t *len);
/* True when tests/data/<rel> exists. */
int tu_file_exists(const char *rel);

/* A growable byte buffer for building messages by hand. */
typedef struct {
   uint8_t *data;
   size_t len;
   size_t cap;
} tu_buf_t;

void tu_buf_init(tu_buf_t *b);
void tu_buf_free(tu_buf_t *b);
void tu_put(tu_buf_t *b, const void *p, size_t n);
void tu_put_u8(tu_buf_t *b, uint8_t v);
void tu_put_i32(tu_buf_t *b, int32_t v);
void tu_put_cstr(tu_buf_t *b, const char *s);
/* Appends the bytes of a document given as relaxed/canonical Extended JSON. */
void tu_put_json_doc(tu_buf_t *b, const char *json);
/* Appends raw bytes of a bson_t. */
void tu_put_bson(tu_buf_t *b, const bson_t *doc);
/* Appends count empty documents (5 bytes each): the most array keys per
 * input byte a sequence can have. */
void tu_put_empty_docs(tu_buf_t *b, size_t count);

/* Building an OP_MSG: tu_msg_begin() writes the header and flags,
 * tu_msg_body() a kind-0 section, tu_msg_seq_begin()/tu_msg_seq_end() a kind-1
 * section around tu_put_json_doc() calls, and tu_msg_end() fixes
 * messageLength and appends the CRC-32C when the flags ask for it. */
void tu_msg_begin(tu_buf_t *b, uint32_t flags);
void tu_msg_body(tu_buf_t *b, const char *json);
size_t tu_msg_seq_begin(tu_buf_t *b, const char *identifier);
void tu_msg_seq_end(tu_buf_t *b, size_t mark);
void tu_msg_end(tu_buf_t *b);

/* The check levels in the order of what they check: spec (the default, 0)
 * frames the documents, top-level also reads their top-level elements,
 * full every element. */
#define TU_N_LEVELS 3
extern const opmsg_check_t tu_levels[TU_N_LEVELS];
/* opmsg_parse() at check under flags: OPMSG_OK, or the error's code (whose
 * domain and message are asserted), with the error in *error. */
uint32_t tu_parse_code(const uint8_t *data, size_t len, uint32_t flags, opmsg_check_t check, bson_error_t *error);
/* Asserts parse fails with this code at every level: a rule of the wire
 * holds at each of them. */
void tu_assert_rejects(const uint8_t *data, size_t len, uint32_t flags, opmsg_error_code_t code);
/* Asserts parse fails with this code at lowest and every level above it
 * (tu_levels' order), and succeeds below it: a rule of the elements. */
void tu_assert_rejects_from(const uint8_t *data, size_t len, uint32_t flags, opmsg_error_code_t code,
                            opmsg_check_t lowest);
/* Parses (asserting success), merges, and returns the merged document as
 * canonical Extended JSON (free with bson_free()). */
char *tu_merge_json(const uint8_t *data, size_t len, uint32_t flags);
/* json (relaxed or canonical Extended JSON) as libbson prints it in
 * canonical form: compare tu_merge_json() with this, not with a literal, as
 * libbson's spacing differs between versions ("[  ]" in 1.x, "[ ]" in 2.x).
 * bson_free() the result. */
char *tu_canonical_json(const char *json);

/* Rebuilds the merged document from the zero-copy view alone (view_rebuild(),
 * in view_rebuild.c, the walk the fuzz harness and opmsg-bench use too), so
 * tests can compare it with opmsg_merge_bson(); fails the test when the view
 * breaks a property. */
void tu_view_to_bson(const opmsg_msg_t *msg, bson_t *out);

/* Counting allocator: tu_count_allocs_begin() installs it on libbson's
 * vtable, tu_count_allocs_end() restores the default and returns how many
 * malloc/calloc/realloc calls were made in between. */
void tu_count_allocs_begin(void);
size_t tu_count_allocs_end(void);

/* Splits a file of back-to-back messages; calls fn for each. Returns the
 * number of messages. */
size_t tu_for_each_message(const uint8_t *data, size_t len, void (*fn)(const uint8_t *msg, size_t len, void *ctx),
                           void *ctx);

#endif /* OPMSG_TESTUTIL_H */
