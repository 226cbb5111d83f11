/* Types the libclang Python bindings have no kind for (_Float16 where gcc has it, _BitInt(N)
   where clang has it; libclang parses both) beside types they know (__int128, __float128,
   _Complex, vectors): their sites get no labels, the decisions around them keep theirs, and
   the file keeps its labels (the rewriter stopped on "Unknown template argument kind 32"). */
#include <stdio.h>

#ifdef __FLT16_MAX__
typedef _Float16 half;
#else
typedef float half;
#endif
#ifdef __clang__
typedef _BitInt(37) b37;
typedef unsigned _BitInt(65) u65;
#else
typedef long long b37;
typedef unsigned __int128 u65;
#endif
typedef int v4 __attribute__((vector_size(16)));

static half h(half a, half b) { return a < b ? a + b : a * b; }

static int half_cases(half a, half b, int flag) {
  half s = a;
  s += b;
  s = -s;
  if (a < b && flag) return 1;
  if (s > a || b == (half)0.5f) return 2;
  return a >= b ? 3 : 4;
}

static long long bits(b37 x, u65 y) {
  b37 d = x / 3 - x % 5;
  u65 m = y * 7u + (y >> 3);
  if (d > 100 && m != 0) return (long long)(d + (b37)(m & 1023u));
  return (long long)(d - 1);
}

static double known(__int128 i, __float128 q, _Complex double z, v4 v) {
  v4 w = v * v + (v > 1);
  if (i > 5 && q < 2.5Q) return (double)(i * 2) + (double)q + __real__ z;
  return (double)(w[0] + w[3]) - __imag__ z;
}

int main(void) {
  static const float values[] = {-1.5f, 0.0f, 0.5f, 2.25f, 1000.0f};
  long long total = 0;
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 5; j++) {
      half a = (half)values[i], b = (half)values[j];
      printf("%g %d ", (double)h(a, b), half_cases(a, b, i & 1));
    }
    total += bits((b37)(i * 1000 - 77), (u65)(i + 1) << 60);
    v4 v = {i, -i, 2 * i, 3};
    printf("| %lld %.3f\n", total, known(i * 3, (__float128)values[i], i - 2.0 * i, v));
  }
  return (int)(total & 7);
}
