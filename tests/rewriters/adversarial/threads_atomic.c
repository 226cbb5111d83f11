/* Threads and C11 atomics: decisions whose operands are atomic loads (labels must not add
 * atomic operations or read-modify-writes the program did not do). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_int counter;

static void *work(void *arg) {
  int n = *(int *)arg;
  for (int i = 0; i < n; i++) {
    if (i % 2 == 0 && atomic_load(&counter) < 1000) atomic_fetch_add(&counter, 2);
    else atomic_fetch_add(&counter, 1);
  }
  return NULL;
}

int main(void) {
  pthread_t t[2];
  int n = 100;
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, &n);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("%d\n", atomic_load(&counter));
  return atomic_load(&counter) > 250 ? 1 : 0;
}
