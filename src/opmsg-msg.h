/*
 * opmsg-msg.h - the internals of a parsed OP_MSG: what opmsg_parse() keeps
 * for the merge and the view, its sections and their two walkers, and the
 * dotted paths (parse.c, view.c, merge.c).
 *
 * Not installed.
 */
#ifndef OPMSG_MSG_H
#define OPMSG_MSG_H

#include "opmsg-common.h"

/* What opmsg_parse() keeps in opmsg_msg_t.priv_ for the merge and view
 * functions (OP_MSG only). The public struct reserves the room; the layout
 * is ours to change. */
typedef struct {
   const uint8_t *sections; /* the sections (checksum excluded) */
   size_t sections_len;
   size_t merged_size; /* exact size of the merged document */
   const uint8_t *db;  /* the body's "$db" element, NULL if none */
   /* One dotted sequence whose path the body holds whole: the body's
    * sub-document it goes at the end of (merge.c splices it in), else NULL. */
   const uint8_t *splice;
   uint32_t n_dotted; /* sequences whose identifier has a dot */
   /* The last sequence's document count, which the scan found, so that
    * iterating a message's only sequence (most have one) need not count
    * again; seq_off is its kind byte's offset. */
   uint32_t seq_count;
   uint32_t seq_off;
   /* db is known: a walk of the body's whole top level, or one that met
    * "$db", went before (not so at the frames level for a body alone). */
   bool db_known;
} opmsg_msg_priv_t;

_Static_assert(sizeof(opmsg_msg_priv_t) <= sizeof(((opmsg_msg_t *) 0)->priv_),
               "opmsg_msg_t.priv_ holds opmsg_msg_priv_t");

static inline opmsg_msg_priv_t *
opmsg_priv(opmsg_msg_t *msg)
{
   return (opmsg_msg_priv_t *) (void *) msg->priv_;
}

static inline const opmsg_msg_priv_t *
opmsg_cpriv(const opmsg_msg_t *msg)
{
   return (const opmsg_msg_priv_t *) (const void *) msg->priv_;
}

/* ---------------------------------------------------------------------------
 * OP_MSG sections (parse.c owns their layout)
 *
 * A section is a kind byte and an int32 size: kind 0 a body document (the
 * size is its own length), kind 1 a document sequence (size, identifier,
 * NUL, documents). Two walkers, one per kind of input:
 * - opmsg_section_frame(): one bounded step over bytes nobody has checked
 *   (the checksum's "missing or wrong" verdict, the compressor's search for
 *   the command);
 * - opmsg_section_next(): the walk over the sections of a message
 *   opmsg_parse_msg() accepted (opmsg_cpriv(msg)->sections), trusting every frame:
 *   the sequence iterators (view.c), and through them the cross-section
 *   rules and the merge.
 * The parse itself (scan_sections() in parse.c) says which rule a section
 * breaks, so it walks on its own.
 * ------------------------------------------------------------------------- */

/* The bytes (kind byte included) of the section at p, avail bytes there,
 * when it has a known kind and a size that fits: 0 when it does not. */
static inline size_t
opmsg_section_frame(const uint8_t *p, size_t avail)
{
   if (avail < 5 || (*p != 0 && *p != 1)) {
      return 0;
   }
   int32_t n = opmsg_read_i32(p + 1);
   return n >= 5 && (size_t) n <= avail - 1 ? 1 + (size_t) n : 0;
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
/* ---------------------------------------------------------------------------
 * Sequences and dotted paths (view.c, merge.c)
 * ------------------------------------------------------------------------- */

/* opmsg_sequence_iter_next(), counting the documents only when asked. */
bool opmsg_sequence_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq, bool count);

/* Paths (view.c), for the view and the merge alike. A path is a prefix of
 * an identifier (path_len bytes; 0: the top level). */
/* The rest of identifier id after "path.", or id itself at the top; NULL
 * when id does not lie under path. */
const char *opmsg_path_rest(const char *id, size_t id_len, const char *path, size_t path_len);
/* The identifier of a sequence that goes on below path through the
 * component key, or NULL (always NULL for a key holding a dot). */
const char *opmsg_path_through(const opmsg_msg_t *msg, const char *path, size_t path_len, const char *key,
                               size_t key_len);
/* The first element named key at the top level of the framed document
 * doc, or NULL. Each element is checked on the way (opmsg_skip_element()),
 * so on a document whose elements were not, the walk stops with NULL at
 * the first unsound one; a match is a sound element. */
const uint8_t *opmsg_field_named(const uint8_t *doc, const char *key, size_t key_len);
/* Whether a sequence before the one at offset seq_off goes through path's
 * component comp: the sub-document the merge creates for it exists. */
bool opmsg_path_created_before(const opmsg_msg_t *msg, uint32_t seq_off, const char *path, size_t path_len,
                               const char *comp, size_t comp_len);

/* The merged size of a message with dotted identifiers (merge.c), given
 * seq_out, the bytes the sequences' arrays add (parse.c's count). */
size_t opmsg_merge_paths_size(const opmsg_msg_t *msg, size_t seq_out);

#endif /* OPMSG_MSG_H */
