/* The `ffcc` command: hand the command to the compile server, or let Python's client do it.
 *
 * Starting Python costs a build more than most small compiles (tens of ms of CPU per command,
 * before ffcc's first import), so the installed `ffcc` is this program.  It speaks client.py's
 * protocol: the command line, working directory, environment, umask and niceness, and the three
 * standard file descriptors, to the server whose socket path client.py last recorded for this
 * executable (the "client cache", a file in the private socket directory).  Whatever it cannot
 * do (no cache yet, no server, a socket directory it does not trust, FFCC_SERVER=0, a server
 * that refuses) it leaves to client.py, run by the interpreter ffcc was installed for, which
 * also starts a server and records its path for the next commands.  Nothing has happened in
 * the command when it hands over.  The server checks that its own code is current before it
 * accepts a command (server.py), so a recorded path never reaches out-of-date code.
 *
 * What both clients must agree on (magic, cache variable, socket directory, the server's off
 * switch, the error text) is defined once, in ffcc_server_protocol.h beside this file.
 * FFCC_PYTHON, the interpreter, is defined when this is compiled (setup.py).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "ffcc_server_protocol.h"

#ifndef FFCC_PYTHON
#error "FFCC_PYTHON (the interpreter ffcc is installed for) must be defined"
#endif

#define MAGIC_SIZE (sizeof FFCC_SERVER_MAGIC - 1)
/* client.py's main, without the working directory that -c puts first on the module path (a
 * directory named ffcc there would be imported instead of ffcc), with this program's argv as
 * sys.argv: its argv[0] tells ffcc++ from ffcc. */
#define PYTHON_CLIENT \
    "import sys; sys.path.pop(0); del sys.argv[0]; from ffcc.instrument.client import main; main()"

extern char **environ;

/* A growing byte buffer holding the request in marshal's format (version-independent codes:
 * tuple, list, dict, bytes, 32-bit int), which the server reads with marshal.loads. */
struct buffer {
    unsigned char *data;
    size_t size, capacity;
    int failed;
};

static void put(struct buffer *b, const void *bytes, size_t n) {
    if (b->failed)
        return;
    if (b->size + n > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->size + n)
            capacity *= 2;
        unsigned char *grown = realloc(b->data, capacity);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->size, bytes, n);
    b->size += n;
}

static void put_u32(struct buffer *b, uint32_t value) {
    unsigned char le[4] = {value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, value >> 24};
    put(b, le, sizeof le);
}

static void put_code(struct buffer *b, char code, uint32_t value) {
    put(b, &code, 1);
    put_u32(b, value);
}

static void put_bytes(struct buffer *b, const char *s, size_t n) {
    put_code(b, 's', (uint32_t)n);
    put(b, s, n);
}

static void put_string(struct buffer *b, const char *s) { put_bytes(b, s, strlen(s)); }

/* (argv, cwd, environ, umask, niceness): argv, cwd and the environment's names and values as
 * bytes, as os.fsencode would give them. */
static int build_request(struct buffer *b, int argc, char **argv) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;  /* a deleted working directory: client.py runs the command here */
    mode_t mask = umask(0);
    umask(mask);
    errno = 0;
    int niceness = getpriority(PRIO_PROCESS, 0);
    if (niceness == -1 && errno)
        return -1;
    put_code(b, '(', 5);
    put_code(b, '[', (uint32_t)argc);
    for (int i = 0; i < argc; i++)
        put_string(b, argv[i]);
    put_string(b, cwd);
    char open_dict = '{', close_dict = '0';
    put(b, &open_dict, 1);
    for (char **entry = environ; *entry; entry++) {
        const char *equals = strchr(*entry, '=');
        if (!equals
                || strncmp(*entry, FFCC_SERVER_CACHE_ENV "=", sizeof FFCC_SERVER_CACHE_ENV) == 0)
            continue;
        put_bytes(b, *entry, (size_t)(equals - *entry));
        put_string(b, equals + 1);
    }
    put(b, &close_dict, 1);
    put_code(b, 'i', (uint32_t)mask);
    put_code(b, 'i', (uint32_t)niceness);
    return b->failed ? -1 : 0;
}

static int private_dir(const char *path) {
    struct stat info;
    if (mkdir(path, FFCC_SERVER_DIR_MODE) != 0 && errno != EEXIST)
        return 0;
    return lstat(path, &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == geteuid()
        && (info.st_mode & 0777 & ~FFCC_SERVER_DIR_MODE) == 0;
}

/* The socket directory, as client.socket_dir names it. */
static int socket_dir(char *out, size_t size) {
    const char *base = getenv(FFCC_SERVER_DIR_ENV);
    if (!base || !*base)
        base = FFCC_SERVER_DIR_FALLBACK;
    int n = snprintf(out, size, "%s/" FFCC_SERVER_DIR_PREFIX "%u", base, (unsigned)geteuid());
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* The cache file of this executable: its real path's FNV-1a hash names it. */
static int cache_path(const char *dir, char *out, size_t size) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (ssize_t i = 0; i < n; i++)
        hash = (hash ^ (unsigned char)self[i]) * 0x100000001b3ULL;
    int written = snprintf(out, size, "%s/client-%016llx", dir, (unsigned long long)hash);
    return written > 0 && (size_t)written < size ? 0 : -1;
}

/* The recorded socket path, or -1. */
static int recorded_socket(const char *cache, struct sockaddr_un *address) {
    FILE *file = fopen(cache, "r");
    if (!file)
        return -1;
    char path[sizeof address->sun_path + 1];
    size_t n = fread(path, 1, sizeof path, file);
    fclose(file);
    if (n == 0 || n >= sizeof address->sun_path || memchr(path, '\0', n))
        return -1;
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    memcpy(address->sun_path, path, n);
    return 0;
}

/* All ``size`` bytes sent (``sending``) or received, else -1. */
static int transfer_all(int fd, unsigned char *data, size_t size, int sending) {
    while (size) {
        ssize_t n = sending ? send(fd, data, size, MSG_NOSIGNAL) : recv(fd, data, size, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        size -= (size_t)n;
    }
    return 0;
}

/* The header (magic and request length) with the three standard descriptors attached. */
static int send_header(int conn, uint32_t length) {
    unsigned char header[MAGIC_SIZE + 4];
    memcpy(header, FFCC_SERVER_MAGIC, MAGIC_SIZE);
    for (int i = 0; i < 4; i++)
        header[MAGIC_SIZE + i] = (unsigned char)(length >> (8 * i));
    int fds[3] = {0, 1, 2};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof fds)];
    } control;
    memset(&control, 0, sizeof control);
    struct iovec part = {header, sizeof header};
    struct msghdr message = {0};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    struct cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(rights), fds, sizeof fds);
    ssize_t n;
    do
        n = sendmsg(conn, &message, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof header ? 0 : -1;
}

static volatile sig_atomic_t connection = -1;

/* Signals make's Ctrl-C sends this process go to the command, as client.py passes them on. */
static void pass_on(int signo) {
    unsigned char message[4] = {signo & 0xff, (signo >> 8) & 0xff, (signo >> 16) & 0xff,
                                (unsigned)signo >> 24};
    if (connection >= 0)
        (void)send(connection, message, sizeof message, MSG_NOSIGNAL);
}

/* End as the command ended: its exit status, or the signal that killed it. */
static void finish(int32_t status) {
    if (status < 0) {
        signal(-status, SIG_DFL);
        sigset_t unblock;
        sigemptyset(&unblock);
        sigaddset(&unblock, -status);
        sigprocmask(SIG_UNBLOCK, &unblock, NULL);
        raise(-status);
        status = 128 - status;
    }
    _exit(status & 0xff);
}

/* The name this program was run as (ffcc, ffcc++), for its messages, as gcc names itself. */
static const char *program_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Run the command in the server; returns only if it never took the command. */
static void forward(const char *cache, int argc, char **argv) {
    struct sockaddr_un address;
    if (recorded_socket(cache, &address) != 0)
        return;
    struct buffer request = {0};
    if (build_request(&request, argc, argv) != 0 || request.size > UINT32_MAX)
        return;
    int conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (conn < 0)
        return;
    unsigned char ack[MAGIC_SIZE];
    if (connect(conn, (struct sockaddr *)&address, sizeof address) != 0
            || send_header(conn, (uint32_t)request.size) != 0
            || transfer_all(conn, request.data, request.size, 1) != 0
            || transfer_all(conn, ack, sizeof ack, 0) != 0
            || memcmp(ack, FFCC_SERVER_MAGIC, MAGIC_SIZE) != 0) {
        close(conn);
        free(request.data);
        return;
    }
    free(request.data);
    connection = conn;
    static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction action = {0};
    action.sa_handler = pass_on;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &action, NULL);
    unsigned char reply[4];
    if (transfer_all(conn, reply, sizeof reply, 0) != 0) {
        fprintf(stderr, "%s: error: %s\n", program_name(argv[0]), FFCC_SERVER_STOPPED);
        _exit(1);
    }
    finish((int32_t)((uint32_t)reply[0] | (uint32_t)reply[1] << 8 | (uint32_t)reply[2] << 16
                     | (uint32_t)reply[3] << 24));
}

/* Whether FFCC_SERVER_ENV is none of the words of FFCC_SERVER_OFF. */
static int server_wanted(void) {
    const char *setting = getenv(FFCC_SERVER_ENV);
    if (!setting)
        return 1;
    size_t length = strlen(setting);
    const char *word = FFCC_SERVER_OFF;
    while (*word) {
        size_t n = strcspn(word, " ");
        if (n == length && strncmp(word, setting, n) == 0)
            return 0;
        word += n;
        word += *word == ' ';
    }
    return 1;
}

int main(int argc, char **argv) {
    char dir[PATH_MAX], cache[PATH_MAX];
    int cached = server_wanted() && socket_dir(dir, sizeof dir) == 0 && private_dir(dir)
        && cache_path(dir, cache, sizeof cache) == 0;
    if (cached) {
        forward(cache, argc, argv);
        setenv(FFCC_SERVER_CACHE_ENV, cache, 1);  /* client.py records its server's path there */
    }
    char **python_argv = calloc((size_t)argc + 4, sizeof *python_argv);
    if (!python_argv) {
        perror(program_name(argv[0]));
        return 1;
    }
    python_argv[0] = FFCC_PYTHON;
    python_argv[1] = "-c";
    python_argv[2] = PYTHON_CLIENT;
    for (int i = 0; i < argc; i++)
        python_argv[i + 3] = argv[i];
    execv(FFCC_PYTHON, python_argv);
    fprintf(stderr, "%s: error: cannot run %s: %s (reinstall ffcc for this Python)\n",
            program_name(argv[0]), FFCC_PYTHON, strerror(errno));
    return 127;
}
