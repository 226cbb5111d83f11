/* The compile server's protocol: what the compiled `ffcc` (ffcc_client.c) and Python's client
 * and server (client.py, server.py) must agree on, defined once.  ffcc_client.c includes this
 * file; client.py reads its defines at import with ffcc.runtime.headers, which takes an integer
 * or a plain string literal per define, with nothing else on the line.
 * tests/instrument/test_server_protocol.py checks that both sides read the same values. */
#ifndef FFCC_SERVER_PROTOCOL_H
#define FFCC_SERVER_PROTOCOL_H

/* A request opens with these four bytes, then its length (32 bits, little-endian) with the
 * client's stdin, stdout and stderr attached; the server sends them back when it takes the
 * command. */
#define FFCC_SERVER_MAGIC "FFCS"

/* The client cache: ffcc_client.c names its cache file (in the socket directory) in this
 * variable when it hands a command to client.py, which writes its server's socket path there
 * for the next commands.  It is no part of the command's environment. */
#define FFCC_SERVER_CACHE_ENV "FFCC_CLIENT_CACHE"

/* The socket directory: $XDG_RUNTIME_DIR/ffcc-<euid>, or /tmp/ffcc-<euid> when that variable
 * is unset or empty.  Both clients create it with FFCC_SERVER_DIR_MODE (0700, in decimal:
 * headers.py reads no octal) and use it only if it is a directory of their effective user
 * that no one else may enter (no permission bits outside the mode). */
#define FFCC_SERVER_DIR_ENV "XDG_RUNTIME_DIR"
#define FFCC_SERVER_DIR_FALLBACK "/tmp"
#define FFCC_SERVER_DIR_PREFIX "ffcc-"
#define FFCC_SERVER_DIR_MODE 448

/* FFCC_SERVER set to one of these space-separated words turns the server off: the command
 * runs in the client's own process. */
#define FFCC_SERVER_ENV "FFCC_SERVER"
#define FFCC_SERVER_OFF "0 off no false"

/* What a client reports, after "<program>: error: ", when the server took the command and
 * stopped before it ended. */
#define FFCC_SERVER_STOPPED "the compile server stopped during this command (FFCC_SERVER=0 runs without it)"

#endif
