/* Issue 17 point 1: C11 atomic_*, __atomic_* and __sync_* operations and statement expressions
   in an operand the program skips are never run by a label. */
#include <stdatomic.h>
#include <stdio.h>

static atomic_int tickets;
static int plain_tickets;
static int synced;

int main(int argc, char **argv) {
  int busy = argc;  /* 1 without arguments */
  int taken = 0, seen = 0, sync_seen = 0, expr_seen = 0, loads = 0;
  int counter = 0;
  for (int i = 0; i < 4; i++) {
    if (busy > i && atomic_fetch_add(&tickets, 1) < 3)
      taken++;
    if (busy > i && __atomic_fetch_add(&plain_tickets, 1, __ATOMIC_SEQ_CST) < 3)
      seen++;
    if (busy > i && __sync_fetch_and_add(&synced, 1) < 3)
      sync_seen++;
    if (busy > i && ({ counter++; counter; }) > 1)
      expr_seen++;
    if (busy <= i || atomic_load(&tickets) > 2)
      loads++;
  }
  printf("%d %d %d %d %d | %d %d %d %d\n", taken, seen, sync_seen, expr_seen, loads,
         atomic_load(&tickets), plain_tickets, synced, counter);
  return (taken + seen + sync_seen + expr_seen + loads + tickets + plain_tickets + synced
          + counter) & 0x7f;
}
