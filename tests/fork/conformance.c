/*
 * conformance.c - the conformance vectors through a patched libmongoc.
 *
 * Not part of any patch: scripts/fork-conformance.sh compiles this file at
 * check time with the flags of the patched tree's test-libmongoc-main.c and
 * links it against that build's test-libmongoc-lib (the test framework and
 * upstream's mock server, with PR 1's reply_to_request_with_bytes) and its
 * static libmongoc. It is written in upstream's test framework.
 *
 * For each vector of the manifest (CONFORMANCE_MANIFEST, files under
 * CONFORMANCE_DATA): a mock server answers the handshake, a client runs
 * {ping: 1}, the server answers the ping with the vector's bytes exactly as
 * they are (their responseTo is not the ping's requestID: libmongoc does not
 * look at it), and one line goes to CONFORMANCE_OUT:
 *
 *   FILE <TAB> accepted <TAB> HEX <TAB> DOMAIN.CODE MESSAGE
 *      the client took the reply: HEX is the reply document as it came back
 *      (bson_get_data(), canonical bytes); a command error the server's
 *      document states (domain MONGOC_ERROR_QUERY / _SERVER / _WRITE_CONCERN)
 *      still counts as a reply taken and is given after it (else "-")
 *   FILE <TAB> rejected <TAB> - <TAB> DOMAIN.CODE MESSAGE
 *      the client refused the bytes (a protocol or stream error).
 */
#include <mongoc/mongoc-client-private.h>

#include <mongoc/mongoc.h>

#include <bson/bson.h>

#include <TestSuite.h>
#include <mock_server/future-functions.h>
#include <mock_server/future.h>
#include <mock_server/mock-server.h>
#include <test-conveniences.h>
#include <test-libmongoc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *
_read_file(const char *path, size_t *len)
{
   FILE *const f = fopen(path, "rb");
   ASSERT_WITH_MSG(f, "cannot open %s", path);
   ASSERT_CMPINT(fseek(f, 0, SEEK_END), ==, 0);
   const long n = ftell(f);
   ASSERT_CMPINT(fseek(f, 0, SEEK_SET), ==, 0);
   ASSERT_CMPLONG(n, >, 0);
   uint8_t *const data = bson_malloc((size_t) n);
   ASSERT_CMPSIZE_T(fread(data, 1, (size_t) n, f), ==, (size_t) n);
   fclose(f);
   *len = (size_t) n;
   return data;
}

static bool
_is_command_error(const bson_error_t *error)
{
   return error->domain == MONGOC_ERROR_QUERY || error->domain == MONGOC_ERROR_SERVER ||
          error->domain == MONGOC_ERROR_WRITE_CONCERN;
}

// Runs {ping: 1} against a mock server that answers it with data as it is.
static bool
_ping_with_reply_bytes(const uint8_t *data, size_t len, bson_t *reply, bson_error_t *error)
{
   mock_server_t *const server = mock_server_with_auto_hello(WIRE_VERSION_MIN);
   mock_server_run(server);

   // A vector whose messageLength promises more than it has leaves the client
   // waiting: a short socket timeout ends the wait.
   mongoc_uri_t *const uri = mongoc_uri_copy(mock_server_get_uri(server));
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, 1500);
   mongoc_client_t *const client = test_framework_client_new_from_uri(uri, NULL);

   future_t *const future = future_client_command_simple(client, "db", tmp_bson("{'ping': 1}"), NULL, reply, error);
   request_t *const request = mock_server_receives_msg(server, MONGOC_MSG_NONE, tmp_bson("{'$db': 'db', 'ping': 1}"));
   ASSERT(request);
   reply_to_request_with_bytes(request, data, len);

   const bool ret = future_get_bool(future);

   request_destroy(request);
   future_destroy(future);
   mongoc_client_destroy(client);
   mongoc_uri_destroy(uri);
   mock_server_destroy(server);

   return ret;
}

static void
_one_line(char *s)
{
   for (char *p = s; *p; p++) {
      if (*p == '\t' || *p == '\n' || *p == '\r') {
         *p = ' ';
      }
   }
}

static void
test_conformance_vectors(void)
{
   const char *const manifest = getenv("CONFORMANCE_MANIFEST");
   const char *const data_dir = getenv("CONFORMANCE_DATA");
   const char *const out_path = getenv("CONFORMANCE_OUT");
   const char *const only = getenv("CONFORMANCE_ONLY"); // one vector, for debugging
   ASSERT_WITH_MSG(manifest && data_dir && out_path, "set CONFORMANCE_MANIFEST, CONFORMANCE_DATA and CONFORMANCE_OUT");

   size_t text_len;
   uint8_t *const text = _read_file(manifest, &text_len);
   char *const lines = bson_malloc(text_len + 1u);
   memcpy(lines, text, text_len);
   lines[text_len] = '\0';
   bson_free(text);

   FILE *const out = fopen(out_path, "w");
   ASSERT_WITH_MSG(out, "cannot write %s", out_path);

   size_t n = 0;
   char *line = lines;
   while (line && *line) {
      char *const next_line = strchr(line, '\n');
      if (next_line) {
         *next_line = '\0';
      }
      char *const tab = strchr(line, '\t');
      if (line[0] != '#' && tab) {
         *tab = '\0';
         if (!only || strcmp(only, line) == 0) {
            char *const path = bson_strdup_printf("%s/%s", data_dir, line);
            size_t len;
            uint8_t *const data = _read_file(path, &len);
            bson_t reply;
            bson_error_t error;
            memset(&error, 0, sizeof error);

            const bool ok = _ping_with_reply_bytes(data, len, &reply, &error);
            _one_line(error.message);
            if (ok || _is_command_error(&error)) {
               fprintf(out, "%s\taccepted\t", line);
               const uint8_t *const bytes = bson_get_data(&reply);
               for (uint32_t i = 0; i < reply.len; i++) {
                  fprintf(out, "%02x", bytes[i]);
               }
               if (ok) {
                  fprintf(out, "\t-\n");
               } else {
                  fprintf(out, "\t%" PRIu32 ".%" PRIu32 " %s\n", error.domain, error.code, error.message);
               }
            } else {
               fprintf(out, "%s\trejected\t-\t%" PRIu32 ".%" PRIu32 " %s\n", line, error.domain, error.code,
                       error.message);
            }
            fflush(out);
            bson_destroy(&reply);
            bson_free(data);
            bson_free(path);
            n++;
         }
      }
      line = next_line ? next_line + 1 : NULL;
   }

   fclose(out);
   bson_free(lines);
   ASSERT_CMPSIZE_T(n, >, 0u);
}

int
main(int argc, char *argv[])
{
   TestSuite suite;

   test_libmongoc_init(&suite, argc, argv);
   TestSuite_AddMockServerTest(&suite, "/conformance/vectors", test_conformance_vectors);

   const int ret = TestSuite_Run(&suite);

   test_libmongoc_destroy(&suite);

   return ret;
}
