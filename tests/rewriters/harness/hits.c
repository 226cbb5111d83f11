/* Test harness: label hit bytes, written at exit to the file named by $FFCC_HITS. */
#include <stdio.h>
#include <stdlib.h>

#define FFCC_MAX_LABELS 65536
unsigned char __ffcc_hits[FFCC_MAX_LABELS];
unsigned char __ffcc_gates[FFCC_MAX_LABELS]; /* one per site: set, its labels are skipped */

__attribute__((constructor)) static void ffcc_close_gates(void) {
  if (getenv("FFCC_GATES_CLOSED"))
    for (int i = 0; i < FFCC_MAX_LABELS; i++) __ffcc_gates[i] = 1;
}

__attribute__((destructor)) static void ffcc_dump_hits(void) {
  const char *path = getenv("FFCC_HITS");
  if (!path) return;
  FILE *out = fopen(path, "w");
  if (!out) return;
  for (int i = 0; i < FFCC_MAX_LABELS; i++)
    if (__ffcc_hits[i]) fprintf(out, "%d\n", i);
  fclose(out);
}
