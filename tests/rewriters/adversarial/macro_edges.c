/* Expressions that begin or end inside a macro invocation. libclang ends a node whose last
   token comes from a macro argument where the invocation begins, so the decision
   `p && p[0] == T('x')` was wrapped as `p && p[0] == ` with `T('x')` left outside, the
   labelled compile failed and the file was built without labels (expat's xmlparse.c).
   Function-like and object-like macros, nested ones, arguments over several lines, a `)` on
   another line, a macro argument passed on by another macro's body, an operand that ends
   right where a macro name begins (`(a)AND(b)`), and macros that expand to part of an
   expression (`y * INC(z)` is `(y * z) + 1`: no node is `y * z` spelled as `y * INC(z)`). */
#include <stdio.h>
#include <stdlib.h>

#define T(x) x
#define ID2(a, b) b
#define CHAR_X 'x'
#define PAREN(x) (x)
#define INC(x) x + 1
#define INC_P(x) (x) + 1
#define NEG(x) -x
#define MUL_BY(y) y *
#define AND_ALSO(a) a &&
#define OR_ELSE(a) a ||
#define LT(a, b) a < b
#define NEST(x) T(T(x))
#define TWICE(x) ((x) * 2)
#define CALL(f, x) f(x)
#define EMPTY
#define CONCAT(a, b) a##b
#define THEN_5(a) a, 5
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define FIRST_IS(p, c) p[0] == T(c)
#define AND &&

static int ends_in_argument(const char *p) {
  if (p && p[0] == T('x')) return 1;
  if (T('x') == p[0] && p[1]) return 2;
  if (p[0] != T(CHAR_X) && p[0] == NEST('y')) return 3;
  if (T(p[0] == 'w') || T(p[1]) == T(p[0])) return 4;
  if (p[1] && FIRST_IS(p, 'a')) return 5;
  if (p[2] != 'c' && (p[1])AND(p[0])) return 6;
  if (p[0] ==T('b')) return 7;
  return (p != 0) && p[0] == T('z');
}

static int spans_lines(const char *p, int n) {
  if (n > 0 && p[0] == ID2(0,
                           'a'))
    return 1;
  if (n > 1 && p[1] == T(
        'b'
      ))
    return 2;
  return n < 3 || p[2] != PAREN('c'
                                );
}

static int calls;
static int next_value(void) { return ++calls; }

static int partial_expansions(int y, int z) {
  int r = next_value() * INC_P(z);
  if (y * INC(z) > 10 && z) r += 1;
  if (y * INC_P(z) > 10 || y < 0) r += 2;
  if (NEG(y) + z < 0 && y) r += 4;
  if (MUL_BY(y) z > 6 && z != 2) r += 8;
  if (AND_ALSO(y > 1) z > 1) r += 16;
  if (OR_ELSE(y == 3) z == 3) r += 32;
  if (LT(y, z) && LT(z, 5)) r += 64;
  if (y - T(z) * 2 != INC(z) - 1 && y != z) r += 128;
  if (IS_DIGIT(y + '0') && T(z) > 2) r += 256;
  return r + TWICE(y) - CALL(abs, z - y) + CONCAT(y, ) * T(2) EMPTY;
}

static int updates(int y, int z) {
  int x = y;
  x += T(z);
  x -= INC(z);
  x = (x -= THEN_5(z)) * 3;
  x *= NEG(z) + T(3);
  T(x)++;
  x = -T(x) + T(-y);
  x = z > T(1) ? T(x) : NEG(y);
  for (int i = 0; i < T(z) && x != T(
                                   7); i++)
    x += i;
  while (x > T(100)) x /= 2;
  return x;
}

int main(void) {
  static const char *const words[] = {"x", "xy", "yy", "ab", "abc", "zz", "w", "bb", "", "ww"};
  for (unsigned i = 0; i < sizeof words / sizeof *words; i++) {
    const char *w = words[i];
    size_t n = 0;
    while (w[n]) n++;
    char padded[4] = {0};
    for (size_t k = 0; k < n && k < 3; k++) padded[k] = w[k];
    printf("%s: %d %d\n", w, ends_in_argument(padded), spans_lines(padded, (int)n));
  }
  for (int y = -2; y < 5; y++)
    for (int z = -1; z < 6; z += 2)
      printf("%d %d: %d %d\n", y, z, partial_expansions(y, z), updates(y, z));
  return 0;
}
