/* _Generic selections and compound literals inside conditions. */
#include <stdio.h>

#define KIND(x) _Generic((x), int: 1, double: 2, default: 0)

int main(void) {
  int hits = 0;
  double d = 1.5;
  for (int i = -3; i < 4; i++) {
    if (KIND(i) == 1 && _Generic(d, double: d > i, default: 0)) hits++;
    if ((int[]){i, i + 1}[1] > 2 || KIND(d) != 2) hits += 10;
  }
  printf("%d\n", hits);
  return hits % 7;
}
