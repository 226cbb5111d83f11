/* Issue 17 point 10: a divisor of -1 is an ordinary divisor for labels (x / -1 == -x), and only
   MIN / -1 is undefined. Mutants of a - b with a == INT_MIN, b == -1 divide MIN by -1: the label
   must not (SIGFPE on x86, a UBSan report); the program's own a / b with b == -1 runs. */
#include <limits.h>
#include <stdio.h>

static int diff(int a, int b) { return a - b; }
static long long quotient(long long a, long long b) { return b != 0 && a / b > 3 ? a / b : 0; }
static int by_minus_one(int x) { return x / -1 + x % -1; }

int main(void) {
  static const int as[] = {INT_MIN, INT_MIN + 1, -7, -1, 0, 1, 7, INT_MAX};
  static const long long bs[] = {-1, 1, 2, -3};
  long total = 0;
  for (int i = 0; i < 8; i++) {
    total += diff(as[i] == INT_MAX ? 0 : as[i], -1) % 1000;
    total += by_minus_one(as[i] == INT_MIN ? 5 : as[i]);
    for (int j = 0; j < 4; j++)
      total += quotient(as[i] == INT_MIN ? -8 : as[i], bs[j]);
  }
  printf("%ld\n", total);
  return (int)(total & 0x7f);
}
