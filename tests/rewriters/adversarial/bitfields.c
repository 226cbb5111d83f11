/* Bit-fields: operands narrower than int, signed and unsigned, in decisions and arithmetic
 * (labels must not take their address or widen them wrongly). */
#include <stdio.h>

struct flags {
  unsigned ready : 1;
  signed level : 3;
  unsigned count : 5;
};

static int judge(struct flags f) {
  if (f.ready && f.level < 0 || f.count > 20) return f.level * 2 + (int)f.count;
  return f.count - f.level;
}

int main(void) {
  int sum = 0;
  for (int i = 0; i < 64; i++) {
    struct flags f = {(unsigned)i & 1u, (i % 8) - 4, (unsigned)i % 32u};
    sum += judge(f);
  }
  printf("%d\n", sum);
  return sum & 0x7f;
}
