/*
 * paths.c - where the sequence of a dotted identifier goes in a parsed
 * OP_MSG's merged document.
 *
 * Part of the OP_MSG core (opmsg-msg.h). The one home of a sequence's
 * target: opmsg_path_field() names the field a path component enters, and
 * rules.c (which checks the path), the merge (merge.c) and the view
 * (view.c) all follow a path through it, so they place sequences alike; the
 * fuzz targets hold the merge and the view to the same bytes. Everything
 * here but opmsg_path_field() reads a message opmsg_op_msg_parse()
 * accepted.
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

bool
opmsg_path_field(const uint8_t *doc, uint32_t len, const uint8_t *from, const char *comp, size_t comp_len,
                 opmsg_element_t *found)
{
   const uint8_t *p = from;
   const uint8_t *end = doc + len - 1;
   while (p < end && opmsg_next_element(&p, end, found)) {
      if (found->key_len == comp_len && memcmp(found->key, comp, comp_len) == 0) {
         return true;
      }
   }
   return false;
}
