/* Test harness: label hit bytes, written at exit to the file named by $FFCC_HITS. */
#include <stdio.h>
#include <stdlib.h>

#define FFCC_MAX_LABELS 65536
unsigned char __ffcc_hits[FFCC_MAX_LABELS];

__attribute__((destructor)) static void ffcc_dump_hits(void) {
  const char *path = getenv("FFCC_HITS");
  if (!path) return;
  FILE *out = fopen(path, "w");
  if (!out) return;
  for (int i = 0; i < FFCC_MAX_LABELS; i++)
    if (__ffcc_hits[i]) fprintf(out, "%d\n", i);
  fclose(out);
}
