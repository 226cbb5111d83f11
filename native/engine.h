/* engine.h - the engine's state and the functions the C files share.
 * Not seen by cffi: Python only holds an opaque ffcc_engine pointer. */
#ifndef FFCC_ENGINE_H
#define FFCC_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ffcc_native.h"
#include "ffcc_protocol.h"

#define FFCC_MAX_TOKENS 512
#define FFCC_MAX_TOKEN_LEN 128
#define FFCC_LIKELY(x) __builtin_expect(!!(x), 1)
#define FFCC_UNLIKELY(x) __builtin_expect(!!(x), 0)

struct ffcc_token {
    uint8_t len;
    uint8_t data[FFCC_MAX_TOKEN_LEN];
};

/* A child made by a stage, its outcome once run, and what the stage
 * learns from it afterwards (the mask stage: bit at pos if the target was hit). */
struct ffcc_result {
    uint8_t *data;
    uint32_t len;
    int64_t pos;   /* mutated byte (deterministic and mask stages), -1 otherwise */
    uint8_t bit;   /* mask stage: the mask bit this child probes */
    int status;    /* FFCC_RUN_* */
    int signal;
    uint8_t *trace; /* classified */
};

struct ffcc_engine {
    /* shared memory: coverage map and (persistent targets) test cases */
    int shm_id;
    uint8_t *shm;
    uint32_t shm_size;
    int shm_fuzz_id;
    uint8_t *shm_fuzz;

    /* map geometry and the maps derived from it */
    uint32_t map_size;
    uint8_t *virgin;
    uint8_t *virgin_crash;
    uint8_t *virgin_hang;
    uint8_t *var_bytes;
    uint32_t *branch_hits;
    uint8_t *first_trace; /* calibration reference */

    /* forkserver */
    pid_t fsrv_pid;
    pid_t child_pid;
    int ctl_fd;
    int st_fd;
    int input_fd;
    int use_shm_input;
    uint32_t prev_timed_out;
    int crash_exitcode; /* -1 = none */

    /* batches (batch.c): the segment, the cases in it, and a stage's children
     * still to judge (in the segment, or copied aside to the stash) */
    int batch_id;
    struct ffcc_batch *batch;
    int use_batch;
    uint32_t batch_cap; /* children per request: 1 without batches */
    struct ffcc_result seg[FFCC_BATCH_MAX];
    uint32_t seg_cases, seg_bytes;
    struct ffcc_result stash[FFCC_BATCH_MAX];
    uint8_t *stash_maps;
    uint8_t *stash_data;
    struct ffcc_result *pending;
    uint32_t pending_count, pending_next;
    const struct ffcc_stage *pending_owner;

    /* mutation */
    uint64_t rng[4];
    struct ffcc_token tokens[FFCC_MAX_TOKENS];
    uint32_t token_count;
    uint32_t auto_token_count;
    uint8_t *work;      /* the child being built */
    uint8_t *work_mask; /* its mask, kept aligned with it */
    uint8_t *spliced;   /* parent after splicing */
    uint8_t *spliced_mask;
    uint8_t *scratch;   /* blocks being cloned */

    struct ffcc_counters counters;
};

/* xoshiro256**, inline: havoc draws several numbers per mutation. */
static inline uint64_t ffcc_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t ffcc_rand64(ffcc_engine *e)
{
    uint64_t *s = e->rng;
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
static inline uint32_t ffcc_rand_below(ffcc_engine *e, uint32_t limit)
{
    if (limit <= 1) return 0;
    return (uint32_t)(((ffcc_rand64(e) >> 32) * (uint64_t)limit) >> 32);
}

/* engine.c */
int ffcc_add_token(ffcc_engine *e, const uint8_t *data, uint32_t len, int is_auto);
int ffcc_alloc_maps(ffcc_engine *e, uint32_t map_size);

/* forkserver.c */
uint64_t ffcc_now_us(void);
int ffcc_read_full(int fd, void *buf, size_t len, uint32_t timeout_ms);
int ffcc_write_word(int fd, uint32_t word);
/* FFCC_RUN_* of a waitpid() status, counting crashes and hangs. */
int ffcc_run_status(ffcc_engine *e, int32_t status, int timed_out, int *signal_out);

/* batch.c */
/* Where the next child of the batch goes (room for FFCC_SHM_FUZZ_MAX bytes), or
 * NULL when the batch is full; without batches a "batch" is one child. */
uint8_t *ffcc_batch_next(ffcc_engine *e);
/* Add the child just written at ffcc_batch_next(); the caller may set pos, bit. */
struct ffcc_result *ffcc_batch_commit(ffcc_engine *e, uint32_t len);
/* Run the batch's children; their results are e->seg[0 .. n).  FFCC_RUN_OK or _ERROR. */
int ffcc_batch_run(ffcc_engine *e, uint32_t timeout_ms);
/* Copy a stage's unjudged children out of the segment before it is reused. */
void ffcc_results_release(ffcc_engine *e);

/* coverage.c */
void ffcc_classify(uint8_t *trace, uint32_t size);
void ffcc_count_branch_hits(const uint8_t *trace, uint32_t *hits, uint32_t size);
int ffcc_has_new_bits(const uint8_t *trace, uint8_t *virgin, uint32_t size);
void ffcc_simplify(uint8_t *trace, uint32_t size);
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
uint32_t ffcc_havoc_apply(ffcc_engine *e, uint8_t *buf, uint32_t len, uint8_t *mask,
                          uint32_t cycle, uint32_t *applied);

/* deterministic.c: build mutant number idx of a stage into out.  Returns its
 * length, FFCC_DET_SKIP when the mask (or a no-op) rules it out, FFCC_DET_END
 * past the last mutant.  *pos is the mutated byte. */
#define FFCC_DET_END (-1)
#define FFCC_DET_SKIP (-2)
int64_t ffcc_det_mutant(ffcc_engine *e, int kind, uint64_t idx, const uint8_t *in,
                        uint32_t len, const uint8_t *mask, uint8_t *out, int64_t *pos);
/* The mask stage's mutants; *bit is the mask bit the mutant probes. */
int64_t ffcc_mask_mutant(ffcc_engine *e, uint64_t idx, const uint8_t *in, uint32_t len,
                         uint8_t *out, int64_t *pos, uint8_t *bit);

#endif
