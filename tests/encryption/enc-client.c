/* enc-client: client-side field level encryption end to end, with libmongoc's
 * public API only (it does not link libopmsg; the drop-in, when wanted, is
 * LD_PRELOADed by the runner).
 *
 *   enc-client [--bypass query-analysis|auto-encryption|none] URI RUN_ID
 *
 * 1. A local KMS provider (a 96-byte master key), the key vault
 *    keyvault.datakeys and a data key with an alternate name, made with
 *    mongoc_client_encryption_create_datakey().
 * 2. Every document carries two explicitly encrypted fields
 *    (mongoc_client_encryption_encrypt()): "secret", a string, with the
 *    deterministic algorithm (key given by id), and "card", a document, with
 *    the random one (key given by its alternate name).
 * 3. A client with automatic encryption writes them (insert of one document,
 *    insert_many, a bulk of inserts, insert_many of large documents that
 *    libmongoc splits in two commands) and reads them back (find with a small
 *    batchSize, so most documents come in getMore replies; a find whose
 *    filter is a deterministic ciphertext). With --bypass query-analysis (the
 *    default) every command takes libmongoc's automatic-encryption path: the
 *    command and its document sequence are merged into one document
 *    (_mongoc_cmd_append_payload_as_array) and handed to libmongocrypt, which
 *    asks for the collection's metadata (listCollections) and, without query
 *    analysis, needs neither mongocryptd nor crypt_shared. Every reply goes
 *    through libmongocrypt's decryption, which fetches the data key from the
 *    key vault.
 * 4. The decrypted documents must equal the plaintext ones written, byte for
 *    byte; a client without encryption must find only ciphertext on the
 *    server (BSON binary subtype 6, blob subtype 1 or 2, no plaintext).
 *
 * Standard output is deterministic (the same for every run and with or
 * without the drop-in): the decrypted documents as canonical Extended JSON,
 * the command counts and one RESULT line. Details with key ids go to
 * standard error.
 *
 * Exit status: 0 all checks passed, 1 a check or an operation failed,
 * 2 usage, 77 this libmongoc has no client-side encryption.
 */

#define _POSIX_C_SOURCE 200809L /* struct addrinfo in mongoc-socket.h under -std=c11 */
#include <mongoc/mongoc.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_NAME "opmsg_encryption"
#define KEYVAULT_DB "keyvault"
#define KEYVAULT_COLL "datakeys"

#define N_ONE 1   /* insert of one document */
#define N_MANY 10 /* insert_many: one command with a document sequence */
#define N_BULK 9  /* a bulk of single inserts: also one sequence */
/* insert_many of large documents, together above the 2 MiB a client with
 * automatic encryption puts in one command: split in two */
#define N_BIG 6
#define BIG_LEN 400000
#define N_SMALL (N_ONE + N_MANY + N_BULK)
#define N_DOCS (N_SMALL + N_BIG)
#define BATCH_SIZE 3 /* N_DOCS / BATCH_SIZE getMores */
#define N_INSERTS 5  /* insert commands: one, many, bulk, big (2) */
#define FIND_BY_ID 7 /* the document found by its deterministic ciphertext */

typedef struct {
   const char *who; /* which client, for messages */
   char coll[128];  /* the collection whose listCollections count */
   int started_insert, started_find, started_getmore, started_listcoll;
   int listcoll_for_coll;  /* listCollections whose filter names our collection */
   int succeeded_workload; /* insert, find, getMore that succeeded */
   int failed;
   char first_failure[512];
} counters_t;

static int failures;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void
fail(const char *fmt, ...);

static void
fail(const char *fmt, ...)
{
   va_list ap;
   char line[1024];

   va_start(ap, fmt);
   vsnprintf(line, sizeof line, fmt, ap);
   va_end(ap);
   printf("FAIL %s\n", line);
   fflush(stdout);
   failures++;
}

static void
fail_error(const char *stage, const bson_error_t *error)
{
   fail("%s: error %u.%u: %s", stage, error->domain, error->code, error->message);
}

/* ---- command monitoring -------------------------------------------------- */

static void
on_started(const mongoc_apm_command_started_t *event)
{
   counters_t *c = mongoc_apm_command_started_get_context(event);
   const char *name = mongoc_apm_command_started_get_command_name(event);
   const bson_t *cmd = mongoc_apm_command_started_get_command(event);
   bson_iter_t it;

   if (strcmp(name, "insert") == 0) {
      c->started_insert++;
   } else if (strcmp(name, "find") == 0) {
      c->started_find++;
   } else if (strcmp(name, "getMore") == 0) {
      c->started_getmore++;
   } else if (strcmp(name, "listCollections") == 0) {
      c->started_listcoll++;
      if (bson_iter_init_find(&it, cmd, "filter") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_t f;
         if (bson_iter_recurse(&it, &f) && bson_iter_find(&f, "name") && BSON_ITER_HOLDS_UTF8(&f) &&
             strcmp(bson_iter_utf8(&f, NULL), c->coll) == 0) {
            c->listcoll_for_coll++;
         }
      }
   }
}

static void
on_succeeded(const mongoc_apm_command_succeeded_t *event)
{
   counters_t *c = mongoc_apm_command_succeeded_get_context(event);
   const char *name = mongoc_apm_command_succeeded_get_command_name(event);

   if (strcmp(name, "insert") == 0 || strcmp(name, "find") == 0 || strcmp(name, "getMore") == 0) {
      c->succeeded_workload++;
   }
}

static void
on_failed(const mongoc_apm_command_failed_t *event)
{
   counters_t *c = mongoc_apm_command_failed_get_context(event);
   bson_error_t error;

   mongoc_apm_command_failed_get_error(event, &error);
   if (c->failed++ == 0) {
      snprintf(c->first_failure, sizeof c->first_failure, "%s: %u.%u: %s",
               mongoc_apm_command_failed_get_command_name(event), error.domain, error.code, error.message);
   }
   fprintf(stderr, "enc-client: %s client: command %s failed: %u.%u: %s\n", c->who,
           mongoc_apm_command_failed_get_command_name(event), error.domain, error.code, error.message);
}

static void
monitor(mongoc_client_t *client, counters_t *c)
{
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();

   mongoc_apm_set_command_started_cb(cbs, on_started);
   mongoc_apm_set_command_succeeded_cb(cbs, on_succeeded);
   mongoc_apm_set_command_failed_cb(cbs, on_failed);
   mongoc_client_set_apm_callbacks(client, cbs, c);
   mongoc_apm_callbacks_destroy(cbs);
}

/* ---- documents ------------------------------------------------------------ */

static void
secret_text(int i, char *buf, size_t len)
{
   snprintf(buf, len, "opmsg-secret-%03d", i);
}

static void
card_plain(int i, bson_t *card)
{
   char number[32];

   snprintf(number, sizeof number, "opmsg-card-%03d", i);
   bson_init(card);
   BSON_APPEND_UTF8(card, "number", number);
   BSON_APPEND_INT32(card, "cvv", 100 + i);
}

/* Document i: {_id, name, n, secret, card, tags[, big]}; secret and card are
 * the given values (plaintext or ciphertext); the last N_BIG documents have
 * a large plaintext field "big". */
static void
build_doc(int i, const bson_value_t *secret, const bson_value_t *card, bson_t *doc)
{
   char name[32];
   bson_t tags;

   snprintf(name, sizeof name, "doc-%03d", i);
   bson_init(doc);
   BSON_APPEND_INT32(doc, "_id", i);
   BSON_APPEND_UTF8(doc, "name", name);
   BSON_APPEND_INT64(doc, "n", (int64_t) i * 1000);
   BSON_APPEND_VALUE(doc, "secret", secret);
   BSON_APPEND_VALUE(doc, "card", card);
   /* Built apart and appended whole: bson_append_array_begin is deprecated
    * in libbson 2. */
   bson_init(&tags);
   BSON_APPEND_UTF8(&tags, "0", "plain");
   BSON_APPEND_INT32(&tags, "1", i % 3);
   BSON_APPEND_ARRAY(doc, "tags", &tags);
   bson_destroy(&tags);
   if (i >= N_SMALL) {
      char *big = bson_malloc(BIG_LEN + 1);
      memset(big, 'a' + i % 26, BIG_LEN);
      big[BIG_LEN] = '\0';
      BSON_APPEND_UTF8(doc, "big", big);
      bson_free(big);
   }
}

static const char *key_alt_name; /* the data key's alternate name */

/* Encrypts with the data key named by its id, or by its alternate name when
 * keyid is NULL. */
static bool
encrypt_value(mongoc_client_encryption_t *ce, const bson_value_t *keyid, const char *algorithm,
              const bson_value_t *plain, bson_value_t *cipher, bson_error_t *error)
{
   mongoc_client_encryption_encrypt_opts_t *opts = mongoc_client_encryption_encrypt_opts_new();
   bool ok;

   if (keyid) {
      mongoc_client_encryption_encrypt_opts_set_keyid(opts, keyid);
   } else {
      mongoc_client_encryption_encrypt_opts_set_keyaltname(opts, key_alt_name);
   }
   mongoc_client_encryption_encrypt_opts_set_algorithm(opts, algorithm);
   ok = mongoc_client_encryption_encrypt(ce, plain, opts, cipher, error);
   mongoc_client_encryption_encrypt_opts_destroy(opts);
   return ok;
}

static bool
encrypt_secret(mongoc_client_encryption_t *ce, const bson_value_t *keyid, int i, bson_value_t *cipher,
               bson_error_t *error)
{
   char text[32];
   bson_value_t v;

   secret_text(i, text, sizeof text);
   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = text;
   v.value.v_utf8.len = (uint32_t) strlen(text);
   return encrypt_value(ce, keyid, MONGOC_AEAD_AES_256_CBC_HMAC_SHA_512_DETERMINISTIC, &v, cipher, error);
}

/* Makes document i twice: in plaintext and with both fields encrypted. */
static bool
make_doc(mongoc_client_encryption_t *ce, const bson_value_t *keyid, int i, bson_t *plain, bson_t *encrypted,
         bson_error_t *error)
{
   char text[32];
   bson_t card;
   bson_value_t secret_v, card_v, secret_c, card_c;
   bool ok = false;

   secret_text(i, text, sizeof text);
   secret_v.value_type = BSON_TYPE_UTF8;
   secret_v.value.v_utf8.str = text;
   secret_v.value.v_utf8.len = (uint32_t) strlen(text);
   card_plain(i, &card);
   card_v.value_type = BSON_TYPE_DOCUMENT;
   card_v.value.v_doc.data = (uint8_t *) bson_get_data(&card);
   card_v.value.v_doc.data_len = card.len;
   memset(&secret_c, 0, sizeof secret_c);
   memset(&card_c, 0, sizeof card_c);

   if (encrypt_secret(ce, keyid, i, &secret_c, error) &&
       encrypt_value(ce, NULL, MONGOC_AEAD_AES_256_CBC_HMAC_SHA_512_RANDOM, &card_v, &card_c, error)) {
      build_doc(i, &secret_v, &card_v, plain);
      build_doc(i, &secret_c, &card_c, encrypted);
      ok = true;
   }
   bson_value_destroy(&secret_c);
   bson_value_destroy(&card_c);
   bson_destroy(&card);
   return ok;
}

/* Canonical Extended JSON, long strings shortened ("aaaa...(400000 bytes)"). */
static char *
to_json(const bson_t *doc)
{
   char *s = bson_as_canonical_extended_json(doc, NULL);
   char *r, *w;

   if (!s) {
      return bson_strdup("(invalid BSON)");
   }
   for (r = w = s; *r;) {
      size_t run = 1;
      while (r[run] == r[0]) {
         run++;
      }
      if (run > 64) {
         char note[48];
         int n = snprintf(note, sizeof note, "%c...(%zu bytes)", r[0], run);
         memcpy(w, note, (size_t) n); /* n < 64 < run: fits in place */
         w += n;
      } else {
         memmove(w, r, run);
         w += run;
      }
      r += run;
   }
   *w = '\0';
   return s;
}

/* ---- the ciphertext on the server ---------------------------------------- */

static bool
contains(const uint8_t *hay, size_t hay_len, const char *needle)
{
   size_t n = strlen(needle);

   for (size_t i = 0; n <= hay_len && i <= hay_len - n; i++) {
      if (memcmp(hay + i, needle, n) == 0) {
         return true;
      }
   }
   return false;
}

/* A stored field must be BSON binary subtype 6 whose first byte (the blob
 * subtype) is `blob` (1 deterministic, 2 random) and which does not contain
 * `plain`. */
static bool
check_ciphertext(const bson_t *doc, const char *field, uint8_t blob, const char *plain)
{
   bson_iter_t it;
   bson_subtype_t subtype;
   uint32_t len = 0;
   const uint8_t *data = NULL;
   char *json;

   if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_BINARY(&it)) {
      json = to_json(doc);
      fail("server: field %s is not binary in %s", field, json);
      bson_free(json);
      return false;
   }
   bson_iter_binary(&it, &subtype, &len, &data);
   if (subtype != BSON_SUBTYPE_ENCRYPTED || len < 2 || data[0] != blob) {
      fail("server: field %s: binary subtype %d, %u bytes, blob subtype %d "
           "(expected 6 and %d)",
           field, (int) subtype, len, len ? data[0] : -1, (int) blob);
      return false;
   }
   if (contains(data, len, plain)) {
      fail("server: field %s contains the plaintext %s", field, plain);
      return false;
   }
   return true;
}

static bool
check_server(mongoc_client_t *plain_client, const char *coll_name, int *n_checked)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(plain_client, DB_NAME, coll_name);
   bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, sort;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bson_error_t error;
   bool ok = true;
   int n = 0;

   BSON_APPEND_DOCUMENT_BEGIN(&opts, "sort", &sort);
   BSON_APPEND_INT32(&sort, "_id", 1);
   bson_append_document_end(&opts, &sort);
   cursor = mongoc_collection_find_with_opts(coll, &filter, &opts, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      char secret[32], card[32];

      secret_text(n, secret, sizeof secret);
      snprintf(card, sizeof card, "opmsg-card-%03d", n);
      ok &= check_ciphertext(doc, "secret", 1, secret);
      ok &= check_ciphertext(doc, "card", 2, card);
      if ((n >= N_SMALL) != bson_has_field(doc, "big")) {
         fail("server: document %d: field big %s", n, n >= N_SMALL ? "missing" : "unexpected");
         ok = false;
      }
      /* No plaintext anywhere in the stored document. */
      if (contains(bson_get_data(doc), doc->len, "opmsg-secret") ||
          contains(bson_get_data(doc), doc->len, "opmsg-card")) {
         fail("server: document %d holds plaintext", n);
         ok = false;
      }
      n++;
   }
   if (mongoc_cursor_error(cursor, &error)) {
      fail_error("server: plain find", &error);
      ok = false;
   }
   if (n != N_DOCS) {
      fail("server: %d documents stored, expected %d", n, N_DOCS);
      ok = false;
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(&filter);
   bson_destroy(&opts);
   mongoc_collection_destroy(coll);
   *n_checked = n;
   return ok;
}

/* ---- main ------------------------------------------------------------------ */

static mongoc_client_t *
new_client(const char *uri, const char *app)
{
   bson_error_t error;
   mongoc_uri_t *u = mongoc_uri_new_with_error(uri, &error);
   mongoc_client_t *client;

   if (!u) {
      fail_error("uri", &error);
      return NULL;
   }
   mongoc_uri_set_appname(u, app);
   client = mongoc_client_new_from_uri_with_error(u, &error);
   mongoc_uri_destroy(u);
   if (!client) {
      fail_error("client", &error);
      return NULL;
   }
   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   return client;
}

static void
usage(void)
{
   fprintf(stderr, "usage: enc-client [--bypass query-analysis|auto-encryption|none] URI RUN_ID\n");
   exit(2);
}

/* Which libmongoc file this process runs, from its own memory map: a
 * patched build may report the same version as the system's library (a
 * Debian release's tree), so run-encryption.sh tells them apart by path. */
static void
print_loaded_mongoc(void)
{
   FILE *maps = fopen("/proc/self/maps", "r");
   char line[4096];

   if (!maps) {
      return;
   }
   while (fgets(line, sizeof line, maps)) {
      const char *path = strchr(line, '/');
      const char *base = path ? strrchr(path, '/') + 1 : NULL;
      /* libmongoc-1.0.so.0 or libmongoc2.so.2; not libmongocrypt. */
      if (base && (strncmp(base, "libmongoc-", 10) == 0 || strncmp(base, "libmongoc2.", 11) == 0)) {
         fprintf(stderr, "enc-client: loaded %s", path); /* the line ends with its newline */
         break;
      }
   }
   fclose(maps);
}

int
main(int argc, char **argv)
{
   const char *bypass = "query-analysis";
   const char *uri, *run_id;
   char coll_name[96], alt_name[96];
   uint8_t master[96];
   bson_t kms = BSON_INITIALIZER, local;
   bson_error_t error;
   mongoc_client_t *plain = NULL, *kv = NULL, *enc = NULL;
   mongoc_client_encryption_opts_t *ce_opts = NULL;
   mongoc_client_encryption_t *ce = NULL;
   mongoc_auto_encryption_opts_t *ae_opts = NULL;
   mongoc_collection_t *coll = NULL, *plain_coll = NULL;
   bson_value_t keyid;
   bson_t plain_docs[N_DOCS], enc_docs[N_DOCS];
   int n_made = 0, n_read = 0, n_equal = 0, n_server = 0;
   bool server_ok = false, path_ok = false, equal_ok = false, skip = false;
   counters_t enc_c, kv_c;
   int argi = 1;

   if (argc > 2 && strcmp(argv[1], "--bypass") == 0) {
      bypass = argv[2];
      argi = 3;
      if (strcmp(bypass, "query-analysis") != 0 && strcmp(bypass, "auto-encryption") != 0 &&
          strcmp(bypass, "none") != 0) {
         usage();
      }
   }
   if (argc - argi != 2) {
      usage();
   }
   uri = argv[argi];
   run_id = argv[argi + 1];
   snprintf(coll_name, sizeof coll_name, "people_%s", run_id);
   snprintf(alt_name, sizeof alt_name, "opmsg-key-%s", run_id);
   key_alt_name = alt_name;
   memset(&keyid, 0, sizeof keyid);
   memset(&enc_c, 0, sizeof enc_c);
   memset(&kv_c, 0, sizeof kv_c);
   enc_c.who = "encrypted";
   kv_c.who = "key vault";
   snprintf(enc_c.coll, sizeof enc_c.coll, "%s", coll_name);
   snprintf(kv_c.coll, sizeof kv_c.coll, "%s", KEYVAULT_COLL);

   mongoc_init();
   fprintf(stderr, "enc-client: libmongoc %s, bypass %s, collection %s.%s\n", mongoc_get_version(), bypass, DB_NAME,
           coll_name);
   print_loaded_mongoc();

   /* The local KMS provider: a fixed 96-byte master key (a test; a real one
    * comes from a secure random source and is kept secret). */
   for (size_t i = 0; i < sizeof master; i++) {
      master[i] = (uint8_t) (i * 37 + 11);
   }
   BSON_APPEND_DOCUMENT_BEGIN(&kms, "local", &local);
   BSON_APPEND_BINARY(&local, "key", BSON_SUBTYPE_BINARY, master, sizeof master);
   bson_append_document_end(&kms, &local);

   if (!(plain = new_client(uri, "opmsg-enc-plain")) || !(kv = new_client(uri, "opmsg-enc-keyvault")) ||
       !(enc = new_client(uri, "opmsg-enc-auto"))) {
      goto done;
   }
   monitor(enc, &enc_c);
   monitor(kv, &kv_c);

   /* A clean collection for this run (no error when it does not exist). */
   plain_coll = mongoc_client_get_collection(plain, DB_NAME, coll_name);
   if (!mongoc_collection_drop(plain_coll, &error) && !strstr(error.message, "ns not found") && error.code != 26) {
      fail_error("drop", &error);
      goto done;
   }

   /* The key vault's unique index on keyAltNames, as the documentation of
    * client-side encryption asks for (partial: only keys that have names).
    * Recorded, not required: this test gives every key a distinct name. */
   {
      bson_t *cmd =
         BCON_NEW("createIndexes", BCON_UTF8(KEYVAULT_COLL), "indexes", "[", "{", "key", "{", "keyAltNames",
                  BCON_INT32(1), "}", "name", BCON_UTF8("keyAltNames_1"), "unique", BCON_BOOL(true),
                  "partialFilterExpression", "{", "keyAltNames", "{", "$exists", BCON_BOOL(true), "}", "}", "}", "]");
      bson_t reply;

      if (mongoc_client_write_command_with_opts(plain, KEYVAULT_DB, cmd, NULL, &reply, &error)) {
         printf("KEYVAULT-INDEX unique partial index on keyAltNames: created\n");
      } else {
         printf("KEYVAULT-INDEX unique partial index on keyAltNames: not created: "
                "error %u.%u: %s\n",
                error.domain, error.code, error.message);
      }
      bson_destroy(&reply);
      bson_destroy(cmd);
   }

   /* The key vault and a data key. */
   ce_opts = mongoc_client_encryption_opts_new();
   mongoc_client_encryption_opts_set_keyvault_client(ce_opts, plain);
   mongoc_client_encryption_opts_set_keyvault_namespace(ce_opts, KEYVAULT_DB, KEYVAULT_COLL);
   mongoc_client_encryption_opts_set_kms_providers(ce_opts, &kms);
   ce = mongoc_client_encryption_new(ce_opts, &error);
   if (!ce) {
      fail_error("client_encryption_new", &error);
      /* "libmongoc is not built with support for Client-Side Field Level
       * Encryption": built without libmongocrypt. */
      if (error.domain == MONGOC_ERROR_CLIENT && strstr(error.message, "not built with support")) {
         printf("SKIP %s\n", error.message);
         skip = true;
      }
      goto done;
   }
   {
      mongoc_client_encryption_datakey_opts_t *dk_opts = mongoc_client_encryption_datakey_opts_new();
      char *names[1];
      bool ok;

      names[0] = alt_name;
      mongoc_client_encryption_datakey_opts_set_keyaltnames(dk_opts, names, 1);
      ok = mongoc_client_encryption_create_datakey(ce, "local", dk_opts, &keyid, &error);
      mongoc_client_encryption_datakey_opts_destroy(dk_opts);
      if (!ok) {
         fail_error("create_datakey", &error);
         goto done;
      }
   }
   if (keyid.value_type != BSON_TYPE_BINARY || keyid.value.v_binary.subtype != BSON_SUBTYPE_UUID ||
       keyid.value.v_binary.data_len != 16) {
      fail("create_datakey: the key id is not a UUID");
      goto done;
   }
   {
      char hex[33];
      for (int i = 0; i < 16; i++) {
         snprintf(hex + 2 * i, 3, "%02x", keyid.value.v_binary.data[i]);
      }
      fprintf(stderr, "enc-client: data key %s in %s.%s\n", hex, KEYVAULT_DB, KEYVAULT_COLL);
   }

   /* Explicit encryption of every document's fields. */
   for (n_made = 0; n_made < N_DOCS; n_made++) {
      if (!make_doc(ce, &keyid, n_made, &plain_docs[n_made], &enc_docs[n_made], &error)) {
         fail_error("explicit encrypt", &error);
         goto done;
      }
   }
   /* ... and explicit decryption of one of them, as a reference. */
   {
      bson_iter_t it;
      bson_value_t out;
      bson_iter_init_find(&it, &enc_docs[0], "secret");
      if (!mongoc_client_encryption_decrypt(ce, bson_iter_value(&it), &out, &error)) {
         fail_error("explicit decrypt", &error);
         goto done;
      }
      if (out.value_type != BSON_TYPE_UTF8 || strcmp(out.value.v_utf8.str, "opmsg-secret-000") != 0) {
         fail("explicit decrypt: wrong plaintext");
      }
      bson_value_destroy(&out);
   }

   /* The client with automatic encryption and decryption. */
   ae_opts = mongoc_auto_encryption_opts_new();
   mongoc_auto_encryption_opts_set_keyvault_client(ae_opts, kv);
   mongoc_auto_encryption_opts_set_keyvault_namespace(ae_opts, KEYVAULT_DB, KEYVAULT_COLL);
   mongoc_auto_encryption_opts_set_kms_providers(ae_opts, &kms);
   if (strcmp(bypass, "query-analysis") == 0) {
      mongoc_auto_encryption_opts_set_bypass_query_analysis(ae_opts, true);
   } else if (strcmp(bypass, "auto-encryption") == 0) {
      mongoc_auto_encryption_opts_set_bypass_auto_encryption(ae_opts, true);
   }
   if (!mongoc_client_enable_auto_encryption(enc, ae_opts, &error)) {
      fail_error("enable_auto_encryption", &error);
      goto done;
   }
   coll = mongoc_client_get_collection(enc, DB_NAME, coll_name);

   /* Writes: one document, a sequence of N_MANY, a bulk of N_BULK, a
    * sequence of N_BIG large documents. */
   {
      bson_t reply;
      const bson_t *many[N_MANY > N_BIG ? N_MANY : N_BIG];
      mongoc_bulk_operation_t *bulk;
      bool ok;

      ok = mongoc_collection_insert_one(coll, &enc_docs[0], NULL, &reply, &error);
      bson_destroy(&reply);
      if (!ok) {
         fail_error("insert_one", &error);
         goto done;
      }
      for (int i = 0; i < N_MANY; i++) {
         many[i] = &enc_docs[N_ONE + i];
      }
      ok = mongoc_collection_insert_many(coll, many, N_MANY, NULL, &reply, &error);
      bson_destroy(&reply);
      if (!ok) {
         fail_error("insert_many", &error);
         goto done;
      }
      bulk = mongoc_collection_create_bulk_operation_with_opts(coll, NULL);
      for (int i = 0; i < N_BULK; i++) {
         if (!mongoc_bulk_operation_insert_with_opts(bulk, &enc_docs[N_ONE + N_MANY + i], NULL, &error)) {
            fail_error("bulk insert", &error);
            mongoc_bulk_operation_destroy(bulk);
            goto done;
         }
      }
      ok = mongoc_bulk_operation_execute(bulk, &reply, &error) != 0;
      if (!ok) {
         char *json = to_json(&reply);
         fail("bulk execute: error %u.%u: %s; reply %s", error.domain, error.code, error.message, json);
         bson_free(json);
      }
      bson_destroy(&reply);
      mongoc_bulk_operation_destroy(bulk);
      if (!ok) {
         goto done;
      }
      for (int i = 0; i < N_BIG; i++) {
         many[i] = &enc_docs[N_SMALL + i];
      }
      ok = mongoc_collection_insert_many(coll, many, N_BIG, NULL, &reply, &error);
      bson_destroy(&reply);
      if (!ok) {
         fail_error("insert_many (large documents)", &error);
         goto done;
      }
      if (enc_c.started_insert != N_INSERTS) {
         fail("%d insert commands, expected %d (the large documents in two)", enc_c.started_insert, N_INSERTS);
      }
   }

   /* Reads: every document, BATCH_SIZE at a time (find, then getMores). */
   {
      bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, sort;
      mongoc_cursor_t *cursor;
      const bson_t *doc;

      BSON_APPEND_DOCUMENT_BEGIN(&opts, "sort", &sort);
      BSON_APPEND_INT32(&sort, "_id", 1);
      bson_append_document_end(&opts, &sort);
      BSON_APPEND_INT32(&opts, "batchSize", BATCH_SIZE);
      cursor = mongoc_collection_find_with_opts(coll, &filter, &opts, NULL);
      while (mongoc_cursor_next(cursor, &doc)) {
         char *json = to_json(doc);
         printf("DOC %s\n", json);
         if (n_read < N_DOCS && bson_equal(doc, &plain_docs[n_read])) {
            n_equal++;
         } else {
            char *want = n_read < N_DOCS ? to_json(&plain_docs[n_read]) : bson_strdup("(no more documents)");
            fail("document %d differs: read %s, wrote %s", n_read, json, want);
            bson_free(want);
         }
         bson_free(json);
         n_read++;
      }
      if (mongoc_cursor_error(cursor, &error)) {
         fail_error("find", &error);
      }
      mongoc_cursor_destroy(cursor);
      bson_destroy(&filter);
      bson_destroy(&opts);
   }

   /* A find whose filter is a deterministic ciphertext: equality on
    * encrypted data, the reply decrypted. */
   {
      bson_t filter = BSON_INITIALIZER;
      bson_value_t cipher;
      mongoc_cursor_t *cursor;
      const bson_t *doc;
      int found = 0;

      memset(&cipher, 0, sizeof cipher);
      if (!encrypt_secret(ce, &keyid, FIND_BY_ID, &cipher, &error)) {
         fail_error("explicit encrypt (query)", &error);
      } else {
         BSON_APPEND_VALUE(&filter, "secret", &cipher);
         cursor = mongoc_collection_find_with_opts(coll, &filter, NULL, NULL);
         while (mongoc_cursor_next(cursor, &doc)) {
            char *json = to_json(doc);
            printf("BY-CIPHERTEXT %s\n", json);
            if (!bson_equal(doc, &plain_docs[FIND_BY_ID])) {
               fail("find by ciphertext: wrong document %s", json);
            }
            bson_free(json);
            found++;
         }
         if (mongoc_cursor_error(cursor, &error)) {
            fail_error("find by ciphertext", &error);
         } else if (found != 1) {
            fail("find by ciphertext: %d documents, expected 1", found);
         }
         mongoc_cursor_destroy(cursor);
      }
      bson_value_destroy(&cipher);
      bson_destroy(&filter);
   }

   if (n_read != N_DOCS) {
      fail("read %d documents, wrote %d", n_read, N_DOCS);
   }

   /* The automatic path was taken: libmongocrypt asked for the collection's
    * metadata (it does so only for a command it was given to encrypt), and
    * fetched the data key to decrypt the replies. */
   path_ok = enc_c.listcoll_for_coll > 0 && kv_c.started_find > 0;
   if (strcmp(bypass, "query-analysis") == 0 && !path_ok) {
      fail("libmongocrypt was not asked: %d listCollections for %s, %d key vault finds", enc_c.listcoll_for_coll,
           coll_name, kv_c.started_find);
   }
   if (enc_c.started_getmore == 0) {
      fail("no getMore was sent");
   }

   /* "equal" covers the operations, the documents and the path; the bytes
    * on the server are reported apart. */
   equal_ok = failures == 0 && n_equal == N_DOCS && n_read == N_DOCS;

   /* The bytes on the server, read without encryption. */
   server_ok = check_server(plain, coll_name, &n_server);

done:
   if (enc_c.failed) {
      printf("COMMAND-FAILED %s\n", enc_c.first_failure);
   }
   if (kv_c.failed) {
      printf("KEYVAULT-COMMAND-FAILED %s\n", kv_c.first_failure);
   }
   printf("COMMANDS insert=%d find=%d getMore=%d listCollections(metadata)=%d "
          "keyvault-find=%d\n",
          enc_c.started_insert, enc_c.started_find, enc_c.started_getmore, enc_c.listcoll_for_coll,
          kv_c.started_find > 0 ? 1 : 0);
   printf("RESULT operations=%d documents=%d equal=%s ciphertext=%s path=%s\n", enc_c.succeeded_workload, n_read,
          equal_ok ? "yes" : "no", (server_ok && n_server == N_DOCS) ? "yes" : "no",
          path_ok ? "automatic" : "bypassed");
   fflush(stdout);

   for (int i = 0; i < n_made; i++) {
      bson_destroy(&plain_docs[i]);
      bson_destroy(&enc_docs[i]);
   }
   bson_value_destroy(&keyid);
   mongoc_collection_destroy(coll);
   mongoc_collection_destroy(plain_coll);
   mongoc_client_encryption_destroy(ce);
   mongoc_client_encryption_opts_destroy(ce_opts);
   mongoc_auto_encryption_opts_destroy(ae_opts);
   mongoc_client_destroy(enc);
   mongoc_client_destroy(kv);
   mongoc_client_destroy(plain);
   bson_destroy(&kms);
   mongoc_cleanup();
   if (skip) {
      return 77;
   }
   return failures == 0 ? 0 : 1;
}
