/* Floating-point contraction: on an FMA target a*b + c compiles to one fused multiply-add
   (clang's -ffp-contract=on default within an expression, gcc's fast default at -O2 across
   them), whose result differs from a multiply then an add in the last bits
   (a = 1 + 2^-30, b = 1 - 2^-30, c = -1: -2^-60 fused, 0 apart).  Labels that captured the
   product into a temporary rounded it, and the labelled build printed 0.  Every shape below
   must print what the plain build prints. */
#include <stdio.h>

#define FMA __attribute__((target("fma"), noinline))

FMA static double mul_add(double a, double b, double c) { return a * b + c; }
FMA static double add_mul(double a, double b, double c) { return c + a * b; }
FMA static double mul_sub(double a, double b, double c) { return a * b - c; }
FMA static double sub_mul(double a, double b, double c) { return c - a * b; }
FMA static double two_products(double a, double b, double c) { return a * b + c * a; }
FMA static double negated(double a, double b, double c) { return -a * b + c; }
FMA static double three(double a, double b, double c) { return a * b * c + a; }
FMA static double horner(double x) { return ((3.0 * x - 7.0) * x + 5.0) * x - 1.0; }
FMA static float single(float a, float b, float c) { return a * b + c; }
FMA static double in_condition(double a, double b, double c) {
  return a * b + c < 0 ? a * b - c : c - a * b;
}

int main(void) {
  if (!__builtin_cpu_supports("fma")) {
    puts("no FMA on this machine: nothing to compare");
    return 0;
  }
  const double values[] = {1 + 0x1p-30, 1 - 0x1p-30, -1, 0.1, 3.0 / 7, -2.5e-3, 1e16, 1.0 / 3};
  const int n = sizeof values / sizeof values[0];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double a = values[i], b = values[j], c = values[(i + j) % n];
      printf("%a %a %a %a %a %a %a %a %a %a\n", mul_add(a, b, c), add_mul(a, b, c),
             mul_sub(a, b, c), sub_mul(a, b, c), two_products(a, b, c), negated(a, b, c),
             three(a, b, c), horner(a), (double)single((float)a, (float)b, (float)c),
             in_condition(a, b, c));
    }
  return 0;
}
