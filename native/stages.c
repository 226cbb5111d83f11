/* stages.c - batches of executions: stages, calibration, trimming.
 *
 * A stage makes children (havoc, deterministic or mask mutants) into a batch
 * (batch.c), runs it, then judges each child: judge() is AFL's
 * common_fuzz_stuff plus FairFuzz's bookkeeping: it counts branch hits
 * (numHits), notes whether the target branch was hit, and decides whether
 * the child is worth reporting (new bits for the queue, new simplified
 * coverage for crashes and hangs). */
#include <stdint.h>
#include <string.h>

#include "engine.h"

#define JUDGE_NOTHING (-1)

/* Set the stage's report for Python.  Called per finding. */
static int report(struct ffcc_stage *st, int stop, const uint8_t *buf, uint32_t len)
{
    st->stop = stop;
    st->out = buf;
    st->out_len = len;
    return stop;
}

/* The MASK stage's other branches: each one's mask gets the probe's mutation
 * category where the probe kept that branch hit, as the target's does.
 * Called per mask probe. */
static void mark_also(struct ffcc_stage *st, const struct ffcc_result *r, const uint8_t *trace,
                      uint32_t size)
{
    uint8_t *at = st->also_masks + r->pos;
    for (uint32_t i = 0; i < st->also_count; i++, at += st->len + 1)
        if ((uint64_t)st->also[i] < size && trace[st->also[i]]) *at |= r->bit;
}

/* Judge one child that has run.  Returns an FFCC_STOP_* worth reporting or
 * JUDGE_NOTHING; *hit_target tells whether the child hit the stage's target.
 * Called per child of a stage: the hot path. */
static int judge(ffcc_engine *e, struct ffcc_stage *st, struct ffcc_result *r, int *hit_target)
{
    struct ffcc_maps *maps = &e->maps;
    uint8_t *shared = e->fsrv.trace;
    uint32_t size = e->fsrv.map_size;
    uint8_t *trace = r->trace;
    int status = r->status, sig = r->signal;
    st->execs++;
    *hit_target = st->target >= 0 && (uint64_t)st->target < size && trace[st->target];
    if (*hit_target) st->target_hits++;
    if (st->also_count && r->bit) mark_also(st, r, trace, size);
    if (status == FFCC_RUN_ERROR) return report(st, FFCC_STOP_ERROR, r->data, r->len);
    if (st->flags & FFCC_STAGE_SHADOW) return JUDGE_NOTHING;
    if (status == FFCC_RUN_OK) {
        int nb = ffcc_count_hits_new_bits(trace, r->blocks, maps->branch_hits, maps->virgin, size);
        if (!nb) return JUDGE_NOTHING;
        if (trace != shared) memcpy(shared, trace, size); /* Python reads it there */
        st->new_bits = nb;
        return report(st, FFCC_STOP_NEW_PATH, r->data, r->len);
    }
    ffcc_count_branch_hits(trace, maps->branch_hits, size);
    if (status == FFCC_RUN_TIMEOUT) {
        if (!ffcc_fault_is_new(maps, trace, maps->virgin_hang, size)) return JUDGE_NOTHING;
        /* Confirm: a slow machine is not a hang.  The rerun reuses the batch
         * segment, so this child and the rest move aside first. */
        struct ffcc_children *c = &e->children;
        ffcc_results_release(c, size);
        r = &c->pending[c->pending_next - 1];
        status = ffcc_run_once(e, r->data, r->len, st->timeout_ms, &sig);
        trace = shared;
        if (status == FFCC_RUN_TIMEOUT) return report(st, FFCC_STOP_HANG, r->data, r->len);
        if (status != FFCC_RUN_CRASH) return JUDGE_NOTHING;
    }
    if (!ffcc_fault_is_new(maps, trace, maps->virgin_crash, size)) return JUDGE_NOTHING;
    st->signal = sig;
    return report(st, FFCC_STOP_CRASH, r->data, r->len);
}

/* A new crash outside every case (batch.c), pinned on a case.  Shadow stages
 * leave it for the next stage.  Called per batch and per call. */
static int judge_outside(ffcc_engine *e, struct ffcc_stage *st)
{
    struct ffcc_result r;
    if ((st->flags & FFCC_STAGE_SHADOW) || !ffcc_outside_crash(e, st->timeout_ms, &r))
        return JUDGE_NOTHING;
    st->signal = r.signal;
    st->partner = -1;
    return report(st, FFCC_STOP_CRASH, r.data, r.len);
}

/* Called once per stage, at its end. */
static int finish(struct ffcc_stage *st)
{
    st->finished = 1;
    st->stop = FFCC_STOP_FINISHED;
    return st->stop;
}

/* Judge the stage's children that have run and are not judged yet, in the
 * order they were made; stop at the first worth reporting.  Called per batch
 * and when a stage resumes. */
static int drain(ffcc_engine *e, struct ffcc_stage *st)
{
    struct ffcc_children *c = &e->children;
    while (c->pending_next < c->pending_count) {
        struct ffcc_result *r = &c->pending[c->pending_next++];
        int hit, rc = judge(e, st, r, &hit);
        r = &c->pending[c->pending_next - 1]; /* judge may have moved it aside */
        if (hit && r->bit && st->mask) st->mask[r->pos] |= r->bit;
        if (r->pos >= 0) st->position = r->pos;
        st->partner = r->partner;
        if (rc != JUDGE_NOTHING) return rc;
    }
    return JUDGE_NOTHING;
}

#define CHILD_END FFCC_DET_END
#define CHILD_SKIP FFCC_DET_SKIP

/* Splice the input with second parent k into the work buffer (AFL's splice
 * cycle k); 0 when the two have no useful cut.  Called once per second
 * parent, or again after a batch cut short went back to an earlier one. */
static const uint8_t *second_parent(const struct ffcc_stage *st, uint32_t k)
{
    const uint8_t *b = st->splice;
    for (uint32_t i = 0; i < k; i++) b += st->splice_lens[i];
    return b;
}

static uint32_t splice_with(struct ffcc_mutator *m, struct ffcc_stage *st, uint32_t k)
{
    uint32_t split;
    uint32_t n = ffcc_splice_apply(m, st->input, st->len, st->mask, second_parent(st, k),
                                   st->splice_lens[k], m->spliced, m->spliced_mask, &split);
    if (n) {
        st->spliced = k + 1;
        st->spliced_len = n;
        st->split = split;
    }
    return n;
}

/* The next havoc child into out, CHILD_SKIP when the mask left no room for
 * any mutation (rerunning the parent teaches nothing) or the splice with
 * this child's second parent has no cut (its children are all skipped),
 * CHILD_END once the budget is spent counting the `queued` children not
 * judged yet.  A stage with splices makes its `plain` children from the
 * parent alone, then per_splice children from each second parent in turn:
 * AFL's havoc stage and splice cycles in one stage, so that batches run
 * across all of them.  Called per havoc child. */
static int64_t havoc_child(struct ffcc_mutator *m, struct ffcc_stage *st, uint8_t *out,
                           uint32_t queued)
{
    uint64_t index = st->execs + st->skipped + queued;
    if (index >= st->budget) return CHILD_END;
    const uint8_t *parent = st->input;
    const uint8_t *parent_mask = st->mask;
    uint32_t parent_len = st->len;
    if (st->splice && index >= st->plain) {
        uint64_t k = (index - st->plain) / st->per_splice;
        if (k >= st->splices) return CHILD_END;
        if (st->spliced != k + 1 && !splice_with(m, st, (uint32_t)k)) {
            st->skipped += st->plain + (k + 1) * st->per_splice - index;
            return CHILD_SKIP;
        }
        parent = m->spliced;
        parent_len = st->spliced_len;
        parent_mask = st->mask ? m->spliced_mask : NULL;
    }
    uint8_t *mask = parent_mask ? m->work_mask : NULL;
    memcpy(out, parent, parent_len);
    if (mask) memcpy(mask, parent_mask, parent_len + 1);
    uint32_t applied;
    uint32_t len = ffcc_havoc_apply(m, out, parent_len, mask, st->cycle, &applied);
    if (!applied) {
        st->skipped++;
        return CHILD_SKIP;
    }
    return len;
}

/* The stage's next child into out (see havoc_child); pos and bit for the
 * deterministic and mask stages.  Called per child, run or skipped. */
static int64_t next_child(struct ffcc_mutator *m, struct ffcc_stage *st, uint8_t *out,
                          uint32_t queued, int64_t *pos, uint8_t *bit)
{
    int64_t n;
    *pos = -1;
    *bit = 0;
    if (st->kind == FFCC_STAGE_HAVOC) return havoc_child(m, st, out, queued);
    if (st->kind == FFCC_STAGE_MASK)
        n = ffcc_mask_mutant(m, st->cursor, st->input, st->len, out, pos, bit);
    else
        n = ffcc_det_mutant(m, st->kind, st->cursor, st->input, st->len, st->mask, out, pos);
    if (n != CHILD_END) st->cursor++;
    return n;
}

/* Called per child made. */
static void note_made_at(struct ffcc_made_at *at, const struct ffcc_mutator *m, const struct ffcc_stage *st)
{
    memcpy(at->rng, m->rng, sizeof at->rng);
    at->cursor = st->cursor;
    at->skipped = st->skipped;
    at->spliced = st->spliced;
    at->split = st->split;
}

/* Called per batch cut short. */
static void make_again_from(struct ffcc_mutator *m, struct ffcc_stage *st, const struct ffcc_made_at *at)
{
    memcpy(m->rng, at->rng, sizeof m->rng);
    st->cursor = at->cursor;
    st->skipped = at->skipped;
    if (at->spliced && at->spliced != st->spliced) { /* the buffer moved on to a later splice */
        uint32_t k = at->spliced - 1;
        st->spliced_len = ffcc_splice_at(st->input, st->mask, second_parent(st, k),
                                         st->splice_lens[k], at->split, m->spliced,
                                         st->mask ? m->spliced_mask : NULL);
    }
    st->spliced = at->spliced;
    st->split = at->split;
}

/* Make children a batch at a time, run each batch, judge its children.  A
 * batch cut short (time, signal) leaves children that never ran: the stage
 * goes back to where it made the first of them.  Called per stage slice. */
static int run_children(ffcc_engine *e, struct ffcc_stage *st)
{
    struct ffcc_children *c = &e->children;
    int rc = drain(e, st);
    if (rc == JUDGE_NOTHING) rc = judge_outside(e, st);
    if (rc != JUDGE_NOTHING) return rc;
    uint64_t limit = st->execs + st->call_limit;
    uint64_t deadline = st->call_ms ? ffcc_now_us() + st->call_ms * 1000ull : 0;
    for (;;) {
        uint32_t n = 0, ran = 0;
        int64_t len = 0;
        uint8_t *out;
        while (st->execs + n < limit && (out = ffcc_batch_next(e)) != NULL) {
            int64_t pos;
            uint8_t bit;
            struct ffcc_made_at at;
            note_made_at(&at, &e->mut, st);
            len = next_child(&e->mut, st, out, n, &pos, &bit);
            if (len == CHILD_END) break;
            if (len == CHILD_SKIP) continue;
            struct ffcc_result *r = ffcc_batch_commit(e, (uint32_t)len);
            r->made_at = at;
            r->pos = pos;
            r->bit = bit;
            r->partner = (int32_t)st->spliced - 1; /* -1 until the first splice cycle */
            n++;
        }
        if (n) {
            if (ffcc_batch_run(e, st->timeout_ms, deadline, &ran) != FFCC_RUN_OK) {
                c->pending_count = c->pending_next = 0;
                return report(st, FFCC_STOP_ERROR, NULL, 0);
            }
            if (ran < n) make_again_from(&e->mut, st, &c->seg[ran].made_at);
            c->pending = c->seg;
            c->pending_count = ran;
            c->pending_next = 0;
            rc = drain(e, st);
            if (rc == JUDGE_NOTHING) rc = judge_outside(e, st);
            if (rc != JUDGE_NOTHING) return rc;
            if (ran < n) return FFCC_STOP_LIMIT;
        }
        if (len == CHILD_END) return finish(st);
        if (st->execs >= limit || (deadline && ffcc_now_us() >= deadline)) return FFCC_STOP_LIMIT;
    }
}

/* Whether every second parent fits the work buffer and each gets children. */
static int splices_fit(const struct ffcc_stage *st)
{
    if (!st->splice) return 1;
    if (!st->splices || !st->per_splice || !st->splice_lens) return 0;
    for (uint32_t i = 0; i < st->splices; i++)
        if (st->splice_lens[i] > FFCC_SHM_FUZZ_MAX) return 0;
    return 1;
}

/* Called per stage slice (about SLICE_SECONDS of executions) from Python. */
int ffcc_stage_run(ffcc_engine *e, struct ffcc_stage *st)
{
    struct ffcc_children *c = &e->children;
    st->stop = FFCC_STOP_LIMIT;
    st->new_bits = st->signal = 0;
    st->partner = -1;
    st->out = NULL;
    st->out_len = 0;
    if (c->pending_owner != st) { /* children of an abandoned stage are dropped */
        c->pending_owner = st;
        c->pending_count = c->pending_next = 0;
    }
    if (st->finished) return finish(st);
    if (st->len > FFCC_SHM_FUZZ_MAX || !splices_fit(st)) {
        st->stop = FFCC_STOP_ERROR;
        return st->stop;
    }
    return run_children(e, st);
}

/* Called per seed, per resumed entry, per new queue entry and per trimmed entry. */
int ffcc_calibrate(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t runs,
                   uint32_t timeout_ms, int count_hits, struct ffcc_calibration *out)
{
    struct ffcc_maps *maps = &e->maps;
    uint8_t *trace = e->fsrv.trace;
    uint32_t size = e->fsrv.map_size;
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
        int nb = ffcc_has_new_bits(trace, maps->virgin, size);
        if (nb > out->new_bits) out->new_bits = nb;
        uint64_t cksum = ffcc_hash_trace(trace, size);
        if (r == 0) {
            memcpy(maps->first_trace, trace, size);
            out->checksum = cksum;
            out->bitmap_size = ffcc_count_bytes(trace, size);
            if (count_hits) ffcc_count_branch_hits(trace, maps->branch_hits, size);
        } else if (cksum != out->checksum) {
            out->variable = 1;
            for (uint32_t i = 0; i < size; i++)
                if (maps->first_trace[i] != trace[i]) maps->var_bytes[i] = 1;
        }
        out->runs++;
    }
    out->exec_us = out->runs ? total_us / out->runs : 0;
    return out->status;
}

/* Called per crash and hang input-to-state runs into, and per saved one on
 * resume (ffcc_note_fault). */
int ffcc_last_fault_is_new(ffcc_engine *e, int status)
{
    if (status != FFCC_RUN_CRASH && status != FFCC_RUN_TIMEOUT) return 0;
    uint8_t *virgin = status == FFCC_RUN_CRASH ? e->maps.virgin_crash : e->maps.virgin_hang;
    return ffcc_fault_is_new(&e->maps, e->fsrv.trace, virgin, e->fsrv.map_size);
}

/* Called per saved crash and hang on resume. */
int ffcc_note_fault(ffcc_engine *e, const uint8_t *buf, uint32_t len, uint32_t timeout_ms,
                    int *status)
{
    int sig;
    *status = ffcc_run_once(e, buf, len, timeout_ms, &sig);
    return ffcc_last_fault_is_new(e, *status);
}

/* Called once per trim. */
static uint32_t next_pow2(uint32_t x)
{
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

/* AFL's trim: remove blocks from 1/16 of the input down to 1/1024 (at least
 * 4 bytes), keeping a removal when the child still behaves the same.  Called
 * once per queue entry, before it is first fuzzed. */
int ffcc_trim(ffcc_engine *e, uint8_t *buf, uint32_t *len, int64_t target, uint64_t checksum,
              uint32_t timeout_ms, uint64_t *execs)
{
    uint8_t *work = e->mut.work;
    const uint8_t *trace = e->fsrv.trace;
    uint32_t size = e->fsrv.map_size;
    if (*len < 5) return FFCC_RUN_OK;
    uint32_t len_p2 = next_pow2(*len);
    uint32_t remove_len = len_p2 / 16 > 4 ? len_p2 / 16 : 4;
    uint32_t min_remove = len_p2 / 1024 > 4 ? len_p2 / 1024 : 4;
    while (remove_len >= min_remove) {
        uint32_t pos = 0;
        while (pos < *len && *len > remove_len) {
            uint32_t cut = remove_len < *len - pos ? remove_len : *len - pos;
            memcpy(work, buf, pos);
            memcpy(work + pos, buf + pos + cut, *len - pos - cut);
            int sig, status = ffcc_run_once(e, work, *len - cut, timeout_ms, &sig);
            (*execs)++;
            if (status != FFCC_RUN_OK) return status;
            int same = target >= 0 ? (uint64_t)target < size && trace[target] != 0
                                   : ffcc_hash_trace(trace, size) == checksum;
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
