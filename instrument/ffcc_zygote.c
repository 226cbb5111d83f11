/* The compiler zygote: a backend compiler loaded once, a forked copy per command.
 *
 * clang spends about 25 ms of CPU before its main() runs (loading and relocating libLLVM and
 * libclang-cpp, running their static constructors), which is most of what a configure probe
 * costs it and twice what gcc takes for the whole probe.  Preloaded into the compiler
 * (LD_PRELOAD) with FFCC_ZYGOTE_FD naming a listening Unix socket, this library takes the
 * place of the compiler's main() once all of that is done: it accepts connections on the
 * socket and, for each, forks a relay that reads one command (the working directory, umask,
 * niceness, argv and environment, with the caller's stdin, stdout and stderr as file
 * descriptors) and forks the compiler's main() on it.  The relay acknowledges the command once
 * it has forked it (the magic again: a caller without it runs the command itself), sends back
 * the command's wait status, passes on the signals the caller sends (one 32-bit number each), and on hang-up
 * stops the command (SIGTERM, so that clang removes its temporary files; SIGKILL after
 * FFCC_ZYGOTE_GRACE_MS).  Without FFCC_ZYGOTE_FD the compiler runs as usual.
 *
 * The zygote leaves when its parent, the compile server, does (PR_SET_PDEATHSIG).  The
 * protocol's numbers are in ffcc_zygote_protocol.h, which zygote.py reads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ffcc_zygote_protocol.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                             void (*)(void), void *);

extern char **environ;

static main_fn compiler_main;

/* A request as read: the strings point into `text`. */
struct request {
    uint32_t mask;
    int32_t niceness;
    char *cwd;
    char **argv;
    char **envp;
    int argc;
    char *text;
    int fds[FFCC_ZYGOTE_FD_COUNT];
};

static int read_exact(int fd, void *buffer, size_t size) {
    char *at = buffer;
    while (size > 0) {
        ssize_t got = read(fd, at, size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        at += got;
        size -= (size_t)got;
    }
    return 0;
}

static int write_exact(int fd, const void *buffer, size_t size) {
    const char *at = buffer;
    while (size > 0) {
        ssize_t sent = write(fd, at, size);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return -1;
        at += sent;
        size -= (size_t)sent;
    }
    return 0;
}

/* The header, with the caller's file descriptors attached: magic, then five 32-bit words. */
static int receive_header(int conn, uint32_t words[5], int fds[FFCC_ZYGOTE_FD_COUNT]) {
    char head[4 + 5 * sizeof(uint32_t)];
    union {
        char space[CMSG_SPACE(sizeof(int) * FFCC_ZYGOTE_FD_COUNT)];
        struct cmsghdr align;
    } control;
    struct iovec part = {head, sizeof head};
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space,
                             .msg_controllen = sizeof control.space};
    ssize_t got;
    do
        got = recvmsg(conn, &message, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    struct cmsghdr *fd_part = CMSG_FIRSTHDR(&message);
    if (got <= 0 || fd_part == NULL || fd_part->cmsg_type != SCM_RIGHTS ||
        fd_part->cmsg_len != CMSG_LEN(sizeof(int) * FFCC_ZYGOTE_FD_COUNT))
        return -1;
    memcpy(fds, CMSG_DATA(fd_part), sizeof(int) * FFCC_ZYGOTE_FD_COUNT);
    if ((size_t)got < sizeof head &&
        read_exact(conn, head + got, sizeof head - (size_t)got) != 0)
        return -1;
    if (memcmp(head, FFCC_ZYGOTE_MAGIC, 4) != 0)
        return -1;
    memcpy(words, head + 4, 5 * sizeof(uint32_t));
    return 0;
}

/* Split `count` NUL-terminated strings off `*at` (before `end`) into a NULL-ended array. */
static char **split(char **at, const char *end, uint32_t count) {
    char **strings = calloc((size_t)count + 1, sizeof *strings);
    if (strings == NULL)
        return NULL;
    for (uint32_t i = 0; i < count; i++) {
        char *stop = memchr(*at, '\0', (size_t)(end - *at));
        if (stop == NULL)
            return NULL;
        strings[i] = *at;
        *at = stop + 1;
    }
    return strings;
}

/* Words: umask, niceness, argc, environment size, text length.  The text: the working
 * directory, argv and the environment, each string NUL-terminated. */
static int receive_request(int conn, struct request *request) {
    uint32_t words[5];
    if (receive_header(conn, words, request->fds) != 0 || words[2] == 0 ||
        words[4] > FFCC_ZYGOTE_MAX_TEXT)
        return -1;
    request->mask = words[0];
    request->niceness = (int32_t)words[1];
    request->argc = (int)words[2];
    request->text = malloc((size_t)words[4] + 1);
    if (request->text == NULL || read_exact(conn, request->text, words[4]) != 0)
        return -1;
    request->text[words[4]] = '\0';
    char *at = request->text, *end = request->text + words[4];
    char **cwd = split(&at, end, 1);
    request->cwd = cwd ? cwd[0] : NULL;
    request->argv = split(&at, end, words[2]);
    request->envp = split(&at, end, words[3]);
    return request->cwd && request->argv && request->envp ? 0 : -1;
}

static void reset_signals(void) {
    struct sigaction plain = {.sa_handler = SIG_DFL};
    for (int signo = 1; signo < NSIG; signo++)
        sigaction(signo, &plain, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* In the command's process: become the caller's compiler process and run main(). */
static _Noreturn void run_command(const struct request *request) {
    setpgid(0, 0);
    for (int target = 0; target < FFCC_ZYGOTE_FD_COUNT; target++) {
        if (dup2(request->fds[target], target) < 0)
            _exit(127);
    }
    for (int i = 0; i < FFCC_ZYGOTE_FD_COUNT; i++) {
        if (request->fds[i] >= FFCC_ZYGOTE_FD_COUNT)
            close(request->fds[i]);
    }
    if (chdir(request->cwd) != 0)
        _exit(127);
    umask((mode_t)request->mask);
    setpriority(PRIO_PROCESS, 0, request->niceness);  /* raising it may fail: then as is */
    environ = request->envp;
    exit(compiler_main(request->argc, request->argv, environ));
}

/* Stop the command's process group: SIGTERM, then SIGKILL if it outlives the grace. */
static void stop_command(pid_t command, int pidfd) {
    kill(-command, SIGTERM);
    struct pollfd ended = {pidfd, POLLIN, 0};
    if (pidfd < 0 || poll(&ended, 1, FFCC_ZYGOTE_GRACE_MS) == 0)
        kill(-command, SIGKILL);
}

/* Wait for the command, passing on the caller's signals; its wait status. */
static int supervise(pid_t command, int conn) {
    int status = 0;
    int pidfd = (int)syscall(SYS_pidfd_open, command, 0);
    struct pollfd watched[2] = {{conn, POLLIN, 0}, {pidfd, POLLIN, 0}};
    while (pidfd >= 0 && watched[0].fd >= 0) {
        if (poll(watched, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (watched[1].revents)
            break;
        int32_t signo;
        if (watched[0].revents && read_exact(conn, &signo, sizeof signo) == 0) {
            kill(-command, signo);
        } else if (watched[0].revents) {
            stop_command(command, pidfd);
            watched[0].fd = -1;
        }
    }
    while (waitpid(command, &status, 0) < 0 && errno == EINTR)
        continue;
    return status;
}

/* In a relay, one per connection: read the command, run it, report how it ended. */
static _Noreturn void relay(int conn) {
    signal(SIGCHLD, SIG_DFL);
    struct request request;
    if (receive_request(conn, &request) != 0)
        _exit(1);
    pid_t command = fork();
    if (command == 0) {
        close(conn);
        reset_signals();
        run_command(&request);
    }
    for (int i = 0; i < FFCC_ZYGOTE_FD_COUNT; i++)
        close(request.fds[i]);
    if (command < 0)
        _exit(1);
    setpgid(command, command);  /* also done by the command: whichever runs first */
    if (write_exact(conn, FFCC_ZYGOTE_MAGIC, 4) != 0)
        kill(-command, SIGKILL);
    int32_t status = supervise(command, conn);
    _exit(write_exact(conn, &status, sizeof status) == 0 ? 0 : 1);
}

/* Relays are reaped, not left to the kernel, so that their CPU time counts in the zygote's
 * (and so the compile server's) children's time, as a command run directly would. */
static void reap(int signo) {
    (void)signo;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        continue;
    errno = saved;
}

static int serve(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    const char *listener_text = getenv(FFCC_ZYGOTE_FD_ENV);
    int listener = atoi(listener_text);
    unsetenv(FFCC_ZYGOTE_FD_ENV);
    unsetenv("LD_PRELOAD");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 0;
    struct sigaction reaper = {.sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigaction(SIGCHLD, &reaper, NULL);
    for (;;) {
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(listener);
            relay(conn);
        }
        close(conn);
    }
}

/* glibc's __libc_start_main, taken over: the compiler's main() runs as a zygote's command
 * when FFCC_ZYGOTE_FD is set, and as itself otherwise. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    start_main_fn start = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (getenv(FFCC_ZYGOTE_FD_ENV) == NULL)
        return start(main, argc, argv, init, fini, rtld_fini, stack_end);
    compiler_main = main;
    return start(serve, argc, argv, init, fini, rtld_fini, stack_end);
}
