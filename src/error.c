/*
 * error.c - the names of the error codes, options and version. (Reporting
 * an error is report.c's; the limits taken from the options are rules.c's.)
 */
#include "opmsg-common.h"


/* Indexed by opmsg_error_code_t. These names are part of the CLI's contract
 * ("opmsg: <name>: <detail>"): never rename one. */
static const char *const error_names[OPMSG_ERR_COUNT_] = {
   [OPMSG_OK] = "ok",
   [OPMSG_ERR_TRUNCATED] = "truncated",
   [OPMSG_ERR_LENGTH_MISMATCH] = "length-mismatch",
   [OPMSG_ERR_LENGTH_TOO_SMALL] = "length-too-small",
   [OPMSG_ERR_LENGTH_TOO_LARGE] = "length-too-large",
   [OPMSG_ERR_UNKNOWN_OPCODE] = "unknown-opcode",
   [OPMSG_ERR_REQUIRED_FLAGS] = "required-flags",
   [OPMSG_ERR_CHECKSUM_MISSING] = "checksum-missing",
   [OPMSG_ERR_CHECKSUM_MISMATCH] = "checksum-mismatch",
   [OPMSG_ERR_NO_BODY] = "no-body",
   [OPMSG_ERR_MULTIPLE_BODIES] = "multiple-bodies",
   [OPMSG_ERR_UNKNOWN_SECTION] = "unknown-section-kind",
   [OPMSG_ERR_SECTION_TRUNCATED] = "section-truncated",
   [OPMSG_ERR_SEQUENCE_SIZE] = "sequence-size",
   [OPMSG_ERR_SEQUENCE_IDENTIFIER] = "sequence-identifier",
   [OPMSG_ERR_SEQUENCE_OVERRUN] = "sequence-overrun",
   [OPMSG_ERR_DUPLICATE_IDENTIFIER] = "duplicate-identifier",
   [OPMSG_ERR_IDENTIFIER_CLASH] = "identifier-clash",
   [OPMSG_ERR_TRAILING_BYTES] = "trailing-bytes",
   [OPMSG_ERR_DOCUMENT_LENGTH] = "document-length",
   [OPMSG_ERR_DOCUMENT_TERMINATOR] = "document-terminator",
   [OPMSG_ERR_DOCUMENT_ELEMENT] = "document-element",
   [OPMSG_ERR_DUPLICATE_KEY] = "duplicate-key",
   [OPMSG_ERR_DOCUMENT_TOO_LARGE] = "document-too-large",
   [OPMSG_ERR_INVALID_UTF8] = "invalid-utf8",
   [OPMSG_ERR_INVALID_BOOLEAN] = "invalid-boolean",
   [OPMSG_ERR_NESTING_TOO_DEEP] = "nesting-too-deep",
   [OPMSG_ERR_INVALID_VALUE] = "invalid-value",
   [OPMSG_ERR_INVALID_ARGUMENT] = "invalid-argument",
   [OPMSG_ERR_BUFFER_TOO_SMALL] = "buffer-too-small",
   [OPMSG_ERR_WRONG_OPCODE] = "wrong-opcode",
   [OPMSG_ERR_NO_MEMORY] = "no-memory",
   [OPMSG_ERR_OUTPUT_TOO_LARGE] = "output-too-large",
   [OPMSG_ERR_UNKNOWN_COMPRESSOR] = "unknown-compressor",
   [OPMSG_ERR_COMPRESSOR_UNAVAILABLE] = "compressor-unavailable",
   [OPMSG_ERR_UNCOMPRESSED_SIZE] = "uncompressed-size",
   [OPMSG_ERR_DECOMPRESS] = "decompress",
   [OPMSG_ERR_NESTED_COMPRESSION] = "nested-compression",
   [OPMSG_ERR_BAD_ORIGINAL_OPCODE] = "bad-original-opcode",
   [OPMSG_ERR_COMPRESSION_FORBIDDEN] = "compression-forbidden",
   [OPMSG_ERR_COMPRESS] = "compress",
   [OPMSG_ERR_DOCUMENT_OVER_LIMIT] = "document-over-limit",
   [OPMSG_ERR_BAD_COMMAND] = "bad-command",
   [OPMSG_ERR_STREAM_TRUNCATED] = "stream-truncated",
   [OPMSG_ERR_EXHAUST_SEQUENCE] = "exhaust-sequence",
   [OPMSG_ERR_QUERY_NAMESPACE] = "query-namespace",
   [OPMSG_ERR_REPLY_COUNT] = "reply-count",
   [OPMSG_ERR_MISSING_DB] = "missing-db",
   [OPMSG_ERR_IO] = "io",
   [OPMSG_ERR_NOT_A_REPLY] = "not-a-reply",
};

const char *
opmsg_error_name(uint32_t code)
{
   if (code < OPMSG_ERR_COUNT_ && error_names[code]) {
      return error_names[code];
   }
   return "unknown";
}

void
opmsg_options_init(opmsg_options_t *opts)
{
   memset(opts, 0, sizeof *opts);
   opts->check = OPMSG_CHECK_SPEC;
}

const char *
opmsg_version_string(void)
{
   return OPMSG_VERSION_STRING;
}

unsigned
opmsg_version_number(void)
{
   return OPMSG_VERSION_NUMBER;
}
