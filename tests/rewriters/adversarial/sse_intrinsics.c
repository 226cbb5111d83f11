/* A unit that includes the compiler's intrinsics (<immintrin.h>, SSE2's <emmintrin.h> among
   them): libclang 18 parses it with the installed clang 14's headers, whose inline bodies call
   builtins clang 15 removed: errors to libclang, in those headers only, more than clang's
   default limit of 20.  The unit's own code must keep its labels, and its vector arithmetic
   must come out as the plain build's. */
#include <immintrin.h>
#include <stdio.h>

static int classify(int a, int b) {
  if (a > 3 && b < 2)
    return 1;
  return a * 2 + b;
}

int main(int argc, char **argv) {
  (void)argv;
  __m128i v = _mm_set_epi32(argc, 2 * argc, 7, -3);
  __m128i w = _mm_adds_epi16(v, _mm_set1_epi16(0x7ff0));
  int out[4];
  _mm_storeu_si128((__m128i *)out, _mm_add_epi32(v, w));
  for (int i = 0; i < 4; i++)
    printf("%d %d\n", out[i], classify(out[i] & 15, i));
  return 0;
}
