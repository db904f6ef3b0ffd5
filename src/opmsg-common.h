/*
 * opmsg-common.h - what every source file of the library shares: the
 * compiler's hints, the error report, and the limits of one call.
 *
 * Not installed. Each module has its own private header (opmsg-document.h,
 * opmsg-keyset.h, opmsg-rules.h, opmsg-msg.h, opmsg-array.h,
 * opmsg-checksum.h, opmsg-parse.h); a source file includes the ones it uses.
 * Tests may include them (they link the static library).
 */
#ifndef OPMSG_COMMON_H
#define OPMSG_COMMON_H

#include <opmsg/opmsg.h>

#include "opmsg-bytes.h"

#include <string.h>

#if defined(__GNUC__)
#define OPMSG_LIKELY(x) __builtin_expect(!!(x), 1)
#define OPMSG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OPMSG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define OPMSG_COLD __attribute__((cold))
#define OPMSG_NOINLINE __attribute__((noinline))
#define OPMSG_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define OPMSG_LIKELY(x) (x)
#define OPMSG_UNLIKELY(x) (x)
#define OPMSG_PRINTF(f, a)
#define OPMSG_COLD
#define OPMSG_NOINLINE
#define OPMSG_ALWAYS_INLINE inline
#endif

/* The number of trailing zero bits of v, which is not 0. */
static inline unsigned
opmsg_ctz64(uint64_t v)
{
#if defined(__GNUC__)
   return (unsigned) __builtin_ctzll(v);
#else
   unsigned n = 0;
   while (!(v & 1)) {
      v >>= 1;
      n++;
   }
   return n;
#endif
}

/* Fills *error (when not NULL) with OPMSG_ERROR_DOMAIN, code and a message.
 * Always returns false so callers can `return opmsg_fail(...)`. For the
 * mistakes of a caller (an argument, memory); a fault of the bytes goes
 * through a report context (opmsg_report()), which records where it is. */
bool opmsg_fail(bson_error_t *error, opmsg_error_code_t code, const char *fmt, ...) OPMSG_PRINTF(3, 4);

/* How many bytes of a key or identifier opmsg_printable() quotes, and the
 * room its output needs: each byte as \xNN at worst, "..." and the NUL. */
#define OPMSG_PRINTABLE_BYTES 48
#define OPMSG_PRINTABLE_SIZE 200

/* Copies at most OPMSG_PRINTABLE_BYTES bytes of a key or identifier into
 * out (OPMSG_PRINTABLE_SIZE bytes) for an error message, escaping every
 * byte that is not printable ASCII as \xNN, so a message stays on one line
 * whatever the wire held. Returns out. */
const char *opmsg_printable(char *out, const char *name, size_t len);

/* ---------------------------------------------------------------------------
 * The report context (report.c)
 *
 * A fault as data, the way libbson's validate.c keeps it: which rule was
 * broken and the byte offset in the message where it was found, and the
 * message text for the caller's bson_error_t when there is one. One context
 * goes down a whole call (a parse, a plan of the encoder) in place of an
 * error pointer, an offset base and the side each check serves.
 * ------------------------------------------------------------------------- */
/* The codes and words a caller gives the faults of the rules shared by the
 * parser and the encoder (rules.c), where the two part ways. A rule says
 * what broke and where; the side it reports for turns that into its own
 * code and noun. The parser's is opmsg_parser_side, the encoder's
 * opmsg_encoder_side: one table of the two, side by side, in rules.c. */
typedef struct {
   /* What the messages call the body: the parser's "body", the encoder's
    * "command" (its caller knows the body as the command it handed in). */
   const char *body;
   /* The code of any fault in the body's bytes, instead of the rule's own;
    * OPMSG_OK: the rule's own (build.h promises OPMSG_ERR_BAD_COMMAND). */
   opmsg_error_code_t body_fault;
   /* A body key twice. */
   opmsg_error_code_t duplicate_key;
   /* A framed sequence document above max_bson_size. */
   opmsg_error_code_t doc_over_limit;
   /* The flag bits opmsg does not know that fail a message: the required
    * ones on receipt, every one when sending (a sender sets the bits it
    * does not use to 0). */
   uint32_t flags_refused;
} opmsg_side_t;

extern const opmsg_side_t opmsg_parser_side;
extern const opmsg_side_t opmsg_encoder_side;

typedef struct {
   /* What a fault writes: which rule broke (as the side's code) and where. */
   bson_error_t *error;     /* the message, when not NULL */
   opmsg_error_code_t code; /* the rule broken; OPMSG_OK while none is */
   size_t offset;           /* where: its byte offset in the message */

   /* What the caller sets (opmsg_report_init()). */
   /* The bytes at hand and their offset in the message: a fault at p is at
    * start_off + (p - start). The parser's are the message itself; the
    * encoder's, whose message is not written yet, the command (as if at its
    * place in the message) or a sequence's documents. */
   const uint8_t *start;
   size_t start_off;
   /* The caller's codes and words for the faults where the sides part. */
   const opmsg_side_t *side;
} opmsg_report_t;

static inline void
opmsg_report_init(opmsg_report_t *r, bson_error_t *error, const uint8_t *start, size_t start_off,
                  const opmsg_side_t *side)
{
   r->error = error;
   r->code = OPMSG_OK;
   r->offset = 0;
   r->start = start;
   r->start_off = start_off;
   r->side = side;
}

/* The offset in the message of the byte at p, one of the bytes at hand. */
static inline size_t
opmsg_report_at(const opmsg_report_t *r, const void *p)
{
   return r->start_off + (size_t) ((const uint8_t *) p - r->start);
}

/* Records a fault of the rule code at offset and writes the message into
 * r->error when there is one. Always returns false, for
 * `return opmsg_report(...)`. */
bool opmsg_report(opmsg_report_t *r, opmsg_error_code_t code, size_t offset, const char *fmt, ...)
   OPMSG_PRINTF(4, 5) OPMSG_COLD;

/* The fault just reported, under the caller's code instead of the rule's
 * (when code is not OPMSG_OK): the words stay. Always returns false. */
bool opmsg_report_as(opmsg_report_t *r, opmsg_error_code_t code) OPMSG_COLD;

/* A rule's verdict as data, before any words: the code of the rule broken
 * and the fault's offset from the bytes the check was given. The checks
 * that are one function for the fast path and the report
 * (opmsg_doc_frame_check()) fill it; the report says it in words. */
typedef struct {
   opmsg_error_code_t code;
   size_t at;
} opmsg_fault_t;

/* The full check level's walk of every nested level of a framed document
 * (validate.c's opmsg_doc_validate_deep()), what naming it in messages. */
typedef bool (*opmsg_deep_check_fn)(opmsg_report_t *r, const uint8_t *doc, uint32_t len, const char *what);

/* The limits in force for one call, with defaults applied: the parser's
 * from opmsg_options_t (opmsg_limits_from()), the encoder's from
 * opmsg_build_t, both through opmsg_limits_set(), so both sides hold a
 * message to one bound. */
typedef struct {
   size_t max_message_size;
   size_t max_bson_size;
   uint32_t flags; /* OPMSG_PARSE_* bits, as the caller gave them */
   /* How far inside the documents to look: spec frames them, top-level
    * reads their top-level elements, full is top-level with deep set. Ask
    * through opmsg_checks_top() and opmsg_checks_deep(). */
   opmsg_check_t check;
   /* The full level's nested walk, NULL below it: opmsg_limits_full() sets
    * it. The one way into validate.c, so that a program that never asks for
    * the full level does not link validate.c at all. */
   opmsg_deep_check_fn deep;
} opmsg_limits_t;

/* 0 means the default; messageLength is an int32, and so is the length of
 * a body, which may be OPMSG_BODY_ALLOWANCE above max_bson_size: both are
 * capped to fit. The check level is top-level (the encoder's, for a
 * command): set check to OPMSG_CHECK_SPEC, or call opmsg_limits_full(),
 * for another. flags are
 * kept as given (OPMSG_PARSE_FULL_VALIDATE is opmsg_limits_from()'s to
 * read). Inline, since every parse sets its limits. */
static inline void
opmsg_limits_set(opmsg_limits_t *limits, size_t max_message_size, size_t max_bson_size, uint32_t flags)
{
   limits->max_message_size = max_message_size ? max_message_size : OPMSG_DEFAULT_MAX_MESSAGE_SIZE;
   limits->max_bson_size = max_bson_size ? max_bson_size : OPMSG_DEFAULT_MAX_BSON_SIZE;
   limits->flags = flags;
   limits->check = OPMSG_CHECK_TOP_LEVEL;
   limits->deep = NULL;
   /* messageLength is an int32 on the wire, and so is every BSON length,
    * a body's too, which may be OPMSG_BODY_ALLOWANCE above max_bson_size. */
   if (limits->max_message_size > (size_t) INT32_MAX) {
      limits->max_message_size = (size_t) INT32_MAX;
   }
   if (limits->max_bson_size > (size_t) INT32_MAX - OPMSG_BODY_ALLOWANCE) {
      limits->max_bson_size = (size_t) INT32_MAX - OPMSG_BODY_ALLOWANCE;
   }
}

/* The one mapping from a check level (opmsg_check_t) to what it checks,
 * for every opcode, the parser's and the encoder's: each place that asks
 * about a level asks here. The levels are ordered, each checking all that
 * the one before it does:
 *  - known: one of the levels (opmsg_options_t.check is a caller's int);
 *  - frames only (spec, 0): each document's frame, and the body's keys when
 *    there are sequences to place; nothing else of the documents;
 *  - top: also every top-level element of every document, and no
 *    duplicate key in the body (top-level and full);
 *  - deep: also every nested element (full; opmsg_limits_full() sets the
 *    walk). */
#define OPMSG_CHECK_LAST OPMSG_CHECK_FULL

static inline bool
opmsg_check_known(opmsg_check_t check)
{
   return (unsigned) check <= (unsigned) OPMSG_CHECK_LAST;
}

static inline bool
opmsg_check_frames_only(opmsg_check_t check)
{
   return check == OPMSG_CHECK_SPEC;
}

static inline bool
opmsg_check_top(opmsg_check_t check)
{
   return opmsg_check_known(check) && !opmsg_check_frames_only(check);
}

static inline bool
opmsg_check_deep(opmsg_check_t check)
{
   return check == OPMSG_CHECK_FULL;
}

/* The limits' level, through the mapping above. */
static inline bool
opmsg_checks_top(const opmsg_limits_t *limits)
{
   return opmsg_check_top(limits->check);
}

static inline bool
opmsg_checks_deep(const opmsg_limits_t *limits)
{
   return limits->deep != NULL;
}

/* The largest body (command) the limits allow. */
static inline size_t
opmsg_body_limit(const opmsg_limits_t *limits)
{
   return limits->max_bson_size + OPMSG_BODY_ALLOWANCE;
}

#endif /* OPMSG_COMMON_H */
