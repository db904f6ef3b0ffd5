/*
 * test_offsets.c - where a message breaks a rule, as data: for every rule
 * opmsg_parse() checks, the code and the byte offset opmsg_parse_with_offset()
 * reports (opmsg.h says what the offset points at for each kind of rule).
 *
 * Each case is one message written in a small notation, with "@" where the
 * fault must be reported (the offset is the number of bytes written before
 * it; "@E" is the message's end):
 *   H:OPCODE   header: messageLength (set at the end), requestID, responseTo
 *   L:N        messageLength N instead of the bytes written
 *   u8:N i32:N u32:N i64:N   little-endian integers (decimal, or 0x...)
 *   c:TEXT     TEXT and its NUL; \xNN is a byte
 *   x:HEX      raw bytes
 *   j:JSON     a document from Extended JSON (no spaces)
 *   { ... }    a document: its length, what is inside, its terminator
 *   e:TT:KEY   an element's type byte (hex) and key
 *   s:ID[ ]    a document sequence (kind 1, size, identifier) around its
 *              documents
 *   crc        a CRC-32C of everything before it (messageLength counts it)
 *
 * The rule cases of OP_MSG and OP_COMPRESSED replies live in
 * tests/data/rules/cases.tsv, which make_vectors.py also writes the
 * conformance vectors from (the message as hex, the verdict per check level,
 * the offset as a number): test_rule_table() reads them. The cases here are
 * the rest: requests and the other opcodes, limits a caller sets, and a
 * message shorter than a header (no opcode to be a vector's).
 */
#include "testutil.h"

#include <opmsg/compress.h>

#include <stdio.h>
#include <string.h>

#define MAX_OPEN 16

typedef struct {
   tu_buf_t b;
   size_t at;     /* the "@" */
   bool at_end;   /* "@E" */
   long long len; /* "L:", or -1 */
   bool crc;      /* "crc" */
   size_t open[MAX_OPEN];
   int n_open;
} msg_t;

static size_t
unescape(const char *s, size_t n, uint8_t *out)
{
   size_t o = 0;
   for (size_t i = 0; i < n; i++) {
      unsigned v;
      if (s[i] == '\\' && i + 3 < n + 1 && s[i + 1] == 'x' && sscanf(s + i + 2, "%2x", &v) == 1) {
         out[o++] = (uint8_t) v;
         i += 3;
      } else {
         out[o++] = (uint8_t) s[i];
      }
   }
   return o;
}

static void
put_hex(tu_buf_t *b, const char *hex, size_t n)
{
   assert_true(n % 2 == 0);
   for (size_t i = 0; i < n; i += 2) {
      unsigned v;
      assert_int_equal(sscanf(hex + i, "%2x", &v), 1);
      tu_put_u8(b, (uint8_t) v);
   }
}

static void
open_frame(msg_t *m)
{
   assert_true(m->n_open < MAX_OPEN);
   m->open[m->n_open++] = m->b.len;
   tu_put_i32(&m->b, 0);
}

static void
close_frame(msg_t *m, size_t end_extra)
{
   assert_true(m->n_open > 0);
   size_t start = m->open[--m->n_open];
   opmsg_write_u32(m->b.data + start, (uint32_t) (m->b.len + end_extra - start));
}

/* One token of the notation. */
static void
token(msg_t *m, const char *t, size_t n)
{
   uint8_t tmp[512];
   char num[64];
   if (n == 1 && t[0] == '@') {
      m->at = m->b.len;
   } else if (n == 2 && memcmp(t, "@E", 2) == 0) {
      m->at_end = true;
   } else if (n == 3 && memcmp(t, "crc", 3) == 0) {
      m->crc = true;
   } else if (n == 1 && t[0] == '{') {
      open_frame(m);
   } else if (n == 1 && t[0] == '}') {
      close_frame(m, 1);
      tu_put_u8(&m->b, 0);
   } else if (n == 1 && t[0] == ']') {
      /* A section's size counts itself, not its kind byte. */
      close_frame(m, 0);
   } else if (n > 2 && t[0] == 's' && t[1] == ':' && t[n - 1] == '[') {
      tu_put_u8(&m->b, 1);
      open_frame(m);
      tu_put(&m->b, tmp, unescape(t + 2, n - 3, tmp));
      tu_put_u8(&m->b, 0);
   } else if (n >= 2 && t[0] == 'c' && t[1] == ':') {
      tu_put(&m->b, tmp, unescape(t + 2, n - 2, tmp));
      tu_put_u8(&m->b, 0);
   } else if (n > 2 && t[0] == 'x' && t[1] == ':') {
      put_hex(&m->b, t + 2, n - 2);
   } else if (n > 2 && t[0] == 'j' && t[1] == ':') {
      assert_true(n - 2 < sizeof tmp);
      memcpy(tmp, t + 2, n - 2);
      tmp[n - 2] = 0;
      tu_put_json_doc(&m->b, (const char *) tmp);
   } else if (n > 5 && t[0] == 'e' && t[1] == ':' && t[4] == ':') {
      put_hex(&m->b, t + 2, 2);
      tu_put(&m->b, tmp, unescape(t + 5, n - 5, tmp));
      tu_put_u8(&m->b, 0);
   } else {
      const char *colon = memchr(t, ':', n);
      assert_non_null(colon);
      size_t k = (size_t) (colon - t);
      assert_true(n - k - 1 < sizeof num);
      memcpy(num, colon + 1, n - k - 1);
      num[n - k - 1] = 0;
      long long v = strtoll(num, NULL, 0);
      if (k == 1 && t[0] == 'H') {
         tu_put_i32(&m->b, 0);
         tu_put_i32(&m->b, 1);
         tu_put_i32(&m->b, 0);
         tu_put_i32(&m->b, (int32_t) v);
      } else if (k == 1 && t[0] == 'L') {
         m->len = v;
      } else if (k == 2 && memcmp(t, "u8", 2) == 0) {
         tu_put_u8(&m->b, (uint8_t) v);
      } else if (k == 3 && (memcmp(t, "i32", 3) == 0 || memcmp(t, "u32", 3) == 0)) {
         tu_put_i32(&m->b, (int32_t) v);
      } else if (k == 3 && memcmp(t, "i64", 3) == 0) {
         uint8_t le[8];
         opmsg_write_i64(le, (int64_t) v);
         tu_put(&m->b, le, 8);
      } else {
         fail_msg("unknown token %.*s", (int) n, t);
      }
   }
}

/* Writes the message a case describes; its expected offset goes to *at. */
static void
build(const char *notation, tu_buf_t *out, size_t *at)
{
   msg_t m = {.len = -1};
   tu_buf_init(&m.b);
   for (const char *p = notation; *p;) {
      while (*p == ' ') {
         p++;
      }
      const char *end = strchr(p, ' ');
      size_t n = end ? (size_t) (end - p) : strlen(p);
      if (n) {
         token(&m, p, n);
      }
      p += n;
   }
   assert_int_equal(m.n_open, 0);
   size_t total = m.b.len + (m.crc ? 4 : 0);
   opmsg_write_u32(m.b.data, (uint32_t) (m.len >= 0 ? (size_t) m.len : total));
   if (m.crc) {
      uint8_t le[4];
      opmsg_write_u32(le, opmsg_crc32c(0, m.b.data, m.b.len));
      tu_put(&m.b, le, 4);
   }
   *at = m.at_end ? m.b.len : m.at;
   *out = m.b;
}

typedef struct {
   const char *name;
   const char *msg;
   opmsg_error_code_t code;
   opmsg_check_t check;
   uint32_t flags;
   size_t max_bson_size;
} offset_case_t;

/* A body, a sequence "d" of one document: a valid OP_MSG's sections. */
#define BODY " u8:0 j:{\"insert\":\"c\",\"$db\":\"d\"} "
#define TOP OPMSG_CHECK_TOP_LEVEL

static const offset_case_t cases[] = {
   /* The header: the field. */
   {"fewer bytes than a header", "@ x:0a000000 x:0000", OPMSG_ERR_TRUNCATED, TOP, 0, 0},
   {"unknown opcode", "x:00000000 x:0100000000000000 @ i32:1234 x:00000000000000000000", OPMSG_ERR_UNKNOWN_OPCODE, TOP,
    0, 0},
   {"a request where a reply belongs",
    "x:00000000 x:0100000000000000 @ i32:2004 u32:0 c:a.$cmd i32:0 i32:1 j:{\"ping\":1}", OPMSG_ERR_NOT_A_REPLY, TOP,
    OPMSG_PARSE_REPLY, 0},

   /* OP_MSG and OP_COMPRESSED replies (the header, flagBits, checksum,
    * sections, sequences, identifiers, the body's and the sequence
    * documents' frames and elements at each check level, the compression
    * fields): in tests/data/rules/cases.tsv (test_rule_table). Here: what no
    * reply vector is. */

   /* A request: the body. */
   {"no $db in a request", "H:2013 u32:0 u8:0 @ j:{\"ping\":1}", OPMSG_ERR_MISSING_DB, TOP, OPMSG_PARSE_REQUEST, 0},

   /* A limit the caller sets: the document. */
   {"document above the limit", "H:2013 u32:0 u8:0 j:{} s:d[ j:{} @ j:{\"a\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} ]",
    OPMSG_ERR_DOCUMENT_TOO_LARGE, TOP, 0, 24},

   /* OP_QUERY: the field, or the document. */
   {"namespace not terminated", "H:2004 u32:0 @ x:61616161616161616161616161616161616161", OPMSG_ERR_QUERY_NAMESPACE,
    TOP, 0, 0},
   {"empty namespace", "H:2004 u32:0 @ c: i32:0 i32:1 j:{\"ping\":1}", OPMSG_ERR_QUERY_NAMESPACE, TOP, 0, 0},
   {"query with a bad element", "H:2004 u32:0 c:a.$cmd i32:0 i32:1 { @ e:7e:x }", OPMSG_ERR_DOCUMENT_ELEMENT, TOP, 0,
    0},
   {"stray bytes after the query", "H:2004 u32:0 c:a.$cmd i32:0 i32:1 j:{\"ping\":1} @ x:0000",
    OPMSG_ERR_TRAILING_BYTES, TOP, 0, 0},
   {"selector length past the end", "H:2004 u32:0 c:a.$cmd i32:0 i32:1 j:{\"ping\":1} @ i32:99 x:00",
    OPMSG_ERR_DOCUMENT_LENGTH, TOP, 0, 0},
   {"stray bytes after the selector", "H:2004 u32:0 c:a.$cmd i32:0 i32:1 j:{} j:{} @ x:00", OPMSG_ERR_TRAILING_BYTES,
    TOP, 0, 0},

   /* OP_REPLY: numberReturned, or where the documents and the count part. */
   {"negative numberReturned", "H:1 u32:0 i64:0 i32:0 @ i32:-1", OPMSG_ERR_REPLY_COUNT, TOP, 0, 0},
   {"fewer documents than numberReturned", "H:1 u32:0 i64:0 i32:0 i32:2 j:{\"ok\":1} @E", OPMSG_ERR_REPLY_COUNT, TOP, 0,
    0},
   {"more documents than numberReturned", "H:1 u32:0 i64:0 i32:0 i32:1 j:{\"ok\":1} @ j:{}", OPMSG_ERR_REPLY_COUNT, TOP,
    0, 0},
   {"stray bytes after the documents", "H:1 u32:0 i64:0 i32:0 i32:1 j:{\"ok\":1} @ x:0102", OPMSG_ERR_TRAILING_BYTES,
    TOP, 0, 0},
   {"reply document with a bad element", "H:1 u32:0 i64:0 i32:0 i32:1 { @ e:7e:x }", OPMSG_ERR_DOCUMENT_ELEMENT, TOP, 0,
    0},

   /* OP_COMPRESSED as a request: the field. */
   {"compressed request where a reply belongs", "H:2012 @ i32:2004 i32:30 u8:0 x:00", OPMSG_ERR_NOT_A_REPLY, TOP,
    OPMSG_PARSE_REPLY, 0},

   /* The removed opcodes: the field, or the document. */
   {"insert document with a bad element", "H:2002 u32:0 c:d.c { @ e:7e:x }", OPMSG_ERR_DOCUMENT_ELEMENT, TOP, 0, 0},
   {"update namespace not terminated", "H:2001 u32:0 @ x:6161616161616161616161616161616161", OPMSG_ERR_QUERY_NAMESPACE,
    TOP, 0, 0},
   {"update flags cut short", "H:2001 u32:0 c:aaaaaaaaaaaaaaa @ x:0000", OPMSG_ERR_TRUNCATED, TOP, 0, 0},
   {"getMore cursorID cut short", "H:2005 u32:0 c:aaaaaaa i32:0 @ x:00000000000000", OPMSG_ERR_TRUNCATED, TOP, 0, 0},
   {"delete with stray bytes", "H:2006 u32:0 c:d.c u32:0 j:{} @ x:00", OPMSG_ERR_TRAILING_BYTES, TOP, 0, 0},
   {"killCursors count above the IDs", "H:2007 u32:0 @ i32:3 i64:1 i64:2", OPMSG_ERR_REPLY_COUNT, TOP, 0, 0},
   {"killCursors count below the IDs", "H:2007 u32:0 i32:1 i64:1 @ i64:2", OPMSG_ERR_REPLY_COUNT, TOP, 0, 0},
};

/* Parses the case's message; asserts the code, and the offset where the
 * notation put it. */
static void
check_case(const offset_case_t *c)
{
   tu_buf_t b;
   size_t at, offset = 12345;
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;

   build(c->msg, &b, &at);
   opmsg_options_init(&opts);
   opts.check = c->check;
   opts.flags = c->flags;
   opts.max_bson_size = c->max_bson_size;
   memset(&error, 0, sizeof error);
   if (opmsg_parse_with_offset(b.data, b.len, &opts, &msg, &offset, &error)) {
      fail_msg("%s: parsed", c->name);
   }
   if (error.code != (uint32_t) c->code || offset != at) {
      fail_msg("%s: %s (%u) at offset %zu, expected %s (%u) at offset %zu: %s", c->name, opmsg_error_name(error.code),
               error.code, offset, opmsg_error_name(c->code), (unsigned) c->code, at, error.message);
   }
   /* The same verdict through opmsg_parse(), and with no error to write. */
   bson_error_t again;
   assert_false(opmsg_parse(b.data, b.len, &opts, &msg, &again));
   assert_int_equal(again.code, error.code);
   assert_string_equal(again.message, error.message);
   offset = 12345;
   assert_false(opmsg_parse_with_offset(b.data, b.len, &opts, &msg, &offset, NULL));
   assert_int_equal(offset, at);

   /* A top-level row at the spec level (the default), and the full level:
    * the same verdict at the same offset, or, at spec, the message let
    * through when its fault is one of an element's (which spec reads only
    * in a body beside sequences, for its keys). Every other rule holds at
    * spec. */
   if (c->check == TOP && !(c->flags & OPMSG_PARSE_FULL_VALIDATE)) {
      static const opmsg_check_t others[] = {OPMSG_CHECK_SPEC, OPMSG_CHECK_FULL};
      for (size_t i = 0; i < 2; i++) {
         opts.check = others[i];
         offset = 12345;
         memset(&error, 0, sizeof error);
         if (opmsg_parse_with_offset(b.data, b.len, &opts, &msg, &offset, &error)) {
            bool element = c->code == OPMSG_ERR_DOCUMENT_ELEMENT || c->code == OPMSG_ERR_DUPLICATE_KEY ||
                           c->code == OPMSG_ERR_INVALID_BOOLEAN || c->code == OPMSG_ERR_DOCUMENT_TERMINATOR;
            if (others[i] != OPMSG_CHECK_SPEC || !element) {
               fail_msg("%s: parsed at %s", c->name, opmsg_check_name(others[i]));
            }
            continue;
         }
         if (error.code != (uint32_t) c->code || offset != at) {
            fail_msg("%s at %s: %s (%u) at offset %zu, expected %s (%u) at offset %zu: %s", c->name,
                     opmsg_check_name(others[i]), opmsg_error_name(error.code), error.code, offset,
                     opmsg_error_name(c->code), (unsigned) c->code, at, error.message);
         }
      }
   }
   tu_buf_free(&b);
}

static void
test_every_rule(void **state)
{
   (void) state;
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      check_case(&cases[i]);
   }
}

/* The offset column of a row at level i (0 spec, 1 top-level, 2 full): one
 * number for every level, or three separated by '/'. "-" (a level that
 * accepts, or a fault inside an OP_COMPRESSED message's compressed part) is
 * returned as SIZE_MAX. */
static size_t
row_offset(const char *name, const char *column, size_t i)
{
   const char *p = column;
   if (strchr(column, '/')) {
      for (size_t k = 0; k < i; k++) {
         p = strchr(p, '/');
         if (!p) {
            fail_msg("%s: offset \"%s\" is not three values", name, column);
         }
         p++;
      }
   }
   if (p[0] == '-' && (p[1] == '\0' || p[1] == '/')) {
      return SIZE_MAX;
   }
   char *end;
   unsigned long long v = strtoull(p, &end, 10);
   if (end == p || (*end != '\0' && *end != '/')) {
      fail_msg("%s: offset \"%s\" is not a number", name, column);
   }
   return (size_t) v;
}

/* The rule cases of tests/data/rules/cases.tsv, the table make_vectors.py
 * writes its conformance vectors from: each row's message (hex, spaces
 * between its fields) at each check level is accepted ("ok") or rejected
 * with the named rule at the row's offset. An OP_COMPRESSED row with offset
 * "-" is rejected once decompressed (opmsg_decompress_parse()), as a client
 * does: the fault is in the compressed part, which has no offset. */
static void
check_table_row(char *line)
{
   char *field[8];
   size_t n = 0;
   for (char *p = line; n < 8; n++) {
      field[n] = p;
      char *tab = strchr(p, '\t');
      if (!tab) {
         n++;
         break;
      }
      *tab = '\0';
      p = tab + 1;
   }
   if (n != 8) {
      fail_msg("rules/cases.tsv: %s: %zu fields, expected 8", field[0], n);
   }
   const char *name = field[0];
   /* The hex without its spaces. */
   char *hex = field[7], *w = field[7];
   for (const char *r = field[7]; *r; r++) {
      if (*r != ' ') {
         *w++ = *r;
      }
   }
   *w = '\0';
   size_t len;
   uint8_t *data = tu_from_hex(hex, &len);
   static const char *const levels[] = {"spec", "top-level", "full"};
   for (size_t i = 0; i < 3; i++) {
      const char *verdict = field[1 + i];
      size_t want = row_offset(name, field[4], i);
      opmsg_options_t opts;
      opmsg_msg_t msg;
      bson_error_t error;
      size_t offset = 12345;
      opmsg_options_init(&opts);
      assert_true(opmsg_check_from_name(levels[i], &opts.check));
      memset(&error, 0, sizeof error);
      bool parsed = opmsg_parse_with_offset(data, len, &opts, &msg, &offset, &error);
      if (parsed && msg.opcode == OPMSG_OP_COMPRESSED && want == SIZE_MAX) {
         opmsg_decompressed_t d;
         parsed = opmsg_decompress_parse(&msg, &opts, &d, &error);
         opmsg_decompressed_destroy(&d);
         offset = SIZE_MAX;
      }
      char got_at[32] = "-"; /* the offset reported, "-" for none */
      if (offset != SIZE_MAX) {
         snprintf(got_at, sizeof got_at, "%zu", offset);
      }
      if (strcmp(verdict, "ok") == 0) {
         if (!parsed) {
            fail_msg("%s at %s: %s at offset %s, expected ok: %s", name, levels[i], opmsg_error_name(error.code),
                     got_at, error.message);
         }
         continue;
      }
      if (parsed) {
         fail_msg("%s at %s: parsed, expected %s", name, levels[i], verdict);
      }
      if (strcmp(opmsg_error_name(error.code), verdict) != 0 || offset != want) {
         fail_msg("%s at %s: %s at offset %s, expected %s at offset %s: %s", name, levels[i],
                  opmsg_error_name(error.code), got_at, verdict, field[4], error.message);
      }
      if (want == SIZE_MAX) {
         continue;
      }
      /* The same verdict through opmsg_parse(), and with no error to write. */
      bson_error_t again;
      assert_false(opmsg_parse(data, len, &opts, &msg, &again));
      assert_int_equal(again.code, error.code);
      assert_string_equal(again.message, error.message);
      offset = 12345;
      assert_false(opmsg_parse_with_offset(data, len, &opts, &msg, &offset, NULL));
      assert_int_equal(offset, want);
   }
   free(data);
}

static void
test_rule_table(void **state)
{
   (void) state;
   size_t len, rows = 0;
   uint8_t *text = tu_read_file("rules/cases.tsv", &len);
   char *copy = malloc(len + 1);
   assert_non_null(copy);
   memcpy(copy, text, len);
   copy[len] = '\0';
   for (char *line = copy; *line;) {
      char *nl = strchr(line, '\n');
      if (nl) {
         *nl = '\0';
      }
      if (*line && *line != '#') {
         check_table_row(line);
         rows++;
      }
      line = nl ? nl + 1 : line + strlen(line);
   }
   assert_true(rows > 0);
   free(copy);
   free(text);
}

/* The same notation writes valid messages: the table's faults are the only
 * ones in them. Each case's message with its fault taken out is checked in
 * check_case() indirectly (the code names the rule); here the notation
 * itself is held to a message opmsg accepts, and success gives len. */
static void
test_success_gives_len(void **state)
{
   (void) state;
   tu_buf_t b;
   size_t at, offset = 0;
   opmsg_msg_t msg;
   bson_error_t error;

   build("H:2013 u32:1 u8:0 j:{\"insert\":\"c\",\"$db\":\"d\",\"cursor\":{}} s:d[ j:{\"_id\":1} { e:10:x i32:2 } ] "
         "s:cursor.firstBatch[ ] crc",
         &b, &at);
   assert_true(opmsg_parse_with_offset(b.data, b.len, NULL, &msg, &offset, &error));
   assert_int_equal(offset, b.len);
   assert_int_equal(msg.n_sequences, 2);
   /* A NULL offset is allowed. */
   assert_true(opmsg_parse_with_offset(b.data, b.len, NULL, &msg, NULL, &error));
   tu_buf_free(&b);
}

/* Faults that are not the bytes' are at offset 0. */
static void
test_not_the_bytes(void **state)
{
   (void) state;
   tu_buf_t b;
   size_t at, offset = 99;
   opmsg_options_t opts;
   opmsg_msg_t msg;
   bson_error_t error;

   build("H:2013 u32:0" BODY, &b, &at);
   opmsg_options_init(&opts);
   opts.check = (opmsg_check_t) 7;
   assert_false(opmsg_parse_with_offset(b.data, b.len, &opts, &msg, &offset, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   assert_int_equal(offset, 0);
   offset = 99;
   assert_false(opmsg_parse_with_offset(NULL, 0, NULL, &msg, &offset, &error));
   assert_int_equal(error.code, OPMSG_ERR_INVALID_ARGUMENT);
   assert_int_equal(offset, 0);
   tu_buf_free(&b);

   /* A merged document above 2 GiB cannot be built in a test: the rule's
    * report, at the message as a whole. */
   opmsg_report_t r;
   uint8_t one = 0;
   opmsg_report_init(&r, &error, &one, 0, &opmsg_parser_side);
   assert_false(opmsg_rule_merged_size(&r, (size_t) INT32_MAX + 1, true));
   assert_int_equal(r.code, OPMSG_ERR_OUTPUT_TOO_LARGE);
   assert_int_equal(r.offset, 0);
}

/* The message in b is refused with code at offset at; b is freed. */
static void
expect_at(tu_buf_t *b, const opmsg_options_t *opts, opmsg_error_code_t code, size_t at)
{
   opmsg_msg_t msg;
   bson_error_t error;
   size_t offset = 0;
   assert_false(opmsg_parse_with_offset(b->data, b->len, opts, &msg, &offset, &error));
   assert_int_equal(error.code, code);
   assert_int_equal(offset, at);
   tu_buf_free(b);
}

/* The large cases the notation would spell at length: the 65th of 65
 * sequences with a dotted identifier among them, a body of 300 keys with the
 * last repeated, 101 nested documents. (An identifier of 101 components:
 * rules/cases.tsv seq_id_too_deep.) */
static void
test_large_messages(void **state)
{
   (void) state;
   tu_buf_t b;
   opmsg_options_t opts;
   size_t at;
   char id[16];

   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_msg_body(&b, "{}");
   for (int i = 0; i <= OPMSG_MAX_DOTTED_SEQUENCES; i++) {
      snprintf(id, sizeof id, i == 0 ? "x.s%d" : "s%d", i);
      at = b.len;
      tu_msg_seq_end(&b, tu_msg_seq_begin(&b, id));
   }
   tu_msg_end(&b);
   expect_at(&b, NULL, OPMSG_ERR_SEQUENCE_IDENTIFIER, at);

   /* Past the keys the parse records as it walks (256): the key set's own
    * walk finds the second one. */
   bson_t body = BSON_INITIALIZER;
   char key[16];
   for (int i = 0; i < 300; i++) {
      snprintf(key, sizeof key, "k%d", i);
      BSON_APPEND_INT32(&body, key, i);
   }
   size_t dup = body.len - 1; /* the second "k5"'s element, within the body */
   BSON_APPEND_INT32(&body, "k5", 5);
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   at = b.len + dup;
   tu_put_bson(&b, &body);
   tu_msg_end(&b);
   /* Looked for from the top-level level up. */
   opmsg_options_init(&opts);
   opts.check = OPMSG_CHECK_TOP_LEVEL;
   expect_at(&b, &opts, OPMSG_ERR_DUPLICATE_KEY, at);
   bson_destroy(&body);

   /* A body above maxBsonObjectSize + 16 KiB: the body. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   at = b.len;
   bson_t big = BSON_INITIALIZER;
   char *text = malloc(OPMSG_BODY_ALLOWANCE + 100);
   memset(text, 'x', OPMSG_BODY_ALLOWANCE + 99);
   text[OPMSG_BODY_ALLOWANCE + 99] = 0;
   BSON_APPEND_UTF8(&big, "a", text);
   tu_put_bson(&b, &big);
   tu_msg_end(&b);
   opmsg_options_init(&opts);
   opts.max_bson_size = 1;
   expect_at(&b, &opts, OPMSG_ERR_DOCUMENT_TOO_LARGE, at);
   bson_destroy(&big);
   free(text);

   /* 101 documents nested below the body: the 101st is reported. */
   tu_buf_init(&b);
   tu_msg_begin(&b, 0);
   tu_put_u8(&b, 0);
   size_t starts[OPMSG_MAX_DEPTH + 2];
   for (int i = 0; i <= OPMSG_MAX_DEPTH + 1; i++) {
      starts[i] = b.len;
      tu_put_i32(&b, 0);
      if (i <= OPMSG_MAX_DEPTH) {
         tu_put_u8(&b, 0x03);
         tu_put_cstr(&b, "a");
      }
   }
   for (int i = OPMSG_MAX_DEPTH + 1; i >= 0; i--) {
      tu_put_u8(&b, 0);
      opmsg_write_u32(b.data + starts[i], (uint32_t) (b.len - starts[i]));
   }
   tu_msg_end(&b);
   opmsg_options_init(&opts);
   opts.check = OPMSG_CHECK_FULL;
   expect_at(&b, &opts, OPMSG_ERR_NESTING_TOO_DEEP, starts[OPMSG_MAX_DEPTH + 1]);
}

/* ---------------------------------------------------------------------------
 * Each frame rule is one check (opmsg_doc_frame_check(),
 * opmsg_section_check()) whose code and offset the fast verdict and the
 * report both are. Against the rule as the spec states it, for every
 * length around the bounds: the check's code and offset, the fast form's
 * verdict and the report's code and offset all agree with it.
 * ------------------------------------------------------------------------- */

/* The document frame as opmsg.h states it (OPMSG_ERR_DOCUMENT_LENGTH,
 * _TOO_LARGE and _TERMINATOR), one case at a time. */
static opmsg_error_code_t
frame_oracle(const uint8_t *doc, size_t avail, size_t max_len, size_t *at)
{
   *at = 0;
   if (avail < 5) {
      return OPMSG_ERR_DOCUMENT_LENGTH;
   }
   int32_t n =
      (int32_t) ((uint32_t) doc[0] | (uint32_t) doc[1] << 8 | (uint32_t) doc[2] << 16 | (uint32_t) doc[3] << 24);
   if (n < 5 || (size_t) n > avail) {
      return OPMSG_ERR_DOCUMENT_LENGTH;
   }
   if ((size_t) n > max_len) {
      return OPMSG_ERR_DOCUMENT_TOO_LARGE;
   }
   if (doc[n - 1] != 0) {
      *at = (size_t) n - 1;
      return OPMSG_ERR_DOCUMENT_TERMINATOR;
   }
   return OPMSG_OK;
}

static void
test_frame_check_is_its_report(void **state)
{
   (void) state;
   static const int32_t lengths[] = {INT32_MIN, -1, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, INT32_MAX};
   uint8_t buf[16];
   size_t n_cases = 0;

   for (size_t avail = 0; avail <= sizeof buf; avail++) {
      for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
         for (size_t max_len = 5; max_len <= 12; max_len += 7) {
            for (int term = 0; term < 2; term++) {
               memset(buf, term ? 0x41 : 0, sizeof buf);
               uint32_t u = (uint32_t) lengths[li];
               for (int b = 0; b < 4; b++) {
                  buf[b] = (uint8_t) (u >> (8 * b));
               }
               size_t at_want, len = 0, fast_len;
               opmsg_fault_t fault = {OPMSG_OK, 0};
               opmsg_error_code_t want = frame_oracle(buf, avail, max_len, &at_want);
               bool framed = opmsg_doc_frame_check(buf, avail, max_len, &len, &fault);
               assert_int_equal(framed, want == OPMSG_OK);
               if (!framed) {
                  assert_int_equal(fault.code, want);
                  assert_int_equal(fault.at, at_want);
               }
               assert_int_equal(opmsg_doc_frame_ok(buf, avail, max_len, &fast_len), want == OPMSG_OK);

               /* The report: the same code, at the same offset (counted
                * from a document at offset 100 of a message). */
               opmsg_report_t r;
               bson_error_t error;
               uint32_t rlen = 0;
               opmsg_report_init(&r, &error, buf, 100, &opmsg_parser_side);
               bool ok = opmsg_doc_frame(&r, buf, avail, max_len, "document", &rlen);
               assert_int_equal(ok, want == OPMSG_OK);
               if (ok) {
                  assert_int_equal(rlen, (uint32_t) lengths[li]);
               } else {
                  assert_int_equal(r.code, want);
                  assert_int_equal(error.code, want);
                  assert_int_equal(r.offset, 100 + at_want);
               }
               n_cases++;
            }
         }
      }
   }
   assert_true(n_cases > 500);
}

/* The section frame as wire.h states it: kind 0 or 1, then an int32
 * size of at least 5 within what follows the kind byte. */
static opmsg_error_code_t
section_oracle(const uint8_t *p, size_t avail, size_t *at)
{
   *at = 0;
   if (avail < 1) {
      return OPMSG_ERR_SECTION_TRUNCATED;
   }
   if (p[0] > 1) {
      return OPMSG_ERR_UNKNOWN_SECTION;
   }
   bool body = p[0] == 0;
   *at = body ? 1 : 0;
   if (avail < 5) {
      return body ? OPMSG_ERR_DOCUMENT_LENGTH : OPMSG_ERR_SECTION_TRUNCATED;
   }
   int32_t n = (int32_t) ((uint32_t) p[1] | (uint32_t) p[2] << 8 | (uint32_t) p[3] << 16 | (uint32_t) p[4] << 24);
   if (n < 5 || (size_t) n > avail - 1) {
      return body ? OPMSG_ERR_DOCUMENT_LENGTH : OPMSG_ERR_SEQUENCE_SIZE;
   }
   *at = 0;
   return OPMSG_OK;
}

static void
test_section_check_is_its_frame(void **state)
{
   (void) state;
   static const int32_t sizes[] = {INT32_MIN, -1, 0, 4, 5, 6, 9, 10, 11, 12, INT32_MAX};
   uint8_t buf[12];

   for (uint8_t kind = 0; kind < 3; kind++) {
      for (size_t avail = 0; avail <= sizeof buf; avail++) {
         for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            memset(buf, 'x', sizeof buf);
            buf[0] = kind;
            for (int b = 0; b < 4; b++) {
               buf[1 + b] = (uint8_t) ((uint32_t) sizes[si] >> (8 * b));
            }
            size_t at_want, at, size = 0;
            opmsg_error_code_t want = section_oracle(buf, avail, &at_want);
            opmsg_error_code_t got = opmsg_section_check(buf, avail, &size, &at);
            assert_int_equal(got, want);
            if (got == OPMSG_OK) {
               assert_int_equal(size, 1 + (size_t) sizes[si]);
               assert_int_equal(opmsg_section_frame(buf, avail), size);
               assert_int_equal(opmsg_wire_section(buf, avail, 0), size);
            } else {
               assert_int_equal(at, at_want);
               assert_int_equal(opmsg_section_frame(buf, avail), 0);
            }
         }
      }
   }
}

int
main(void)
{
   const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_rule),
      cmocka_unit_test(test_rule_table),
      cmocka_unit_test(test_success_gives_len),
      cmocka_unit_test(test_not_the_bytes),
      cmocka_unit_test(test_large_messages),
      cmocka_unit_test(test_frame_check_is_its_report),
      cmocka_unit_test(test_section_check_is_its_frame),
   };
   return cmocka_run_group_tests(tests, NULL, NULL);
}
