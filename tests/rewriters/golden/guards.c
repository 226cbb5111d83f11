// options: mcc mcc_max=2 wm=COR
int table[8];
int f(int *p, int n, int d, int s) {
  if (p == 0 || *p > 3) return 1;
  if (d == 0 || n / d > 1 || n % d == 3) return 2;
  if (s > 30 || (n << s) > 4) return 3;
  if (n > 1000 || n + 1 > 5) return 4;
  if (s < 0 || s >= 8 || table[s] == 2) return 5;
  return 0;
}
