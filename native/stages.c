/* stages.c - batches of executions: stages, calibration, trimming.
 *
 * judge() is AFL's common_fuzz_stuff plus FairFuzz's bookkeeping: after
 * each run it counts branch hits (numHits), notes whether the target branch
 * was hit, and decides whether the child is worth reporting (new bits for
 * the queue, new simplified coverage for crashes and hangs). */
#include <stdint.h>
#include <string.h>

#include "engine.h"

#define JUDGE_NOTHING (-1)

static int report(struct ffcc_stage *st, int stop, const uint8_t *buf, uint32_t len)
{
    st->stop = stop;
    st->out = buf;
    st->out_len = len;
    return stop;
}

/* Run one child.  Returns an FFCC_STOP_* worth reporting or JUDGE_NOTHING;
 * *hit_target tells whether the child hit the stage's target. */
static int judge(ffcc_engine *e, struct ffcc_stage *st, const uint8_t *buf, uint32_t len,
                 int *hit_target)
{
    int sig;
    int status = ffcc_run_once(e, buf, len, st->timeout_ms, &sig);
    st->execs++;
    *hit_target = st->target >= 0 && (uint64_t)st->target < e->map_size && e->shm[st->target];
    if (*hit_target) st->target_hits++;
    if (status == FFCC_RUN_ERROR) return report(st, FFCC_STOP_ERROR, buf, len);
    if (st->flags & FFCC_STAGE_SHADOW) return JUDGE_NOTHING;
    ffcc_count_branch_hits(e->shm, e->branch_hits, e->map_size);

    if (status == FFCC_RUN_OK) {
        int nb = ffcc_has_new_bits(e->shm, e->virgin, e->map_size);
        if (!nb) return JUDGE_NOTHING;
        st->new_bits = nb;
        return report(st, FFCC_STOP_NEW_PATH, buf, len);
    }
    if (status == FFCC_RUN_TIMEOUT) {
        ffcc_simplify(e->shm, e->map_size);
        if (!ffcc_has_new_bits(e->shm, e->virgin_hang, e->map_size)) return JUDGE_NOTHING;
        /* Confirm: a slow machine is not a hang. */
        status = ffcc_run_once(e, buf, len, st->timeout_ms, &sig);
        if (status == FFCC_RUN_TIMEOUT) return report(st, FFCC_STOP_HANG, buf, len);
        if (status != FFCC_RUN_CRASH) return JUDGE_NOTHING;
    }
    ffcc_simplify(e->shm, e->map_size);
    if (!ffcc_has_new_bits(e->shm, e->virgin_crash, e->map_size)) return JUDGE_NOTHING;
    st->signal = sig;
    return report(st, FFCC_STOP_CRASH, buf, len);
}

static int finish(struct ffcc_stage *st)
{
    st->finished = 1;
    st->stop = FFCC_STOP_FINISHED;
    return st->stop;
}

static int run_havoc(ffcc_engine *e, struct ffcc_stage *st)
{
    const uint8_t *parent = st->input;
    const uint8_t *parent_mask = st->mask;
    uint32_t parent_len = st->len;
    if (st->splice) {
        if (!st->spliced) {
            uint32_t split;
            uint32_t n = ffcc_splice(e, st->input, st->len, st->mask, st->splice, st->splice_len,
                                     e->spliced, e->spliced_mask, &split);
            if (!n) return finish(st);
            st->spliced = 1;
        }
        parent = e->spliced;
        parent_len = st->splice_len;
        parent_mask = st->mask ? e->spliced_mask : NULL;
    }
    uint8_t *mask = parent_mask ? e->work_mask : NULL;
    for (uint64_t calls = 0; calls < st->call_limit; calls++) {
        if (st->execs + st->skipped >= st->budget) return finish(st);
        memcpy(e->work, parent, parent_len);
        if (mask) memcpy(mask, parent_mask, parent_len + 1);
        uint32_t applied;
        uint32_t len = ffcc_havoc_apply(e, e->work, parent_len, mask, st->cycle, &applied);
        if (!applied) { /* the mask left no room: rerunning the parent teaches nothing */
            st->skipped++;
            continue;
        }
        int hit, r = judge(e, st, e->work, len, &hit);
        if (r != JUDGE_NOTHING) return r;
    }
    return st->execs + st->skipped >= st->budget ? finish(st) : FFCC_STOP_LIMIT;
}

static int run_mask(ffcc_engine *e, struct ffcc_stage *st)
{
    for (uint64_t calls = 0; calls < st->call_limit;) {
        int64_t pos;
        uint8_t bit;
        int64_t n = ffcc_mask_mutant(e, st->cursor, st->input, st->len, e->work, &pos, &bit);
        if (n == FFCC_DET_END) return finish(st);
        st->cursor++;
        if (n == FFCC_DET_SKIP) continue;
        calls++;
        int hit, r = judge(e, st, e->work, (uint32_t)n, &hit);
        if (hit && st->mask) st->mask[pos] |= bit;
        st->position = pos;
        if (r != JUDGE_NOTHING) return r;
    }
    return FFCC_STOP_LIMIT;
}

static int run_deterministic(ffcc_engine *e, struct ffcc_stage *st)
{
    for (uint64_t calls = 0; calls < st->call_limit;) {
        int64_t pos;
        int64_t n = ffcc_det_mutant(e, st->kind, st->cursor, st->input, st->len, st->mask,
                                    e->work, &pos);
        if (n == FFCC_DET_END) return finish(st);
        st->cursor++;
        if (n == FFCC_DET_SKIP) continue;
        calls++;
        int hit, r = judge(e, st, e->work, (uint32_t)n, &hit);
        st->position = pos;
        if (r != JUDGE_NOTHING) return r;
    }
    return FFCC_STOP_LIMIT;
}

int ffcc_stage_run(ffcc_engine *e, struct ffcc_stage *st)
{
    st->stop = FFCC_STOP_LIMIT;
    st->new_bits = st->signal = 0;
    st->out = NULL;
    st->out_len = 0;
    if (st->finished) return finish(st);
    if (st->len > FFCC_MAX_INPUT || st->splice_len > FFCC_MAX_INPUT) {
        st->stop = FFCC_STOP_ERROR;
        return st->stop;
    }
    switch (st->kind) {
    case FFCC_STAGE_HAVOC: return run_havoc(e, st);
    case FFCC_STAGE_MASK: return run_mask(e, st);
    default: return run_deterministic(e, st);
    }
}

int ffcc_calibrate(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t runs,
                   uint32_t timeout_ms, int count_hits, struct ffcc_calibration *out)
{
    uint64_t total_us = 0;
    memset(out, 0, sizeof(*out));
    for (uint32_t r = 0; r < runs; r++) {
        int sig;
        uint64_t start = ffcc_now_us();
        int status = ffcc_run_once(e, buf, len, timeout_ms, &sig);
        uint64_t elapsed = ffcc_now_us() - start;
        if (r == 0) {
            out->status = status;
            out->signal = sig;
        }
        if (status != FFCC_RUN_OK) break;
        total_us += elapsed;
        int nb = ffcc_has_new_bits(e->shm, e->virgin, e->map_size);
        if (nb > out->new_bits) out->new_bits = nb;
        uint64_t cksum = ffcc_hash_trace(e->shm, e->map_size);
        if (r == 0) {
            memcpy(e->first_trace, e->shm, e->map_size);
            out->checksum = cksum;
            out->bitmap_size = ffcc_count_bytes(e->shm, e->map_size);
            if (count_hits) ffcc_count_branch_hits(e->shm, e->branch_hits, e->map_size);
        } else if (cksum != out->checksum) {
            out->variable = 1;
            for (uint32_t i = 0; i < e->map_size; i++)
                if (e->first_trace[i] != e->shm[i]) e->var_bytes[i] = 1;
        }
        out->runs++;
    }
    out->exec_us = out->runs ? total_us / out->runs : 0;
    return out->status;
}

int ffcc_note_fault(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                    int *status)
{
    int sig;
    *status = ffcc_run_once(e, buf, len, timeout_ms, &sig);
    if (*status != FFCC_RUN_CRASH && *status != FFCC_RUN_TIMEOUT) return 0;
    ffcc_simplify(e->shm, e->map_size);
    uint8_t *virgin = *status == FFCC_RUN_CRASH ? e->virgin_crash : e->virgin_hang;
    return ffcc_has_new_bits(e->shm, virgin, e->map_size);
}

static uint32_t next_pow2(uint32_t x)
{
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

/* AFL's trim: remove blocks from 1/16 of the input down to 1/1024 (at least
 * 4 bytes), keeping a removal when the child still behaves the same. */
int ffcc_trim(ffcc_engine *e, uint8_t *buf, uint32_t *len, int64_t target, uint64_t checksum,
              uint32_t timeout_ms, uint64_t *execs)
{
    if (*len < 5) return FFCC_RUN_OK;
    uint32_t len_p2 = next_pow2(*len);
    uint32_t remove_len = len_p2 / 16 > 4 ? len_p2 / 16 : 4;
    uint32_t min_remove = len_p2 / 1024 > 4 ? len_p2 / 1024 : 4;
    while (remove_len >= min_remove) {
        uint32_t pos = 0;
        while (pos < *len && *len > remove_len) {
            uint32_t cut = remove_len < *len - pos ? remove_len : *len - pos;
            memcpy(e->work, buf, pos);
            memcpy(e->work + pos, buf + pos + cut, *len - pos - cut);
            int sig, status = ffcc_run_once(e, e->work, *len - cut, timeout_ms, &sig);
            (*execs)++;
            if (status != FFCC_RUN_OK) return status;
            int same = target >= 0 ? (uint64_t)target < e->map_size && e->shm[target] != 0
                                   : ffcc_hash_trace(e->shm, e->map_size) == checksum;
            if (same) {
                memmove(buf + pos, buf + pos + cut, *len - pos - cut);
                *len -= cut;
            } else {
                pos += remove_len;
            }
        }
        remove_len >>= 1;
    }
    return FFCC_RUN_OK;
}
