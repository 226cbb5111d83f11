/* Differential-test program: atoms a naive label would evaluate unsafely when skipped. */
#include <limits.h>
#include <stdio.h>

struct box { int v; struct box *next; };
int table[8];

static int probe(int *p, struct box *b, int n, int d, int s) {
  int r = 0;
  if (p == 0 || *p > 3) r |= 1;
  if (b && b->next && b->next->v > 0) r |= 2;
  if (d == 0 || n / d > 1 || n % d == 3) r |= 4;
  if (d == 0 || d == -1 || n / d < -1) r |= 8;
  if (s < 0 || s > 30 || (n << s) > 4 || (n >> s) == 1) r |= 16;
  if (n > 1000 || n < -1000 || n + 1 > 5 || n * 3 < -5 || -n > 2) r |= 32;
  if (s < 0 || s >= 8 || table[s] == 2) r |= 64;
  return r;
}

int main(void) {
  int n, d, s, use_p, use_b;
  if (scanf("%d %d %d %d %d", &n, &d, &s, &use_p, &use_b) != 5) return 2;
  int value = n;
  struct box tail = {d, 0}, head = {s, use_b > 1 ? &tail : 0};
  table[(unsigned)s % 8] = 2;
  printf("%d\n", probe(use_p ? &value : 0, use_b ? &head : 0, n, d, s));
  return 0;
}
