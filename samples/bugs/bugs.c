/* bugs: a tiny command interpreter dense with known bugs, for measuring what
 * a campaign finds.  One command per line; each bug has a triggering input in
 * triggers/ (kept out of seeds/, so a fuzzer must rediscover it):
 *
 *   div-by-zero      DIV a b     divides without checking b        (SIGFPE)
 *   null-deref       GET key     unknown keys starting '#' -> NULL (SIGSEGV)
 *   stack-exhaustion NEST n      recursion depth unchecked         (SIGSEGV)
 *   hang             WAIT n      n == 13 never terminates          (timeout)
 *   assert           NAME s      asserts a name is not 7 bytes     (SIGABRT)
 *   off-by-one       SLOT i      accepts i == 8 in an 8-entry table (SIGSEGV)
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8

struct entry {
  const char *key;
  const char *value;
};

static const struct entry table[] = {{"colour", "blue"}, {"shape", "round"}, {"size", "9"}};
static char *slots[SLOTS + 1]; /* the extra element is the off-by-one's NULL */
static char slot_storage[SLOTS][16];

static const struct entry *lookup(const char *key) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].key, key) == 0) return &table[i];
  static const struct entry unknown = {"?", "unknown"};
  return key[0] == '#' ? NULL : &unknown; /* BUG: NULL for '#' keys */
}

static int nest(long depth) {
  volatile char frame[256];
  frame[0] = (char)depth;
  if (depth <= 0) return 0;
  int below = nest(depth - 1); /* BUG: no depth limit */
  return below + (frame[0] != 0);
}

static long wait_steps(long n) {
  volatile long steps = 0; /* volatile: the spin is observable, never optimised out */
  for (long i = 0; i != n && n != 13; i++) steps++;
  while (n == 13) steps++; /* BUG: spins forever on 13 */
  return steps;
}

static void run(char *line) {
  char word[16] = "";
  char arg[64] = "";
  long a = 0, b = 0;
  if (sscanf(line, "%15s", word) != 1) return;
  if (strcmp(word, "DIV") == 0 && sscanf(line, "DIV %ld %ld", &a, &b) == 2) {
    printf("%ld\n", a / b); /* BUG: b may be 0 */
  } else if (strcmp(word, "GET") == 0 && sscanf(line, "GET %63s", arg) == 1) {
    printf("%s\n", lookup(arg)->value);
  } else if (strcmp(word, "NEST") == 0 && sscanf(line, "NEST %ld", &a) == 1) {
    printf("nested %d\n", nest(a));
  } else if (strcmp(word, "WAIT") == 0 && sscanf(line, "WAIT %ld", &a) == 1) {
    printf("waited %ld\n", wait_steps(a % 1000));
  } else if (strcmp(word, "NAME") == 0 && sscanf(line, "NAME %63s", arg) == 1) {
    assert(strlen(arg) != 7); /* BUG: a legitimate name length */
    printf("hello %s\n", arg);
  } else if (strcmp(word, "SLOT") == 0 && sscanf(line, "SLOT %ld %15s", &a, arg) == 2) {
    if (a >= 0 && a <= SLOTS) { /* BUG: should be < SLOTS */
      strcpy(slots[a], arg);
      printf("slot %ld = %s\n", a, slots[a]);
    }
  } else {
    printf("unknown command %s\n", word);
  }
}

int main(int argc, char **argv) {
  FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
  if (!in) {
    perror("bugs");
    return 2;
  }
  for (int i = 0; i < SLOTS; i++) slots[i] = slot_storage[i];
  char line[256];
  int commands = 0;
  while (fgets(line, sizeof line, in)) {
    run(line);
    commands++;
  }
  printf("%d commands\n", commands);
  return 0;
}
