// options: wm=ROR,AOR,ABS
int g(void);
int f(int a, int b, unsigned u, double x) {
  int r = a < b;
  r += a * b - a / (b | 1);
  r += g() >= a;
  if (u % 3u == 1 && x <= 0.5) r++;
  return r;
}
