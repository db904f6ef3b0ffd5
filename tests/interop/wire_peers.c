/*
 * wire_peers.c - opmsg-built messages against a real server (FerretDB):
 * CRC-32C checksums and each OP_COMPRESSED codec (issue 6, item 4).
 *
 * Usage: interop-wire-peers PORT   (under tests/peers/with-ferretdb.sh)
 *
 * Every message sent is built by opmsg (opmsg_build_new, opmsg_compress) and
 * every reply is read with opmsg_parse (which checks a reply's checksum) and
 * merged. What the server must do:
 *  - answer a command that carries a correct CRC-32C;
 *  - for each codec it names in its hello reply's "compression" field,
 *    accept an OP_COMPRESSED insert and count its documents.
 *  - not execute a command whose CRC-32C is wrong (closing the connection
 *    or answering with an error are both fine).
 * What it does with codecs it did not name is reported (one "peer:" line
 * each), not judged.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#define _POSIX_C_SOURCE 200809L

#include <opmsg/opmsg.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int failures;
static int32_t next_request_id = 1;

#define CHECK(cond, ...)               \
   do {                                \
      if (!(cond)) {                   \
         failures++;                   \
         printf("FAIL: " __VA_ARGS__); \
         printf("\n");                 \
      }                                \
   } while (0)

static int
connect_to(int port)
{
   struct sockaddr_in sa;
   struct timeval tv = {10, 0};
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   int one = 1;

   memset(&sa, 0, sizeof sa);
   sa.sin_family = AF_INET;
   sa.sin_port = htons((uint16_t) port);
   sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
   if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
      perror("connect");
      exit(1);
   }
   setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
   /* A server that drops a message silently must not hang the test. */
   setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
   return fd;
}

static bool
send_all(int fd, const uint8_t *p, size_t len)
{
   while (len > 0) {
      ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

      if (n <= 0) {
         return false;
      }
      p += n;
      len -= (size_t) n;
   }
   return true;
}

static bool
recv_all(int fd, uint8_t *p, size_t len)
{
   while (len > 0) {
      ssize_t n = recv(fd, p, len, 0);

      if (n <= 0) {
         return false;
      }
      p += n;
      len -= (size_t) n;
   }
   return true;
}

/* Reads one reply and returns its merged document (decompressed first when
 * it is OP_COMPRESSED), or NULL when the connection closed or timed out.
 * *codec is the reply's compressorId, or -1. */
static bson_t *
read_reply(int fd, int32_t request_id, int *codec, bool *had_checksum)
{
   uint8_t header[16];
   uint8_t *buf;
   size_t len;
   opmsg_msg_t msg;
   opmsg_decompressed_t dec = {0};
   bson_error_t error;
   bson_t *doc = NULL;

   *codec = -1;
   *had_checksum = false;
   if (!recv_all(fd, header, sizeof header)) {
      return NULL;
   }
   if (!opmsg_frame_length(header, sizeof header, NULL, &len, &error)) {
      printf("FAIL: reply header: %s\n", error.message);
      failures++;
      return NULL;
   }
   buf = bson_malloc(len);
   memcpy(buf, header, sizeof header);
   if (!recv_all(fd, buf + 16, len - 16)) {
      bson_free(buf);
      return NULL;
   }
   if (!opmsg_parse(buf, len, NULL, &msg, &error)) {
      printf("FAIL: the reply breaks %s: %s\n", opmsg_error_name(error.code), error.message);
      failures++;
   } else {
      const opmsg_msg_t *inner = &msg;

      CHECK(msg.response_to == request_id, "responseTo %d, expected %d", msg.response_to, request_id);
      if (msg.opcode == OPMSG_OP_COMPRESSED) {
         *codec = msg.op_compressed.compressor_id;
         if (!opmsg_decompress_parse(&msg, NULL, &dec, &error)) {
            printf("FAIL: compressed reply: %s\n", error.message);
            failures++;
            inner = NULL;
         } else {
            inner = &dec.inner;
         }
      }
      if (inner) {
         *had_checksum = inner->checksum_present;
         doc = opmsg_merge_bson(inner, &error);
         CHECK(doc != NULL, "merge the reply: %s", error.message);
      }
   }
   opmsg_decompressed_destroy(&dec);
   bson_free(buf);
   return doc;
}

static uint8_t *
build(const bson_t *cmd, const opmsg_sequence_in_t *seqs, size_t n_seqs, uint32_t flags, size_t *len)
{
   opmsg_build_t b;
   bson_error_t error;
   uint8_t *msg;

   opmsg_build_init(&b, cmd);
   b.sequences = seqs;
   b.n_sequences = n_seqs;
   b.flags = flags;
   b.request_id = next_request_id++;
   msg = opmsg_build_new(&b, len, &error);
   if (!msg) {
      printf("FAIL: build: %s\n", error.message);
      exit(1);
   }
   return msg;
}

static double
get_number(const bson_t *doc, const char *key)
{
   bson_iter_t it;

   return doc && bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_double(&it) : -1;
}

static char *
describe(const bson_t *doc)
{
   return doc ? bson_as_relaxed_extended_json(doc, NULL) : bson_strdup("(no reply: the connection was closed)");
}

/* hello, asking for every codec; returns the codecs the server names. */
static unsigned
hello(int fd)
{
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1), "compression", "[", BCON_UTF8("snappy"), BCON_UTF8("zlib"),
                          BCON_UTF8("zstd"), "]", "$db", BCON_UTF8("admin"));
   size_t len;
   uint8_t *msg = build(cmd, NULL, 0, 0, &len);
   int32_t id = next_request_id - 1;
   int codec;
   bool crc;
   bson_t *reply;
   bson_iter_t it, child;
   unsigned mask = 0;

   CHECK(send_all(fd, msg, len), "send hello");
   reply = read_reply(fd, id, &codec, &crc);
   CHECK(reply && get_number(reply, "ok") == 1, "hello answered ok");
   if (reply && bson_iter_init_find(&it, reply, "compression") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &child)) {
      while (bson_iter_next(&child)) {
         int c = BSON_ITER_HOLDS_UTF8(&child) ? opmsg_compressor_from_name(bson_iter_utf8(&child, NULL)) : -1;

         if (c > 0) {
            mask |= 1u << c;
         }
      }
   }
   printf("peer: hello offered snappy, zlib, zstd; the server accepts:%s%s%s%s\n", mask & 2 ? " snappy" : "",
          mask & 4 ? " zlib" : "", mask & 8 ? " zstd" : "", mask ? "" : " none");
   bson_destroy(reply);
   bson_destroy(cmd);
   bson_free(msg);
   return mask;
}

static void
ping_with_checksum(int port)
{
   int fd = connect_to(port);
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len;
   uint8_t *msg = build(cmd, NULL, 0, OPMSG_FLAG_CHECKSUM_PRESENT, &len);
   int32_t id = next_request_id - 1;
   int codec;
   bool crc;
   bson_t *reply;
   char *text;

   CHECK(send_all(fd, msg, len), "send ping");
   reply = read_reply(fd, id, &codec, &crc);
   text = describe(reply);
   printf("peer: ping with a correct CRC-32C: %s (the reply has %s)\n", text, crc ? "a checksum" : "no checksum");
   CHECK(reply && get_number(reply, "ok") == 1, "a correct CRC-32C is accepted");
   bson_free(text);
   bson_destroy(reply);

   /* The same message with its checksum's last byte changed. */
   msg[len - 1] ^= 0x5a;
   memcpy(msg + 4, &(int32_t) {next_request_id}, 4);
   id = next_request_id++;
   if (send_all(fd, msg, len)) {
      reply = read_reply(fd, id, &codec, &crc);
      text = describe(reply);
      printf("peer: ping with a wrong CRC-32C: %s\n", text);
      /* Answering or closing are both fine; executing it is not. */
      CHECK(!reply || get_number(reply, "ok") != 1, "a ping with a wrong CRC-32C was executed");
      bson_free(text);
      bson_destroy(reply);
   } else {
      printf("peer: ping with a wrong CRC-32C: the send failed\n");
   }
   bson_destroy(cmd);
   bson_free(msg);
   close(fd);
}

/* An insert of 50 documents in a "documents" sequence, compressed with
 * codec (checksummed inside when crc). Returns true when the server inserted
 * them. */
static bool
insert_compressed(int port, int codec, bool crc, bool must_accept)
{
   int fd = connect_to(port);
   char coll[32];
   bson_t *cmd, *docs[50], *reply;
   opmsg_sequence_in_t seq = {0};
   uint8_t *msg, *wire;
   size_t len, wire_len;
   bson_error_t error;
   int32_t id;
   int reply_codec;
   bool reply_crc, ok;
   char *text;

   bson_snprintf(coll, sizeof coll, "wire_%s%s", opmsg_compressor_name(codec), crc ? "_crc" : "");
   for (int i = 0; i < 50; i++) {
      docs[i] = BCON_NEW("_id", BCON_INT32(i), "pad", BCON_UTF8("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
   }
   seq.identifier = "documents";
   seq.docs = (const bson_t *const *) docs;
   seq.n_docs = 50;
   cmd = BCON_NEW("insert", BCON_UTF8(coll), "$db", BCON_UTF8("interop"));
   msg = build(cmd, &seq, 1, crc ? OPMSG_FLAG_CHECKSUM_PRESENT : 0, &len);
   id = next_request_id - 1;
   wire = opmsg_compress(msg, len, codec, OPMSG_COMPRESS_DEFAULT_LEVEL, &wire_len, &error);
   if (!wire) {
      printf("FAIL: compress with %s: %s\n", opmsg_compressor_name(codec), error.message);
      failures++;
      close(fd);
      return false;
   }
   CHECK(send_all(fd, wire, wire_len), "send");
   reply = read_reply(fd, id, &reply_codec, &reply_crc);
   ok = reply && get_number(reply, "ok") == 1 && get_number(reply, "n") == 50;
   text = describe(reply);
   printf("peer: insert compressed with %s%s (%zu -> %zu bytes): %s: %s%s\n", opmsg_compressor_name(codec),
          crc ? " + CRC-32C" : "", len, wire_len, ok ? "accepted" : "not accepted", text,
          reply_codec >= 0 ? " (the reply was compressed too)" : "");
   if (must_accept) {
      CHECK(ok, "the server named %s in hello but did not accept it", opmsg_compressor_name(codec));
   }
   bson_free(text);
   bson_destroy(reply);
   bson_free(wire);
   bson_free(msg);
   bson_destroy(cmd);
   for (int i = 0; i < 50; i++) {
      bson_destroy(docs[i]);
   }
   close(fd);
   return ok;
}

int
main(int argc, char **argv)
{
   int port = argc == 2 ? atoi(argv[1]) : 0;
   unsigned accepted;
   int fd;

   if (port <= 0) {
      fprintf(stderr, "usage: %s PORT\n", argv[0]);
      return 2;
   }
   fd = connect_to(port);
   accepted = hello(fd);
   close(fd);

   ping_with_checksum(port);
   for (int codec = OPMSG_COMPRESSOR_NOOP; codec <= OPMSG_COMPRESSOR_ZSTD; codec++) {
      bool named = codec != OPMSG_COMPRESSOR_NOOP && (accepted & (1u << codec));

      insert_compressed(port, codec, false, named);
      insert_compressed(port, codec, true, named);
   }
   if (failures) {
      printf("%d check(s) failed\n", failures);
      return 1;
   }
   printf("PASS\n");
   return 0;
}
