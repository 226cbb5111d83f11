/* batch.c - the fuzzer side of ffcc's batch protocol (ffcc_protocol.h).
 *
 * Children are gathered into a batch, run by one request, and judged one by
 * one afterwards from their map slots, in the order they were made, so the
 * virgin maps and hit counts evolve exactly as with one request per child.
 * A stage may return to Python (a find) with children still to judge; any
 * execution before it resumes (calibrating the find, confirming a hang) would
 * overwrite the segment, so the remaining results are first copied aside. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "engine.h"

static uint8_t *slot(ffcc_engine *e, uint32_t i)
{
    return (uint8_t *)e->batch + FFCC_BATCH_MAPS + (size_t)i * e->map_size;
}

uint8_t *ffcc_batch_next(ffcc_engine *e)
{
    if (!e->use_batch) return e->seg_cases ? NULL : e->work;
    if (e->seg_cases >= e->batch_cap || FFCC_BATCH_DATA_SIZE - e->seg_bytes < FFCC_SHM_FUZZ_MAX)
        return NULL;
    return (uint8_t *)e->batch + FFCC_BATCH_DATA + e->seg_bytes;
}

struct ffcc_result *ffcc_batch_commit(ffcc_engine *e, uint32_t len)
{
    uint32_t i = e->seg_cases++;
    struct ffcc_result *r = &e->seg[i];
    r->data = e->use_batch ? (uint8_t *)e->batch + FFCC_BATCH_DATA + e->seg_bytes : e->work;
    r->len = len;
    r->pos = -1;
    r->bit = 0;
    if (e->use_batch) {
        e->batch->offset[i] = e->seg_bytes;
        e->batch->len[i] = len;
        e->seg_bytes += len;
    }
    return r;
}

/* Wait for the request's status, killing the child when its running case
 * has been going for longer than the timeout. */
static int wait_status(ffcc_engine *e, uint32_t timeout_ms, int32_t *status, int *timed_out)
{
    struct ffcc_batch *b = e->batch;
    uint32_t slice = timeout_ms / 4 ? timeout_ms / 4 : 1;
    *timed_out = 0;
    for (;;) {
        int rc = ffcc_read_full(e->st_fd, status, 4, slice);
        if (rc != 1) return rc;
        if (b->started > b->done && ffcc_now_us() - b->case_start_us > timeout_ms * 1000ull) break;
    }
    kill(e->child_pid, SIGKILL);
    e->child_pid = -1;
    *timed_out = 1;
    if (ffcc_read_full(e->st_fd, status, 4, 0)) return -1;
    if (WIFSTOPPED(*status)) { /* it finished the batch just before the kill */
        *timed_out = 0;
        int32_t death;
        if (ffcc_read_full(e->st_fd, &death, 4, 0)) return -1;
    }
    return 0;
}

/* The one child of a batch without the batch protocol. */
static int run_single(ffcc_engine *e, uint32_t timeout_ms)
{
    struct ffcc_result *r = &e->seg[0];
    r->trace = e->shm;
    r->status = ffcc_run_once(e, r->data, r->len, timeout_ms, &r->signal);
    return r->status == FFCC_RUN_ERROR ? FFCC_RUN_ERROR : FFCC_RUN_OK;
}

int ffcc_batch_run(ffcc_engine *e, uint32_t timeout_ms)
{
    uint32_t n = e->seg_cases;
    e->seg_cases = e->seg_bytes = 0; /* the next batch starts empty, whatever becomes of this one */
    if (!e->use_batch) return run_single(e, timeout_ms);
    struct ffcc_batch *b = e->batch;
    b->count = n;
    b->map_size = e->map_size;
    b->done = 0;
    for (uint32_t i = 0; i < n; i++) {
        e->seg[i].status = FFCC_RUN_OK;
        e->seg[i].signal = 0;
        e->seg[i].trace = slot(e, i);
    }
    while (b->done < n) {
        memset(e->shm, 0, e->map_size);
        b->started = b->done;
        int32_t pid, status;
        int timed_out;
        if (e->fsrv_pid <= 0 || ffcc_write_word(e->ctl_fd, 0) ||
            ffcc_read_full(e->st_fd, &pid, 4, 0) || pid <= 0)
            return FFCC_RUN_ERROR;
        e->child_pid = pid;
        if (wait_status(e, timeout_ms, &status, &timed_out)) return FFCC_RUN_ERROR;
        if (WIFSTOPPED(status) && !timed_out) { /* the child waits for the next batch */
            if (b->done < n) return FFCC_RUN_ERROR; /* not an ffcc runtime's answer */
            break;
        }
        e->child_pid = -1;
        if (b->started > b->done) { /* the child died in this case: the status is its */
            uint32_t i = b->done;
            struct ffcc_result *r = &e->seg[i];
            memcpy(slot(e, i), e->shm, e->map_size);
            r->status = ffcc_run_status(e, status, timed_out, &r->signal);
            b->elapsed_us[i] = (uint32_t)(ffcc_now_us() - b->case_start_us);
            b->done = i + 1;
        }
        /* else it left between cases (end of its persistent iterations): a fresh
         * child runs the rest */
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ms = b->elapsed_us[i] / 1000u;
        if (e->seg[i].status == FFCC_RUN_OK && ms > e->counters.slowest_exec_ms)
            e->counters.slowest_exec_ms = ms;
        ffcc_classify(e->seg[i].trace, e->map_size);
    }
    e->counters.execs += n;
    return FFCC_RUN_OK;
}

void ffcc_results_release(ffcc_engine *e)
{
    if (e->pending != e->seg || e->pending_next >= e->pending_count) return;
    /* Keep the result being judged (pending_next - 1) and those after it. */
    uint32_t from = e->pending_next ? e->pending_next - 1 : 0;
    size_t data_at = 0;
    for (uint32_t i = from; i < e->pending_count; i++) {
        struct ffcc_result *r = &e->stash[i];
        *r = e->seg[i];
        r->trace = e->stash_maps + (size_t)i * e->map_size;
        r->data = e->stash_data + data_at;
        memcpy(r->trace, e->seg[i].trace, e->map_size);
        memcpy(r->data, e->seg[i].data, r->len);
        data_at += r->len;
    }
    e->pending = e->stash;
}
