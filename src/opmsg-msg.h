/*
 * opmsg-msg.h - the OP_MSG core: a parsed OP_MSG as the core keeps it
 * (opmsg_op_msg_t), its sections and their two walkers, the dotted paths,
 * and the entry points that parse one, size its merged document and write
 * it (parse.c, paths.c, merge.c).
 *
 * Not installed. The core works on opmsg_op_msg_t and opmsg_limits_t, never
 * on the public opmsg_msg_t or opmsg_options_t: what it needs beyond its
 * own private headers is libbson's types (bson_error_t, the BSON_* macros),
 * libc, and the public constants (error codes, flag bits, default limits).
 * The public functions (opmsg_parse(), opmsg_merge_*(), the view and the
 * iterators) translate: opmsg_msg_t keeps an opmsg_op_msg_t in its priv_
 * (opmsg-parse.h).
 *
 */
#ifndef OPMSG_MSG_H
#define OPMSG_MSG_H

#include "opmsg-common.h"
#include "opmsg-document.h"

/* The smallest OP_MSG: header, flagBits, a kind byte, an empty body. */
#define OPMSG_OP_MSG_MIN_LENGTH (OPMSG_OFF_SECTIONS + 1 + 5)

/* A parsed OP_MSG, pointing into the message's bytes, which must outlive
 * it. Offsets are from data; a message is at most INT32_MAX bytes, so they
 * fit 32 bits (and the whole fits opmsg_msg_t.priv_). */
typedef struct {
   const uint8_t *data; /* the whole message, len bytes */
   const uint8_t *body; /* the body document, body_len bytes */
   uint32_t len;
   uint32_t body_len;
   uint32_t flags;        /* flagBits */
   uint32_t checksum;     /* the stored CRC-32C, with OPMSG_FLAG_CHECKSUM_PRESENT */
   uint32_t sections_end; /* the byte after the last section: len, or len - 4 before a checksum */
   uint32_t n_sequences;  /* kind-1 sections */
   uint32_t merged_size;  /* the exact size of the merged document */
   /* One sequence whose identifier has one dot, at a path the body holds:
    * the offset of the body's sub-document it goes at the end of, as
    * rules.c found it (merge.c splices it in), or 0. */
   uint32_t splice;
   /* The offset of the body's first "$db" element, 0 when there is none;
    * known only with db_known (a walk of the body's whole top level, or one
    * that met "$db", went before: not so at the spec level for a body
    * alone). */
   uint32_t db;
   /* The last sequence's document count, which the scan found, so that
    * iterating a message's only sequence (most have one) need not count
    * again; seq_off is its kind byte's offset. */
   uint32_t seq_count;
   uint32_t seq_off;
   bool dotted; /* a sequence's identifier has a dot */
   bool db_known;
} opmsg_op_msg_t;

/* The body-alone rule, the one check of it: the sections at p (n bytes,
 * the checksum's excluded) are one body whose frame (opmsg_doc_frame_ok(),
 * within body_limit) fills them. Its length then goes to *body_len: at the
 * level that only frames a body alone (spec) nothing else of the sections
 * is checked. Anything else, a fault included, is false, for the whole way
 * (parse.c's scan), which says what is wrong. */
static OPMSG_ALWAYS_INLINE bool
opmsg_op_msg_body_fills(const uint8_t *p, size_t n, size_t body_limit, uint32_t *body_len)
{
   size_t flen;
   if (p[0] != OPMSG_SECTION_BODY || !opmsg_doc_frame_ok(p + 1, n - 1, body_limit, &flen) || flen != n - 1) {
      return false;
   }
   *body_len = (uint32_t) flen;
   return true;
}

/* The message most replies are: a body alone filling the sections
 * (opmsg_op_msg_body_fills()), no checksum, no required flag bit but
 * moreToCome (optional bits are ignored on receipt anyway). When
 * data[0..len) (len >= OPMSG_OP_MSG_MIN_LENGTH, the header checked) is
 * that, returns true with its flagBits and the body's length. Inline:
 * opmsg_parse() takes it before anything else (header.c), and so does
 * opmsg_op_msg_parse(). */
static OPMSG_ALWAYS_INLINE bool
opmsg_op_msg_alone_ok(const uint8_t *data, size_t len, size_t body_limit, uint32_t *flags, uint32_t *body_len)
{
   *flags = opmsg_read_u32(data + OPMSG_OFF_FLAG_BITS);
   return (*flags & OPMSG_FLAG_REQUIRED_MASK & ~OPMSG_FLAG_MORE_TO_COME) == 0 &&
          opmsg_op_msg_body_fills(data + OPMSG_OFF_SECTIONS, len - OPMSG_OFF_SECTIONS, body_limit, body_len);
}

/* opmsg_op_msg_alone_ok(), and *m filled when it is true. */
/* *m for an OP_MSG whose one section is its body: every field not set here
 * is 0, false or NULL. */
static OPMSG_ALWAYS_INLINE void
opmsg_op_msg_set_alone(opmsg_op_msg_t *m, const uint8_t *data, size_t len, uint32_t flags, uint32_t body_len)
{
   const opmsg_op_msg_t alone = {.data = data,
                                 .body = data + OPMSG_OFF_SECTIONS + 1,
                                 .len = (uint32_t) len,
                                 .body_len = body_len,
                                 .flags = flags,
                                 .sections_end = (uint32_t) len,
                                 .merged_size = body_len};
   *m = alone;
}

static OPMSG_ALWAYS_INLINE bool
opmsg_op_msg_alone(opmsg_op_msg_t *m, const uint8_t *data, size_t len, size_t body_limit)
{
   uint32_t flags, body_len;
   if (!opmsg_op_msg_alone_ok(data, len, body_limit, &flags, &body_len)) {
      return false;
   }
   opmsg_op_msg_set_alone(m, data, len, flags, body_len);
   return true;
}

/* Parses and checks the OP_MSG data[0..len) into *m, as
 * far as limits ask, reporting a fault into r (whose offsets count from
 * data). The header's length and opcode are the caller's to have checked
 * (opmsg_parse() does, header.c); len must be the whole message. */
bool opmsg_op_msg_parse(opmsg_op_msg_t *m, const uint8_t *data, size_t len, const opmsg_limits_t *limits,
                        opmsg_report_t *r);

/* The exact size of m's merged document (the body's
 * fields, then each sequence as an array, a dotted one at its path). */
static inline size_t
opmsg_op_msg_merged_size(const opmsg_op_msg_t *m)
{
   return m->merged_size;
}

/* Writes m's merged document into out, which has
 * opmsg_op_msg_merged_size(m) bytes. Allocates nothing; cannot fail. */
void opmsg_op_msg_merge(const opmsg_op_msg_t *m, uint8_t *out);


/* The body's "$db" string (its length in *len when len is not NULL), or
 * NULL when the body has none. Inline, with the walk out of line: the view
 * asks it of every reply, and the parse noted it for most (a walk of the
 * body's whole top level, or one that met "$db", went before). */
static inline const char *
opmsg_op_msg_db(const opmsg_op_msg_t *m, uint32_t *len)
{
   if (!m->db_known) {
      return m->body ? opmsg_doc_db(m->body, len) : NULL;
   }
   return opmsg_db_string(m->db ? m->data + m->db : NULL, len);
}

/* ---------------------------------------------------------------------------
 * OP_MSG sections (parse.c owns their layout)
 *
 * A section is a kind byte and an int32 size: kind 0 a body document (the
 * size is its own length), kind 1 a document sequence (size, identifier,
 * NUL, documents). Two walkers, one per kind of input:
 * - opmsg_section_frame(): one bounded step over bytes nobody has checked
 *   (the checksum's "missing or wrong" verdict, the compressor's search for
 *   the command, and through opmsg_wire_section() the tools);
 * - opmsg_section_next(): the walk over the sections of a message
 *   opmsg_op_msg_parse() accepted, trusting every frame:
 *   opmsg_op_msg_next_seq() for the cross-section rules, the paths, the
 *   merge and the view's iterators.
 * The parse itself (scan_sections() in parse.c) says which rule a section
 * breaks, so it walks on its own.
 * ------------------------------------------------------------------------- */

/* The smallest size a section's int32 size field can hold: itself and, for
 * a sequence, an empty identifier's NUL; for a body, an empty document. */
#define OPMSG_SEQ_MIN_SIZE 5

/*
 * The section frame, the one check of it: the section at p (its kind byte),
 * avail bytes there, has a known kind and an int32 size of at least
 * OPMSG_SEQ_MIN_SIZE that fits in the bytes after the kind byte. Returns
 * OPMSG_OK with the section's bytes (kind byte included) in *size, or the
 * rule broken with *at, the fault's offset from p: OPMSG_ERR_UNKNOWN_SECTION;
 * for a sequence OPMSG_ERR_SECTION_TRUNCATED (no room for its size) or
 * OPMSG_ERR_SEQUENCE_SIZE (a size below the minimum or past the end), at the
 * kind byte; for a body OPMSG_ERR_DOCUMENT_LENGTH at the document, whose
 * frame (opmsg_doc_frame_check()) then says the rest. The parser reports
 * its verdict (parse.c), opmsg_section_frame() is the same call for the
 * walkers of unchecked bytes.
 */
static OPMSG_ALWAYS_INLINE opmsg_error_code_t
opmsg_section_check(const uint8_t *p, size_t avail, size_t *size, size_t *at)
{
   *at = 0;
   if (avail < 1 || (*p != OPMSG_SECTION_BODY && *p != OPMSG_SECTION_SEQUENCE)) {
      return avail < 1 ? OPMSG_ERR_SECTION_TRUNCATED : OPMSG_ERR_UNKNOWN_SECTION;
   }
   bool body = *p == OPMSG_SECTION_BODY;
   if (avail < OPMSG_SEQ_MIN_SIZE) {
      *at = body;
      return body ? OPMSG_ERR_DOCUMENT_LENGTH : OPMSG_ERR_SECTION_TRUNCATED;
   }
   int32_t n = opmsg_read_i32(p + OPMSG_SECTION_OFF_SIZE);
   if (n < OPMSG_SEQ_MIN_SIZE || (size_t) n > avail - 1) {
      *at = body;
      return body ? OPMSG_ERR_DOCUMENT_LENGTH : OPMSG_ERR_SEQUENCE_SIZE;
   }
   *size = 1 + (size_t) n;
   return OPMSG_OK;
}

/* opmsg_section_check()'s verdict alone: the section's bytes, or 0. */
static inline size_t
opmsg_section_frame(const uint8_t *p, size_t avail)
{
   size_t size, at;
   return opmsg_section_check(p, avail, &size, &at) == OPMSG_OK ? size : 0;
}

/* One section of a parsed OP_MSG. For kind 0 body and body_len; for kind 1
 * identifier (NUL-terminated), identifier_len, documents, documents_len. */
typedef struct {
   uint8_t kind;
   const uint8_t *start; /* the kind byte */
   const uint8_t *end;   /* the byte after the section */
   const uint8_t *body;
   uint32_t body_len;
   const char *identifier;
   uint32_t identifier_len;
   const uint8_t *documents;
   uint32_t documents_len;
} opmsg_section_t;

/* The section at p, within the validated sections (p before their end),
 * into *s; returns the next section's first byte. kind_only: a body's or a
 * sequence's fields are filled only for that kind (OPMSG_SECTION_ANY for
 * both), so that a caller after sequences does not pay for bodies. */
enum { OPMSG_SECTION_ANY = 2 };

static OPMSG_ALWAYS_INLINE const uint8_t *
opmsg_section_next(const uint8_t *p, opmsg_section_t *s, int kind_only)
{
   uint32_t size = opmsg_read_u32(p + 1);
   s->kind = *p;
   s->start = p;
   s->end = p + 1 + size;
   if (s->kind == 0) {
      if (kind_only != 1) {
         s->body = p + 1;
         s->body_len = size;
      }
   } else if (kind_only != 0) {
      s->identifier = (const char *) p + 5;
      s->identifier_len = (uint32_t) strlen(s->identifier);
      s->documents = p + 5 + s->identifier_len + 1;
      s->documents_len = (uint32_t) (s->end - s->documents);
   }
   return s->end;
}

/* The first section of m. */
static inline const uint8_t *
opmsg_op_msg_sections(const opmsg_op_msg_t *m)
{
   return m->data + OPMSG_OFF_SECTIONS;
}

/* The first sequence at or after *p (a section of m, or its end) into *s,
 * *p then the section after it; false when there is none. Start with *p at
 * opmsg_op_msg_sections(m). */
static OPMSG_ALWAYS_INLINE bool
opmsg_op_msg_next_seq(const opmsg_op_msg_t *m, const uint8_t **p, opmsg_section_t *s)
{
   const uint8_t *end = m->data + m->sections_end;
   while (*p < end) {
      *p = opmsg_section_next(*p, s, 1);
      if (s->kind == 1) {
         return true;
      }
   }
   return false;
}

/* The offset of a section of m (its kind byte). */
static inline uint32_t
opmsg_op_msg_offset(const opmsg_op_msg_t *m, const opmsg_section_t *s)
{
   return (uint32_t) (s->start - m->data);
}

/* ---------------------------------------------------------------------------
 * Dotted paths (paths.c): the one home of where a sequence goes, for the
 * rules (rules.c), the view and the merge alike, so that they place
 * sequences alike. A path is a prefix of an identifier (path_len bytes; 0:
 * the top level).
 * ------------------------------------------------------------------------- */

/* The rest of identifier id after "path.", or id itself at the top; NULL
 * when id does not lie under path. */
const char *opmsg_path_rest(const char *id, size_t id_len, const char *path, size_t path_len);
/* The identifier of a sequence that goes on below path through the
 * component key, or NULL (always NULL for a key holding a dot). */
const char *opmsg_path_through(const opmsg_op_msg_t *m, const char *path, size_t path_len, const char *key,
                               size_t key_len);
/* The one decision of where a path goes: the field the path component
 * comp (comp_len bytes) enters in the document doc (len bytes, its
 * elements sound up to the one found): the first element called comp from
 * from (an element of doc; doc + 4 for the first) on, into *found. False
 * when there is none from there. rules.c checks a path with it
 * (opmsg_rule_path(): there, once, a document), and notes where the path
 * ends (the splice below). */
bool opmsg_path_field(const uint8_t *doc, uint32_t len, const uint8_t *from, const char *comp, size_t comp_len,
                      opmsg_element_t *found);
#endif /* OPMSG_MSG_H */
