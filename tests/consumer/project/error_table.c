/*
 * error_table.c - prints libopmsg's error codes and names ("| 8 |
 * `checksum-mismatch` |") from the installed library, so consumer-test.sh
 * can check the error table in the installed opmsg.h (the comments of
 * opmsg_error_code_t) against it.
 */
#include <opmsg/opmsg.h>

#include <stdio.h>

int
main(void)
{
   for (unsigned code = 0; code < OPMSG_ERR_COUNT_; code++) {
      printf("| %u | `%s` |\n", code, opmsg_error_name(code));
   }
   /* One past the last code is not a code. */
   return opmsg_error_name(OPMSG_ERR_COUNT_)[0] == 'u' ? 0 : 1;
}
