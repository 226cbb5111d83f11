/* Computed goto (GNU labels as values) with decisions between the jumps. */
#include <stdio.h>

int main(void) {
  static void *table[] = {&&add, &&sub, &&done};
  int acc = 0, pc = 0, steps = 0;
  goto *table[pc];
add:
  acc += 3;
  pc = (acc > 10 && steps < 20) ? 1 : 0;
  steps++;
  goto *table[steps > 12 ? 2 : pc];
sub:
  acc -= 2;
  pc = acc < 5 || steps % 3 == 0 ? 0 : 1;
  steps++;
  goto *table[steps > 12 ? 2 : pc];
done:
  printf("%d %d\n", acc, steps);
  return acc & 3;
}
