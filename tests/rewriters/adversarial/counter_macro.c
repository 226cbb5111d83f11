/* Issue 17 point 6: __COUNTER__ (and __LINE__) in an operand is never expanded again inside a
   label: the program sees the same values as the plain build. */
#include <stdio.h>

#define NEXT_ID __COUNTER__
#define HERE __LINE__

static int ids(int a, int x) {
  int r = 0;
  if (a > 2 && x == __COUNTER__)
    r += 1;
  if (a > 3 && x != NEXT_ID)
    r += 2;
  if (a < 0 || x == NEXT_ID + 1)
    r += 4;
  if (a > 4 &&
      x <
      HERE)
    r += 8;
  return r + x * (NEXT_ID + 1);
}

int main(int argc, char **argv) {
  int r = ids(argc, 1) + ids(argc + 5, 2);
  printf("%d %d %d\n", r, __COUNTER__, __LINE__);
  return r & 0x7f;
}
