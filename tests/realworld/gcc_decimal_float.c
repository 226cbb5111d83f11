/* A unit the backend compiles and libclang cannot parse: gcc's decimal floating types (as
   in mpfr.h when MPFR is configured by gcc, which enables them). ffcc --cc=gcc --mcc --wm
   must build it without labels and say so: a warning, an entry in the build summary, and an
   error under --labels-required (tests/realworld/test_unparsable_units.py).
   clang 14 has no decimal floats: as ffcc's backend it compiles the double branch. */
#include <stdio.h>

#if defined(__clang_major__) && __clang_major__ < 18
typedef double dec64;
#define DEC(x) x
#else
typedef _Decimal64 dec64;
#define DEC(x) x##DD
#endif

static int over(dec64 price, dec64 limit, int strict) {
  if (strict && price > limit)
    return 2;
  return price >= limit;
}

int main(int argc, char **argv) {
  (void)argv;
  dec64 price = DEC(1.10) * argc, limit = DEC(1.10);
  printf("%d %d\n", over(price, limit, 1), over(price, limit, 0));
  return 0;
}
