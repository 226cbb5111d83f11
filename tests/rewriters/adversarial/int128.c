/* __int128 operands: arithmetic, comparisons and extreme values. */
#include <stdio.h>

int main(void) {
  __int128 big = (__int128)1 << 100;
  unsigned __int128 ubig = ~(unsigned __int128)0;
  int found = 0;
  for (int i = -2; i < 3; i++) {
    __int128 v = big * i + i;
    if (v > big / 2 && v % 3 != 0) found++;
    if (ubig - (unsigned __int128)i > ubig / 2 || v < 0) found += 10;
  }
  printf("%d\n", found);
  return found % 5;
}
