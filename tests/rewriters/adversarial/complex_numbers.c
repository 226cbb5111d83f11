/* C99 complex values next to real operands in conditions and arithmetic. */
#include <complex.h>
#include <stdio.h>

int main(void) {
  double complex z = 1.0 + 2.0 * I;
  int count = 0;
  for (int i = 0; i < 6; i++) {
    z = z * (0.5 + 0.5 * I) + i;
    double re = creal(z), im = cimag(z);
    if (re > im && im != 0.0) count++;
    if (re * im < 1.0 || re - im > 2.0) count += 3;
  }
  printf("%d %.3f %.3f\n", count, creal(z), cimag(z));
  return count % 4;
}
