/* A signal handler with decisions on a volatile sig_atomic_t flag set asynchronously. */
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t seen;

static void on_usr1(int sig) {
  if (sig == SIGUSR1 && seen < 3) seen = seen + 1;
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  int rounds = 0;
  while (seen < 3 && rounds < 10) {
    raise(SIGUSR1);
    rounds++;
  }
  printf("%d %d\n", (int)seen, rounds);
  return seen == 3 ? 0 : 1;
}
