/* Differential-test program: decisions, arithmetic, guards, side effects in conditions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

struct node { int value; struct node *next; unsigned flags : 3; };

static int calls;
static int noisy(int v) { calls++; printf("noisy(%d) ", v); return v; }
static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static int walk(struct node *n, int limit) {
  int sum = 0, steps = 0;
  while (n && n->value != limit && steps < 8) {
    sum += n->value * 2 - steps;
    if (n->next && n->next->value > n->value || n->flags == 3) sum ^= 1;
    n = n->next;
    steps++;
  }
  return sum;
}

static int divide(int a, int b) {
  if (b != 0 && !(a == INT_MIN && b == -1) && a / b > 2) return a % b;
  return (b == 0 || a > 100) ? -1 : a - b;
}

static long mix(long a, long b, unsigned u, double d) {
  long r = a * 3 + b / (b == 0 ? 1 : b) - (long)(u % 7u);
  if (d > 0.5 && d < 2.0 || d == -1.0) r += 1;
  if ((u & 1u) == 0 && u >> 1 > 3 || a << 2 > 40) r -= 2;
  return r + (a < b) + (a >= b && b != 0);
}

static int scan(const char *s, int n) {
  int i = 0, digits = 0;
  for (i = 0; i < n && s[i] != '\0'; i++)
    if (s[i] >= '0' && s[i] <= '9' || s[i] == '-' && i == 0) digits++;
  return digits;
}

static int effects(int x, int y) {
  int k = 0;
  if (noisy(x) && noisy(y)) k += 1;
  if (noisy(x - 1) || noisy(y - 1)) k += 2;
  while (x-- > 0 && ++k < 10) {}
  do { y++; } while (y < 3 && y % 2);
  k += (x > y) ? (x > 2 * y ? 3 : 4) : (y > 0 && x < 0 ? 5 : 6);
  return k;
}

int main(void) {
  long a, b, c;
  unsigned u;
  double d;
  char text[16];
  if (scanf("%ld %ld %ld %u %lf %15s", &a, &b, &c, &u, &d, text) != 6) return 2;
  struct node n3 = {(int)c, 0, 3}, n2 = {(int)b, &n3, 1}, n1 = {(int)a, &n2, 2};
  struct node *head = (a % 3 == 0) ? 0 : &n1;
  printf("walk=%d ", walk(head, (int)c));
  printf("div=%d ", divide((int)a, (int)b));
  printf("mix=%ld ", mix(a, b, u, d));
  printf("scan=%d ", scan(text, (int)(c & 15)));
  int eff = effects((int)(a % 5), (int)(b % 5));
  printf("eff=%d calls=%d ", eff, calls);
  printf("clamp=%d\n", clamp((int)a, -5, 5));
  return (int)((a + b) & 3);
}
