/* Issue 17 point 1: a va_arg in an operand the program skips is never run by a label
   (libclang reports va_arg as an "unexposed" expression: unknown means unsafe). */
#include <stdarg.h>
#include <stdio.h>

static int first_big_then_next(int have, ...) {
  va_list ap;
  va_start(ap, have);
  int big = 0;
  if (have && va_arg(ap, int) > 100)
    big = 1;
  int next = va_arg(ap, int);
  va_end(ap);
  return big * 1000 + next;
}

static long count_big(int n, ...) {
  va_list ap;
  va_start(ap, n);
  long found = 0;
  for (int i = 0; i < 4; i++)
    if (i < n && va_arg(ap, long) > 10)
      found += 1L << i;
  va_end(ap);
  return found;
}

int main(int argc, char **argv) {
  int have = argc > 1;
  int a = first_big_then_next(have, 7, 8);
  int b = first_big_then_next(1, 200, 9);
  int c = first_big_then_next(0, 5, 6);
  long d = count_big(2 + have, 11L, 3L, 30L, 40L);
  printf("%d %d %d %ld\n", a, b, c, d);
  return (a + b + c + (int)d) & 0x7f;
}
