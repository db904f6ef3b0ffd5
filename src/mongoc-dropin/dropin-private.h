/*
 * dropin-private.h - libopmsg-mongoc.so: the parts of libmongoc's private
 * ABI the drop-in touches (1.23's structs, the mongoc_cmd_t fields of 1.23,
 * 1.30 and 2.5), the raw accessors that read and write them, and the glue
 * between its files.
 *
 * libmongoc installs no private headers. The layouts below are based on
 * libmongoc's own sources of each version (1.23.1's mongoc-rpc-private.h
 * and op-*.def; mongoc-cmd-private.h of 1.23.1, 1.30.4 and 2.5), checked
 * against Debian's builds of them (the offsets in the disassembly of the
 * callers), pinned by the static asserts below (a wrong offset fails the
 * build instead of corrupting a caller's stack) and exercised by the tests
 * in tests/dropin/ against the real libraries (dropin.payload-shape compares
 * the command arrays byte for byte with libmongoc's own).
 * Only x86-64 / LP64 is described; other ABIs build a library that always
 * forwards (see OPMSG_DROPIN_LAYOUT_KNOWN).
 */
#ifndef OPMSG_DROPIN_PRIVATE_H
#define OPMSG_DROPIN_PRIVATE_H

#include <opmsg/opmsg.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* The 16-byte header every member starts with: the wire's, copied as it is,
 * so its fields are read at opmsg/wire.h's offsets (OPMSG_OFF_OPCODE ...). */

/* reply (packed): the fields follow the wire order, so the original copies
 * them verbatim; the pointer and length come after. */
#define DROPIN_OFF_REPLY_FLAGS 16                         /* uint32 */
#define DROPIN_OFF_REPLY_CURSOR_ID 20                     /* int64 */
#define DROPIN_OFF_REPLY_START_FROM 28                    /* int32 */
#define DROPIN_OFF_REPLY_N_RETURNED 32                    /* int32 */
#define DROPIN_OFF_REPLY_DOCUMENTS 36                     /* const uint8_t * */
#define DROPIN_OFF_REPLY_DOCUMENTS_LEN 44                 /* int32 */
#define DROPIN_REPLY_WIRE_FIXED OPMSG_OFF_REPLY_DOCUMENTS /* header + the four fields above */

/* compressed (packed). */
#define DROPIN_OFF_COMP_ORIGINAL_OPCODE 16   /* int32 */
#define DROPIN_OFF_COMP_UNCOMPRESSED_SIZE 20 /* int32 */
#define DROPIN_OFF_COMP_COMPRESSOR_ID 24     /* uint8 */
#define DROPIN_OFF_COMP_MESSAGE 25           /* const uint8_t * */
#define DROPIN_OFF_COMP_MESSAGE_LEN 33       /* int32 */
#define DROPIN_COMPRESSED_WIRE_FIXED OPMSG_COMPRESSED_OVERHEAD

/* msg (not packed): flags (opmsg/wire.h's flagBits, read against
 * OPMSG_FLAG_MORE_TO_COME), then sections[2] of mongoc_rpc_section_t. */
#define DROPIN_OFF_MSG_FLAGS 16 /* uint32 */

/* Where libmongoc's packed members copy the wire in order, their offsets
 * are the wire's: held to opmsg/wire.h here, not trusted. */
_Static_assert(DROPIN_OFF_REPLY_FLAGS == OPMSG_OFF_RESPONSE_FLAGS, "reply flags at the wire's offset");
_Static_assert(DROPIN_OFF_REPLY_CURSOR_ID == OPMSG_OFF_CURSOR_ID, "cursorID at the wire's offset");
_Static_assert(DROPIN_OFF_REPLY_START_FROM == OPMSG_OFF_STARTING_FROM, "startingFrom at the wire's offset");
_Static_assert(DROPIN_OFF_REPLY_N_RETURNED == OPMSG_OFF_NUMBER_RETURNED, "numberReturned at the wire's offset");
_Static_assert(DROPIN_OFF_COMP_ORIGINAL_OPCODE == OPMSG_OFF_ORIGINAL_OPCODE, "originalOpcode at the wire's offset");
_Static_assert(DROPIN_OFF_COMP_UNCOMPRESSED_SIZE == OPMSG_OFF_UNCOMPRESSED_SIZE,
               "uncompressedSize at the wire's offset");
_Static_assert(DROPIN_OFF_COMP_COMPRESSOR_ID == OPMSG_OFF_COMPRESSOR_ID, "compressorId at the wire's offset");
_Static_assert(DROPIN_OFF_COMP_MESSAGE == OPMSG_COMPRESSED_OVERHEAD, "the compressed bytes after the fixed fields");
_Static_assert(DROPIN_OFF_MSG_FLAGS == OPMSG_OFF_FLAG_BITS, "flagBits at the wire's offset");
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
_Static_assert(offsetof(dropin_rpc_section_t, payload.bson_document) == 8, "section payload at 8");
_Static_assert(offsetof(dropin_rpc_section_t, payload.sequence.identifier) == 16, "sequence identifier at 16");
_Static_assert(offsetof(dropin_rpc_msg_t, flags) == DROPIN_OFF_MSG_FLAGS, "msg.flags at 16");
_Static_assert(offsetof(dropin_rpc_msg_t, sections) == 24, "msg.sections at 24");
_Static_assert(offsetof(dropin_rpc_msg_t, n_sections) == 88, "msg.n_sections at 88");
_Static_assert(sizeof(dropin_rpc_msg_t) == DROPIN_RPC_SIZE, "mongoc_rpc_msg_t is 96 bytes");
_Static_assert(_Alignof(dropin_rpc_msg_t) == 8, "mongoc_rpc_t aligns to 8");
_Static_assert(DROPIN_OFF_REPLY_DOCUMENTS_LEN + 4 <= DROPIN_RPC_SIZE, "reply fits");
_Static_assert(DROPIN_OFF_COMP_MESSAGE_LEN + 4 <= DROPIN_RPC_SIZE, "compressed fits");
#endif

/* ---------------------------------------------------------------------------
 * mongoc_cmd_t, 1.23 (96 bytes, align 8): only the three fields
 * _mongoc_cmd_append_payload_as_array reads.
 * ------------------------------------------------------------------------- */
#define DROPIN_OFF_CMD_COMMAND_NAME 24 /* const char * */
#define DROPIN_OFF_CMD_PAYLOAD 32      /* const uint8_t * */
#define DROPIN_OFF_CMD_PAYLOAD_SIZE 40 /* int32 */

/* mongoc_cmd_t, 1.30 and 2.5 (128 bytes): up to two payloads, each named by
 * its own identifier (mongoc-cmd-private.h of both, checked in the binaries). */
#define DROPIN_OFF_CMD_PAYLOADS_COUNT 32 /* size_t */
#define DROPIN_OFF_CMD_PAYLOADS 40       /* mongoc_cmd_payload_t[2] */
#define DROPIN_CMD_PAYLOAD_STRIDE 24
#define DROPIN_OFF_PAYLOAD_SIZE 0       /* int32 */
#define DROPIN_OFF_PAYLOAD_IDENTIFIER 8 /* const char * */
#define DROPIN_OFF_PAYLOAD_DOCUMENTS 16 /* const uint8_t * */
#define DROPIN_CMD_PAYLOADS_MAX 2

/* ---------------------------------------------------------------------------
 * Raw access to the structs above, at the offsets above. They are libmongoc's
 * structs in memory, so the fields are in host order (what the callers read
 * after _mongoc_rpc_swab_from_le(), a no-op on x86-64); memcpy because
 * nothing guarantees an offset is aligned for its type (the packed members).
 * ------------------------------------------------------------------------- */
static inline const void *
dropin_read_ptr(const void *base, size_t off)
{
   const void *p;
   memcpy(&p, (const uint8_t *) base + off, sizeof p);
   return p;
}

static inline int32_t
dropin_read_i32(const void *base, size_t off)
{
   int32_t v;
   memcpy(&v, (const uint8_t *) base + off, sizeof v);
   return v;
}

static inline size_t
dropin_read_size(const void *base, size_t off)
{
   size_t v;
   memcpy(&v, (const uint8_t *) base + off, sizeof v);
   return v;
}

static inline void
dropin_write_ptr(void *base, size_t off, const void *ptr)
{
   memcpy((uint8_t *) base + off, &ptr, sizeof ptr);
}

static inline void
dropin_write_i32(void *base, size_t off, int32_t v)
{
   memcpy((uint8_t *) base + off, &v, sizeof v);
}

/* ---------------------------------------------------------------------------
 * The interposed functions (exported, unversioned, as libmongoc's are).
 * Both reply paths are exported by every build; the gate decides at the
 * first call which one runs, and the other forwards (it is never called by
 * the libmongoc that lacks it).
 * The rpc is void * so every access goes through the offsets above.
 * ------------------------------------------------------------------------- */
/* libmongoc 1.23 (rpc.c). gather (the send side) is only looked at and
 * forwarded: the drop-in notes which request the thread sent. */
DROPIN_EXPORT void _mongoc_rpc_gather(void *rpc, void *array);
DROPIN_EXPORT bool _mongoc_rpc_scatter(void *rpc, const uint8_t *buf, size_t buflen);
DROPIN_EXPORT bool _mongoc_rpc_decompress(void *rpc_le, uint8_t *buf, size_t buflen);
DROPIN_EXPORT bool _mongoc_rpc_reply_get_first_msg(void *msg, bson_t *reply);
/* Both (cmd.c) */
DROPIN_EXPORT void _mongoc_cmd_append_payload_as_array(const void *cmd, bson_t *out);
/* libmongoc 1.30 and 2.5, mcd-rpc (mcdrpc.c). mcd_rpc_message is opaque:
 * it is only ever read through libmongoc's own exported accessors. The
 * decompress functions take a fourth argument in 2.x only; on 1.30 it is
 * whatever the register holds and is never read. */
DROPIN_EXPORT bool mcd_rpc_message_from_data_in_place(void *rpc, const void *data, size_t length,
                                                      const void **data_end);
DROPIN_EXPORT void *mcd_rpc_message_from_data(const void *data, size_t length, const void **data_end);
DROPIN_EXPORT bool mcd_rpc_message_get_body(const void *rpc, bson_t *reply);
DROPIN_EXPORT bool mcd_rpc_message_decompress(void *rpc, void **data, size_t *data_len, int32_t max_msg_size);
DROPIN_EXPORT bool mcd_rpc_message_decompress_if_necessary(void *rpc, void **data, size_t *data_len,
                                                           int32_t max_msg_size);
DROPIN_EXPORT void mcd_rpc_message_ingress(const void *rpc);
DROPIN_EXPORT uint32_t mcd_rpc_op_msg_get_flag_bits(const void *rpc);

/* ---------------------------------------------------------------------------
 * gate.c: decides once which reply path runs and holds the originals.
 * ------------------------------------------------------------------------- */
typedef enum {
   DROPIN_FORWARD = 0, /* not a libmongoc this drop-in was tested with */
   DROPIN_RPC_123,     /* 1.23.x: _mongoc_rpc_* (rpc.c) */
   DROPIN_MCD_130,     /* 1.30.x: mcd-rpc, decompress(rpc, data, len) */
   DROPIN_MCD_25,      /* 2.5.x: mcd-rpc, decompress(..., max_msg_size) */
} dropin_path_t;

typedef void (*dropin_gather_fn)(void *, void *);
typedef bool (*dropin_scatter_fn)(void *, const uint8_t *, size_t);
typedef bool (*dropin_decompress_fn)(void *, uint8_t *, size_t);
typedef bool (*dropin_get_first_msg_fn)(void *, bson_t *);
typedef void (*dropin_append_payload_fn)(const void *, bson_t *);

typedef struct {
   /* 1.23 */
   dropin_gather_fn gather;
   dropin_scatter_fn scatter;
   dropin_decompress_fn decompress;
   dropin_get_first_msg_fn get_first_msg;
   /* all */
   dropin_append_payload_fn append_payload;
} dropin_originals_t;

/* libmongoc's mcd-rpc functions: the ones the drop-in replaces (forwarded
 * to) and the accessors it reads messages through. */
typedef struct {
   bool (*from_data_in_place)(void *, const void *, size_t, const void **);
   void *(*from_data)(const void *, size_t, const void **);
   bool (*get_body)(const void *, bson_t *);
   bool (*decompress3)(void *, void **, size_t *);
   bool (*decompress4)(void *, void **, size_t *, int32_t);
   bool (*decompress_if_necessary3)(void *, void **, size_t *);
   bool (*decompress_if_necessary4)(void *, void **, size_t *, int32_t);
   void (*ingress)(const void *);
   uint32_t (*flag_bits)(const void *);
   void *(*message_new)(void);
   void (*message_destroy)(void *);
   void (*message_reset)(void *);
   int32_t (*message_length)(const void *);
   int32_t (*request_id)(const void *);
   int32_t (*response_to)(const void *);
   int32_t (*op_code)(const void *);
   int32_t (*original_opcode)(const void *);
   const void *(*compressed_message)(const void *);
   size_t (*sections_count)(const void *);
   uint8_t (*section_kind)(const void *, size_t);
   const void *(*section_body)(const void *, size_t);
   const char *(*section_identifier)(const void *, size_t);
} dropin_mcd_t;

/* Who called an interposed function, as every one of them asks first. */
typedef struct {
   /* The reply path this process runs; DROPIN_FORWARD (or the other path's
    * value) means: forward to libmongoc's own function. */
   dropin_path_t path;
   /* The caller is code of the libmongoc the gate found. libmongoc calls the
    * parse functions only on what it receives from a server, so such a call
    * parses a reply; any other caller (a mock server in a test binary, a
    * proxy) may be parsing a request and gets the sections as on the wire.
    * Always false when path is DROPIN_FORWARD. */
   bool from_mongoc;
} dropin_caller_t;

/* gate.c's answers, published by its decision; read through
 * dropin_caller_at() only. */
extern atomic_int dropin_gate_state; /* the path + 1; 0 while undecided */
extern uintptr_t dropin_mongoc_code_lo, dropin_mongoc_code_hi;

/* The first calls (gate.c): decides, once, then answers as
 * dropin_caller_at(). */
dropin_caller_t dropin_caller_first(const void *return_address);

/* The caller whose return address is return_address: the gate decides
 * first, if it has not yet (the address finds libmongoc when it was
 * dlopen()ed privately, which neither RTLD_DEFAULT nor RTLD_NEXT can see),
 * and only then is the span of libmongoc's code read, because deciding is
 * what publishes it: a thread that read it before could race with the
 * thread that writes it and take the wrong contract. The acquire load pairs
 * with the decision's release store. Inline, as it runs on every reply: a
 * load, a test and (where from_mongoc is used) one compare. */
static inline dropin_caller_t
dropin_caller_at(const void *return_address)
{
   int state = atomic_load_explicit(&dropin_gate_state, memory_order_acquire);
   dropin_caller_t caller;

   if (__builtin_expect(state == 0, 0)) {
      return dropin_caller_first(return_address);
   }
   caller.path = (dropin_path_t) (state - 1);
   /* One compare: an address below lo wraps around above the span. */
   caller.from_mongoc = caller.path != DROPIN_FORWARD && (uintptr_t) return_address - dropin_mongoc_code_lo <
                                                            dropin_mongoc_code_hi - dropin_mongoc_code_lo;
   return caller;
}

/* What every interposed function calls, once, before anything else. The
 * return address has to be read in the interposed function's own frame:
 * __builtin_return_address(0) in a helper is that helper's return address
 * (inside the drop-in), and in an inline function GCC leaves it to the
 * inliner which frame it means. A macro takes it where it is expanded, and
 * dropin_caller_at() classifies it. */
#define DROPIN_CALLER() dropin_caller_at(__builtin_return_address(0))

/* True when libmongoc's mcd_rpc_message_decompress takes max_msg_size
 * (2.4 and later); for forwarding to the original with its own arity. */
bool dropin_mcd_decompress_takes_max(void);

/* The originals (resolved by the first dropin_caller_at() call). Members
 * may be NULL when libmongoc lacks them; callers then fail safely. */
const dropin_originals_t *dropin_originals(void);
const dropin_mcd_t *dropin_mcd(void);

/* OPMSG_MONGOC_DEBUG level (0 when unset). */
int dropin_debug_level(void);

/* One diagnostic line on stderr, prefixed "opmsg-mongoc: ". */
void dropin_log(const char *fmt, ...) OPMSG_DROPIN_PRINTF(1, 2);

/* A refused message, said with OPMSG_MONGOC_DEBUG (what: "reply",
 * "OP_MSG", ...): libopmsg's reason and error name, or a reason of the
 * drop-in's. Both return false, for `return dropin_reject(...)`. */
bool dropin_reject(const char *what, const bson_error_t *error);
bool dropin_reject_msg(const char *what, const char *message);

/* The parse options every message is checked with: for a reply (what
 * libmongoc reads from a server: OPMSG_PARSE_REPLY) or for anything else. */
const opmsg_options_t *dropin_parse_options(bool reply);

/* ---------------------------------------------------------------------------
 * slot.c: the per-thread merged body (1.23 only: its callers read
 * sections[0] straight from the struct, so it must live in drop-in memory).
 * ------------------------------------------------------------------------- */

/* Frees the calling thread's merged body, if any. */
void dropin_slot_release(void);
/* Returns a buffer of at least size bytes owned by the calling thread until
 * its next dropin_slot_release() or its exit; NULL when allocation fails. */
uint8_t *dropin_slot_acquire(size_t size);

#endif /* OPMSG_DROPIN_PRIVATE_H */
