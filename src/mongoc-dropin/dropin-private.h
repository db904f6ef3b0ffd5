/*
 * dropin-private.h - libopmsg-mongoc.so: the parts of libmongoc 1.23's
 * private ABI the drop-in touches, and the glue between its files.
 *
 * libmongoc installs no private headers, so the layouts below are written
 * from its 1.23.1 sources (mongoc-rpc-private.h, mongoc-cmd-private.h),
 * checked against Debian 12's build (objdump, live runs), and pinned with
 * static asserts: a wrong offset fails the build instead of corrupting a
 * caller's stack.
 * Only x86-64 / LP64 is described; other ABIs build a library that always
 * forwards (see OPMSG_DROPIN_LAYOUT_KNOWN).
 */
#ifndef OPMSG_DROPIN_PRIVATE_H
#define OPMSG_DROPIN_PRIVATE_H

#include <opmsg/opmsg.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__LP64__)
#define OPMSG_DROPIN_LAYOUT_KNOWN 1
#else
#define OPMSG_DROPIN_LAYOUT_KNOWN 0
#endif

#define DROPIN_EXPORT __attribute__((visibility("default")))
#define OPMSG_DROPIN_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---------------------------------------------------------------------------
 * mongoc_rpc_t (a union, 96 bytes, align 8). Every member starts at 0.
 * ------------------------------------------------------------------------- */
#define DROPIN_RPC_SIZE 96

/* The 16-byte header every member starts with. */
#define DROPIN_OFF_MSG_LEN 0
#define DROPIN_OFF_REQUEST_ID 4
#define DROPIN_OFF_RESPONSE_TO 8
#define DROPIN_OFF_OPCODE 12

/* reply (packed): the fields follow the wire order, so the original copies
 * them verbatim; the pointer and length come after. */
#define DROPIN_OFF_REPLY_FLAGS 16      /* uint32 */
#define DROPIN_OFF_REPLY_CURSOR_ID 20  /* int64 */
#define DROPIN_OFF_REPLY_START_FROM 28 /* int32 */
#define DROPIN_OFF_REPLY_N_RETURNED 32 /* int32 */
#define DROPIN_OFF_REPLY_DOCUMENTS 36  /* const uint8_t * */
#define DROPIN_OFF_REPLY_DOCUMENTS_LEN 44 /* int32 */
#define DROPIN_REPLY_WIRE_FIXED 36     /* header + the four fields above */

/* compressed (packed). */
#define DROPIN_OFF_COMP_ORIGINAL_OPCODE 16   /* int32 */
#define DROPIN_OFF_COMP_UNCOMPRESSED_SIZE 20 /* int32 */
#define DROPIN_OFF_COMP_COMPRESSOR_ID 24     /* uint8 */
#define DROPIN_OFF_COMP_MESSAGE 25           /* const uint8_t * */
#define DROPIN_OFF_COMP_MESSAGE_LEN 33       /* int32 */
#define DROPIN_COMPRESSED_WIRE_FIXED 25

/* msg (not packed): sections[2] of mongoc_rpc_section_t. */
typedef struct {
   uint8_t payload_type; /* 0 body, 1 sequence; 7 bytes of padding follow */
   union {
      const uint8_t *bson_document; /* kind 0 */
      struct {                      /* kind 1 (never produced by the drop-in) */
         int32_t size;
         uint32_t size_le;
         const char *identifier;
         const uint8_t *bson_documents;
      } sequence;
   } payload;
} dropin_rpc_section_t;

typedef struct {
   int32_t msg_len;
   int32_t request_id;
   int32_t response_to;
   int32_t opcode;
   uint32_t flags;
   dropin_rpc_section_t sections[2];
   int32_t n_sections;
} dropin_rpc_msg_t;

#if OPMSG_DROPIN_LAYOUT_KNOWN
_Static_assert(sizeof(dropin_rpc_section_t) == 32, "mongoc_rpc_section_t is 32 bytes");
_Static_assert(offsetof(dropin_rpc_section_t, payload.bson_document) == 8,
               "section payload at 8");
_Static_assert(offsetof(dropin_rpc_section_t, payload.sequence.identifier) == 16,
               "sequence identifier at 16");
_Static_assert(offsetof(dropin_rpc_msg_t, flags) == 16, "msg.flags at 16");
_Static_assert(offsetof(dropin_rpc_msg_t, sections) == 24, "msg.sections at 24");
_Static_assert(offsetof(dropin_rpc_msg_t, n_sections) == 88, "msg.n_sections at 88");
_Static_assert(sizeof(dropin_rpc_msg_t) == DROPIN_RPC_SIZE, "mongoc_rpc_msg_t is 96 bytes");
_Static_assert(_Alignof(dropin_rpc_msg_t) == 8, "mongoc_rpc_t aligns to 8");
_Static_assert(DROPIN_OFF_REPLY_DOCUMENTS_LEN + 4 <= DROPIN_RPC_SIZE, "reply fits");
_Static_assert(DROPIN_OFF_COMP_MESSAGE_LEN + 4 <= DROPIN_RPC_SIZE, "compressed fits");
#endif

/* ---------------------------------------------------------------------------
 * mongoc_cmd_t (96 bytes, align 8): only the three fields
 * _mongoc_cmd_append_payload_as_array reads.
 * ------------------------------------------------------------------------- */
#define DROPIN_OFF_CMD_COMMAND_NAME 24 /* const char * */
#define DROPIN_OFF_CMD_PAYLOAD 32      /* const uint8_t * */
#define DROPIN_OFF_CMD_PAYLOAD_SIZE 40 /* int32 */

/* ---------------------------------------------------------------------------
 * The interposed functions (exported, unversioned, as libmongoc's are).
 * The rpc is void * so every access goes through the offsets above.
 * ------------------------------------------------------------------------- */
DROPIN_EXPORT bool _mongoc_rpc_scatter(void *rpc, const uint8_t *buf,
                                       size_t buflen);
DROPIN_EXPORT bool _mongoc_rpc_decompress(void *rpc_le, uint8_t *buf,
                                          size_t buflen);
DROPIN_EXPORT bool _mongoc_rpc_reply_get_first_msg(void *msg, bson_t *reply);
DROPIN_EXPORT void _mongoc_cmd_append_payload_as_array(const void *cmd,
                                                       bson_t *out);

/* ---------------------------------------------------------------------------
 * gate.c: decides once whether the drop-in is active and holds the
 * originals for forwarding.
 * ------------------------------------------------------------------------- */
typedef bool (*dropin_scatter_fn)(void *, const uint8_t *, size_t);
typedef bool (*dropin_decompress_fn)(void *, uint8_t *, size_t);
typedef bool (*dropin_get_first_msg_fn)(void *, bson_t *);
typedef void (*dropin_append_payload_fn)(const void *, bson_t *);

typedef struct {
   dropin_scatter_fn scatter;
   dropin_decompress_fn decompress;
   dropin_get_first_msg_fn get_first_msg;
   dropin_append_payload_fn append_payload;
} dropin_originals_t;

/* True when the replacements run. caller is the interposed function's return
 * address: it identifies libmongoc when it was dlopen()ed privately (then
 * neither RTLD_DEFAULT nor RTLD_NEXT can see it). Cheap after the first call. */
bool dropin_active(const void *caller);

/* The originals (resolved by the first dropin_active() call). Members may be
 * NULL when libmongoc lacks them; callers then fail safely. */
const dropin_originals_t *dropin_originals(void);

/* OPMSG_MONGOC_DEBUG level (0 when unset). */
int dropin_debug_level(void);

/* One diagnostic line on stderr, prefixed "opmsg-mongoc: ". */
void dropin_log(const char *fmt, ...) OPMSG_DROPIN_PRINTF(1, 2);

/* The parse options every reply is checked with. */
const opmsg_options_t *dropin_parse_options(void);

/* ---------------------------------------------------------------------------
 * slot.c: the per-thread merged body.
 * ------------------------------------------------------------------------- */

/* Frees the calling thread's merged body, if any. */
void dropin_slot_release(void);
/* Returns a buffer of at least size bytes owned by the calling thread until
 * its next dropin_slot_release() or its exit; NULL when allocation fails. */
uint8_t *dropin_slot_acquire(size_t size);

#endif /* OPMSG_DROPIN_PRIVATE_H */
