/* Issue 17 point 3: floating-point exception flags. After each floating-point computation the
   program prints which flags are set; labels (comparisons with a NaN, mutants dividing by zero
   or overflowing) must leave exactly the flags the computation itself leaves. The program reads
   the flags: C requires FENV_ACCESS, and volatile results keep gcc (which ignores the pragma)
   from moving the arithmetic across the reads. */
#include <fenv.h>
#include <math.h>
#include <stdio.h>

#pragma STDC FENV_ACCESS ON

static const double values[] = {0.0, -0.0, 1.0, -1.5, 1e308, 1e-320, INFINITY, -INFINITY, NAN};
#define COUNT (int)(sizeof values / sizeof values[0])

static int flags(void) {
  return (fetestexcept(FE_DIVBYZERO) ? 1 : 0) | (fetestexcept(FE_INVALID) ? 2 : 0)
       | (fetestexcept(FE_OVERFLOW) ? 4 : 0) | (fetestexcept(FE_UNDERFLOW) ? 8 : 0)
       | (fetestexcept(FE_INEXACT) ? 16 : 0);
}

int main(void) {
  unsigned long signature = 0;
  for (int i = 0; i < COUNT; i++) {
    for (int j = 0; j < COUNT; j++) {
      volatile double a = values[i], b = values[j];
      feclearexcept(FE_ALL_EXCEPT);
      volatile int equal = a == b, different = a != b;
      int after_compare = flags();
      feclearexcept(FE_ALL_EXCEPT);
      volatile double sum = a + b, difference = a - b;
      int after_add = flags();
      feclearexcept(FE_ALL_EXCEPT);
      volatile float narrow = (float)a * 0.5f;
      int after_narrow = flags();
      printf("%d %d: %d%d %d | %g %g %d | %g %d\n", i, j, equal, different, after_compare,
             sum, difference, after_add, narrow, after_narrow);
      signature = signature * 31u + (unsigned)(after_compare * 25 + after_add * 5 + after_narrow);
    }
  }
  return (int)(signature & 0x7f);
}
