/* GCC vector extensions: element-wise arithmetic and comparisons yield vectors, not truth
 * values; labels must leave them alone or treat their elements correctly. */
#include <stdio.h>

typedef int v4si __attribute__((vector_size(16)));

int main(void) {
  v4si a = {1, -2, 3, -4}, b = {4, 3, -2, 1};
  v4si c = a * b + (a > b);
  int sum = 0;
  for (int i = 0; i < 4; i++) {
    if (c[i] > 0 && a[i] < b[i]) sum += c[i];
    else sum -= c[i] / 2;
  }
  printf("%d\n", sum);
  return sum & 7;
}
