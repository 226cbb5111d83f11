/* Reassociation asked for by a header, not by this file nor the command line:
   headers/reassociate_all.h holds a file-scope pragma, clang's fp reassociate or
   gcc's optimize Ofast, that holds for every function after it (this comment must
   not spell the pragmas: ffcc reads them in the file's own text too).  clang -O2 then vectorises the sums below,
   and label code in their loops kept it from doing so: the labelled float sum
   differed in its last bits.  Every sum must print what the plain build prints. */
#include <stdio.h>

#include "headers/reassociate_all.h"

static float data[1000];
static double wide[1000];

static float scaled_sum(int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; i++) sum += data[i] * 1.0001f;
  return sum;
}

static double positive_sum(int n) {
  double sum = 0;
  for (int k = 0; k < n; k++) sum += wide[k] > 0 ? wide[k] : -wide[k] / 2;
  return sum;
}

int main(void) {
  unsigned s = 54321;
  for (int i = 0; i < 1000; i++) {
    s = s * 1103515245u + 12345u;
    data[i] = (float)(s >> 8) / 16777216.0f - 0.3f;
    wide[i] = (double)data[i] * 3.25 - (i & 7);
  }
  printf("%.9g %.17g\n", scaled_sum(1000), positive_sum(1000));
  return 0;
}
