/*
 * keyset.c - the key set's table from the heap, for a set too large for
 * the caller's (the rest is inline in opmsg-keyset.h).
 */
#include "opmsg-keyset.h"

void
opmsg_keyset_alloc(opmsg_keyset_t *s, size_t n)
{
   /* Three quarters full on the heap, where the size matters more than
    * the probes: about 11 bytes a name, each of which takes at least 2
    * bytes of the buffer (3 but for one empty key), so the table stays
    * within a few times the message. A slot stays empty, which ends every
    * probe. bson_malloc() aborts when memory runs out, as everywhere in
    * opmsg (docs/design.md). */
   s->nslots = n + n / 3 + 1;
   s->slots = bson_malloc(s->nslots * sizeof(opmsg_keyslot_t));
}
