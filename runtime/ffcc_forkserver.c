/* ffcc_forkserver.c - the fuzzer handshake, persistent and deferred modes.
 *
 * Speaks AFL++ 4.04c's forkserver protocol (ffcc_protocol.h): the old-style
 * hello with the map size, which newer afl-fuzz versions accept too.  Without
 * a fuzzer's pipe on fd 199 the program runs normally.
 * The names __afl_persistent_loop, __afl_manual_init, __afl_fuzz_ptr,
 * __afl_fuzz_len and __afl_sharedmem_fuzzing are the ABI of AFL++'s
 * persistent-mode macros, kept so that harnesses written for afl-clang-fast
 * build unchanged.  Batch mode (ffcc_protocol.h, Batches) is the same loop
 * with the persistent child talking to the fuzzer itself.
 *
 * The program never sees the runtime at work: every entry point (the
 * constructor, __AFL_INIT, __AFL_LOOP) leaves errno as it found it, so that
 * main starts with errno 0 as C promises and a loop iteration starts with the
 * errno the previous one left.  The runtime installs no signal handler, opens
 * no descriptor the program can see (the fuzzer's 198/199 are closed in every
 * child) and changes no environment variable.
 *
 * A process the program forks from the persistent child is a copy of it, not
 * a run: if it reaches the loop it leaves it (its parent runs the loop), and
 * in batch mode it gives up the fuzzer's pipes at once, so that only the
 * child the forkserver made ever answers the fuzzer. */
#define _GNU_SOURCE
#include "ffcc_protocol.h"
#include "ffcc_names.h"
#include "ffcc_rt.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* Set to 1 by __AFL_FUZZ_INIT() in programs that read test cases from memory. */
extern int __afl_sharedmem_fuzzing __attribute__((weak));

static uint32_t no_shared_len;
uint32_t *__afl_fuzz_len = &no_shared_len;
uint8_t *__afl_fuzz_ptr;

static int started;
static int persistent;
static struct ffcc_batch *batch; /* batch mode when set */
static int forkserver_forking;   /* set around the forkserver's own fork() */
static int program_copy;         /* this process was forked by the program */

static int write_word(uint32_t word) {
  return write(FFCC_FD_STATUS, &word, 4) == 4;
}

static int read_word(uint32_t *word) {
  return read(FFCC_FD_CONTROL, word, 4) == 4;
}

static uint32_t hello_word(int offer_shared_input) {
  uint32_t hello = FFCC_HELLO_ENABLED;
  uint32_t size = ffcc_map_size();
  if (size > 1 && size <= FFCC_MAX_HELLO_MAPSIZE) hello |= FFCC_HELLO_MAPSIZE | ((size - 1) << 1);
  if (offer_shared_input) hello |= FFCC_HELLO_SHMEM_FUZZ;
  if (batch) hello |= FFCC_HELLO_BATCH;
  return hello;
}

/* The fuzzer's batch segment, when it offers one and batches can run here:
 * persistent, with test cases from shared memory. */
static void attach_batch(int shared_input) {
  const char *id = getenv(FFCC_ENV_BATCH_SHM_ID);
  if (!id || !persistent || !shared_input) return;
  struct ffcc_batch *seg = shmat(atoi(id), NULL, 0);
  if (seg == (void *)-1) return;
  if (seg->layout == FFCC_BATCH_LAYOUT)
    batch = seg;
  else
    shmdt(seg); /* a fuzzer with another layout: plain persistent mode */
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* CLOCK_MONOTONIC in us, from the time-stamp counter when the fuzzer offers
 * its rate (ffcc_protocol.h, Case times).  Called once per case and per batch. */
static uint64_t case_clock_us(void) {
#if defined(__x86_64__)
  uint64_t rate = batch->us_per_tick_q32;
  if (rate) {
    uint64_t ticks = __builtin_ia32_rdtsc() - batch->clock_base_tick;
    return batch->clock_base_us + (uint64_t)(((unsigned __int128)ticks * rate) >> 32);
  }
#endif
  return now_us();
}

/* Put case `done` where the program reads its test case; it starts at `now`
 * (CLOCK_MONOTONIC, us). */
static void begin_case(uint64_t now) {
  uint32_t i = batch->done;
  uint32_t len = batch->len[i] <= FFCC_SHM_FUZZ_MAX ? batch->len[i] : FFCC_SHM_FUZZ_MAX;
  memcpy(__afl_fuzz_ptr, (uint8_t *)batch + FFCC_BATCH_DATA + batch->offset[i], len);
  *__afl_fuzz_len = len;
  batch->case_start_us = now;
  batch->started = i + 1;
  ffcc_map_reset_path();
}

/* Move the finished case's trace into its slot and clear the map for the next;
 * returns the time it ended, which is also when the next case starts (one
 * clock read per case). */
static uint64_t end_case(void) {
  uint32_t i = batch->done;
  uint32_t written = ffcc_map_take_written();
  ffcc_batch_store(ffcc_batch_slot(batch, i, batch->map_size), ffcc_map.area, batch->map_size,
                   written < batch->map_size ? written : batch->map_size);
  uint64_t now = case_clock_us();
  batch->elapsed_us[i] = (uint32_t)(now - batch->case_start_us);
  batch->done = i + 1;
  return now;
}

/* Begin the batch's next case; 0 when there is none (an empty batch asks the
 * child to leave its loop at once). */
static int take_case(void) {
  if (batch->done >= batch->count) return 0;
  begin_case(case_clock_us());
  return 1;
}

/* Between iterations in batch mode: the next case, or report the batch and
 * wait for the next one, as the forkserver would around a SIGSTOP.  Returns
 * 0 when the fuzzer asks the child to leave its loop. */
static int next_case(void) {
  uint64_t now = end_case();
  if (batch->done < batch->count) {
    begin_case(now);
    return 1;
  }
  if (batch->leave) return 0;
  uint32_t request; /* what waitpid() says of a child stopped by SIGSTOP */
  if (!write_word((uint32_t)((SIGSTOP << 8) | 0x7f)) || !read_word(&request) ||
      !write_word((uint32_t)getpid()))
    _exit(0);
  return take_case();
}

/* pthread_atfork child handler: a fork() by the program, not by the forkserver. */
static void forked_by_program(void) {
  if (forkserver_forking) return;
  program_copy = 1;
  if (batch) {
    close(FFCC_FD_CONTROL);
    close(FFCC_FD_STATUS);
  }
}

/* Map the fuzzer's test-case segment: a u32 length, then the bytes. */
static int attach_shared_input(void) {
  const char *id = getenv(FFCC_ENV_SHM_FUZZ_ID);
  if (!id) return 0;
  uint8_t *seg = shmat(atoi(id), NULL, 0);
  if (seg == (void *)-1) return 0;
  __afl_fuzz_len = (uint32_t *)seg;
  __afl_fuzz_ptr = seg + sizeof(uint32_t);
  return 1;
}

/* Serve fork requests until the fuzzer goes away.  Returns in each child. */
static void serve(void) {
  pid_t child = -1;
  int child_stopped = 0;
  for (;;) {
    uint32_t timed_out;
    if (!read_word(&timed_out)) _exit(0);
    int status;
    if (child_stopped && timed_out) {
      /* The fuzzer killed the stopped child; reap it and start afresh. */
      child_stopped = 0;
      if (waitpid(child, &status, 0) < 0) _exit(1);
    }
    if (!child_stopped) {
      pid_t server = getpid();
      forkserver_forking = 1;
      child = fork();
      forkserver_forking = 0;
      if (child < 0) _exit(1);
      if (child == 0) {
#ifdef __linux__
        /* No child outlives the forkserver: a fuzzer killed outright takes the forkserver
         * along (the fuzzer sets the same on it), and with it a hanging or persistent child. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != server) _exit(1); /* the forkserver died before prctl took effect */
#endif
        if (batch) { /* the child answers for itself until it dies */
          if (!write_word((uint32_t)getpid())) _exit(1);
          return;
        }
        close(FFCC_FD_CONTROL);
        close(FFCC_FD_STATUS);
        return;
      }
    } else {
      kill(child, SIGCONT);
      child_stopped = 0;
    }
    if (!batch && !write_word((uint32_t)child)) _exit(1);
    if (waitpid(child, &status, persistent && !batch ? WUNTRACED : 0) < 0) _exit(1);
    if (WIFSTOPPED(status)) child_stopped = 1;
    if (!write_word((uint32_t)status)) _exit(1);
  }
}

/* A fuzzer hands the forkserver two pipes; a program run without one may have
 * anything (or nothing) at fd 199, and must not find the hello written there. */
static int fuzzer_attached(void) {
  struct stat status_fd;
  return fstat(FFCC_FD_STATUS, &status_fd) == 0 && S_ISFIFO(status_fd.st_mode);
}

static void start_forkserver(void) {
  if (started) return;
  started = 1;
  ffcc_map_attach();
  if (!fuzzer_attached()) return;
  persistent = getenv(FFCC_ENV_PERSISTENT) != NULL;
  int want_shared_input = &__afl_sharedmem_fuzzing && __afl_sharedmem_fuzzing &&
                          getenv(FFCC_ENV_SHM_FUZZ_ID) != NULL;
  attach_batch(want_shared_input);
  if (!write_word(hello_word(want_shared_input))) { /* no fuzzer */
    batch = NULL;
    return;
  }
  pthread_atfork(NULL, NULL, forked_by_program);
  if (want_shared_input) {
    uint32_t reply;
    if (!read_word(&reply)) _exit(1);
    if ((reply & FFCC_HELLO_SHMEM_FUZZ) && !attach_shared_input()) _exit(1);
    if (!(reply & FFCC_HELLO_SHMEM_FUZZ)) batch = NULL;
  }
  serve();
}

void __afl_manual_init(void) {
  int saved_errno = errno;
  start_forkserver();
  errno = saved_errno;
}

static int persistent_loop(unsigned int max_iterations);

int __afl_persistent_loop(unsigned int max_iterations) {
  int saved_errno = errno;
  int more = persistent_loop(max_iterations);
  errno = saved_errno;
  return more;
}

static int persistent_loop(unsigned int max_iterations) {
  static int first_pass = 1;
  static unsigned int remaining;
  if (program_copy) { /* the program's fork: its parent runs the loop */
    if (persistent) ffcc_map_detach_to_scratch();
    return 0;
  }
  if (first_pass) {
    /* Drop what ran before the loop so every iteration measures alike. */
    if (persistent) memset(ffcc_map.area, 0, ffcc_map.edge_size + ffcc_map.label_size);
    ffcc_map_reset_path();
    remaining = max_iterations;
    first_pass = 0;
    if (!batch || take_case()) return 1;
  } else if (batch) {
    if (!--remaining)
      end_case(); /* the fuzzer starts the rest of the batch in a fresh child */
    else if (next_case())
      return 1;
  } else if (persistent && --remaining) {
    raise(SIGSTOP);
    ffcc_map_reset_path();
    return 1;
  }
  /* Past the last iteration: whatever the program does next is not a run. */
  if (persistent) ffcc_map_detach_to_scratch();
  return 0;
}

__attribute__((constructor)) static void ffcc_auto_init(void) {
  int saved_errno = errno;
  ffcc_map_attach();
  if (!getenv(FFCC_ENV_DEFER)) start_forkserver(); /* else the program calls __AFL_INIT() */
  errno = saved_errno;
}
