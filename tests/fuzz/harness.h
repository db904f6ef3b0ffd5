/*
 * harness.h - shared by the libFuzzer targets and their replay driver.
 *
 * Every target is one LLVMFuzzerTestOneInput(). Built with libFuzzer it is
 * fuzzed; built without it (the normal build) replay_main.c calls it over
 * the committed corpus and regressions so `make check` replays them all.
 * A broken property calls fuzz_fail(), which aborts: libFuzzer saves the
 * input as a reproducer, and the replay test fails.
 */
#ifndef OPMSG_FUZZ_HARNESS_H
#define OPMSG_FUZZ_HARNESS_H

#include <opmsg/opmsg.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(__GNUC__)
#define FUZZ_NORETURN __attribute__((noreturn))
#define FUZZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FUZZ_NORETURN
#define FUZZ_PRINTF(f, a)
#endif

/* Prints where and why, then aborts. */
FUZZ_NORETURN void fuzz_fail(const char *file, int line, const char *fmt, ...) FUZZ_PRINTF(3, 4);

#define FUZZ_CHECK(cond)                                              \
   do {                                                               \
      if (!(cond)) {                                                  \
         fuzz_fail(__FILE__, __LINE__, "property broken: %s", #cond); \
      }                                                               \
   } while (0)

#define FUZZ_CHECK_MSG(cond, ...)                    \
   do {                                              \
      if (!(cond)) {                                 \
         fuzz_fail(__FILE__, __LINE__, __VA_ARGS__); \
      }                                              \
   } while (0)

/*
 * Options from one control byte, so the fuzzer explores every mode:
 *   bit 0  OPMSG_PARSE_FULL_VALIDATE
 *   bit 1  OPMSG_PARSE_SKIP_CHECKSUM (mutated messages rarely keep a valid
 *          CRC-32C; this lets the fuzzer past the checksum)
 *   bit 2  OPMSG_PARSE_REQUEST
 *   bits 3-4  limits: 0 defaults; 1 max_message_size 4096; 2 max_bson_size
 *          512; 3 both small (1024 / 128), so the limit paths are reached
 *   bits 6-7  the check level unless bit 0 asks for full: 00 top-level,
 *          01, 10 and 11 spec (the default, which the preload uses).
 *          Targets that give bits 5-7 a meaning of their own share bits
 *          6-7 with it: both vary anyway.
 * fuzz_parse.c also tries every input at the spec level (its lenient
 * check), so each level meets every input there.
 */
void fuzz_options_from_byte(uint8_t control, opmsg_options_t *opts);
/* True at the level that only frames the documents (spec). */
bool fuzz_frames_only(const opmsg_options_t *opts);

/* Fails unless *error is a well-formed opmsg error: our domain, a known
 * code with a name, and a non-empty message. */
void fuzz_check_error(const bson_error_t *error);

/* ---------------------------------------------------------------------------
 * Allocation accounting. fuzz_init() installs a libbson memory vtable that
 * counts what goes through bson_malloc() and friends (which is all opmsg
 * allocates). Between fuzz_mem_begin() and fuzz_mem_end() the largest single
 * request and the peak of live bytes are recorded.
 * ------------------------------------------------------------------------- */

void fuzz_init(void);

typedef struct {
   size_t largest;    /* largest single malloc/calloc/realloc request */
   size_t peak;       /* peak of bytes live above the level at begin */
   size_t live_delta; /* bytes still live at end minus at begin */
   size_t count;      /* number of allocations */
} fuzz_mem_stats_t;

void fuzz_mem_begin(void);
void fuzz_mem_end(fuzz_mem_stats_t *stats);

/* ---------------------------------------------------------------------------
 * Properties shared by several targets.
 * ------------------------------------------------------------------------- */

/*
 * Given an accepted message: merges it into a buffer and into a bson_t,
 * checks both agree, that bson_validate() passes when it was parsed with full
 * validation, that the sequence and document iterators agree with the
 * header fields, and that the zero-copy view rebuilt with bson_append_*
 * gives the same bytes. Returns the merged bytes (free() them) with
 * their length in *merged_len, or NULL when the message has no merged form
 * (OP_COMPRESSED, an OP_REPLY without exactly one document).
 */
uint8_t *fuzz_check_accepted(const opmsg_msg_t *msg, const opmsg_options_t *opts, size_t *merged_len);

/*
 * Given an accepted OP_MSG and its merged bytes: encodes it again with the
 * encoder (opmsg/build.h: the body as the command, each sequence as a raw
 * run, the same IDs, the flags the encoder may set, the same limits) and
 * checks the result is as long as the original, parses with the same
 * options (checksum verified) and merges to the same bytes. Nothing for
 * other opcodes.
 */
void fuzz_check_reencode(const opmsg_msg_t *msg, const opmsg_options_t *opts, const uint8_t *merged, size_t merged_len);

/* A zeroed array of n bson_t with the alignment bson_t requires (128
 * bytes: calloc's is not enough). Free with free(). */
bson_t *fuzz_bson_array(size_t n);

/* Reads a little-endian integer from fuzzer bytes. */
uint32_t fuzz_u32(const uint8_t *p);

#endif
