/* The compiler zygote's protocol: what ffcc_zygote.c and zygote.py must agree on, defined
 * once.  zygote.py reads these defines with ffcc.runtime.headers, which takes an integer or a
 * plain string literal per define, with nothing else on the line. */
#ifndef FFCC_ZYGOTE_PROTOCOL_H
#define FFCC_ZYGOTE_PROTOCOL_H

/* The zygote's listening socket: the file descriptor it inherits, named in this variable. */
#define FFCC_ZYGOTE_FD_ENV "FFCC_ZYGOTE_FD"

/* A request opens with these four bytes and five 32-bit words (native byte order): umask,
 * niceness, argc, environment size, text length; the caller's stdin, stdout and stderr are
 * attached.  The text follows: working directory, argv, environment, each NUL-terminated.
 * The zygote answers with the magic once the command runs, then with its 32-bit wait status
 * when it ends. */
#define FFCC_ZYGOTE_MAGIC "FFCZ"
#define FFCC_ZYGOTE_FD_COUNT 3
#define FFCC_ZYGOTE_MAX_TEXT 67108864

/* After the caller hangs up, how long its command has to end on SIGTERM before SIGKILL. */
#define FFCC_ZYGOTE_GRACE_MS 5000

#endif
