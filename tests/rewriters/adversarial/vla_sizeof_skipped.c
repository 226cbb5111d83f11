/* Issue 17 point 2: sizeof of a variable-length array type evaluates its operand, so a label
   never runs it where the program skipped it (no changed variable, no new UBSan report). */
#include <stdio.h>

static int grow(int k) {
  int wide = 0;
  if (k > 3 && sizeof(char[k++]) > 10)
    wide = 1;
  return wide * 100 + k;
}

static int big_table(int n) {
  if (n > 0 && sizeof(int[n]) > 64)
    return 1;
  return 0;
}

static int aligned(int n) {
  int row[n > 0 ? n : 1];
  return n > 2 && sizeof row > 3 * sizeof(int);
}

int main(int argc, char **argv) {
  int shift = argc - 1;
  int r = 0;
  for (int k = -1; k < 14; k += 3)
    r = r * 3 + grow(k + shift);
  printf("grow %d\n", r);
  int t = 0;
  for (int n = -2; n < 30; n += 4)
    t = t * 2 + big_table(n + shift);
  printf("table %d aligned %d %d\n", t, aligned(1 + shift), aligned(5));
  return (r + t) & 0x7f;
}
