/*
 * request-parse.c - the drop-in keeps the contract of the parse functions it
 * replaces for callers that are not libmongoc's reply path: a request's
 * sections come back as they are on the wire, not merged (issue: libmongoc's
 * mock server parses the requests it receives with these functions).
 *
 *   dropin-request-parse stock|dropin
 *
 * Linked with the system's libmongoc, and nothing of opmsg's. The parse
 * functions are private to libmongoc (no header is installed), so they are
 * looked up at run time: _mongoc_rpc_scatter on 1.23, the mcd_rpc_* family
 * on 1.30 and 2.x. Run stock, it records what the original does; run with
 * LD_PRELOAD=libopmsg-mongoc.so ("dropin"), the same answers are expected,
 * plus the cases where only the drop-in is safe. Exit 0 when every check
 * holds.
 */
#define _GNU_SOURCE 1
#include <mongoc/mongoc.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_NAME "request-parse"
#include "dropin-test.h"

static bool dropin;


static void *
lookup(const char *name)
{
   return dlsym(RTLD_DEFAULT, name);
}

/* dlsym's void * into a function pointer, the way POSIX allows. */
#define FN(var, name) memcpy(&(var), &(void *) {lookup(name)}, sizeof(var))

/* ---------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------- */
typedef struct {
   uint8_t data[1024];
   size_t len;
} msg_t;

static void
put(msg_t *m, const void *p, size_t n)
{
   memcpy(m->data + m->len, p, n);
   m->len += n;
}

static void
put_doc(msg_t *m, const bson_t *doc)
{
   put(m, bson_get_data(doc), doc->len);
}

static void
begin(msg_t *m, int32_t opcode)
{
   memset(m, 0, sizeof *m);
   m->len = 16;
   put_i32(m->data + 4, 77); /* requestID */
   put_i32(m->data + 12, opcode);
}

static void
end(msg_t *m)
{
   put_i32(m->data, (int32_t) m->len);
}

/* Offsets recorded while building, to compare pointers with. */
typedef struct {
   size_t body;        /* the body document */
   size_t seq[3];      /* each sequence's identifier */
   size_t seq_size[3]; /* each sequence's wire size */
   int n_seq;
} layout_t;

static void
body(msg_t *m, layout_t *l, const bson_t *doc)
{
   uint8_t kind = 0;
   put(m, &kind, 1);
   l->body = m->len;
   put_doc(m, doc);
}

static void
sequence(msg_t *m, layout_t *l, const char *id, int n_docs)
{
   uint8_t kind = 1;
   size_t size_at;

   put(m, &kind, 1);
   size_at = m->len;
   m->len += 4;
   l->seq[l->n_seq] = m->len;
   put(m, id, strlen(id) + 1);
   for (int i = 0; i < n_docs; i++) {
      bson_t *d = BCON_NEW("_id", BCON_INT32(i), "x", "y");
      put_doc(m, d);
      bson_destroy(d);
   }
   l->seq_size[l->n_seq++] = m->len - size_at;
   put_i32(m->data + size_at, (int32_t) (m->len - size_at));
}

/* The identifiers of the sequences insert() writes. */
static const char *ids[3] = {"documents", "more", "other"};

/* An insert as libmongoc sends it: flags 0, body, "documents" of n. With
 * seq_first the sequence comes before the body (legal on the wire). */
static void
insert(msg_t *m, layout_t *l, bool seq_first, int n_seqs)
{
   bson_t *cmd = BCON_NEW("insert", "c", "$db", "d");

   memset(l, 0, sizeof *l);
   begin(m, 2013);
   m->len += 4; /* flagBits */
   if (seq_first) {
      sequence(m, l, ids[0], 2);
   } else {
      body(m, l, cmd);
      sequence(m, l, ids[0], 2);
   }
   for (int i = 1; i < n_seqs; i++) {
      sequence(m, l, ids[i], 1);
   }
   if (seq_first) {
      body(m, l, cmd);
   }
   end(m);
   bson_destroy(cmd);
}

/* OP_QUERY {ping: 1} on admin.$cmd, as old clients' handshakes. */
static void
query(msg_t *m)
{
   bson_t *q = BCON_NEW("ping", BCON_INT32(1));
   int32_t zero = 0, one = -1;

   begin(m, 2004);
   put(m, &zero, 4);
   put(m, "admin.$cmd", 11);
   put(m, &zero, 4);
   put(m, &one, 4);
   put_doc(m, q);
   end(m);
   bson_destroy(q);
}

/* ---------------------------------------------------------------------------
 * libmongoc 1.23: _mongoc_rpc_scatter into mongoc_rpc_t (96 bytes).
 * ------------------------------------------------------------------------- */
typedef bool (*scatter_fn)(void *, const uint8_t *, size_t);

static void
check_rpc_sections(const uint8_t *rpc, const msg_t *m, const layout_t *l, bool seq_first)
{
   int body_at = seq_first ? 1 : 0, seq_at = seq_first ? 0 : 1;
   const uint8_t *b, *id, *docs;

   CHECK(get_i32(rpc + 12) == 2013);
   CHECK(get_i32(rpc + 88) == 2);
   CHECK(rpc[24 + 32 * body_at] == 0 && rpc[24 + 32 * seq_at] == 1);
   memcpy(&b, rpc + 24 + 32 * body_at + 8, sizeof b);
   CHECK(b == m->data + l->body);
   memcpy(&id, rpc + 24 + 32 * seq_at + 16, sizeof id);
   memcpy(&docs, rpc + 24 + 32 * seq_at + 24, sizeof docs);
   CHECK(id == m->data + l->seq[0] && strcmp((const char *) id, "documents") == 0);
   CHECK(docs == id + strlen("documents") + 1);
   CHECK(get_i32(rpc + 24 + 32 * seq_at + 8) == (int32_t) l->seq_size[0]);
}

static void
run_rpc(scatter_fn scatter)
{
   uint64_t storage[12];
   uint8_t *rpc = (uint8_t *) storage;
   msg_t m;
   layout_t l;

   insert(&m, &l, false, 1);
   CHECK(scatter(rpc, m.data, m.len));
   check_rpc_sections(rpc, &m, &l, false);

   insert(&m, &l, true, 1);
   CHECK(scatter(rpc, m.data, m.len));
   check_rpc_sections(rpc, &m, &l, true);

   query(&m);
   CHECK(scatter(rpc, m.data, m.len));
   CHECK(get_i32(rpc + 12) == 2004);

   if (dropin) {
      /* Three sections do not fit in mongoc_rpc_t (the original writes past
       * it): refused. A checksum that does not match: refused. */
      insert(&m, &l, false, 2);
      CHECK(!scatter(rpc, m.data, m.len));
      insert(&m, &l, false, 1);
      put_i32(m.data + 16, 1);
      put_i32(m.data, (int32_t) m.len + 4);
      m.len += 4;
      CHECK(!scatter(rpc, m.data, m.len));
   }
   printf("request-parse: 1.23 _mongoc_rpc_scatter: %s\n", failures ? "FAILED" : "sections as on the wire");
}

/* ---------------------------------------------------------------------------
 * libmongoc 1.30 / 2.x: mcd_rpc_message through its accessors.
 * ------------------------------------------------------------------------- */
typedef struct {
   void *(*from_data)(const void *, size_t, const void **);
   void (*destroy)(void *);
   int32_t (*op_code)(const void *);
   size_t (*count)(const void *);
   uint8_t (*kind)(const void *, size_t);
   const void *(*body)(const void *, size_t);
   const char *(*identifier)(const void *, size_t);
   const void *(*docs)(const void *, size_t);
   size_t (*docs_len)(const void *, size_t);
   int32_t (*length)(const void *, size_t);
   bool (*get_body)(const void *, bson_t *);
} mcd_t;

static void
check_mcd_sections(const mcd_t *f, const void *rpc, const msg_t *m, const layout_t *l, bool seq_first, int n_seqs)
{
   size_t body_at = seq_first ? (size_t) n_seqs : 0;

   CHECK(f->op_code(rpc) == 2013);
   CHECK(f->count(rpc) == (size_t) n_seqs + 1);
   CHECK(f->kind(rpc, body_at) == 0);
   CHECK(f->body(rpc, body_at) == m->data + l->body);
   for (int i = 0; i < n_seqs; i++) {
      size_t at = seq_first ? (size_t) i : (size_t) i + 1;
      CHECK(f->kind(rpc, at) == 1);
      CHECK(f->identifier(rpc, at) == (const char *) m->data + l->seq[i]);
      CHECK(f->length(rpc, at) == (int32_t) l->seq_size[i]);
      CHECK(f->docs_len(rpc, at) == l->seq_size[i] - 4 - strlen(f->identifier(rpc, at)) - 1);
   }
}

static void
run_mcd(const mcd_t *f)
{
   msg_t m;
   layout_t l;
   void *rpc;
   bson_t b;

   for (int seq_first = 0; seq_first < 2; seq_first++) {
      for (int n = 1; n <= 3; n++) {
         insert(&m, &l, seq_first, n);
         rpc = f->from_data(m.data, m.len, NULL);
         CHECK(rpc);
         if (rpc) {
            check_mcd_sections(f, rpc, &m, &l, seq_first, n);
            f->destroy(rpc);
         }
      }
   }
   query(&m);
   rpc = f->from_data(m.data, m.len, NULL);
   CHECK(rpc && f->op_code(rpc) == 2004);
   f->destroy(rpc);

   /* get_body is where a reply is read: the drop-in gives the merged
    * document (owned: bson_destroy frees it), the original the body. */
   insert(&m, &l, true, 2);
   rpc = f->from_data(m.data, m.len, NULL);
   CHECK(rpc && f->get_body(rpc, &b));
   if (rpc) {
      bson_iter_t it, child;
      CHECK(bson_iter_init_find(&it, &b, "insert"));
      if (dropin) {
         CHECK(bson_iter_init_find(&it, &b, "documents") && BSON_ITER_HOLDS_ARRAY(&it) &&
               bson_iter_recurse(&it, &child) && bson_iter_find(&child, "1"));
         CHECK(bson_iter_init_find(&it, &b, "more") && BSON_ITER_HOLDS_ARRAY(&it));
      } else {
         CHECK(!bson_has_field(&b, "documents"));
      }
      bson_destroy(&b);
      f->destroy(rpc);
   }

   if (dropin) {
      /* Two sequences with one identifier, and a checksum that does not
       * match: the original accepts both, the drop-in refuses them. */
      ids[1] = "documents";
      insert(&m, &l, false, 2);
      ids[1] = "more";
      CHECK(!f->from_data(m.data, m.len, NULL));
      insert(&m, &l, false, 1);
      put_i32(m.data + 16, 1);
      put_i32(m.data, (int32_t) m.len + 4);
      m.len += 4;
      CHECK(!f->from_data(m.data, m.len, NULL));
   }
   printf("request-parse: mcd-rpc mcd_rpc_message_from_data: %s\n", failures ? "FAILED" : "sections as on the wire");
}

/* Where a refused message went wrong: mcd_rpc_message_from_data()'s
 * data_end. For the faults libmongoc's parser sees too, the drop-in says
 * what the original says (the field, or the section, it stopped at); for
 * those only the drop-in refuses, where libopmsg found the fault (the later
 * of two sequences with one identifier, the stored checksum). The drop-in
 * no longer runs the original a second time to learn it. */
static void
expect_end(const mcd_t *f, const msg_t *m, size_t at, bool refused)
{
   const void *data_end = NULL;
   void *rpc = f->from_data(m->data, m->len, &data_end);
   CHECK(refused ? !rpc : rpc != NULL);
   CHECK(data_end == (const void *) (m->data + (refused ? at : m->len)));
   if (data_end != (const void *) (m->data + (refused ? at : m->len))) {
      fprintf(stderr, DT_NAME ": data_end at %td, expected %zu\n", (const uint8_t *) data_end - m->data,
              refused ? at : m->len);
   }
   if (rpc) {
      f->destroy(rpc);
   }
}

static void
check_data_end(const mcd_t *f)
{
   msg_t m;
   layout_t l;
   bson_t *empty = bson_new();
   uint8_t kind;
   size_t at;

   /* An unknown required flag bit: flagBits. */
   insert(&m, &l, false, 1);
   put_i32(m.data + 16, 4);
   expect_end(f, &m, 16, true);

   /* A section of kind 2 after the others: its kind byte. */
   insert(&m, &l, false, 1);
   at = m.len;
   kind = 2;
   put(&m, &kind, 1);
   put_doc(&m, empty);
   end(&m);
   expect_end(f, &m, at, true);

   /* A second body: its kind byte. */
   insert(&m, &l, false, 1);
   at = m.len;
   kind = 0;
   put(&m, &kind, 1);
   put_doc(&m, empty);
   end(&m);
   expect_end(f, &m, at, true);

   /* OP_KILL_CURSORS counting one cursor ID of the two there: where the
    * bytes the count leaves over begin. */
   int32_t zero = 0, one = 1;
   int64_t cursor_ids[2] = {7, 8};
   begin(&m, 2007);
   put(&m, &zero, 4);
   put(&m, &one, 4);
   put(&m, cursor_ids, sizeof cursor_ids);
   end(&m);
   expect_end(f, &m, 24 + 8, true);

   /* Two sequences with one identifier (the original takes it): the
    * second's kind byte, 5 bytes before its identifier. */
   insert(&m, &l, false, 1);
   expect_end(f, &m, 0, false);
   if (dropin) {
      ids[1] = "documents";
      insert(&m, &l, false, 2);
      ids[1] = "more";
      expect_end(f, &m, l.seq[1] - 5, true);
      /* A checksum that does not match: the stored checksum. */
      insert(&m, &l, false, 1);
      put_i32(m.data + 16, 1);
      m.len += 4;
      end(&m);
      expect_end(f, &m, m.len - 4, true);
   }
   bson_destroy(empty);
   printf("request-parse: data_end of refused messages: %s\n", failures ? "FAILED" : "where the fault is");
}

int
main(int argc, char **argv)
{
   scatter_fn scatter;
   mcd_t f;

   if (argc != 2 || (strcmp(argv[1], "stock") && strcmp(argv[1], "dropin"))) {
      fprintf(stderr, "usage: dropin-request-parse stock|dropin\n");
      return 2;
   }
   dropin = strcmp(argv[1], "dropin") == 0;
   mongoc_init();
   printf("request-parse: libmongoc %s, %s\n", mongoc_get_version(), argv[1]);

   FN(scatter, "_mongoc_rpc_scatter");
   FN(f.from_data, "mcd_rpc_message_from_data");
   /* The drop-in exports both families; the libmongoc that is loaded has
    * only one of them. */
   if (mongoc_get_major_version() == 1 && mongoc_get_minor_version() < 24) {
      run_rpc(scatter);
   } else {
      FN(f.destroy, "mcd_rpc_message_destroy");
      FN(f.op_code, "mcd_rpc_header_get_op_code");
      FN(f.count, "mcd_rpc_op_msg_get_sections_count");
      FN(f.kind, "mcd_rpc_op_msg_section_get_kind");
      FN(f.body, "mcd_rpc_op_msg_section_get_body");
      FN(f.identifier, "mcd_rpc_op_msg_section_get_identifier");
      FN(f.docs, "mcd_rpc_op_msg_section_get_document_sequence");
      FN(f.docs_len, "mcd_rpc_op_msg_section_get_document_sequence_length");
      FN(f.length, "mcd_rpc_op_msg_section_get_length");
      FN(f.get_body, "mcd_rpc_message_get_body");
      if (!f.from_data || !f.destroy || !f.get_body || !f.length) {
         fprintf(stderr, "request-parse: mcd_rpc_* functions not found\n");
         return 2;
      }
      run_mcd(&f);
      check_data_end(&f);
   }
   mongoc_cleanup();
   return failures ? 1 : 0;
}
