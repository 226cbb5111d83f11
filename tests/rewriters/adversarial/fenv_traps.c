/* Issue 17 point 3: floating-point traps. The program enables every exception but inexact;
   its own arithmetic never raises one. Mutants' values (a / 0, a * b overflowing, inf - inf,
   NaN compared with <) would, so labels compute them with exceptions masked and the
   environment restored, and compare quietly: the labelled program must not die of SIGFPE. */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdio.h>

#pragma STDC FENV_ACCESS ON

static double add(double a, double b) { return a + b; }
static double sub(double a, double b) { return a - b; }
static float scale(float a, float b) { return a * b; }
static long double widen(long double a, double b) { return a + b; }
static int same(double a, double b) { return a == b; }
static int unordered_or_zero(double a) { return a != a || a == 0.0; }

int main(void) {
  feenableexcept(FE_ALL_EXCEPT & ~FE_INEXACT);
  volatile double huge = 1e300, zero = 0.0, inf = INFINITY, nan = NAN;
  double sum = add(huge, zero);          /* mutant huge / 0: division by zero */
  double big = add(huge, huge * 0.5);    /* mutant huge * (huge / 2): overflow */
  double rest = sub(inf, 1.0);           /* mutant inf / 1 fine, inf + 1 fine */
  float product = scale(1e30f, 1.0f);    /* mutant 1e30f / 1.0f, 1e30f + 1 */
  long double wide = widen(1e4000L, 0.0); /* mutant 1e4000L / 0: x87 */
  int equal = same(nan, 1.0);            /* == is quiet; a label's < on NaN would trap */
  int checks = unordered_or_zero(nan) + unordered_or_zero(-0.0);
  printf("%g %g %g %g %Lg %d %d\n", sum, big, rest, product, wide, equal, checks);
  return checks == 2 && !equal ? 0 : 1;
}
