/* Issue 17 point 4: a label never reads a local the program reads only conditionally
   (best is uninitialised unless found): valgrind and MemorySanitizer see no new read. */
#include <stdio.h>

struct result { int found; int value; };

static struct result lookup(const int *v, int n, int key) {
  struct result r;
  r.found = 0;
  for (int i = 0; i < n; i++)
    if (v[i] == key) {
      r.found = 1;
      r.value = i;
    }
  return r;
}

static int scan(const int *v, int n, int limit) {
  int found = 0;
  int best;
  for (int i = 0; i < n; i++)
    if (v[i] > limit) {
      found = 1;
      best = v[i];
    }
  if (found && best > 3)
    return best;
  return -1;
}

static int check(const int *v, int n, int key) {
  struct result r = lookup(v, n, key);
  if (r.found && r.value > 1)
    return r.value;
  return -1;
}

int main(int argc, char **argv) {
  int v[] = {1, 5, 2, 9, 4};
  int limit = argc > 1 ? 100 : 50;
  int a = scan(v, 5, limit), b = scan(v, 5, 3), c = check(v, 5, limit), d = check(v, 5, 9);
  printf("%d %d %d %d\n", a, b, c, d);
  return (a + b + c + d) & 0x7f;
}
