/*
 * view.c - reading a parsed message as if it were merged, with no copy and
 * no allocation: the command name, $db, the body, each sequence and its
 * documents, and an iterator over the merged document's top level.
 *
 * Everything here walks bytes opmsg_parse() has already checked, so the
 * walks trust the frames they meet.
 */
#include "opmsg-document.h"
#include "opmsg-msg.h"

const char *
opmsg_command_name(const opmsg_msg_t *msg)
{
   if (!msg->body || msg->body_len <= 5) {
      return NULL;
   }
   return (const char *) msg->body + 5;
}

const char *
opmsg_db(const opmsg_msg_t *msg, uint32_t *len)
{
   bson_t body;
   bson_iter_t it;
   if (msg->opcode == OPMSG_OP_MSG) {
      /* The parser noted the first "$db" element when a walk of the body
       * passed it or went to the end; not so at the frames level for a body
       * alone, where opmsg's own walk looks (it stops at a bad element). */
      const opmsg_msg_priv_t *priv = opmsg_cpriv(msg);
      const uint8_t *e = priv->db_known ? priv->db : msg->body ? opmsg_field_named(msg->body, "$db", 3) : NULL;
      if (!e || *e != BSON_TYPE_UTF8) {
         return NULL;
      }
      if (len) {
         *len = opmsg_read_u32(e + 5) - 1; /* type, "$db", NUL, then the length */
      }
      return (const char *) e + 9;
   }
   if (!opmsg_body(msg, &body) || !bson_iter_init_find(&it, &body, "$db") || !BSON_ITER_HOLDS_UTF8(&it)) {
      return NULL;
   }
   return bson_iter_utf8(&it, len);
}

bool
opmsg_body(const opmsg_msg_t *msg, bson_t *body)
{
   return msg->body && bson_init_static(body, msg->body, msg->body_len);
}

/* ---------------------------------------------------------------------------
 * Sequences
 * ------------------------------------------------------------------------- */

void
opmsg_sequence_iter_init(opmsg_sequence_iter_t *it, const opmsg_msg_t *msg)
{
   it->base = msg->data;
   it->msg = msg;
   it->p = msg->opcode == OPMSG_OP_MSG ? opmsg_cpriv(msg)->sections : NULL;
   it->end = it->p ? it->p + opmsg_cpriv(msg)->sections_len : NULL;
}

/* How many documents a sequence holds: a walk of their frames. */
static uint32_t
count_documents(const opmsg_sequence_t *seq)
{
   uint32_t n = 0;
   const uint8_t *end = seq->documents + seq->documents_len;
   for (const uint8_t *d = seq->documents; d < end;) {
      uint32_t len = opmsg_read_u32(d);
      opmsg_prefetch_ahead(d, len);
      d += len;
      n++;
   }
   return n;
}

bool
opmsg_sequence_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq, bool count)
{
   while (it->p && it->p < it->end) {
      opmsg_section_t s;
      it->p = opmsg_section_next(it->p, &s, 1);
      if (s.kind == 0) {
         continue;
      }
      seq->identifier = s.identifier;
      seq->identifier_len = s.identifier_len;
      seq->documents = s.documents;
      seq->documents_len = s.documents_len;
      seq->offset = (uint32_t) (s.start - it->base);
      seq->count = 0;
      if (count) {
         const opmsg_msg_priv_t *priv = opmsg_cpriv(it->msg);
         seq->count = seq->offset == priv->seq_off ? priv->seq_count : count_documents(seq);
      }
      return true;
   }
   return false;
}

bool
opmsg_sequence_iter_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq)
{
   return opmsg_sequence_next(it, seq, true);
}

bool
opmsg_sequence_find(const opmsg_msg_t *msg, const char *identifier, opmsg_sequence_t *seq)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_next(&it, seq, false)) {
      if (strcmp(seq->identifier, identifier) == 0) {
         opmsg_sequence_iter_init(&it, msg);
         it.p = msg->data + seq->offset;
         return opmsg_sequence_next(&it, seq, true);
      }
   }
   return false;
}

void
opmsg_document_iter_init(opmsg_document_iter_t *it, const opmsg_sequence_t *seq)
{
   it->p = seq->documents;
   it->end = seq->documents + seq->documents_len;
}

bool
opmsg_document_iter_next(opmsg_document_iter_t *it, bson_t *doc)
{
   if (it->p >= it->end) {
      return false;
   }
   uint32_t len = opmsg_read_u32(it->p);
   opmsg_prefetch_ahead(it->p, len);
   bool ok = bson_init_static(doc, it->p, len);
   it->p += len;
   return ok;
}

/* ---------------------------------------------------------------------------
 * The merged view
 *
 * A level of the merged document is a body (sub-)document, or one the merge
 * creates, at a dotted path P ("" at the top). Its fields are the body's
 * fields, then in wire order the sequences directly under P and the
 * sub-documents created for deeper sequences whose next component the body
 * lacks. Only messages with dotted identifiers (at most
 * OPMSG_MAX_DOTTED_SEQUENCES sequences) need the path comparisons below.
 * ------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------
 * Paths: where the sequence of a dotted identifier goes. The view below and
 * the merge (merge.c) both ask here, so they place sequences alike.
 * ------------------------------------------------------------------------- */

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

/* The identifier of a sequence that goes on below path through the
 * component key (its rest starts with "key."), or NULL. A key with a dot
 * in it is one name that holds a dot, never a component: "a.b.c" passes
 * through "a", not through a field called "a.b". */
const char *
opmsg_path_through(const opmsg_msg_t *msg, const char *path, size_t path_len, const char *key, size_t key_len)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t seq;
   if (memchr(key, '.', key_len)) {
      return NULL;
   }
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_next(&it, &seq, false)) {
      const char *rest = opmsg_path_rest(seq.identifier, seq.identifier_len, path, path_len);
      if (rest && (size_t) (seq.identifier + seq.identifier_len - rest) > key_len && rest[key_len] == '.' &&
          memcmp(rest, key, key_len) == 0) {
         return seq.identifier;
      }
   }
   return NULL;
}

/* The first element of the checked document doc named key, or NULL. */
const uint8_t *
opmsg_field_named(const uint8_t *doc, const char *key, size_t key_len)
{
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + opmsg_read_u32(doc) - 1;
   while (p < end) {
      const uint8_t *k = p;
      const uint8_t *next = opmsg_skip_element(p, end, &k);
      if (!next) {
         return NULL; /* an unsound element: the walk stops here */
      }
      if ((size_t) (k - p - 1) == key_len && memcmp(p + 1, key, key_len) == 0) {
         return p;
      }
      p = next;
   }
   return NULL;
}

/* Whether a sequence before the one at offset seq_off, under path, goes on
 * through the component comp: it created that sub-document already. */
bool
opmsg_path_created_before(const opmsg_msg_t *msg, uint32_t seq_off, const char *path, size_t path_len, const char *comp,
                          size_t comp_len)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_t prev;
   opmsg_sequence_iter_init(&it, msg);
   while (opmsg_sequence_next(&it, &prev, false) && prev.offset < seq_off) {
      const char *rest = opmsg_path_rest(prev.identifier, prev.identifier_len, path, path_len);
      if (rest && (size_t) (prev.identifier + prev.identifier_len - rest) > comp_len && rest[comp_len] == '.' &&
          memcmp(rest, comp, comp_len) == 0) {
         return true;
      }
   }
   return false;
}

/* The view's level in those terms: its path is its prefix (none at the
 * top). */
static const char *
under_prefix(const opmsg_view_t *v, const opmsg_sequence_t *seq)
{
   return opmsg_path_rest(seq->identifier, seq->identifier_len, v->prefix, v->prefix_len);
}

bool
opmsg_view_init(opmsg_view_t *view, const opmsg_msg_t *msg)
{
   bson_t body;
   memset(view, 0, sizeof *view);
   if (!opmsg_body(msg, &body) || !bson_iter_init(&view->iter, &body)) {
      return false;
   }
   view->msg = msg;
   view->doc = msg->body;
   view->doc_len = msg->body_len;
   view->has_doc = true;
   opmsg_sequence_iter_init(&view->seqs, msg);
   return true;
}

bool
opmsg_view_enter(const opmsg_view_t *view, const opmsg_field_t *field, opmsg_view_t *child)
{
   if (field->kind != OPMSG_FIELD_PATH) {
      return false;
   }
   memset(child, 0, sizeof *child);
   child->msg = view->msg;
   child->prefix = field->path;
   child->prefix_len = field->path_len;
   child->has_doc = field->path_in_body;
   if (child->has_doc) {
      bson_iter_document(&field->iter, &child->doc_len, &child->doc);
      if (!bson_iter_recurse(&field->iter, &child->iter)) {
         return false;
      }
   }
   child->in_sequences = !child->has_doc;
   opmsg_sequence_iter_init(&child->seqs, view->msg);
   return true;
}

static bool
next_body_field(opmsg_view_t *v, opmsg_field_t *f)
{
   if (!bson_iter_next(&v->iter)) {
      return false;
   }
   f->key = bson_iter_key(&v->iter);
   f->key_len = bson_iter_key_len(&v->iter);
   f->iter = v->iter;
   f->kind = OPMSG_FIELD_BODY;
   if (opmsg_cpriv(v->msg)->n_dotted && BSON_ITER_HOLDS_DOCUMENT(&v->iter) &&
       (f->path = opmsg_path_through(v->msg, v->prefix, v->prefix_len, f->key, f->key_len))) {
      f->kind = OPMSG_FIELD_PATH;
      f->path_in_body = true;
      f->path_len = (v->prefix_len ? v->prefix_len + 1 : 0) + f->key_len;
   }
   return true;
}

static bool
next_sequence_field(opmsg_view_t *v, opmsg_field_t *f)
{
   opmsg_sequence_t seq;
   const char *rest;

   /* Counted only when it is the field: a sequence that passes through
    * this level to a deeper one is counted there. */
   while (opmsg_sequence_next(&v->seqs, &seq, false)) {
      if (!(rest = under_prefix(v, &seq))) {
         continue;
      }
      size_t rest_len = (size_t) (seq.identifier + seq.identifier_len - rest);
      const char *dot = opmsg_cpriv(v->msg)->n_dotted ? memchr(rest, '.', rest_len) : NULL;
      if (!dot) {
         f->kind = OPMSG_FIELD_SEQUENCE;
         f->key = rest;
         f->key_len = (uint32_t) rest_len;
         f->seq = seq;
         f->seq.count =
            seq.offset == opmsg_cpriv(v->msg)->seq_off ? opmsg_cpriv(v->msg)->seq_count : count_documents(&seq);
         return true;
      }
      size_t comp_len = (size_t) (dot - rest);
      if ((v->has_doc && opmsg_field_named(v->doc, rest, comp_len)) ||
          opmsg_path_created_before(v->msg, seq.offset, v->prefix, v->prefix_len, rest, comp_len)) {
         continue;
      }
      f->kind = OPMSG_FIELD_PATH;
      f->key = rest;
      f->key_len = (uint32_t) comp_len;
      f->path_in_body = false;
      f->path = seq.identifier;
      f->path_len = (uint32_t) (dot - seq.identifier);
      return true;
   }
   return false;
}

bool
opmsg_view_next(opmsg_view_t *view, opmsg_field_t *field)
{
   memset(field, 0, sizeof *field);
   if (!view->in_sequences) {
      if (next_body_field(view, field)) {
         return true;
      }
      view->in_sequences = true;
   }
   return next_sequence_field(view, field);
}
