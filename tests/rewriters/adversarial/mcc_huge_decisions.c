/* Issue 17 point 8: decisions of 16 and 41 conditions, as in character and code-point tables
   (gnulib's uniwidth has one of 26). MCC labels the combinations evaluation can reach, 17 for the
   chain; the 41-condition decision (over two million of them) gets the default bound's windows.
   The build takes seconds and the program behaves as the plain build. */
#include <stdio.h>

static int wide(unsigned uc) {
  if (uc >= 0x1100
      && ((uc >= 0x1100 && uc < 0x1160)
      || (uc >= 0x2329 && uc < 0x232b)
      || (uc >= 0x2e80 && uc < 0x303f)
      || (uc >= 0x3040 && uc < 0xa4d0)
      || (uc >= 0xac00 && uc < 0xd7a4)
      || (uc >= 0xf900 && uc < 0xfb00)
      || (uc >= 0xfe10 && uc < 0xfe20)
      || (uc >= 0xfe30 && uc < 0xfe70)
      || (uc >= 0xff00 && uc < 0xff61)
      || (uc >= 0xffe0 && uc < 0xffe7)
      || (uc >= 0x1f300 && uc < 0x1f650)
      || (uc >= 0x1f900 && uc < 0x1fa00)
      || (uc >= 0x20000 && uc < 0x2fffe)
      || (uc >= 0x30000 && uc < 0x3fffe)
      || (uc >= 0x1b000 && uc < 0x1b300)
      || (uc >= 0x16fe0 && uc < 0x16fe5)
      || (uc >= 0x17000 && uc < 0x18cd6)
      || (uc >= 0x18d00 && uc < 0x18d09)
      || (uc >= 0x1aff0 && uc < 0x1b000)
      || (uc >= 0x1f200 && uc < 0x1f203)))
    return 2;
  return 1;
}

static int blank(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ',' || c == ';' || c == ':' || c == '.' || c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}';
}

int main(void) {
  unsigned long sum = 0;
  int blanks = 0;
  for (unsigned uc = 0; uc < 0x40000; uc += 7)
    sum += (unsigned long)wide(uc) * (uc % 13);
  for (int c = 0; c < 256; c++)
    blanks += blank(c);
  printf("%lu %d\n", sum, blanks);
  return (int)(sum % 7) + blanks % 3;
}
