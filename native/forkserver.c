/* forkserver.c - the fuzzer side of the AFL++ forkserver protocol.
 *
 * Accepts both hellos (facts from AFL++ 4.04c and 4.21c src/afl-forkserver.c):
 *  - 4.04c: one word, FFCC_HELLO_ENABLED plus option bits; the map size
 *    travels as (size - 1) << 1.  The target waits for a reply only when it
 *    offers shared-memory test cases or an auto-dictionary.
 *  - 4.20c+: the target sends FFCC_HELLO_V2 (0x41464c00 | version), we echo
 *    its complement, then read an options word, the map size, an optional
 *    dictionary (u32 size, then length-prefixed tokens) and the hello again.
 * Per execution: we write "previous run timed out", read the child's pid,
 * then its waitpid() status, killing the child if the status is late.
 * Every read has a deadline: a forkserver that stops answering is an error
 * (one line in fsrv.error), never a wait without end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

/* One line for Python's error message.  Called on forkserver start failures. */
static void set_error(char *errbuf, size_t errlen, const char *fmt, ...)
{
    if (!errbuf || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}

/* CLOCK_MONOTONIC in microseconds.  Called a few times per execution. */
static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Read exactly len bytes, waiting at most timeout_ms in total.  Returns 0 on
 * success, 1 on timeout, -1 on EOF or error.  Called during the hello, and
 * for the rest of a status word that poll() said was there. */
int ffcc_read_full(int fd, void *buf, size_t len, uint32_t timeout_ms)
{
    uint8_t *p = buf;
    uint64_t deadline = now_us() + (uint64_t)timeout_ms * 1000u;
    while (len) {
        uint64_t now = now_us();
        if (now >= deadline) return 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int left_ms = (int)((deadline - now + 999) / 1000);
        int r = poll(&pfd, 1, left_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return 1;
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Empty the interrupt pipe (non-blocking): one signal, one wake-up.  Called per signal. */
static void drain(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

/* Called twice per request (child pid, status), a few times more when a child is killed. */
int ffcc_wait_word(struct ffcc_forkserver *fsrv, int32_t *word, uint64_t deadline_us,
                   int interruptible)
{
    struct pollfd pfd[2] = {{.fd = fsrv->st_fd, .events = POLLIN},
                            {.fd = interruptible ? fsrv->interrupt_fd : -1, .events = POLLIN}};
    for (;;) {
        uint64_t now = now_us();
        if (now >= deadline_us) return FFCC_WAIT_LATE;
        int r = poll(pfd, 2, (int)((deadline_us - now + 999) / 1000));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return FFCC_WAIT_BROKEN;
        if (pfd[0].revents) { /* a status first: no need to kill a child that has answered */
            /* Words are written whole (4 bytes < PIPE_BUF): one read, no second poll. */
            ssize_t got = read(fsrv->st_fd, word, 4);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return FFCC_WAIT_BROKEN;
            if (got < 4 && ffcc_read_full(fsrv->st_fd, (uint8_t *)word + got, 4 - (size_t)got,
                                          FFCC_GRACE_MS))
                return FFCC_WAIT_BROKEN;
            return FFCC_WAIT_OK;
        }
        if (pfd[1].revents) {
            drain(fsrv->interrupt_fd);
            return FFCC_WAIT_INTERRUPTED;
        }
    }
}

/* Called when a child is late, and when the fuzzer is interrupted. */
int ffcc_kill_child(struct ffcc_forkserver *fsrv, int32_t *status)
{
    kill(fsrv->child_pid, SIGKILL);
    fsrv->child_pid = -1;
    return ffcc_wait_word(fsrv, status, now_us() + FFCC_GRACE_MS * 1000ull, 0);
}

/* Called on the way out of a failed execution. */
int ffcc_fsrv_fail(struct ffcc_forkserver *fsrv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fsrv->error, sizeof fsrv->error, fmt, ap);
    va_end(ap);
    return FFCC_RUN_ERROR;
}

/* Called when the forkserver did not answer.  The forkserver is only looked
 * at (WNOWAIT): fsrv_stop reaps it and kills its process group. */
int ffcc_fsrv_silent(struct ffcc_forkserver *fsrv, int wait_rc)
{
    siginfo_t info = {0};
    if (fsrv->pid > 0 && waitid(P_PID, (id_t)fsrv->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == fsrv->pid)
        return ffcc_fsrv_fail(fsrv, "the forkserver died (%s %d): the target killed it, or "
                              "it ran out of memory", info.si_code == CLD_EXITED ? "exit status"
                              : "signal", info.si_status);
    if (wait_rc == FFCC_WAIT_LATE)
        return ffcc_fsrv_fail(fsrv, "the forkserver did not answer within %d ms", FFCC_GRACE_MS);
    return ffcc_fsrv_fail(fsrv, "the forkserver closed its pipes (the target closed fd %d?)",
                          FFCC_FD_STATUS);
}

/* Called once per request, and for hello replies. */
int ffcc_write_word(int fd, uint32_t word)
{
    for (;;) {
        ssize_t n = write(fd, &word, 4);
        if (n == 4) return 0;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
}

/* Length-prefixed tokens into the mutator.  Called once per start with an auto-dictionary. */
static void parse_dictionary(struct ffcc_mutator *m, const uint8_t *dict, uint32_t size)
{
    uint32_t off = 0;
    while (off < size && off + 1u + dict[off] <= size) {
        ffcc_add_token(m, dict + off + 1, dict[off], 1);
        off += 1u + dict[off];
    }
}

/* Called once per start with an auto-dictionary. */
static int read_dictionary(int st_fd, struct ffcc_mutator *m, uint32_t size, uint32_t timeout_ms)
{
    if (size < 2 || size > 0xffffff) return -1;
    uint8_t *dict = malloc(size);
    if (!dict) return -1;
    int rc = ffcc_read_full(st_fd, dict, size, timeout_ms);
    if (rc == 0) parse_dictionary(m, dict, size);
    free(dict);
    return rc ? -1 : 0;
}

/* The forked child becomes the target's forkserver.  Called once per start. */
static void child_exec(int input_fd, char **argv, char **envp, int ctl_read, int st_write,
                       int err_write, int use_stdin, uint64_t mem_limit_mb, int show_output)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setsid();
    if (mem_limit_mb) {
        struct rlimit r = {.rlim_cur = mem_limit_mb << 20, .rlim_max = mem_limit_mb << 20};
        setrlimit(RLIMIT_AS, &r);
    }
    struct rlimit core = {0, 0};
    setrlimit(RLIMIT_CORE, &core);

    int devnull = open("/dev/null", O_RDWR);
    dup2(use_stdin ? input_fd : devnull, 0);
    if (!show_output) {
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    if (dup2(ctl_read, FFCC_FD_CONTROL) < 0 || dup2(st_write, FFCC_FD_STATUS) < 0) _exit(1);
    close(ctl_read);
    close(st_write);
    close(devnull);
    if (input_fd > 2) close(input_fd);

    execve(argv[0], argv, envp);
    int err = errno;
    if (write(err_write, &err, sizeof(err)) < 0) _exit(127);
    _exit(127);
}

/* Handle an old-style hello.  Returns FFCC_START_*.  Called once per start. */
static int old_hello(struct ffcc_forkserver *fsrv, struct ffcc_mutator *m, uint32_t status,
                     uint32_t timeout_ms, uint32_t *map_size, char *errbuf, size_t errlen)
{
    if ((status & FFCC_HELLO_ERROR) == FFCC_HELLO_ERROR) {
        set_error(errbuf, errlen, "target runtime reported error 0x%x (shared memory?)",
                  (status & 0x00ffff00u) >> 8);
        return FFCC_START_TARGET_ERROR;
    }
    if ((status & FFCC_HELLO_ENABLED) != FFCC_HELLO_ENABLED) return FFCC_START_OK; /* plain AFL */
    /* AFL++ runtimes of some versions set all four of these bits; 4.04c drops them. */
    if ((status & FFCC_HELLO_OLD_AFLPP_BITS) == FFCC_HELLO_OLD_AFLPP_BITS)
        status &= ~(uint32_t)FFCC_HELLO_OLD_AFLPP_BITS;
    if ((status & FFCC_HELLO_MAPSIZE) == FFCC_HELLO_MAPSIZE)
        *map_size = ((status & FFCC_HELLO_MAPSIZE_MASK) >> 1) + 1;
    uint32_t reply = FFCC_HELLO_ENABLED;
    int must_reply = 0;
    if ((status & FFCC_HELLO_SHMEM_FUZZ) == FFCC_HELLO_SHMEM_FUZZ) {
        fsrv->use_shm_input = 1;
        reply |= FFCC_HELLO_SHMEM_FUZZ;
        must_reply = 1;
    }
    if ((status & FFCC_HELLO_AUTODICT) == FFCC_HELLO_AUTODICT) {
        reply |= FFCC_HELLO_AUTODICT;
        must_reply = 1;
    }
    if ((status & FFCC_HELLO_BATCH) && fsrv->use_shm_input) fsrv->use_batch = 1;
    if (must_reply && ffcc_write_word(fsrv->ctl_fd, reply)) {
        set_error(errbuf, errlen, "cannot answer the forkserver hello");
        return FFCC_START_BAD_HELLO;
    }
    if (reply & FFCC_HELLO_AUTODICT) {
        uint32_t size;
        if (ffcc_read_full(fsrv->st_fd, &size, 4, timeout_ms) ||
            read_dictionary(fsrv->st_fd, m, size, timeout_ms)) {
            set_error(errbuf, errlen, "cannot read the target's auto-dictionary");
            return FFCC_START_BAD_HELLO;
        }
    }
    return FFCC_START_OK;
}

/* Handle a 4.20c+ hello.  Returns FFCC_START_*.  Called once per start. */
static int new_hello(struct ffcc_forkserver *fsrv, struct ffcc_mutator *m, uint32_t hello,
                     uint32_t timeout_ms, uint32_t *map_size, char *errbuf, size_t errlen)
{
    uint32_t version = hello & 0xffu, opts, word;
    if (version != 1) {
        set_error(errbuf, errlen, "unsupported forkserver protocol version %u", version);
        return FFCC_START_BAD_HELLO;
    }
    if (ffcc_write_word(fsrv->ctl_fd, hello ^ 0xffffffffu) ||
        ffcc_read_full(fsrv->st_fd, &opts, 4, timeout_ms))
        goto broken;
    if (opts & FFCC_HELLO_V2_OPT_MAPSIZE) {
        if (ffcc_read_full(fsrv->st_fd, &word, 4, timeout_ms)) goto broken;
        *map_size = word;
    }
    if (opts & FFCC_HELLO_V2_OPT_SHMEM_FUZZ) fsrv->use_shm_input = 1;
    if (opts & FFCC_HELLO_V2_OPT_AUTODICT) {
        if (ffcc_read_full(fsrv->st_fd, &word, 4, timeout_ms) ||
            read_dictionary(fsrv->st_fd, m, word, timeout_ms))
            goto broken;
    }
    if (ffcc_read_full(fsrv->st_fd, &word, 4, timeout_ms) || word != hello) goto broken;
    return FFCC_START_OK;
broken:
    set_error(errbuf, errlen, "forkserver handshake (4.20c+ protocol) broke off");
    return FFCC_START_BAD_HELLO;
}

/* Kill the forkserver, its child and whatever else runs in its process group
 * (what the target forked), close the pipes.  Called once per start (before
 * spawning) and at teardown. */
static void fsrv_stop(struct ffcc_forkserver *fsrv)
{
    if (fsrv->child_pid > 0) {
        kill(fsrv->child_pid, SIGKILL);
        fsrv->child_pid = -1;
    }
    if (fsrv->pid > 1) {
        kill(-fsrv->pid, SIGKILL); /* child_exec made it a session and group leader */
        kill(fsrv->pid, SIGKILL);
        waitpid(fsrv->pid, NULL, 0);
        fsrv->pid = -1;
    }
    if (fsrv->ctl_fd >= 0) close(fsrv->ctl_fd);
    if (fsrv->st_fd >= 0) close(fsrv->st_fd);
    if (fsrv->input_fd >= 0) close(fsrv->input_fd);
    fsrv->ctl_fd = fsrv->st_fd = fsrv->input_fd = -1;
    fsrv->prev_timed_out = 0;
}

/* Spawn the target, read its hello (tokens go to the mutator), size the
 * maps.  Called once per campaign, twice when the map must grow. */
int ffcc_fsrv_start(ffcc_engine *e, char **argv, char **envp, const char *input_path,
                    int use_stdin, uint64_t mem_limit_mb, uint32_t init_timeout_ms,
                    int show_child_output, uint32_t *map_size, char *errbuf, size_t errlen)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    int ctl[2], st[2], err[2];
    fsrv_stop(fsrv);
    ffcc_deaths_child_gone(&e->deaths);
    fsrv->use_shm_input = fsrv->use_batch = 0;
    fsrv->error[0] = 0;
    fsrv->input_fd = open(input_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fsrv->input_fd < 0) {
        set_error(errbuf, errlen, "cannot create %s: %s", input_path, strerror(errno));
        return FFCC_START_SPAWN_FAILED;
    }
    if (pipe(ctl) || pipe(st) || pipe2(err, O_CLOEXEC)) {
        set_error(errbuf, errlen, "pipe: %s", strerror(errno));
        return FFCC_START_SPAWN_FAILED;
    }
    pid_t pid = fork();
    if (pid < 0) {
        set_error(errbuf, errlen, "fork: %s", strerror(errno));
        return FFCC_START_SPAWN_FAILED;
    }
    if (pid == 0) {
        close(ctl[1]);
        close(st[0]);
        close(err[0]);
        child_exec(fsrv->input_fd, argv, envp, ctl[0], st[1], err[1], use_stdin, mem_limit_mb,
                   show_child_output);
    }
    close(ctl[0]);
    close(st[1]);
    close(err[1]);
    fsrv->pid = pid;
    fsrv->ctl_fd = ctl[1];
    fsrv->st_fd = st[0];
    fcntl(fsrv->ctl_fd, F_SETFD, FD_CLOEXEC);
    fcntl(fsrv->st_fd, F_SETFD, FD_CLOEXEC);

    int exec_errno = 0;
    ssize_t n = read(err[0], &exec_errno, sizeof(exec_errno));
    close(err[0]);
    if (n == (ssize_t)sizeof(exec_errno)) {
        set_error(errbuf, errlen, "cannot execute %s: %s", argv[0], strerror(exec_errno));
        fsrv_stop(fsrv);
        return FFCC_START_EXEC_FAILED;
    }

    uint32_t hello;
    if (ffcc_read_full(fsrv->st_fd, &hello, 4, init_timeout_ms)) {
        set_error(errbuf, errlen,
                  "no forkserver hello from %s: target is not instrumented "
                  "(build it with ffcc or afl-clang-fast) or died at startup",
                  argv[0]);
        fsrv_stop(fsrv);
        return FFCC_START_NO_HELLO;
    }
    uint32_t size = FFCC_DEFAULT_MAP_SIZE;
    int rc;
    if ((hello & FFCC_HELLO_V2_ERROR) == FFCC_HELLO_V2_ERROR) {
        set_error(errbuf, errlen, "target runtime reported error 0x%x", hello & 0xffffu);
        rc = FFCC_START_TARGET_ERROR;
    } else if ((hello & 0xffffff00u) == (FFCC_HELLO_V2 & 0xffffff00u)) {
        rc = new_hello(fsrv, &e->mut, hello, init_timeout_ms, &size, errbuf, errlen);
    } else {
        rc = old_hello(fsrv, &e->mut, hello, init_timeout_ms, &size, errbuf, errlen);
    }
    if (rc != FFCC_START_OK) {
        fsrv_stop(fsrv);
        return rc;
    }
    size = (size + FFCC_MAP_ALIGN - 1) / FFCC_MAP_ALIGN * FFCC_MAP_ALIGN;
    *map_size = size;
    if (size > fsrv->trace_capacity) {
        set_error(errbuf, errlen, "target needs a %u-byte map, engine has %u", size,
                  fsrv->trace_capacity);
        fsrv_stop(fsrv);
        return FFCC_START_MAP_TOO_BIG;
    }
    if (size != fsrv->map_size) {
        fsrv->map_size = size;
        if (ffcc_maps_alloc(&e->maps, size)) {
            set_error(errbuf, errlen, "out of memory for a %u-byte map", size);
            fsrv_stop(fsrv);
            return FFCC_START_SPAWN_FAILED;
        }
    }
    fsrv->batch_cap = 1;
    if (fsrv->use_batch) {
        uint32_t fit = FFCC_BATCH_MAPS_SIZE / ffcc_batch_slot_size(size);
        fsrv->batch_cap = fit < FFCC_BATCH_MAX ? fit : FFCC_BATCH_MAX;
        if (fsrv->batch_cap < 2) fsrv->use_batch = 0, fsrv->batch_cap = 1;
    }
    return FFCC_START_OK;
}

/* Called once per campaign, at teardown. */
void ffcc_fsrv_stop(ffcc_engine *e)
{
    fsrv_stop(&e->fsrv);
    ffcc_deaths_child_gone(&e->deaths);
}

/* Hand the test case to the target.  Called per execution without batches. */
static int write_input(struct ffcc_forkserver *fsrv, const uint8_t *buf, uint32_t len)
{
    if (fsrv->use_shm_input) {
        if (len > FFCC_SHM_FUZZ_MAX) len = FFCC_SHM_FUZZ_MAX;
        memcpy(fsrv->shm_fuzz, &len, sizeof(len));
        memcpy(fsrv->shm_fuzz + sizeof(len), buf, len);
        return 0;
    }
    if (pwrite(fsrv->input_fd, buf, len, 0) != (ssize_t)len) return -1;
    if (ftruncate(fsrv->input_fd, len)) return -1;
    lseek(fsrv->input_fd, 0, SEEK_SET);
    return 0;
}

/* Run once and return FFCC_RUN_* (or FFCC_RUN_INTERRUPTED); the raw
 * (unclassified) trace is in fsrv->trace.  Called per execution without batches. */
static int execute(struct ffcc_forkserver *fsrv, const uint8_t *buf, uint32_t len,
                   uint32_t timeout_ms, int interruptible, int *signal_out)
{
    int32_t pid;
    int32_t status;
    *signal_out = 0;
    if (fsrv->pid <= 0) return ffcc_fsrv_fail(fsrv, "no forkserver runs");
    if (write_input(fsrv, buf, len))
        return ffcc_fsrv_fail(fsrv, "cannot write the test case: %s", strerror(errno));
    memset(fsrv->trace, 0, fsrv->map_size);
    if (ffcc_write_word(fsrv->ctl_fd, fsrv->prev_timed_out))
        return ffcc_fsrv_silent(fsrv, FFCC_WAIT_BROKEN);
    int rc = ffcc_wait_word(fsrv, &pid, now_us() + FFCC_GRACE_MS * 1000ull, 0);
    if (rc != FFCC_WAIT_OK) return ffcc_fsrv_silent(fsrv, rc);
    if (pid <= 0) return ffcc_fsrv_fail(fsrv, "the forkserver sent %d for a child's pid", pid);
    fsrv->child_pid = pid;
    uint64_t start = now_us();
    rc = ffcc_wait_word(fsrv, &status, start + (uint64_t)timeout_ms * 1000u, interruptible);
    int timed_out = rc == FFCC_WAIT_LATE, interrupted = rc == FFCC_WAIT_INTERRUPTED;
    if (timed_out || interrupted) rc = ffcc_kill_child(fsrv, &status);
    if (rc != FFCC_WAIT_OK) return ffcc_fsrv_silent(fsrv, rc);
    fsrv->prev_timed_out = (uint32_t)(timed_out || interrupted);
    if (!WIFSTOPPED(status)) fsrv->child_pid = -1;
    if (interrupted && !WIFSTOPPED(status)) return FFCC_RUN_INTERRUPTED; /* else it had finished */
    uint64_t elapsed_ms = (now_us() - start) / 1000u;
    if (elapsed_ms > fsrv->counters.slowest_exec_ms && !timed_out)
        fsrv->counters.slowest_exec_ms = (uint32_t)elapsed_ms;
    fsrv->counters.execs++;
    return ffcc_run_status(fsrv, status, timed_out, signal_out);
}

/* Called per execution (per child of a batch). */
int ffcc_run_status(struct ffcc_forkserver *fsrv, int32_t status, int timed_out, int *signal_out)
{
    *signal_out = 0;
    if (timed_out) {
        fsrv->counters.hangs++;
        return FFCC_RUN_TIMEOUT;
    }
    if (WIFSIGNALED(status)) {
        *signal_out = WTERMSIG(status);
        fsrv->counters.crashes++;
        return FFCC_RUN_CRASH;
    }
    if (fsrv->crash_exitcode >= 0 && WIFEXITED(status) &&
        WEXITSTATUS(status) == fsrv->crash_exitcode) {
        fsrv->counters.crashes++;
        return FFCC_RUN_CRASH;
    }
    return FFCC_RUN_OK;
}

/* One child through the batch protocol: a batch of one, its trace copied
 * where single runs leave it.  Called per single execution (calibration,
 * trimming, hang confirmation) of a batching target. */
static int run_alone(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                     int *signal_out)
{
    struct ffcc_result *r = &e->children.seg[0];
    uint32_t ran;
    ffcc_results_release(&e->children, e->fsrv.map_size);
    memmove(ffcc_batch_next(e), buf, len);
    ffcc_batch_commit(e, len);
    if (ffcc_batch_run(e, timeout_ms, 0, &ran) != FFCC_RUN_OK) return FFCC_RUN_ERROR;
    memcpy(e->fsrv.trace, r->trace, e->fsrv.map_size);
    *signal_out = r->signal;
    return r->status;
}

/* Called per execution without batches. */
int ffcc_execute(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                 int interruptible, int *signal)
{
    int status = execute(&e->fsrv, buf, len, timeout_ms, interruptible, signal);
    if (status >= 0 && status != FFCC_RUN_ERROR) ffcc_classify(e->fsrv.trace, NULL, e->fsrv.map_size);
    return status;
}

/* One execution, its trace classified in fsrv.trace.  Called per single
 * execution (calibration, trimming, hang confirmation, resume). */
int ffcc_run_once(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                  int *signal)
{
    int dummy;
    if (e->fsrv.use_batch) return run_alone(e, buf, len, timeout_ms, signal ? signal : &dummy);
    return ffcc_execute(e, buf, len, timeout_ms, 0, signal ? signal : &dummy);
}

/* Called a few times per batch. */
uint64_t ffcc_now_us(void) { return now_us(); }

/* How long the time-stamp counter's rate is measured, in us. */
#define TICK_CALIBRATION_US 5000

/* The time-stamp counter's rate, us per tick in 32.32 fixed point, when the
 * kernel keeps time by it (then it is synchronised across CPUs and runs at one
 * rate); else 0, and batch targets read CLOCK_MONOTONIC (ffcc_protocol.h, Case
 * times).  Called once per engine. */
uint64_t ffcc_tick_rate(void)
{
#if defined(__x86_64__)
    char source[16] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return 0;
    int read_ok = fgets(source, sizeof source, f) != NULL;
    fclose(f);
    if (!read_ok || strcmp(source, "tsc\n") != 0) return 0;
    uint64_t us0 = now_us(), tick0 = __builtin_ia32_rdtsc(), us1, tick1;
    do {
        us1 = now_us();
        tick1 = __builtin_ia32_rdtsc();
    } while (us1 - us0 < TICK_CALIBRATION_US);
    return tick1 > tick0 ? ((us1 - us0) << 32) / (tick1 - tick0) : 0;
#else
    return 0;
#endif
}

/* The (us, tick) pair the target's case times count from, read back to back.
 * Called per request. */
void ffcc_stamp_clock(struct ffcc_batch *b)
{
#if defined(__x86_64__)
    if (!b->us_per_tick_q32) return;
    b->clock_base_tick = __builtin_ia32_rdtsc();
    b->clock_base_us = now_us();
#else
    (void)b;
#endif
}
