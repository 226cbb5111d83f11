/* Issue 17 point 14: pointer arithmetic and floating updates as label sites. p + n, p - n,
 * p += n, p -= n and p++ walk to the edges of arrays (one past the end, the first element),
 * where the mutant's pointer (p - n for p + n) would point outside the array: labels compare the
 * offsets and never form it. Floating compound assignments and ++ run with traps enabled for
 * every exception but inexact, where mutants overflow or divide by zero (d *= 0.5 against
 * d /= 0.5 at 1e308, d += 0.0 against d /= 0.0): labels hold the floating-point environment. */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdio.h>

#pragma STDC FENV_ACCESS ON

static int walk(const int *base, int n, int step) {
  const int *end = base + n;
  const int *p = base;
  int sum = 0;
  while (p != end) {
    sum += *p;
    p += step;
    if (end - p < step) break;
  }
  const int *q = end - 1;
  for (int k = 0; k < n; k++, q--)
    sum ^= (int)((unsigned)*q << (k & 3));
  const int *r = base + (n - 1);
  r -= n - 1;
  return sum + *r + (int)(end - base);
}

static double damp(double d, double by) {
  d *= 0.5;
  d += by;
  d -= 0.0;
  d++;
  --d;
  return d;
}

int main(int argc, char **argv) {
  int values[8] = {3, -1, 4, -1, 5, -9, 2, 6};
  feenableexcept(FE_ALL_EXCEPT & ~FE_INEXACT);
  printf("walk %d %d %d\n", walk(values, 8, 1), walk(values, 8, 2 + (argc > 5)),
         walk(values + 7, 1, 1));
  volatile double huge = 1e308, zero = 0.0;
  printf("damp %g %g %g\n", damp(huge, zero), damp(-huge, 1.0), damp(zero, zero));
  char text[] = "edges";
  char *c = text;
  while (*c) c++;
  c -= 5;
  printf("text %s %c %s\n", c, *(c + 4), argv[0][0] ? "ok" : "");
  return 0;
}
