/*
 * opmsg-array.h - the array document of a run of documents, keys "0",
 * "1", ... written without printf (merge.c).
 *
 * Not installed. The merge writes each sequence with it; the libmongoc
 * drop-in builds its command arrays with it.
 */
#ifndef OPMSG_ARRAY_H
#define OPMSG_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Total bytes the keys "0".."count-1" take, NULs included. */
size_t opmsg_array_keys_size(uint32_t count);

/* Writes the decimal digits of i and a NUL at p; returns bytes written. */
size_t opmsg_write_index_key(uint8_t *p, uint32_t i);

/* The array document of count documents that lie back to back in
 * docs[0..docs_len) (keys "0", "1", ...): its exact size, and writing it
 * into out, which has that size. The merge writes each sequence with the
 * same code; the libmongoc drop-in builds its command arrays with it. The
 * documents must have been framed. */
size_t opmsg_array_doc_size(size_t docs_len, uint32_t count);
void opmsg_write_array_doc(uint8_t *out, const uint8_t *docs, size_t docs_len);

/* The writer's input checked, for a caller that did not parse it (the
 * drop-in's command payloads): each document of docs[0..docs_len) framed
 * (length at least 5, inside the run, last byte 0), their number in
 * *count. False at the first that is not. */
bool opmsg_array_docs_count(const uint8_t *docs, size_t docs_len, uint32_t *count);

#endif /* OPMSG_ARRAY_H */
