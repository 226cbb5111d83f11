/* Issue 17 point 14: compound assignments, ++/--, unary minus and bitwise operators as label
 * sites. Side effects in the object assigned (a[i++] += 2, *p++ -= 1) run once; pointers step
 * with ++ and += (no mutant pointer is ever formed); bit-fields, narrow and volatile objects
 * wrap as the program says; shifts of negative numbers and by amounts that depend on input;
 * members reached through pointers updated in loops. The labelled build must print the same. */
#include <stdio.h>
#include <string.h>

struct counters {
  unsigned small : 3;
  signed tiny : 4;
  int total;
  unsigned char byte;
};

static int calls;
static int next(void) { return ++calls; }

static int mix(int *a, int n, struct counters *c) {
  int i = 0, sum = 0;
  a[i++] += 2;
  a[i++] -= next();
  a[i] *= i + 1;
  int *p = a;
  *p++ -= 1;
  p += n - 2;
  p--;
  sum += *p;
  sum ^= a[0] << 3;
  sum |= -a[1] & 0xff;
  sum &= ~(a[2] >> 1);
  for (int k = 0; k < n; k++) {
    c->small += (unsigned)a[k];
    c->tiny -= 3;
    c->total += a[k] % 7;
    c->byte <<= 1;
    c->byte ^= (unsigned char)k;
    c->total >>= k & 1;
  }
  return sum;
}

static long shifts(long v, int amount) {
  long r = v >> amount;  /* negative v: an arithmetic shift in gcc and clang */
  r += (v & 0xf) << amount;
  unsigned long u = (unsigned long)v;
  u <<= amount;
  u >>= amount / 2;
  return r ^ (long)(u & 0xffff);
}

int main(int argc, char **argv) {
  int a[5] = {5, -7, 9, 11, -13};
  struct counters c;
  memset(&c, 0, sizeof c);
  c.byte = 0x81;
  int n = 5 + (argc > 7);
  printf("mix %d\n", mix(a, n, &c));
  printf("a %d %d %d %d %d calls %d\n", a[0], a[1], a[2], a[3], a[4], calls);
  printf("c %u %d %d %u\n", c.small, c.tiny, c.total, c.byte);
  volatile int v = 3;
  v += 4;
  v *= -v;
  v++;
  printf("v %d\n", v);
  double d = 0.5;
  for (int k = 0; k < 3; k++) {
    d *= -2.0;
    d++;
    d -= k;
  }
  _Bool flag = argc > 3;
  flag++;
  printf("d %g flag %d\n", d, flag);
  for (int amount = 0; amount < 6; amount++)
    printf("shift %d %ld %ld\n", amount, shifts(-1234567L + argc, amount), shifts(98765L, amount));
  int x = argc - 1;
  int neg = -x;
  neg -= -neg;
  unsigned char wrap = 250;
  for (int k = 0; k < 4; k++)
    wrap += 3;
  short s = 32000;
  s += 1000;  /* converted back to short: implementation-defined wrap, not undefined */
  printf("neg %d wrap %u s %d %s\n", neg, wrap, s, argv[0][0] ? "ok" : "");
  return 0;
}
