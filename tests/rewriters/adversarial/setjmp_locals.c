/* setjmp/longjmp: conditions on volatile locals across a longjmp, and a decision that
 * contains the setjmp call itself (labels must not call setjmp again). */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;

static void maybe_jump(int v) {
  if (v > 2 && v % 2 == 1) longjmp(env, v);
}

int main(void) {
  volatile int count = 0, total = 0;
  int got;
  if ((got = setjmp(env)) != 0 && got < 10) {
    printf("jumped with %d\n", got);
    total += got * 2 - 1;
  }
  while (count < 8) {
    count = count + 1;
    total = total + count;
    maybe_jump(count == 5 ? 5 : 0);
  }
  printf("count %d total %d\n", count, total);
  return total > 40 ? 3 : 0;
}
