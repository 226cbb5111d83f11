/* A call to an undeclared function, as in MPFR's tests.c: _GNU_SOURCE is defined after
   <locale.h> has read <features.h>, so <fenv.h> does not declare feenableexcept. gcc (up to 13)
   and clang 14 compile the call with a warning, clang 16 and later reject it by default: the
   parse must accept it, or the file is built without labels. Traps are on, so the labels around
   it (b / 0 when && is mutated to ||, a / b with b a NaN) must not raise what they compute. */
#include <locale.h>
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdio.h>

static int above(double a, double b, double limit) {
  return b != 0.0 && __builtin_isgreater(a / b, limit);
}

int main(void) {
  if (feenableexcept(FE_DIVBYZERO | FE_INVALID) < 0)
    return 2;
  volatile double zero = 0.0, two = 2.0, nan = NAN;
  int count = above(1.0, zero, 0.5) + above(3.0, two, 1.0) + above(nan, two, 0.0);
  printf("%d %d\n", count, fetestexcept(FE_DIVBYZERO | FE_INVALID) != 0);
  return count == 1 ? 0 : 1;
}
