/*
 * paths.c - where the sequence of a dotted identifier goes in a parsed
 * OP_MSG's merged document.
 *
 * Part of the OP_MSG core (opmsg-msg.h). The view (view.c) and the merge
 * (merge.c) both ask here, so they place sequences alike; the fuzz targets
 * hold the two to the same bytes. Everything here reads a message
 * opmsg_op_msg_parse() accepted.
 */
#include "opmsg-msg.h"

/* If id lies under path (is "path.rest", or anything at the top), the rest. */
const char *
opmsg_path_rest(const char *id, size_t id_len, const char *path, size_t path_len)
{
   if (path_len == 0) {
      return id;
   }
   if (id_len > path_len && id[path_len] == '.' && memcmp(id, path, path_len) == 0) {
      return id + path_len + 1;
   }
   return NULL;
}

/* Whether the identifier of seq, below path, goes on through the component
 * comp: its rest starts with "comp.". */
static bool
seq_goes_through(const opmsg_section_t *seq, const char *path, size_t path_len, const char *comp, size_t comp_len)
{
   const char *rest = opmsg_path_rest(seq->identifier, seq->identifier_len, path, path_len);
   return rest && (size_t) (seq->identifier + seq->identifier_len - rest) > comp_len && rest[comp_len] == '.' &&
          memcmp(rest, comp, comp_len) == 0;
}

/* The identifier of a sequence that goes on below path through the
 * component key (its rest starts with "key."), or NULL. A key with a dot
 * in it is one name that holds a dot, never a component: "a.b.c" passes
 * through "a", not through a field called "a.b". */
const char *
opmsg_path_through(const opmsg_op_msg_t *m, const char *path, size_t path_len, const char *key, size_t key_len)
{
   const uint8_t *p = opmsg_op_msg_sections(m);
   opmsg_section_t seq;
   if (memchr(key, '.', key_len)) {
      return NULL;
   }
   while (opmsg_op_msg_next_seq(m, &p, &seq)) {
      if (seq_goes_through(&seq, path, path_len, key, key_len)) {
         return seq.identifier;
      }
   }
   return NULL;
}

const uint8_t *
opmsg_path_sub(const uint8_t *doc, const char *comp, size_t comp_len)
{
   /* The element's type byte, the key and its NUL, then the document. */
   return opmsg_field_named(doc, comp, comp_len) + 2 + comp_len;
}
