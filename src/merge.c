/*
 * merge.c - the flat merger: one document from a body and its sequences,
 * and the array writer it writes each sequence with.
 *
 * Only the top level is walked; nested documents are copied as opaque
 * bytes. The exact size is known from the parse, so the output is written
 * in one pass into one buffer. Array keys "0", "1", ... come from a decimal
 * odometer, not printf.
 *
 * Part of the OP_MSG core (opmsg-msg.h, opmsg-array.h): it reads an
 * opmsg_op_msg_t. The public opmsg_merge_*() are msg.c's.
 */
#include "opmsg-array.h"
#include "opmsg-document.h"
#include "opmsg-msg.h"

size_t
opmsg_array_keys_size(uint32_t count)
{
   /* Keys 0..count-1: each its digits and a NUL. */
   size_t total = count; /* the NULs */
   uint64_t lo = 0, hi = 10;
   for (size_t digits = 1; lo < count; digits++, lo = hi, hi *= 10) {
      uint64_t top = hi < count ? hi : count;
      total += (size_t) (top - lo) * digits;
   }
   return total;
}

size_t
opmsg_write_index_key(uint8_t *p, uint32_t i)
{
   char tmp[10];
   size_t n = 0;
   do {
      tmp[n++] = (char) ('0' + i % 10);
      i /= 10;
   } while (i);
   for (size_t k = 0; k < n; k++) {
      p[k] = (uint8_t) tmp[n - 1 - k];
   }
   p[n] = 0;
   return n + 1;
}

/* The next array key. *key holds the klen ASCII digits of the current one,
 * the first in the lowest byte, and zero bytes above them (its NUL). It is
 * counted up in place in a register: a key built byte by byte in memory and
 * then read back as a word stalls the processor on every document. */
static inline void
key_next(uint64_t *key, size_t *klen)
{
   unsigned shift = 8 * (unsigned) (*klen - 1);
   for (;;) {
      *key += 1ull << shift;
      if (((*key >> shift) & 0xff) != ':') {
         return;
      }
      *key -= 10ull << shift; /* ':' back to '0', and carry */
      if (shift == 0) {
         *key = (*key << 8) | '1';
         (*klen)++;
         return;
      }
      shift -= 8;
   }
}

/* Copies n bytes from d to o. Most sequence documents are small, and a
 * call to memcpy for each costs more than the copy: when both buffers have
 * room, a fixed 64 bytes are moved inline instead (what lands past o + n is
 * written over by what follows). in_end and out_end bound the reads and
 * the writes. */
static OPMSG_ALWAYS_INLINE void
copy_doc(uint8_t *o, const uint8_t *d, size_t n, const uint8_t *in_end, const uint8_t *out_end)
{
   if (n <= 64 && in_end - d >= 64 && out_end - o >= 64) {
      memcpy(o, d, 64);
   } else {
      memcpy(o, d, n);
   }
}

/* Writes the array document of a sequence's documents at o: its length,
 * each document keyed "0", "1", ..., the terminator. Returns the end. Reads
 * stay before in_end, writes before out_end (see copy_doc()). */
static OPMSG_ALWAYS_INLINE uint8_t *
write_array(uint8_t *o, const uint8_t *out_end, const uint8_t *docs, size_t docs_len, const uint8_t *in_end)
{
   /* The key's digits live in a register (see key_next()); keys of 8 or
    * more digits, past 10 million documents, are written the slow way. */
   uint64_t key = '0';
   size_t klen = 1;
   uint32_t index = 0;
   const uint8_t *d = docs;
   const uint8_t *end = docs + docs_len;
   uint8_t *array = o;

   o += 4;
   while (d < end) {
      uint32_t n = opmsg_read_u32(d);
      *o++ = BSON_TYPE_DOCUMENT;
      if (klen < 8) {
         uint64_t le = BSON_UINT64_TO_LE(key);
         memcpy(o, &le, out_end - o >= 8 ? 8 : klen + 1);
         o += klen + 1;
         key_next(&key, &klen);
      } else {
         o += opmsg_write_index_key(o, index);
      }
      copy_doc(o, d, n, in_end, out_end);
      o += n;
      d += n;
      index++;
   }
   *o++ = 0;
   opmsg_write_u32(array, (uint32_t) (o - array));
   return o;
}

/* Writes one sequence as an array field named name: type, name, NUL, the
 * array. Returns the end. */
static uint8_t *
write_sequence(uint8_t *o, const uint8_t *out_end, const char *name, size_t name_len, const uint8_t *docs,
               size_t docs_len, const uint8_t *in_end)
{
   *o++ = BSON_TYPE_ARRAY;
   memcpy(o, name, name_len);
   o += name_len;
   *o++ = 0;
   return write_array(o, out_end, docs, docs_len, in_end);
}

size_t
opmsg_array_doc_size(size_t docs_len, uint32_t count)
{
   /* length + (type byte + key + document) per element + terminator */
   return 4 + count + opmsg_array_keys_size(count) + docs_len + 1;
}

void
opmsg_write_array_doc(uint8_t *out, const uint8_t *docs, size_t docs_len)
{
   /* No slack known here: plain copies, bounded by the array itself. */
   (void) write_array(out, out, docs, docs_len, docs);
}

bool
opmsg_array_docs_count(const uint8_t *docs, size_t docs_len, uint32_t *count)
{
   uint32_t n = 0;
   size_t len;
   for (size_t off = 0; off < docs_len; off += len, n++) {
      if (!opmsg_doc_frame_ok(docs + off, docs_len - off, docs_len - off, &len)) {
         return false;
      }
   }
   *count = n;
   return true;
}

/* ---------------------------------------------------------------------------
 * Dotted identifiers
 *
 * The body is copied with each sub-document on a sequence's path rewritten:
 * its own fields, then the sequences placed directly in it, in wire order.
 * That is the order of the view (view.c); the fuzz targets hold the two to
 * the same bytes. A level is named by its path, a prefix of some identifier
 * (path_len bytes, 0 at the top). rules.c has made sure every path meets
 * only documents the body has (a parent is never created) and has one
 * place to go (no component twice), so the size below is the size
 * written.
 * ------------------------------------------------------------------------- */

/* Writes the level at path: the document doc's fields, then the sequences
 * placed directly in it. o is where the level's length goes; returns the
 * end. */
static uint8_t *
write_path_level(const opmsg_op_msg_t *m, const char *path, size_t path_len, const uint8_t *doc, uint8_t *o,
                 const uint8_t *out_end)
{
   uint8_t *start = o;
   const uint8_t *in_end = m->data + m->len;
   const uint8_t *s = opmsg_op_msg_sections(m);
   opmsg_section_t seq;

   o += 4;
   /* The fields off every path are copied in runs, as they are. */
   const uint8_t *p = doc + 4;
   const uint8_t *end = doc + opmsg_read_u32(doc) - 1;
   const uint8_t *run = p;
   while (p < end) {
      const uint8_t *k = p;
      const uint8_t *next = opmsg_skip_element(p, end, &k);
      if (!next) {
         break; /* not reached: the parser checked doc */
      }
      size_t key_len = (size_t) (k - p - 1);
      const char *id;
      if (*p == BSON_TYPE_DOCUMENT && (id = opmsg_path_through(m, path, path_len, (const char *) p + 1, key_len))) {
         memcpy(o, run, (size_t) (p - run));
         o += p - run;
         memcpy(o, p, key_len + 2); /* type, key, NUL */
         o += key_len + 2;
         o = write_path_level(m, id, path_len + (path_len ? 1 : 0) + key_len, k + 1, o, out_end);
         run = next;
      }
      p = next;
   }
   memcpy(o, run, (size_t) (end - run));
   o += end - run;
   /* The sequences directly here; a deeper one went into its field above. */
   while (opmsg_op_msg_next_seq(m, &s, &seq)) {
      const char *rest = opmsg_path_rest(seq.identifier, seq.identifier_len, path, path_len);
      if (!rest) {
         continue;
      }
      size_t rest_len = (size_t) (seq.identifier + seq.identifier_len - rest);
      if (!memchr(rest, '.', rest_len)) {
         o = write_sequence(o, out_end, rest, rest_len, seq.documents, seq.documents_len, in_end);
      }
   }
   *o++ = 0;
   opmsg_write_u32(start, (uint32_t) (o - start));
   return o;
}

/* The common dotted case (parse.c found it): one sequence, one dot in its
 * identifier ("cursor.firstBatch"), at a path the body holds. The merged
 * document is the body with the array written before the terminator of
 * the sub-document `splice`, which rules.c found, and only the body and
 * that sub-document longer by the array's size: the same bytes
 * write_path_level() writes, with no search at all. */
static void
write_spliced(const opmsg_op_msg_t *m, uint8_t *out, size_t size)
{
   const uint8_t *body = m->body;
   const uint8_t *sub = m->data + m->splice;
   const uint8_t *at = sub + opmsg_read_u32(sub) - 1; /* sub's terminator */
   size_t head = (size_t) (at - body);
   const uint8_t *s = opmsg_op_msg_sections(m);
   opmsg_section_t seq;

   if (!opmsg_op_msg_next_seq(m, &s, &seq)) {
      return; /* not reached: a splice is the only sequence's place */
   }
   const char *last = (const char *) memchr(seq.identifier, '.', seq.identifier_len) + 1;

   memcpy(out, body, head);
   uint8_t *o = write_sequence(out + head, out + size, last, (size_t) (seq.identifier + seq.identifier_len - last),
                               seq.documents, seq.documents_len, m->data + m->len);
   memcpy(o, at, (size_t) (body + m->body_len - at));
   opmsg_write_u32(out, (uint32_t) size);
   opmsg_write_u32(out + (sub - body), opmsg_read_u32(sub) + (uint32_t) (size - m->body_len));
}


void
opmsg_op_msg_merge(const opmsg_op_msg_t *m, uint8_t *out)
{
   size_t size = m->merged_size;
   if (m->n_sequences == 0) {
      memcpy(out, m->body, m->body_len);
      return;
   }
   if (m->splice) {
      write_spliced(m, out, size);
      return;
   }
   if (m->dotted) {
      (void) write_path_level(m, NULL, 0, m->body, out, out + size);
      return;
   }
   /* The common case: the body's fields, then each sequence at the top. */
   uint8_t *o = out;
   opmsg_write_u32(o, (uint32_t) size);
   memcpy(o + 4, m->body + 4, m->body_len - 5);
   o += m->body_len - 1;
   const uint8_t *s = opmsg_op_msg_sections(m);
   opmsg_section_t seq;
   while (opmsg_op_msg_next_seq(m, &s, &seq)) {
      o = write_sequence(o, out + size, seq.identifier, seq.identifier_len, seq.documents, seq.documents_len,
                         m->data + m->len);
   }
   *o = 0;
}
