// options: mcc wm=COR
struct node { int v; struct node *next; };
int f(struct node *n, int lo, int hi) {
  int k = 0;
  while (n && n->v >= lo) n = n->next;
  for (k = 0; k < hi && (k & 1) == 0; k++) {}
  do { k--; } while (k > lo || !hi);
  return (lo && hi) ? ((lo || k) ? 1 : 2) : 3;
}
