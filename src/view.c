/*
 * view.c - reading a parsed message as if it were merged, with no copy and
 * no allocation: the command name, $db, the body, each sequence and its
 * documents, and an iterator over the merged document's top level.
 *
 * Everything here walks bytes opmsg_parse() has already checked, so the
 * walks trust the frames they meet. Not part of the core: an OP_MSG's
 * sequences, paths and "$db" are the core's to find (opmsg-msg.h), through
 * the opmsg_op_msg_t opmsg_msg_t keeps.
 */
#include "opmsg-document.h"
#include "opmsg-parse.h"

const char *
opmsg_command_name(const opmsg_msg_t *msg)
{
   return msg->body ? opmsg_doc_first_key(msg->body, msg->body_len) : NULL;
}

const char *
opmsg_db(const opmsg_msg_t *msg, uint32_t *len)
{
   if (msg->opcode == OPMSG_OP_MSG) {
      return opmsg_op_msg_db(opmsg_msg_ccore(msg), len);
   }
   /* Another opcode's body (OP_QUERY's query): the same lookup. */
   return msg->body ? opmsg_doc_db(msg->body, len) : NULL;
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
   it->p = msg->opcode == OPMSG_OP_MSG ? opmsg_op_msg_sections(opmsg_msg_ccore(msg)) : NULL;
   it->end = it->p ? msg->data + opmsg_msg_ccore(msg)->sections_end : NULL;
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

/* The count of the sequence at offset seq_off of m: the one the scan
 * counted, or a walk of the frames. */
static uint32_t
sequence_count(const opmsg_op_msg_t *m, const opmsg_sequence_t *seq)
{
   return seq->offset == m->seq_off ? m->seq_count : count_documents(seq);
}

/* opmsg_sequence_iter_next(), counting the documents only when asked. */
static bool
sequence_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq, bool count)
{
   opmsg_section_t s;
   if (!it->p || !opmsg_op_msg_next_seq(opmsg_msg_ccore(it->msg), &it->p, &s)) {
      return false;
   }
   seq->identifier = s.identifier;
   seq->identifier_len = s.identifier_len;
   seq->documents = s.documents;
   seq->documents_len = s.documents_len;
   seq->offset = (uint32_t) (s.start - it->base);
   seq->count = count ? sequence_count(opmsg_msg_ccore(it->msg), seq) : 0;
   return true;
}

bool
opmsg_sequence_iter_next(opmsg_sequence_iter_t *it, opmsg_sequence_t *seq)
{
   return sequence_next(it, seq, true);
}

bool
opmsg_sequence_find(const opmsg_msg_t *msg, const char *identifier, opmsg_sequence_t *seq)
{
   opmsg_sequence_iter_t it;
   opmsg_sequence_iter_init(&it, msg);
   while (sequence_next(&it, seq, false)) {
      if (strcmp(seq->identifier, identifier) == 0) {
         opmsg_sequence_iter_init(&it, msg);
         it.p = msg->data + seq->offset;
         return sequence_next(&it, seq, true);
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
 * A level of the merged document is a body (sub-)document at a dotted path
 * P ("" at the top; the merge never creates one). Its fields are the
 * body's fields, then in wire order the sequences directly under P. Only
 * messages with dotted identifiers (at most
 * OPMSG_MAX_DOTTED_SEQUENCES sequences) need the path comparisons below.
 * ------------------------------------------------------------------------- */

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
   const opmsg_op_msg_t *m = opmsg_msg_ccore(v->msg);
   if (m->dotted && BSON_ITER_HOLDS_DOCUMENT(&v->iter) &&
       (f->path = opmsg_path_through(m, v->prefix, v->prefix_len, f->key, f->key_len))) {
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
   const opmsg_op_msg_t *m = opmsg_msg_ccore(v->msg);
   while (sequence_next(&v->seqs, &seq, false)) {
      if (!(rest = under_prefix(v, &seq))) {
         continue;
      }
      size_t rest_len = (size_t) (seq.identifier + seq.identifier_len - rest);
      if (m->dotted && memchr(rest, '.', rest_len)) {
         continue; /* deeper: inside a body field on its path */
      }
      f->kind = OPMSG_FIELD_SEQUENCE;
      f->key = rest;
      f->key_len = (uint32_t) rest_len;
      f->seq = seq;
      f->seq.count = sequence_count(m, &seq);
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
