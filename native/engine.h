/* engine.h - the engine's state and the functions the C files share.
 * Not seen by cffi: Python only holds an opaque ffcc_engine pointer.
 *
 * The engine embeds one part per concern, as afl-fuzz's afl_state_t embeds an
 * afl_forkserver_t, and each function takes the smallest part it needs:
 *  - struct ffcc_forkserver: the target's processes and pipes, the shared
 *    memory it writes (coverage map) and reads (test cases, batches), and
 *    the execution counters;
 *  - struct ffcc_maps: what the fuzzer has learned from traces (virgin maps,
 *    variable bytes, FairFuzz hit counts), one byte or word per map index;
 *  - struct ffcc_mutator: the RNG, the tokens and the buffers children are
 *    built in;
 *  - struct ffcc_children: a stage's children between being made and being
 *    judged (batch.c);
 *  - struct ffcc_deaths: the cases a persistent child has run, kept until it
 *    dies, so that a crash outside every case can be pinned on one (batch.c).
 * Functions that move data between parts (run a child, judge it) take the
 * engine. */
#ifndef FFCC_ENGINE_H
#define FFCC_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ffcc_native.h"
#include "ffcc_protocol.h"

#define FFCC_MAX_TOKENS 512
#define FFCC_MAX_TOKEN_LEN 128
#define FFCC_ARITH_MAX 35 /* arithmetic mutations add or subtract 1..FFCC_ARITH_MAX (AFL) */
/* How long the forkserver may take to answer a request or to report a child
 * the fuzzer killed, before the fuzzer gives up on it.  Generous: a loaded
 * machine can take seconds to schedule the forkserver or to reap a child of
 * gigabytes, and giving up ends the campaign (AFL++ waits for the pid without
 * a bound); a forkserver that never answers still ends it with one line. */
#define FFCC_GRACE_MS 10000
/* Wall time for pinning one crash outside the cases on a case. */
#define FFCC_SEARCH_MS 2000
/* At most this many crashes outside the cases go unsearched between two searches. */
#define FFCC_SEARCH_SPACING_MAX 63
/* A case log holds the newest this many cases and bytes. */
#define FFCC_LOG_CASES 16384
#define FFCC_LOG_BYTES (8u << 20)
_Static_assert(FFCC_BATCH_MAX <= FFCC_LOG_CASES && FFCC_BATCH_DATA_SIZE <= FFCC_LOG_BYTES,
               "a whole batch fits an empty case log");
#define FFCC_LIKELY(x) __builtin_expect(!!(x), 1)
#define FFCC_UNLIKELY(x) __builtin_expect(!!(x), 0)

struct ffcc_token {
    uint8_t len;                       /* 1..FFCC_MAX_TOKEN_LEN */
    uint8_t data[FFCC_MAX_TOKEN_LEN];  /* the token's bytes */
};

/* Where a stage was when it made a child: a child that never runs (its
 * batch cut short) is made again from there, the same child. */
struct ffcc_made_at {
    uint64_t rng[4];  /* the mutator's RNG */
    uint64_t cursor;  /* the stage's next mutant */
    uint64_t skipped; /* havoc rounds skipped so far */
    uint32_t spliced; /* 1 + the second parent spliced in the work buffer, 0 none yet */
    uint32_t split;   /* where that splice cut */
};

/* A child made by a stage, its outcome once run, and what the stage
 * learns from it afterwards (the mask stage: bit at pos if the target was hit). */
struct ffcc_result {
    uint8_t *data;   /* the child's bytes (batch segment, work buffer or stash) */
    uint32_t len;    /* its length */
    struct ffcc_made_at made_at; /* stages only */
    int64_t pos;     /* mutated byte (deterministic and mask stages), -1 otherwise */
    uint8_t bit;     /* mask stage: the mask bit this child probes */
    int32_t partner; /* havoc with splices: the second parent it was made from, -1 none */
    int status;      /* FFCC_RUN_* */
    int signal;      /* the signal that killed it (crashes) */
    uint8_t *trace;  /* its classified trace (map slot, shared map or stash) */
    const uint64_t *blocks; /* a map slot's bitmap of the trace's non-zero blocks; NULL: any */
};

struct ffcc_forkserver {
    pid_t pid;                     /* the forkserver (and its process group), -1 when none runs */
    pid_t child_pid;               /* the child running a request (batches: or waiting for one), -1 */
    int ctl_fd;                    /* control pipe: one word per request */
    int st_fd;                     /* status pipe: hello, child pids, waitpid() statuses */
    int input_fd;                  /* the test-case file (@@ and stdin targets) */
    int interrupt_fd;              /* readable when the fuzzer got a signal (Python's wakeup fd), -1 */
    int use_shm_input;             /* the target reads test cases from shm_fuzz */
    int use_batch;                 /* the target runs batches (an ffcc runtime) */
    uint32_t batch_cap;            /* children per request: 1 without batches */
    uint32_t slots_used;           /* batch slots that may hold blocks (cleared before a batch) */
    uint32_t prev_timed_out;       /* sent with the next request, as AFL's protocol wants */
    int crash_exitcode;            /* exit status counted as a crash, -1 = none */
    uint8_t *trace;                /* the coverage map the target writes (shared memory) */
    int trace_id;                  /* its shm id, given to the target */
    uint32_t trace_capacity;       /* bytes the map segment holds */
    uint32_t map_size;             /* bytes of it the target uses (from its hello) */
    uint8_t *shm_fuzz;             /* shared-memory test case: u32 length, then bytes */
    int shm_fuzz_id;               /* its shm id */
    struct ffcc_batch *batch;      /* batch segment (ffcc_protocol.h) */
    int batch_id;                  /* its shm id */
    struct ffcc_counters counters; /* executions, crashes, hangs, slowest run */
    char error[200];               /* why the last FFCC_RUN_ERROR happened, one line */
};

/* Each map is map_size bytes (branch_hits: words), map_size from the forkserver. */
struct ffcc_maps {
    uint8_t *virgin;       /* AFL virgin bits: 0xff where no queue-worthy run has been */
    uint8_t *virgin_crash; /* virgin bits of simplified crash traces */
    uint8_t *virgin_hang;  /* virgin bits of simplified hang traces */
    uint8_t *var_bytes;    /* 1 where calibration saw the map vary */
    uint32_t *branch_hits; /* FairFuzz numHits: runs that hit each index */
    uint8_t *first_trace;  /* the last calibration's first classified trace */
    uint8_t *simplified;   /* a crash's or hang's trace as hit / not hit (ffcc_fault_is_new) */
};

struct ffcc_mutator {
    uint64_t rng[4];                           /* xoshiro256** state, from --seed */
    struct ffcc_token tokens[FFCC_MAX_TOKENS]; /* -x dictionaries, then the auto-dictionary */
    uint32_t token_count;                      /* tokens in use */
    uint32_t auto_token_count;                 /* of which from the target's auto-dictionary */
    uint8_t *work;                             /* the child being built (runs from here without batches) */
    uint8_t *work_mask;                        /* its mask, kept aligned with it */
    uint8_t *spliced;                          /* the parent after splicing */
    uint8_t *spliced_mask;                     /* its mask */
    uint8_t *scratch;                          /* blocks being cloned */
};

/* The batch being filled, then its results; results still to judge when a
 * stage returns to Python are copied aside (stash) before the next run. */
struct ffcc_children {
    struct ffcc_result seg[FFCC_BATCH_MAX];   /* the batch's children and results */
    uint32_t seg_cases;                       /* children in the batch being filled */
    uint32_t seg_bytes;                       /* bytes of their data in the segment */
    struct ffcc_result stash[FFCC_BATCH_MAX]; /* results copied out of the segment */
    uint8_t *stash_maps;                      /* their traces */
    uint8_t *stash_data;                      /* their bytes */
    struct ffcc_result *pending;              /* results to judge: seg or stash */
    uint32_t pending_count;                   /* results in pending */
    uint32_t pending_next;                    /* the next one to judge */
    const struct ffcc_stage *pending_owner;   /* the stage they belong to */
};

/* Test cases in the order a child ran them; when full, the log starts over
 * with the newest. */
struct ffcc_case_log {
    uint8_t *data;    /* their bytes, back to back (FFCC_LOG_BYTES) */
    uint32_t *offset; /* case i at data + offset[i] (FFCC_LOG_CASES entries) */
    uint32_t *len;    /* its length */
    uint32_t count;   /* cases in the log */
    uint32_t bytes;   /* bytes of data in use */
};

/* A persistent child that crashes outside every case (after its loop, between
 * cases, while it waits for a batch) was armed by a case it ran: an atexit
 * handler, a destructor, a timer.  Its cases become suspects, replayed later
 * in fresh children that leave their loop after them (batch.c). */
struct ffcc_deaths {
    struct ffcc_case_log life;     /* the live child's cases, since it was forked */
    struct ffcc_case_log suspects; /* cases of children that crashed outside a case */
    int signal;                    /* how the last of those died (0: the crash exit code) */
    int replaying;                 /* suspects are being replayed: deaths answer the replay */
    int replay_crashed;            /* a replayed child crashed outside a case */
    int replay_signal;             /* with this signal */
    uint32_t spacing;              /* crashes to leave unsearched after a search found a known one */
    uint32_t skip;                 /* of which still to leave */
};

struct ffcc_engine {
    struct ffcc_forkserver fsrv;     /* running the target */
    struct ffcc_maps maps;           /* coverage knowledge */
    struct ffcc_mutator mut;         /* making children */
    struct ffcc_children children;   /* children between making and judging */
    struct ffcc_deaths deaths;       /* cases behind crashes outside a case */
};

/* xoshiro256**, inline: havoc draws several numbers per mutation. */
static inline uint64_t ffcc_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t ffcc_rand64(struct ffcc_mutator *m)
{
    uint64_t *s = m->rng;
    uint64_t result = ffcc_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ffcc_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, limit) by multiply-shift (Lemire), no division. */
static inline uint32_t ffcc_rand_below(struct ffcc_mutator *m, uint32_t limit)
{
    if (limit <= 1) return 0;
    return (uint32_t)(((ffcc_rand64(m) >> 32) * (uint64_t)limit) >> 32);
}

/* engine.c */
int ffcc_add_token(struct ffcc_mutator *m, const uint8_t *data, uint32_t len, int is_auto);
/* (Re)allocate the maps for map_size; -1 when out of memory. */
int ffcc_maps_alloc(struct ffcc_maps *maps, uint32_t map_size);

/* forkserver.c */
/* Internal run status: the fuzzer got a signal and killed the child before its case ended. */
#define FFCC_RUN_INTERRUPTED (-1)
/* ffcc_wait_word's answers. */
#define FFCC_WAIT_OK 0
#define FFCC_WAIT_LATE 1
#define FFCC_WAIT_INTERRUPTED 2
#define FFCC_WAIT_BROKEN (-1)
/* AFL++ 4.20c+ hello options (sent after the version handshake). */
#define FFCC_HELLO_V2_OPT_MAPSIZE 1
#define FFCC_HELLO_V2_OPT_SHMEM_FUZZ 2
#define FFCC_HELLO_V2_OPT_AUTODICT 0x800
#define FFCC_HELLO_V2_ERROR 0xeffe0000
/* One execution; leaves the classified trace in fsrv.trace. */
int ffcc_run_once(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                  int *signal);
/* One execution without batches; interruptible: FFCC_RUN_INTERRUPTED when
 * the fuzzer gets a signal first. */
int ffcc_execute(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                 int interruptible, int *signal);
uint64_t ffcc_now_us(void);
uint64_t ffcc_tick_rate(void);
void ffcc_stamp_clock(struct ffcc_batch *b);
int ffcc_read_full(int fd, void *buf, size_t len, uint32_t timeout_ms);
int ffcc_write_word(int fd, uint32_t word);
/* Read one status word by deadline_us (CLOCK_MONOTONIC); interruptible:
 * give up when interrupt_fd becomes readable.  FFCC_WAIT_*. */
int ffcc_wait_word(struct ffcc_forkserver *fsrv, int32_t *word, uint64_t deadline_us,
                   int interruptible);
/* Kill the child and read what the forkserver says of it by the grace
 * deadline (*status).  FFCC_WAIT_*. */
int ffcc_kill_child(struct ffcc_forkserver *fsrv, int32_t *status);
/* Set fsrv->error (one line) and return FFCC_RUN_ERROR. */
int ffcc_fsrv_fail(struct ffcc_forkserver *fsrv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The forkserver did not answer (FFCC_WAIT_* of the failed wait): say whether it is gone. */
int ffcc_fsrv_silent(struct ffcc_forkserver *fsrv, int wait_rc);
/* FFCC_RUN_* of a waitpid() status, counting crashes and hangs. */
int ffcc_run_status(struct ffcc_forkserver *fsrv, int32_t status, int timed_out, int *signal_out);

/* batch.c */
/* Where the next child of the batch goes (room for FFCC_SHM_FUZZ_MAX bytes), or
 * NULL when the batch is full; without batches a "batch" is one child. */
uint8_t *ffcc_batch_next(ffcc_engine *e);
/* Add the child just written at ffcc_batch_next(); the caller may set pos, bit. */
struct ffcc_result *ffcc_batch_commit(ffcc_engine *e, uint32_t len);
/* Run the batch's children; the first *ran of them have their results in
 * e->children.seg.  deadline_us (0: none) makes the run interruptible and cuts
 * it short where a fresh child would have to start after that time; the rest
 * never ran.  FFCC_RUN_OK or _ERROR. */
int ffcc_batch_run(ffcc_engine *e, uint32_t timeout_ms, uint64_t deadline_us, uint32_t *ran);
/* Copy a stage's unjudged children out of the segment before it is reused. */
void ffcc_results_release(struct ffcc_children *c, uint32_t map_size);
/* When a child crashed outside every case: the case that reproduces the crash
 * alone, or the last case the child ran, in *out.  Call with no results to
 * judge.  Returns 1 when it is a new crash (its simplified trace new to
 * virgin_crash, or no trace to be had), 0 when none waits or it is known. */
int ffcc_outside_crash(ffcc_engine *e, uint32_t timeout_ms, struct ffcc_result *out);
/* Forget the live child's cases (it is gone). */
void ffcc_deaths_child_gone(struct ffcc_deaths *d);
/* The logs' buffers; -1 when out of memory. */
int ffcc_deaths_alloc(struct ffcc_deaths *d);
void ffcc_deaths_free(struct ffcc_deaths *d);

/* coverage.c */
#define FFCC_BLOCK_WORDS (FFCC_BATCH_BLOCK / 8)

/* The spans of a trace's words that may be non-zero: each block its bitmap
 * marks, or (no bitmap) the whole trace as one span. */
struct ffcc_spans {
    const uint64_t *blocks; /* the bitmap, NULL: one span */
    uint32_t words;         /* the trace's words */
    uint32_t line;          /* the bitmap word being read */
    uint32_t lines;         /* the bitmap's words */
    uint64_t bits;          /* its bits not yet visited */
};

static inline void ffcc_spans_start(struct ffcc_spans *s, const uint64_t *blocks, uint32_t size)
{
    uint32_t count = (size + FFCC_BATCH_BLOCK - 1) / FFCC_BATCH_BLOCK;
    *s = (struct ffcc_spans){blocks, size / 8, 0, blocks ? (count + 63) / 64 : 1, blocks ? blocks[0] : 1};
}

/* The next span [*from, *to) of words; 0 when there is none left. */
static inline int ffcc_spans_next(struct ffcc_spans *s, uint32_t *from, uint32_t *to)
{
    while (!s->bits) {
        if (++s->line >= s->lines) return 0;
        s->bits = s->blocks[s->line];
    }
    if (!s->blocks) {
        s->bits = 0;
        *from = 0, *to = s->words;
        return 1;
    }
    uint32_t block = s->line * 64 + (uint32_t)__builtin_ctzll(s->bits);
    s->bits &= s->bits - 1;
    *from = block * FFCC_BLOCK_WORDS;
    *to = *from + FFCC_BLOCK_WORDS < s->words ? *from + FFCC_BLOCK_WORDS : s->words;
    return 1;
}

void ffcc_classify(uint8_t *trace, const uint64_t *blocks, uint32_t size);
void ffcc_count_branch_hits(const uint8_t *trace, uint32_t *hits, uint32_t size);
int ffcc_has_new_bits(const uint8_t *trace, uint8_t *virgin, uint32_t size);
int ffcc_count_hits_new_bits(const uint8_t *trace, const uint64_t *blocks, uint32_t *hits,
                             uint8_t *virgin, uint32_t size);
int ffcc_fault_is_new(struct ffcc_maps *maps, const uint8_t *trace, uint8_t *virgin,
                      uint32_t size);
uint64_t ffcc_hash_trace(const uint8_t *trace, uint32_t size);
uint32_t ffcc_count_bytes(const uint8_t *trace, uint32_t size);

/* havoc.c */
#define FFCC_INTERESTING8_LEN 9
#define FFCC_INTERESTING16_LEN 19
#define FFCC_INTERESTING32_LEN 27
extern const int8_t ffcc_interesting8[FFCC_INTERESTING8_LEN];
extern const int16_t ffcc_interesting16[FFCC_INTERESTING16_LEN];
extern const int32_t ffcc_interesting32[FFCC_INTERESTING32_LEN];
/* One stacked havoc round; *applied counts the mutations that found room. */
uint32_t ffcc_havoc_apply(struct ffcc_mutator *m, uint8_t *buf, uint32_t len, uint8_t *mask,
                          uint32_t cycle, uint32_t *applied);
/* a's head and b's tail cut at a given split (ffcc_splice_apply's second half). */
uint32_t ffcc_splice_at(const uint8_t *a, const uint8_t *a_mask, const uint8_t *b,
                        uint32_t b_len, uint32_t split, uint8_t *out, uint8_t *out_mask);
/* AFL's splice of a and b into out: ffcc_splice (ffcc_native.h) with the mutator. */
uint32_t ffcc_splice_apply(struct ffcc_mutator *m, const uint8_t *a, uint32_t a_len,
                           const uint8_t *a_mask, const uint8_t *b, uint32_t b_len, uint8_t *out,
                           uint8_t *out_mask, uint32_t *split_out);

/* deterministic.c: build mutant number idx of a stage into out.  Returns its
 * length, FFCC_DET_SKIP when the mask (or a no-op) rules it out, FFCC_DET_END
 * past the last mutant.  *pos is the mutated byte. */
#define FFCC_DET_END (-1)
#define FFCC_DET_SKIP (-2)
int64_t ffcc_det_mutant(const struct ffcc_mutator *m, int kind, uint64_t idx, const uint8_t *in,
                        uint32_t len, const uint8_t *mask, uint8_t *out, int64_t *pos);
/* The mask stage's mutants; *bit is the mask bit the mutant probes. */
int64_t ffcc_mask_mutant(struct ffcc_mutator *m, uint64_t idx, const uint8_t *in, uint32_t len,
                         uint8_t *out, int64_t *pos, uint8_t *bit);

#endif
