/* Reassociation asked for in the source, not on the command line: clang's
   `#pragma clang fp reassociate(on)` in a function body, and gcc's optimize
   attribute (each compiler ignores the other's).  The optimiser may then add a
   floating sum in another order (clang -O2 vectorises these), and label code in the
   loop kept it from doing so: the labelled sum differed in its last bits.  The pragma
   must also open its compound statement: temporaries declared before it made the
   labelled code fail to compile, and the file was built without labels.  Every sum
   below must print what the plain build prints, with labels. */
#include <stdio.h>

static float data[1000];
static double wide[1000];

#if defined(__clang__)
#define REORDERED
#else
#define REORDERED __attribute__((optimize("Ofast")))
#endif

REORDERED static float scaled_sum(int n) {
#if defined(__clang__)
#pragma clang fp reassociate(on)
#endif
  float sum = 0.0f;
  for (int i = 0; i < n; i++) sum += data[i] * 1.0001f;
  return sum;
}

REORDERED static double positive_sum(int n) {
#if defined(__clang__)
#pragma clang fp reassociate(on)
#endif
  double sum = 0;
  for (int k = 0; k < n; k++) sum += wide[k] > 0 ? wide[k] : -wide[k] / 2;
  return sum;
}

int main(void) {
  unsigned s = 12345;
  for (int i = 0; i < 1000; i++) {
    s = s * 1103515245u + 12345u;
    data[i] = (float)(s >> 8) / 16777216.0f - 0.3f;
    wide[i] = (double)data[i] * 3.25 - (i & 7);
  }
  printf("%.9g %.17g\n", scaled_sum(1000), positive_sum(1000));
  return 0;
}
