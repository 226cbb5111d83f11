/* ffcc_protocol.h - the contract between instrumented binaries and fuzzers.
 *
 * Read by the C runtime (runtime/) and, through cffi's cdef, by the fuzzer's
 * native core (native/).  Only integer #defines live here so that cffi can
 * parse the file as it is; strings (environment variable names, signatures)
 * are in ffcc_names.h.
 *
 * Forkserver: AFL++ 4.04c's protocol.  Every message is a 4-byte host-endian
 * word.  The target writes a hello on FFCC_FD_STATUS; if the hello offers
 * shared-memory test cases the fuzzer answers on FFCC_FD_CONTROL.  Then, per
 * execution: fuzzer writes "previous run timed out" (0/1), target writes the
 * child pid, then the raw waitpid() status.
 *
 * Map layout: [edge region][label region].  The label region mirrors the
 * binary's __ffcc_labels section (unit headers, then one byte per label slot)
 * and occupies the last ALIGN64(section size) = ALIGN64(max slot + 1) bytes of
 * the map, so a fuzzer that knows the map size (from the hello) and the slots
 * (from the label database) knows where every label is.
 */
#ifndef FFCC_PROTOCOL_H
#define FFCC_PROTOCOL_H

#define FFCC_FD_CONTROL 198
#define FFCC_FD_STATUS 199

/* Old-style (4.04c) hello and its option bits. */
#define FFCC_HELLO_ENABLED 0x80000001
#define FFCC_HELLO_MAPSIZE 0x40000000
#define FFCC_HELLO_AUTODICT 0x10000000
#define FFCC_HELLO_SHMEM_FUZZ 0x01000000
#define FFCC_HELLO_ERROR 0xf800008f
/* Map size travels in bits 1..23 as (size - 1) << 1; 8 MiB at most. */
#define FFCC_HELLO_MAPSIZE_MASK 0x00fffffe
#define FFCC_MAX_HELLO_MAPSIZE 8388608

/* New-style (AFL++ 4.20c+) hello: the target sends FFCC_HELLO_V2, the fuzzer
 * answers with its bitwise complement, the target then sends its options. */
#define FFCC_HELLO_V2 0x41464c01

/* Map geometry. */
#define FFCC_MAP_ALIGN 64
#define FFCC_GCC_EDGE_BITS 16
#define FFCC_DEFAULT_MAP_SIZE 65536

/* Shared-memory test cases: u32 length, then up to this many bytes. */
#define FFCC_SHM_FUZZ_MAX 1048576

#endif
