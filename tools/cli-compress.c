/*
 * cli-compress.c - OP_COMPRESSED for `opmsg`, through <opmsg/compress.h>.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#include "cli-common.h"

#ifdef OPMSG_CLI_HAVE_COMPRESS

bool
cli_decompress(const opmsg_msg_t *msg, const opmsg_options_t *opts,
               uint8_t **out, size_t *out_len, bson_error_t *error)
{
   /* The size was bounded by opmsg_parse() with these options. */
   (void) opts;
   *out = opmsg_decompress(msg, out_len, error);
   return *out != NULL;
}

bson_t *
cli_merge_compressed(const opmsg_msg_t *msg, const opmsg_options_t *opts,
                     bson_error_t *error)
{
   /* One decompression buffer, merged straight from it. */
   return opmsg_merge_compressed(msg, opts, error);
}

#else

bool
cli_decompress(const opmsg_msg_t *msg, const opmsg_options_t *opts,
               uint8_t **out, size_t *out_len, bson_error_t *error)
{
   (void) opts;
   *out = NULL;
   *out_len = 0;
   bson_set_error(error, OPMSG_ERROR_DOMAIN, OPMSG_ERR_COMPRESSOR_UNAVAILABLE,
                  "this build of opmsg cannot decompress OP_COMPRESSED "
                  "(compressorId %u)", (unsigned) msg->compressor_id);
   return false;
}

bson_t *
cli_merge_compressed(const opmsg_msg_t *msg, const opmsg_options_t *opts,
                     bson_error_t *error)
{
   uint8_t *inner;
   size_t len;

   (void) cli_decompress(msg, opts, &inner, &len, error);
   return NULL;
}

#endif
