/* ffcc_fuzzer_main.c - main() for libFuzzer-style harnesses.
 *
 * Linked from an archive, so it is only pulled in when the program defines
 * LLVMFuzzerTestOneInput and no main of its own.  Under a fuzzer it runs the
 * harness in a persistent loop, test cases coming from shared memory when the
 * fuzzer offers it, else from the @@ file or stdin; run by hand it executes
 * each file named on the command line once (stdin if none), like libFuzzer. */
#define _GNU_SOURCE
#include "ffcc_names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

int __afl_persistent_loop(unsigned int max_iterations);
void __afl_manual_init(void);
extern uint32_t *__afl_fuzz_len;
extern uint8_t *__afl_fuzz_ptr;
int __afl_sharedmem_fuzzing = 1;

/* Iterations per forked process before a fresh one is forked, unless
 * FFCC_ENV_LOOPCOUNT says otherwise: a fork costs about as much as a few
 * thousand fast iterations, and a fresh process bounds what a leaking target
 * accumulates. */
#define PERSISTENT_ITERATIONS 100000

static unsigned int loop_count(void) {
  const char *text = getenv(FFCC_ENV_LOOPCOUNT);
  char *end;
  unsigned long n = text ? strtoul(text, &end, 10) : 0;
  return text && *end == '\0' && n > 0 && n <= UINT32_MAX ? (unsigned int)n : PERSISTENT_ITERATIONS;
}

/* afl-fuzz detects these modes by grepping the binary for the signatures. */
static volatile const char *const signatures[] __attribute__((used)) = {FFCC_SIG_PERSISTENT,
                                                                       FFCC_SIG_DEFER};

/* Read all of fd into a buffer of exactly the input's size, so that reads
 * past the end of the input are caught by ASan as with libFuzzer. */
static uint8_t *read_all(int fd, size_t *size) {
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    if (len == cap) {
      uint8_t *bigger = realloc(buf, cap *= 2);
      if (!bigger) { free(buf); return NULL; }
      buf = bigger;
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  uint8_t *exact = malloc(len ? len : 1);
  if (exact) memcpy(exact, buf, len);
  free(buf);
  *size = len;
  return exact;
}

static int run_fd(int fd) {
  size_t size;
  uint8_t *data = read_all(fd, &size);
  if (!data) return -1;
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

static int run_path(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "ffcc: cannot open input %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc = run_fd(fd);
  close(fd);
  return rc;
}

static void run_shared(void) {
  size_t size = *__afl_fuzz_len;
  uint8_t *data = malloc(size ? size : 1);
  if (!data) abort();
  memcpy(data, __afl_fuzz_ptr, size);
  LLVMFuzzerTestOneInput(data, size);
  free(data);
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  const char *input = NULL; /* first argument that is not a libFuzzer -flag */
  for (int i = 1; i < argc && !input; i++)
    if (argv[i][0] != '-') input = argv[i];

  if (getenv(FFCC_ENV_SHM_ID)) {
    __afl_manual_init();
    unsigned int iterations = loop_count();
    while (__afl_persistent_loop(iterations)) {
      if (__afl_fuzz_ptr) {
        run_shared();
      } else if (input) {
        if (run_path(input)) return 1;
      } else {
        lseek(0, 0, SEEK_SET);
        if (run_fd(0)) return 1;
      }
    }
    return 0;
  }

  int ran = 0;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') continue;
    if (run_path(argv[i])) return 1;
    ran = 1;
  }
  if (!ran && run_fd(0)) return 1;
  return 0;
}
