/* Issue 17 point 5: operands the program leaves unsequenced (count + next(), where next()
   changes count) keep the order the compiler chose for the plain build. */
#include <stdio.h>

static int count;
static int calls[8];

static int next(void) {
  count += 10;
  return 1;
}

static int log_call(int id) {
  static int order;
  calls[order++ & 7] = id;
  return id;
}

int main(int argc, char **argv) {
  count = argc;
  int sum = count + next();
  int less = count < next();
  int product = (count - 5) * next();
  int both = log_call(1) - log_call(2);
  int cmp = log_call(3) < log_call(4);
  printf("%d %d %d %d %d | %d %d %d %d\n", sum, less, product, both, cmp,
         calls[0], calls[1], calls[2], calls[3]);
  return (sum + less + product + both + cmp) & 0x7f;
}
