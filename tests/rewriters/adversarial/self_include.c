/* A file that includes itself, as MPFR's tcmp_ui.c does inside main: the labelled copy is
   compiled next to itself, so the include reads the copy, whose own definitions (the label
   slots, the database) must come once, at file scope, or the file is built without labels. */
#ifdef SELF_INCLUDE_INNER
total += value < 5 ? SELF_INCLUDE_INNER : 2;
#else
#include <stdio.h>

int main(int argc, char **argv) {
  int total = 0, value = argc;
  (void)argv;
#define SELF_INCLUDE_INNER 3
#include "self_include.c"
  printf("%d\n", total > 0 && total < 5 ? total : -total);
  return total > 0 && total < 5 ? 0 : 1;
}
#endif
