// options: mcc
int p(const char *s);
int f(int x) {
  if (p("a")) x++;                  /* Fig. 8 a: single atom, nothing to label */
  if (p("a") && p("b")) x++;        /* Fig. 8 b */
  if (p("a") || p("b")) x++;        /* Fig. 8 c */
  if (p("a") || x > 3) x++;         /* pure atom after a side effect: speculated */
  return x;
}
