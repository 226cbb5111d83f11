/* flags: -ffast-math */
/* Reassociation: under -ffast-math the optimiser may add a floating sum in another order
   (clang -O2 vectorises sum += a[i], four partial sums added at the end), and label code in
   the loop kept clang from doing so: the labelled build printed a sum that differed in its
   last bits.  A loop that accumulates into a floating object gets no labels; the loops
   around it keep theirs.  Every sum below must print what the plain build prints. */
#include <stdio.h>

static float data[1000];
static double wide[1000];

static float scaled_sum(int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; i++) sum += data[i] * 1.0001f;
  return sum;
}

static double positive_sum(int n) {
  double sum = 0;
  int k = 0;
  while (k < n) {
    if (wide[k] > 0 && k % 3 != 1) sum = sum + wide[k];
    k++;
  }
  return sum;
}

static float product(int n) {
  float p = 1.0f;
  int i = 0;
  do { p *= 1.0f + data[i] / 64.0f; } while (++i < n);
  return p;
}

int main(void) {
  unsigned s = 12345;
  for (int i = 0; i < 1000; i++) {
    s = s * 1103515245u + 12345u;
    data[i] = (float)(s >> 8) / 16777216.0f - 0.3f;
    wide[i] = (double)data[i] * 3.25 - (i & 7);
  }
  printf("%.9g %.17g %.9g\n", scaled_sum(1000), positive_sum(1000), product(1000));
  return 0;
}
