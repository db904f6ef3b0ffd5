/*
 * keyset.c - the key set's table from the heap, for a set too large for
 * the caller's (the rest is inline in opmsg-keyset.h).
 */
#include "opmsg-keyset.h"

bool
opmsg_keyset_alloc(opmsg_keyset_t *s, size_t n, opmsg_report_t *r)
{
   /* Three quarters full on the heap, where the size matters more than
    * the probes: about 11 bytes a name, each of which takes at least 2
    * bytes of the buffer (3 but for one empty key), so the table stays
    * within a few times the message. A slot stays empty, which ends every
    * probe. */
   s->nslots = n + n / 3 + 1;
   s->slots = bson_malloc(s->nslots * sizeof(opmsg_keyslot_t));
   if (!s->slots) {
      s->slots = s->local;
      s->nslots = 0;
      return opmsg_report(r, OPMSG_ERR_NO_MEMORY, 0, "no memory for the name table of %zu names", n);
   }
   return true;
}
