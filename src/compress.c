/*
 * compress.c - OP_COMPRESSED: framing checks (called by opmsg_parse()),
 * decompression and compression through the codecs this build has
 * (codecs[]: noop and whichever of snappy, zlib and zstd, each in its own
 * file, codec-*.c, behind opmsg-codec.h's table of functions).
 */
#include "opmsg-codec.h"
#include "opmsg-document.h"
#include "opmsg-msg.h"
#include "opmsg-parse.h"

/* The largest value a messageLength can carry. */
#define OPMSG_INT32_MAX_SIZE ((size_t) INT32_MAX)

/* ---------------------------------------------------------------------------
 * Parsing (framing only)
 * ------------------------------------------------------------------------- */

/*
 * OP_COMPRESSED: int32 originalOpcode | int32 uncompressedSize |
 * uint8 compressorId | compressed bytes.
 *
 * Everything that decides how much memory decompressing takes is checked
 * here, before anyone allocates: 16 + uncompressedSize is the size of the
 * rebuilt message, so it is bounded by the message size limit.
 */
bool
opmsg_parse_compressed(opmsg_msg_t *msg, const opmsg_limits_t *limits, opmsg_report_t *r)
{
   int32_t orig = opmsg_read_i32(msg->data + OPMSG_OFF_ORIGINAL_OPCODE);
   int32_t usize = opmsg_read_i32(msg->data + OPMSG_OFF_UNCOMPRESSED_SIZE);
   uint8_t id = msg->data[OPMSG_OFF_COMPRESSOR_ID];
   size_t min_body;

   msg->flags = 0;
   msg->body = NULL;
   msg->body_len = 0;
   if (orig == OPMSG_OP_COMPRESSED) {
      return opmsg_report(r, OPMSG_ERR_NESTED_COMPRESSION, OPMSG_OFF_ORIGINAL_OPCODE,
                          "OP_COMPRESSED originalOpcode at offset %d is OP_COMPRESSED again",
                          OPMSG_OFF_ORIGINAL_OPCODE);
   }
   if (orig != OPMSG_OP_MSG && orig != OPMSG_OP_QUERY && orig != OPMSG_OP_REPLY) {
      return opmsg_report(r, OPMSG_ERR_BAD_ORIGINAL_OPCODE, OPMSG_OFF_ORIGINAL_OPCODE,
                          "OP_COMPRESSED originalOpcode %" PRId32 " at offset %d is not OP_MSG, OP_QUERY or OP_REPLY",
                          orig, OPMSG_OFF_ORIGINAL_OPCODE);
   }
   if ((limits->flags & OPMSG_PARSE_REPLY) && !opmsg_is_reply_opcode(orig)) {
      return opmsg_report(r, OPMSG_ERR_NOT_A_REPLY, OPMSG_OFF_ORIGINAL_OPCODE,
                          "OP_COMPRESSED originalOpcode %" PRId32
                          " at offset %d is a request: a server never replies with it",
                          orig, OPMSG_OFF_ORIGINAL_OPCODE);
   }
   if (id > OPMSG_COMPRESSOR_ZSTD) {
      return opmsg_report(r, OPMSG_ERR_UNKNOWN_COMPRESSOR, OPMSG_OFF_COMPRESSOR_ID,
                          "OP_COMPRESSED compressorId %u at offset %d is reserved", (unsigned) id,
                          OPMSG_OFF_COMPRESSOR_ID);
   }
   min_body = opmsg_min_length(orig) - OPMSG_HEADER_SIZE;
   if (usize < 0 || (size_t) usize < min_body) {
      return opmsg_report(r, OPMSG_ERR_UNCOMPRESSED_SIZE, OPMSG_OFF_UNCOMPRESSED_SIZE,
                          "OP_COMPRESSED uncompressedSize %" PRId32
                          " at offset %d is below the %zu bytes the original opcode needs",
                          usize, OPMSG_OFF_UNCOMPRESSED_SIZE, min_body);
   }
   if ((size_t) usize + OPMSG_HEADER_SIZE > limits->max_message_size) {
      return opmsg_report(r, OPMSG_ERR_UNCOMPRESSED_SIZE, OPMSG_OFF_UNCOMPRESSED_SIZE,
                          "OP_COMPRESSED uncompressedSize %" PRId32
                          " at offset %d makes a message larger than the limit of %zu bytes",
                          usize, OPMSG_OFF_UNCOMPRESSED_SIZE, limits->max_message_size);
   }
   msg->op_compressed.original_opcode = orig;
   msg->op_compressed.uncompressed_size = usize;
   msg->op_compressed.compressor_id = id;
   msg->op_compressed.compressed = msg->data + OPMSG_COMPRESSED_OVERHEAD;
   msg->op_compressed.compressed_len = msg->len - OPMSG_COMPRESSED_OVERHEAD;
   return true;
}

/* ---------------------------------------------------------------------------
 * Codecs
 *
 * One entry per compressorId in codecs[] below, each codec's file
 * (codec-*.c) built only when its library is (OPMSG_WITH_SNAPPY, _ZLIB,
 * _ZSTD in CMakeLists.txt, as libmongoc's ENABLE_SNAPPY, ...): an id whose
 * entry is empty is OPMSG_ERR_COMPRESSOR_UNAVAILABLE to every function here.
 * ------------------------------------------------------------------------- */

bool
opmsg_codec_fail_size(bson_error_t *error, const char *codec, const char *what, size_t usize)
{
   return opmsg_fail(error, OPMSG_ERR_UNCOMPRESSED_SIZE,
                     "%s payload at offset %d decompresses to %s than "
                     "uncompressedSize %zu",
                     codec, OPMSG_COMPRESSED_OVERHEAD, what, usize);
}

bool
opmsg_codec_fail_payload(bson_error_t *error, const char *codec, const char *what)
{
   return opmsg_fail(error, OPMSG_ERR_DECOMPRESS, "%s payload at offset %d %s", codec, OPMSG_COMPRESSED_OVERHEAD, what);
}

bool
opmsg_codec_fail_declared(bson_error_t *error, const char *codec, unsigned long long declared, size_t usize)
{
   return opmsg_fail(error, OPMSG_ERR_UNCOMPRESSED_SIZE,
                     "%s payload at offset %d declares %llu bytes, uncompressedSize says %zu", codec,
                     OPMSG_COMPRESSED_OVERHEAD, declared, usize);
}

/* Indexed by compressorId; an id this build has no codec for stays NULL. */
static const opmsg_codec_t *const codecs[OPMSG_COMPRESSOR_ZSTD + 1] = {
   [OPMSG_COMPRESSOR_NOOP] = &opmsg_codec_noop,
#ifdef OPMSG_HAVE_SNAPPY
   [OPMSG_COMPRESSOR_SNAPPY] = &opmsg_codec_snappy,
#endif
#ifdef OPMSG_HAVE_ZLIB
   [OPMSG_COMPRESSOR_ZLIB] = &opmsg_codec_zlib,
#endif
#ifdef OPMSG_HAVE_ZSTD
   [OPMSG_COMPRESSOR_ZSTD] = &opmsg_codec_zstd,
#endif
};

/* ---------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------- */

static const char *const compressor_names[] = {"noop", "snappy", "zlib", "zstd"};

const char *
opmsg_compressor_name(int compressor_id)
{
   if (compressor_id < 0 || compressor_id > OPMSG_COMPRESSOR_ZSTD) {
      return NULL;
   }
   return compressor_names[compressor_id];
}

int
opmsg_compressor_from_name(const char *name)
{
   int i;

   if (!name) {
      return -1;
   }
   for (i = 0; i <= OPMSG_COMPRESSOR_ZSTD; i++) {
      if (strcmp(name, compressor_names[i]) == 0) {
         return i;
      }
   }
   return -1;
}

bool
opmsg_compressor_available(int compressor_id)
{
   return compressor_id >= 0 && compressor_id <= OPMSG_COMPRESSOR_ZSTD && codecs[compressor_id] != NULL;
}

/* The id is known (0-3) but this build has no codec for it. */
static bool
fail_unavailable(bson_error_t *error, int id)
{
   return opmsg_fail(error, OPMSG_ERR_COMPRESSOR_UNAVAILABLE,
                     "compressorId %d is %s, which this libopmsg was built without", id, compressor_names[id]);
}

/* Compresses src into dst[0..*dst_len); *dst_len becomes the size written.
 * Running out of room is OPMSG_ERR_BUFFER_TOO_SMALL, or with capped (the
 * room was cut to what messageLength can describe, not the caller's
 * buffer) OPMSG_ERR_OUTPUT_TOO_LARGE. id is an available codec's. */
static bool
codec_encode(int id, int level, const uint8_t *src, size_t src_len, uint8_t *dst, size_t *dst_len, bool capped,
             bson_error_t *error)
{
   opmsg_codec_rc_t rc = codecs[id]->encode(level, src, src_len, dst, dst_len, error);

   if (rc != OPMSG_CODEC_NO_ROOM) {
      return rc == OPMSG_CODEC_DONE;
   }
   if (capped) {
      return opmsg_fail(error, OPMSG_ERR_OUTPUT_TOO_LARGE,
                        "the %s payload does not fit the %zu bytes an OP_COMPRESSED message can hold",
                        compressor_names[id], *dst_len);
   }
   return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "%zu bytes are not enough for the %s payload", *dst_len,
                     compressor_names[id]);
}

/* ---------------------------------------------------------------------------
 * Decompression
 * ------------------------------------------------------------------------- */

static bool
check_compressed(const opmsg_msg_t *msg, bson_error_t *error)
{
   if (!msg) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg is NULL");
   }
   if (msg->opcode != OPMSG_OP_COMPRESSED) {
      return opmsg_fail(error, OPMSG_ERR_WRONG_OPCODE, "opcode %" PRId32 " is not OP_COMPRESSED", msg->opcode);
   }
   if (msg->op_compressed.uncompressed_size < 0) {
      return opmsg_fail(error, OPMSG_ERR_UNCOMPRESSED_SIZE, "uncompressedSize %" PRId32 " is negative",
                        msg->op_compressed.uncompressed_size);
   }
   if (msg->op_compressed.compressor_id > OPMSG_COMPRESSOR_ZSTD) {
      return opmsg_fail(error, OPMSG_ERR_UNKNOWN_COMPRESSOR, "compressorId %u is reserved",
                        (unsigned) msg->op_compressed.compressor_id);
   }
   if (!opmsg_compressor_available(msg->op_compressed.compressor_id)) {
      return fail_unavailable(error, msg->op_compressed.compressor_id);
   }
   /* opmsg_parse() checked this; a hand-filled msg must not smuggle an
    * OP_COMPRESSED into the rebuilt header. */
   if (msg->op_compressed.original_opcode == OPMSG_OP_COMPRESSED) {
      return opmsg_fail(error, OPMSG_ERR_NESTED_COMPRESSION, "originalOpcode is OP_COMPRESSED again");
   }
   if (msg->op_compressed.original_opcode != OPMSG_OP_MSG && msg->op_compressed.original_opcode != OPMSG_OP_QUERY &&
       msg->op_compressed.original_opcode != OPMSG_OP_REPLY) {
      return opmsg_fail(error, OPMSG_ERR_BAD_ORIGINAL_OPCODE, "originalOpcode %" PRId32 " cannot be rebuilt",
                        msg->op_compressed.original_opcode);
   }
   return true;
}

size_t
opmsg_decompressed_size(const opmsg_msg_t *msg)
{
   if (!msg || msg->opcode != OPMSG_OP_COMPRESSED || msg->op_compressed.uncompressed_size < 0) {
      return 0;
   }
   return OPMSG_HEADER_SIZE + (size_t) msg->op_compressed.uncompressed_size;
}

/* Before a byte is allocated for it, uncompressedSize against what the
 * payload itself says it will decompress to: noop, snappy and zstd (when
 * the frame declares its size) know their output size exactly; zlib's is
 * bounded by its largest possible ratio. msg passed check_compressed(). */
static bool
check_declared_size(const opmsg_msg_t *msg, bson_error_t *error)
{
   return codecs[msg->op_compressed.compressor_id]->check_size(msg->op_compressed.compressed,
                                                               msg->op_compressed.compressed_len,
                                                               (size_t) msg->op_compressed.uncompressed_size, error);
}

bool
opmsg_decompress_into(const opmsg_msg_t *msg, uint8_t *buf, size_t buf_len, size_t *written, bson_error_t *error)
{
   size_t total;

   if (!check_compressed(msg, error)) {
      return false;
   }
   if (!check_declared_size(msg, error)) {
      return false;
   }
   total = opmsg_decompressed_size(msg);
   if (!buf || buf_len < total) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL,
                        "the decompressed message needs %zu bytes, the "
                        "buffer has %zu",
                        total, buf ? buf_len : 0);
   }
   opmsg_write_u32(buf, (uint32_t) total);
   opmsg_write_u32(buf + OPMSG_OFF_REQUEST_ID, (uint32_t) msg->request_id);
   opmsg_write_u32(buf + OPMSG_OFF_RESPONSE_TO, (uint32_t) msg->response_to);
   opmsg_write_u32(buf + OPMSG_OFF_OPCODE, (uint32_t) msg->op_compressed.original_opcode);
   if (!codecs[msg->op_compressed.compressor_id]->decode(msg->op_compressed.compressed,
                                                         msg->op_compressed.compressed_len, buf + OPMSG_HEADER_SIZE,
                                                         total - OPMSG_HEADER_SIZE, error)) {
      return false;
   }
   if (written) {
      *written = total;
   }
   return true;
}

uint8_t *
opmsg_decompress(const opmsg_msg_t *msg, size_t *len, bson_error_t *error)
{
   uint8_t *buf;
   size_t total;

   if (!check_compressed(msg, error) || !check_declared_size(msg, error)) {
      return NULL;
   }
   total = opmsg_decompressed_size(msg);
   buf = bson_malloc(total);
   if (!opmsg_decompress_into(msg, buf, total, len, error)) {
      bson_free(buf);
      return NULL;
   }
   return buf;
}

bool
opmsg_decompress_parse(const opmsg_msg_t *msg, const opmsg_options_t *opts, opmsg_decompressed_t *out,
                       bson_error_t *error)
{
   opmsg_limits_t limits;

   if (!out) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "out is NULL");
   }
   memset(out, 0, sizeof *out);
   if (!check_compressed(msg, error)) {
      return false;
   }
   /* msg may have been parsed with a larger limit than opts gives. */
   opmsg_limits_from(opts, &limits);
   if (opmsg_decompressed_size(msg) > limits.max_message_size) {
      return opmsg_fail(error, OPMSG_ERR_UNCOMPRESSED_SIZE,
                        "uncompressedSize %" PRId32 " makes a message larger "
                        "than the limit of %zu bytes",
                        msg->op_compressed.uncompressed_size, limits.max_message_size);
   }
   out->data = opmsg_decompress(msg, &out->len, error);
   if (!out->data) {
      return false;
   }
   if (!opmsg_parse(out->data, out->len, opts, &out->inner, error)) {
      opmsg_decompressed_destroy(out);
      return false;
   }
   return true;
}

void
opmsg_decompressed_destroy(opmsg_decompressed_t *d)
{
   if (d) {
      bson_free(d->data);
      memset(d, 0, sizeof *d);
   }
}

bson_t *
opmsg_merge_compressed(const opmsg_msg_t *msg, const opmsg_options_t *opts, bson_error_t *error)
{
   opmsg_decompressed_t d;
   bson_t *merged;

   if (!opmsg_decompress_parse(msg, opts, &d, error)) {
      return NULL;
   }
   merged = opmsg_merge_bson(&d.inner, error);
   opmsg_decompressed_destroy(&d);
   return merged;
}

/* ---------------------------------------------------------------------------
 * Compression
 * ------------------------------------------------------------------------- */

/* Sorted only for reading; compared case-insensitively. */
static const char *const forbidden_commands[] = {
   "authenticate", "copydb",   "copydbgetnonce", "copydbSaslStart", "createUser", "getnonce",
   "hello",        "isMaster", "saslContinue",   "saslStart",       "updateUser",
};

bool
opmsg_compression_allowed(const char *command_name)
{
   size_t i;

   if (!command_name) {
      return true;
   }
   for (i = 0; i < sizeof forbidden_commands / sizeof forbidden_commands[0]; i++) {
      if (bson_strcasecmp(command_name, forbidden_commands[i]) == 0) {
         return false;
      }
   }
   return true;
}

size_t
opmsg_compress_bound(size_t msg_len, int compressor_id)
{
   if (msg_len < OPMSG_HEADER_SIZE || !opmsg_compressor_available(compressor_id)) {
      return 0;
   }
   return OPMSG_COMPRESSED_OVERHEAD + codecs[compressor_id]->bound(msg_len - OPMSG_HEADER_SIZE);
}

/* The first key of the document at doc (avail bytes there), or NULL when it
 * is empty. False when the document or its first key is not whole. */
static bool
first_key(const uint8_t *doc, size_t avail, size_t offset, const char *what, const char **key, bson_error_t *error)
{
   int32_t len;
   const uint8_t *nul;

   if (avail < 5 || (len = opmsg_read_i32(doc)) < 5 || (size_t) len > avail) {
      return opmsg_fail(error, OPMSG_ERR_DOCUMENT_LENGTH, "the %s at offset %zu has a bad length", what, offset);
   }
   nul = len > 5 ? memchr(doc + 5, 0, (size_t) len - 6) : doc;
   if (!nul) {
      return opmsg_fail(error, OPMSG_ERR_DOCUMENT_ELEMENT,
                        "the first key of the %s at offset %zu is not "
                        "terminated",
                        what, offset);
   }
   *key = opmsg_doc_first_key(doc, (size_t) len);
   return true;
}

/* Finds the OP_MSG body wherever its section is, skipping sequences. */
static bool
msg_command(const uint8_t *msg, size_t len, const char **name, bson_error_t *error)
{
   size_t off = OPMSG_OFF_SECTIONS;
   size_t end = len;

   if (len >= off && (opmsg_read_u32(msg + OPMSG_OFF_FLAG_BITS) & OPMSG_FLAG_CHECKSUM_PRESENT) &&
       len >= off + OPMSG_CHECKSUM_SIZE) {
      end -= OPMSG_CHECKSUM_SIZE;
   }
   /* The message is not parsed yet: the bounded step over its sections. */
   while (off < end) {
      size_t size;

      if (msg[off] == OPMSG_SECTION_BODY) {
         return first_key(msg + off + 1, end - off - 1, off + 1, "OP_MSG body", name, error);
      }
      if ((size = opmsg_section_frame(msg + off, end - off)) == 0) {
         break;
      }
      off += size;
   }
   return opmsg_fail(error, OPMSG_ERR_NO_BODY,
                     "cannot find the OP_MSG body to compress (scan stopped "
                     "at offset %zu)",
                     off);
}

static bool
query_command(const uint8_t *msg, size_t len, const char **name, bson_error_t *error)
{
   size_t ns = OPMSG_OFF_FULL_COLLECTION_NAME;
   const uint8_t *nul = len > ns ? memchr(msg + ns, 0, len - ns) : NULL;
   size_t off;

   if (!nul || (size_t) (msg + len - nul) < 1 + OPMSG_QUERY_SKIP_RETURN_SIZE) {
      return opmsg_fail(error, OPMSG_ERR_NO_BODY, "cannot find the OP_QUERY query to compress");
   }
   off = (size_t) (nul - msg) + 1 + OPMSG_QUERY_SKIP_RETURN_SIZE;
   return first_key(msg + off, len - off, off, "OP_QUERY query", name, error);
}

/* Checks the message to wrap and that its command may be compressed. */
static bool
check_compressible(const uint8_t *msg, size_t msg_len, bson_error_t *error)
{
   int32_t opcode;
   const char *name = NULL;
   bool ok = true;

   if (msg_len < OPMSG_HEADER_SIZE) {
      return opmsg_fail(error, OPMSG_ERR_TRUNCATED, "%zu bytes are less than a message header", msg_len);
   }
   if (opmsg_read_i32(msg) < 0 || (size_t) opmsg_read_i32(msg) != msg_len) {
      return opmsg_fail(error, OPMSG_ERR_LENGTH_MISMATCH,
                        "messageLength %" PRId32 " at offset 0 is not the "
                        "%zu bytes given",
                        opmsg_read_i32(msg), msg_len);
   }
   opcode = opmsg_read_i32(msg + OPMSG_OFF_OPCODE);
   switch (opcode) {
   case OPMSG_OP_MSG:
      ok = msg_command(msg, msg_len, &name, error);
      break;
   case OPMSG_OP_QUERY:
      ok = query_command(msg, msg_len, &name, error);
      break;
   case OPMSG_OP_REPLY:
      break;
   case OPMSG_OP_COMPRESSED:
      return opmsg_fail(error, OPMSG_ERR_NESTED_COMPRESSION, "the message is already OP_COMPRESSED");
   default:
      return opmsg_fail(error, OPMSG_ERR_BAD_ORIGINAL_OPCODE,
                        "opcode %" PRId32 " at offset 12 cannot be "
                        "compressed",
                        opcode);
   }
   if (ok && !opmsg_compression_allowed(name)) {
      return opmsg_fail(error, OPMSG_ERR_COMPRESSION_FORBIDDEN, "the command \"%s\" must never be compressed", name);
   }
   return ok;
}

static bool
check_level(int compressor_id, int level, bson_error_t *error)
{
   bool (*level_ok)(int) = codecs[compressor_id]->level_ok;

   if (level_ok && !level_ok(level)) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "level %d is out of range for %s", level,
                        compressor_names[compressor_id]);
   }
   return true;
}

/* The checks both compressing entry points make before touching output. */
static bool
check_args(const uint8_t *msg, size_t msg_len, int compressor_id, int level, bson_error_t *error)
{
   if (!msg) {
      return opmsg_fail(error, OPMSG_ERR_INVALID_ARGUMENT, "msg is NULL");
   }
   if (compressor_id < 0 || compressor_id > OPMSG_COMPRESSOR_ZSTD) {
      return opmsg_fail(error, OPMSG_ERR_UNKNOWN_COMPRESSOR, "compressorId %d is reserved", compressor_id);
   }
   if (!opmsg_compressor_available(compressor_id)) {
      return fail_unavailable(error, compressor_id);
   }
   return check_level(compressor_id, level, error) && check_compressible(msg, msg_len, error);
}

bool
opmsg_compress_into(const uint8_t *msg, size_t msg_len, int compressor_id, int level, uint8_t *out, size_t out_cap,
                    size_t *out_len, bson_error_t *error)
{
   size_t room;

   if (!check_args(msg, msg_len, compressor_id, level, error)) {
      return false;
   }
   if (!out || out_cap < OPMSG_COMPRESSED_OVERHEAD) {
      return opmsg_fail(error, OPMSG_ERR_BUFFER_TOO_SMALL, "%zu bytes are less than the OP_COMPRESSED header",
                        out ? out_cap : 0);
   }
   /* Never let the codec write a message messageLength cannot describe. */
   room = BSON_MIN(out_cap, OPMSG_INT32_MAX_SIZE) - OPMSG_COMPRESSED_OVERHEAD;
   if (!codec_encode(compressor_id, level, msg + OPMSG_HEADER_SIZE, msg_len - OPMSG_HEADER_SIZE,
                     out + OPMSG_COMPRESSED_OVERHEAD, &room, out_cap > OPMSG_INT32_MAX_SIZE, error)) {
      return false;
   }
   opmsg_write_u32(out, (uint32_t) (OPMSG_COMPRESSED_OVERHEAD + room));
   memcpy(out + OPMSG_OFF_REQUEST_ID, msg + OPMSG_OFF_REQUEST_ID, 8); /* requestID, responseTo */
   opmsg_write_u32(out + OPMSG_OFF_OPCODE, OPMSG_OP_COMPRESSED);
   memcpy(out + OPMSG_OFF_ORIGINAL_OPCODE, msg + OPMSG_OFF_OPCODE, 4);
   opmsg_write_u32(out + OPMSG_OFF_UNCOMPRESSED_SIZE, (uint32_t) (msg_len - OPMSG_HEADER_SIZE));
   out[OPMSG_OFF_COMPRESSOR_ID] = (uint8_t) compressor_id;
   if (out_len) {
      *out_len = OPMSG_COMPRESSED_OVERHEAD + room;
   }
   return true;
}

uint8_t *
opmsg_compress(const uint8_t *msg, size_t msg_len, int compressor_id, int level, size_t *out_len, bson_error_t *error)
{
   size_t cap;
   uint8_t *out;

   /* Everything is checked before the bound is allocated. */
   if (!check_args(msg, msg_len, compressor_id, level, error)) {
      return NULL;
   }
   cap = opmsg_compress_bound(msg_len, compressor_id);
   out = bson_malloc(cap);
   if (!opmsg_compress_into(msg, msg_len, compressor_id, level, out, cap, out_len, error)) {
      bson_free(out);
      return NULL;
   }
   return out;
}
