/* K&R definitions and implicit conversions at calls (old-style parameters promote). */
#include <stdio.h>

int scale(a, b)
  short a;
  float b;
{
  if (a > 3 && b < 2.5f) return a * 2;
  return a - (int)b;
}

int main(void) {
  int total = 0;
  for (int i = 0; i < 10; i++) total += scale(i, (float)i / 3);
  printf("%d\n", total);
  return total & 1;
}
