/* ffcc_protocol.h - the contract between instrumented binaries and fuzzers.
 *
 * Read by the C runtime (runtime/), by the fuzzer's native core (native/) and,
 * through runtime/headers.py, by Python (ffcc.runtime.abi and native's cffi
 * cdef), which take the `#define NAME value` lines: keep each value here an
 * integer literal on one line.  Strings (environment variable names,
 * signatures) are in ffcc_names.h.
 *
 * Forkserver: AFL++ 4.04c's protocol.  Every message is a 4-byte host-endian
 * word.  The target writes a hello on FFCC_FD_STATUS; if the hello offers
 * shared-memory test cases the fuzzer answers on FFCC_FD_CONTROL.  Then, per
 * execution: fuzzer writes "previous run timed out" (0/1), target writes the
 * child pid, then the raw waitpid() status.
 *
 * Batches (ffcc's extension; afl-fuzz never asks for it): a persistent target
 * reading shared-memory test cases hands the CPU back and forth twice per
 * execution (target -> forkserver -> fuzzer and back), which is most of the
 * cost of a fast harness.  A fuzzer that sets FFCC_ENV_BATCH_SHM_ID to a
 * segment laid out as below, and gets FFCC_HELLO_BATCH back in the hello,
 * sends each request as a batch of up to FFCC_BATCH_MAX test cases.  The
 * messages stay the same (control word, pid, status), but the persistent
 * child reads the control word and writes its pid itself, runs the cases from
 * `done` to `count` back to back, copying each case's map into its slot (the
 * non-zero blocks only, see below), and then writes a stopped status (WIFSTOPPED) itself instead of raising
 * SIGSTOP.  A child that dies mid-batch is reported by the forkserver as
 * usual; `started` > `done` then says its last case was running, and its
 * trace is in the map; `started` == `done` says it died outside a case
 * (between cases, after its loop, at exit, or while waiting for the next
 * batch: then its status comes where its pid was expected).  With `leave`
 * set, the child leaves its persistent loop after the batch's last case
 * instead of waiting for another batch (an empty batch: at once), so that
 * the fuzzer sees what the program does at exit.
 *
 * Case times: the target times each case in CLOCK_MONOTONIC microseconds.  A
 * clock_gettime() costs a fast harness a few percent per case on a virtual
 * machine, so where the kernel itself keeps time by the time-stamp counter
 * (x86, a synchronised TSC) the fuzzer offers a cheaper reading: with each
 * request it writes a (microseconds, tick) pair read back to back and the
 * counter's rate, and the target reads only the counter and converts.
 *
 * Map layout: [edge region][label region].  The label region mirrors the
 * binary's FFCC_LABEL_SECTION (unit headers, then one byte per label slot) and
 * occupies the last FFCC_ALIGN_UP(section size) bytes of the map (ffcc_map.c).
 * ffcc records that size in the header record of the program's label database,
 * so a fuzzer that knows the map size (from the hello) knows where every label
 * slot is.  ffcc.runtime.abi (runtime/abi.py) is the tools' one reader of these
 * headers and owner of that layout and database format.
 *
 * Label retirement: a fuzzer may offer a shared-memory segment of at least the
 * label region's size (id in FFCC_ENV_RETIRE_SHM_ID), laid out as the label
 * region: a non-zero byte at a label's slot retires that label, which then
 * never counts again, in every process of the target from then on.  The
 * target maps it read-only; without it every label counts.
 *
 * Labelled shared objects (modules): each one ffcc links with labels hands its
 * label section to the executable's runtime when it is loaded, and the map is
 * then [edges][module region][label region]: the executable's own label region
 * stays at the map's end, where its label database says, and every module's
 * labels lie in the module region at a base of their own, a multiple of
 * FFCC_MAP_ALIGN (a module's slot s is module region start + base + s).
 * Modules loaded before the map is attached (the linked ones) are placed in
 * load order and the region sized for them; modules dlopen()ed later take room
 * from a reserve of FFCC_ENV_LABEL_RESERVE bytes (none without it).  The
 * placements are kept in a table that the forkserver and all its children
 * share (struct ffcc_modules), so a module keeps its base whatever order
 * inputs load modules in; a module that no longer fits counts nowhere.  A
 * fuzzer that names a segment of FFCC_MODULES_SHM_SIZE bytes in
 * FFCC_ENV_MODULES_SHM_ID gets the table there (written when the forkserver
 * starts, and by each child that places a module), so it can tell which label
 * each byte of the module region is.  Modules' labels are never retired.
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
/* Set together by some AFL++ runtimes; afl-fuzz ignores them then. */
#define FFCC_HELLO_OLD_AFLPP_BITS 0x0f000000
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

/* Largest test case (AFL's MAX_FILE), for every tool: the fuzzer never makes
 * a longer one, and a shared-memory test case is a u32 length, then up to
 * this many bytes. */
#define FFCC_SHM_FUZZ_MAX 1048576

/* Batch segment: struct ffcc_batch, test case bytes from FFCC_BATCH_DATA,
 * map slots from FFCC_BATCH_MAPS, ffcc_batch_slot_size(map_size) bytes each.
 * A slot is a bitmap of the map's FFCC_BATCH_BLOCK-byte blocks (one bit per
 * block, one FFCC_BATCH_BLOCK-byte line of bits per FFCC_BATCH_BITS_SPAN bytes
 * of map), then the map.  The target copies a case's non-zero blocks only
 * (ffcc_batch_store), sets their bits and clears them in its map; the slot's
 * other blocks are zero, as the fuzzer clears the blocks it was given before
 * it hands the slot out again.  A trace touches few blocks of a big map (a
 * labelled program's label region is mostly zero in every case), so a case
 * costs both sides what its non-zero blocks cost, not the map's size; and the
 * target scans its label region only after a case in which a label counted
 * (ffcc_map_take_written), which once its covered labels are retired is few. */
#define FFCC_HELLO_BATCH 0x08000000
/* The fuzzer writes it into the segment; a runtime built for another layout
 * (another version of this header) runs no batches. */
#define FFCC_BATCH_LAYOUT 4
#define FFCC_BATCH_BLOCK 64
#define FFCC_BATCH_BITS_SPAN 32768
#define FFCC_BATCH_MAX 1024
#define FFCC_BATCH_DATA 16384
#define FFCC_BATCH_DATA_SIZE 2097152
#define FFCC_BATCH_MAPS 2113536
#define FFCC_BATCH_MAPS_SIZE 4194304
#define FFCC_BATCH_SHM_SIZE 6307840

#include <stdint.h>
struct ffcc_batch {
  uint32_t layout;                       /* fuzzer: FFCC_BATCH_LAYOUT, first in every layout */
  uint32_t count;                        /* fuzzer: cases in this batch */
  uint32_t map_size;                     /* fuzzer: bytes per map slot */
  volatile uint32_t started;             /* target: cases begun (fuzzer sets it to done) */
  volatile uint32_t done;                /* target: cases finished, maps in their slots */
  volatile uint64_t case_start_us;       /* target: CLOCK_MONOTONIC start of the running case */
  uint64_t clock_base_us;                /* fuzzer: CLOCK_MONOTONIC (us) when ... */
  uint64_t clock_base_tick;              /* fuzzer: ... the CPU's time-stamp counter read this */
  uint64_t us_per_tick_q32;              /* fuzzer: us per tick, 32.32 fixed point; 0: no ticks */
  uint32_t offset[FFCC_BATCH_MAX];       /* fuzzer: case i's bytes at FFCC_BATCH_DATA + offset */
  uint32_t len[FFCC_BATCH_MAX];          /* fuzzer: case i's length */
  uint32_t elapsed_us[FFCC_BATCH_MAX];   /* target: how long each finished case ran */
  uint32_t leave;                        /* fuzzer: 1 = leave the loop after this batch */
};
_Static_assert(sizeof(struct ffcc_batch) <= FFCC_BATCH_DATA, "batch header too big");
_Static_assert(FFCC_BATCH_MAPS == FFCC_BATCH_DATA + FFCC_BATCH_DATA_SIZE, "batch layout");
_Static_assert(FFCC_BATCH_SHM_SIZE == FFCC_BATCH_MAPS + FFCC_BATCH_MAPS_SIZE, "batch layout");
_Static_assert(FFCC_BATCH_BITS_SPAN == FFCC_BATCH_BLOCK * FFCC_BATCH_BLOCK * 8, "batch layout");

/* Bytes of a slot's block bitmap: whole cache lines, so that the map after it
 * stays aligned. */
static inline uint32_t ffcc_batch_bits_size(uint32_t map_size)
{
  return (map_size + FFCC_BATCH_BITS_SPAN - 1) / FFCC_BATCH_BITS_SPAN * FFCC_BATCH_BLOCK;
}

static inline uint32_t ffcc_batch_slot_size(uint32_t map_size)
{
  return ffcc_batch_bits_size(map_size) + map_size;
}

/* Slot i of a batch of map_size-byte maps. */
static inline uint8_t *ffcc_batch_slot(struct ffcc_batch *batch, uint32_t i, uint32_t map_size)
{
  return (uint8_t *)batch + FFCC_BATCH_MAPS + (uint64_t)i * ffcc_batch_slot_size(map_size);
}

/* Whether n bytes at p (n a multiple of 16) are all zero: 16-byte vectors that
 * gcc and clang both keep as such at -O2 (8-byte words they did not vectorise
 * alike: gcc scanned a 28 KB map in 1.3 us, clang in 0.3). */
typedef uint64_t ffcc_v16 __attribute__((vector_size(16)));
static inline int ffcc_all_zero(const uint8_t *p, uint32_t n)
{
  ffcc_v16 any = {0, 0};
  for (uint32_t k = 0; k < n; k += 16) {
    ffcc_v16 word;
    __builtin_memcpy(&word, p + k, 16);
    any |= word;
  }
  return !(any[0] | any[1]);
}

static inline void ffcc_batch_store_block(uint8_t *slot, uint8_t *into, uint8_t *map,
                                          uint32_t at, uint32_t len)
{
  uint64_t *bits = (uint64_t *)slot;
  uint32_t block = at / FFCC_BATCH_BLOCK;
  __builtin_memcpy(into + at, map + at, len);
  __builtin_memset(map + at, 0, len);
  bits[block / 64] |= (uint64_t)1 << (block % 64);
}

/* Blocks a case's map is scanned by first: a labelled map is mostly zero (its
 * label region: libpng's harness has 22 KB of labels beside 6 KB of edges), so
 * most superblocks cost one test. */
#define FFCC_BATCH_SUPERBLOCK 512
_Static_assert(FFCC_BATCH_SUPERBLOCK % FFCC_BATCH_BLOCK == 0, "whole blocks");

/* Copy the non-zero blocks of map's first `used` bytes (the rest is zero) into
 * slot (whose map is zero), set their bits and clear them in map: the target's
 * end of a case, and the fuzzer's when a case dies with its trace in the shared
 * map.  The last block may be short. */
static inline void ffcc_batch_store(uint8_t *slot, uint8_t *map, uint32_t map_size,
                                    uint32_t used)
{
  uint8_t *into = slot + ffcc_batch_bits_size(map_size);
  uint32_t at = 0;
  for (; at + FFCC_BATCH_SUPERBLOCK <= used; at += FFCC_BATCH_SUPERBLOCK) {
    if (ffcc_all_zero(map + at, FFCC_BATCH_SUPERBLOCK)) continue;
    for (uint32_t b = at; b < at + FFCC_BATCH_SUPERBLOCK; b += FFCC_BATCH_BLOCK)
      if (!ffcc_all_zero(map + b, FFCC_BATCH_BLOCK))
        ffcc_batch_store_block(slot, into, map, b, FFCC_BATCH_BLOCK);
  }
  for (; at < used; at += FFCC_BATCH_BLOCK) {
    uint32_t len = used - at < FFCC_BATCH_BLOCK ? used - at : FFCC_BATCH_BLOCK;
    int zero = ffcc_all_zero(map + at, len & ~15u);
    for (uint32_t k = len & ~15u; k < len; k++) zero &= !map[at + k];
    if (!zero) ffcc_batch_store_block(slot, into, map, at, len);
  }
}

#define FFCC_MODULES_LAYOUT 1
#define FFCC_MODULES_MAX 64
#define FFCC_MODULE_PATH 240
#define FFCC_MODULE_SIZE 256
#define FFCC_MODULES_HEADER 16
#define FFCC_MODULES_SHM_SIZE 16400
struct ffcc_module {
  uint64_t id;                    /* FNV-1a hash of path: the module's identity */
  uint32_t base;                  /* offset of its labels in the module region */
  uint32_t size;                  /* bytes of its label section */
  char path[FFCC_MODULE_PATH];    /* its file as the dynamic linker loaded it (NUL-ended) */
};
struct ffcc_modules {
  uint32_t layout;                /* FFCC_MODULES_LAYOUT */
  volatile uint32_t count;        /* modules placed, in module[] */
  uint32_t region;                /* bytes of the module region */
  uint32_t used;                  /* bytes of it given to modules */
  struct ffcc_module module[FFCC_MODULES_MAX];
};
_Static_assert(sizeof(struct ffcc_module) == FFCC_MODULE_SIZE, "module record layout");
_Static_assert(sizeof(struct ffcc_modules) ==
               FFCC_MODULES_HEADER + FFCC_MODULES_MAX * FFCC_MODULE_SIZE, "module table layout");
_Static_assert(FFCC_MODULES_SHM_SIZE == sizeof(struct ffcc_modules), "module table size");

/* Comparison log (ffcc --cmplog): a binary built with --cmplog logs the
 * operands of its integer comparisons, switches and memcmp/strcmp-like calls
 * into a segment the fuzzer creates and names in FFCC_ENV_CMPLOG_SHM_ID
 * (ffcc_names.h); without it the hooks do nothing.  Layout: a uint32_t hit
 * count per site (FFCC_CMPLOG_SITES of them), then from FFCC_CMPLOG_TAGS_AT
 * a uint32_t per site naming the call that logs there in this run (its return
 * address relative to the ELF header; meaningful where the hit count is not
 * zero), then FFCC_CMPLOG_RECORDS records per site, from
 * FFCC_CMPLOG_RECORDS_AT: the site's i-th logged call writes record
 * i % FFCC_CMPLOG_RECORDS.  A call logs at a hash of its return address, or at
 * the first of the next few sites that is free or its own (ffcc_cmplog.c).
 * The fuzzer zeroes the hit counts before a run.
 * A record (struct ffcc_cmplog_record) holds both operands: an integer as
 * little-endian bytes (len0 == len1 == its width), a routine's first bytes
 * (up to FFCC_CMPLOG_OPERAND of each; a string's without its NUL). */
#define FFCC_CMPLOG_SITES 8192
#define FFCC_CMPLOG_RECORDS 32
#define FFCC_CMPLOG_OPERAND 32
#define FFCC_CMPLOG_RECORD_SIZE 72
#define FFCC_CMPLOG_TAGS_AT 32768
#define FFCC_CMPLOG_RECORDS_AT 65536
#define FFCC_CMPLOG_SHM_SIZE 18939904
/* Record kinds, and flags. */
#define FFCC_CMPLOG_INT 1
#define FFCC_CMPLOG_RTN 2
#define FFCC_CMPLOG_CONST0 1

struct ffcc_cmplog_record {
  uint8_t v0[FFCC_CMPLOG_OPERAND]; /* first operand */
  uint8_t v1[FFCC_CMPLOG_OPERAND]; /* second operand */
  uint8_t kind;                    /* FFCC_CMPLOG_INT or FFCC_CMPLOG_RTN */
  uint8_t len0;                    /* bytes of v0 logged */
  uint8_t len1;                    /* bytes of v1 logged */
  uint8_t flags;                   /* FFCC_CMPLOG_CONST0: v0 is a compile-time constant */
  uint32_t reserved;
};
_Static_assert(sizeof(struct ffcc_cmplog_record) == FFCC_CMPLOG_RECORD_SIZE, "cmplog record");
_Static_assert(FFCC_CMPLOG_TAGS_AT == FFCC_CMPLOG_SITES * sizeof(uint32_t), "cmplog layout");
_Static_assert(FFCC_CMPLOG_RECORDS_AT == FFCC_CMPLOG_TAGS_AT + FFCC_CMPLOG_SITES * sizeof(uint32_t),
               "cmplog layout");
_Static_assert(FFCC_CMPLOG_SHM_SIZE == FFCC_CMPLOG_RECORDS_AT +
               FFCC_CMPLOG_SITES * FFCC_CMPLOG_RECORDS * FFCC_CMPLOG_RECORD_SIZE, "cmplog layout");

#endif
