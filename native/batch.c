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

/* Child i's map slot in the segment.  Called per child of a batch. */
static uint8_t *slot(const struct ffcc_forkserver *fsrv, uint32_t i)
{
    return (uint8_t *)fsrv->batch + FFCC_BATCH_MAPS + (size_t)i * fsrv->map_size;
}

/* Called per child made, and once more when the batch is full. */
uint8_t *ffcc_batch_next(ffcc_engine *e)
{
    const struct ffcc_forkserver *fsrv = &e->fsrv;
    const struct ffcc_children *c = &e->children;
    if (!fsrv->use_batch) return c->seg_cases ? NULL : e->mut.work;
    if (c->seg_cases >= fsrv->batch_cap || FFCC_BATCH_DATA_SIZE - c->seg_bytes < FFCC_SHM_FUZZ_MAX)
        return NULL;
    return (uint8_t *)fsrv->batch + FFCC_BATCH_DATA + c->seg_bytes;
}

/* Called per child made. */
struct ffcc_result *ffcc_batch_commit(ffcc_engine *e, uint32_t len)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_children *c = &e->children;
    uint32_t i = c->seg_cases++;
    struct ffcc_result *r = &c->seg[i];
    r->data = fsrv->use_batch ? (uint8_t *)fsrv->batch + FFCC_BATCH_DATA + c->seg_bytes
                              : e->mut.work;
    r->len = len;
    r->pos = -1;
    r->bit = 0;
    if (fsrv->use_batch) {
        fsrv->batch->offset[i] = c->seg_bytes;
        fsrv->batch->len[i] = len;
        c->seg_bytes += len;
    }
    return r;
}

/* Wait for the request's status, killing the child when its running case
 * has been going for longer than the timeout.  Called per batch request. */
static int wait_status(struct ffcc_forkserver *fsrv, uint32_t timeout_ms, int32_t *status,
                       int *timed_out)
{
    struct ffcc_batch *b = fsrv->batch;
    uint32_t slice = timeout_ms / 4 ? timeout_ms / 4 : 1;
    *timed_out = 0;
    for (;;) {
        int rc = ffcc_read_full(fsrv->st_fd, status, 4, slice);
        if (rc != 1) return rc;
        if (b->started > b->done && ffcc_now_us() - b->case_start_us > timeout_ms * 1000ull) break;
    }
    kill(fsrv->child_pid, SIGKILL);
    fsrv->child_pid = -1;
    *timed_out = 1;
    if (ffcc_read_full(fsrv->st_fd, status, 4, 0)) return -1;
    if (WIFSTOPPED(*status)) { /* it finished the batch just before the kill */
        *timed_out = 0;
        int32_t death;
        if (ffcc_read_full(fsrv->st_fd, &death, 4, 0)) return -1;
    }
    return 0;
}

/* The one child of a batch without the batch protocol.  Called per child
 * of a stage when the target takes no batches. */
static int run_single(ffcc_engine *e, uint32_t timeout_ms)
{
    struct ffcc_result *r = &e->children.seg[0];
    r->trace = e->fsrv.trace;
    r->status = ffcc_run_once(e, r->data, r->len, timeout_ms, &r->signal);
    return r->status == FFCC_RUN_ERROR ? FFCC_RUN_ERROR : FFCC_RUN_OK;
}

/* Called per batch: up to batch_cap children of a stage, or one single run. */
int ffcc_batch_run(ffcc_engine *e, uint32_t timeout_ms)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_children *c = &e->children;
    uint32_t n = c->seg_cases;
    c->seg_cases = c->seg_bytes = 0; /* the next batch starts empty, whatever becomes of this one */
    if (!fsrv->use_batch) return run_single(e, timeout_ms);
    struct ffcc_batch *b = fsrv->batch;
    b->count = n;
    b->map_size = fsrv->map_size;
    b->done = 0;
    for (uint32_t i = 0; i < n; i++) {
        c->seg[i].status = FFCC_RUN_OK;
        c->seg[i].signal = 0;
        c->seg[i].trace = slot(fsrv, i);
    }
    while (b->done < n) {
        memset(fsrv->trace, 0, fsrv->map_size);
        b->started = b->done;
        int32_t pid, status;
        int timed_out;
        if (fsrv->pid <= 0 || ffcc_write_word(fsrv->ctl_fd, 0) ||
            ffcc_read_full(fsrv->st_fd, &pid, 4, 0) || pid <= 0)
            return FFCC_RUN_ERROR;
        fsrv->child_pid = pid;
        if (wait_status(fsrv, timeout_ms, &status, &timed_out)) return FFCC_RUN_ERROR;
        if (WIFSTOPPED(status) && !timed_out) { /* the child waits for the next batch */
            if (b->done < n) return FFCC_RUN_ERROR; /* not an ffcc runtime's answer */
            break;
        }
        fsrv->child_pid = -1;
        if (b->started > b->done) { /* the child died in this case: the status is its */
            uint32_t i = b->done;
            struct ffcc_result *r = &c->seg[i];
            memcpy(slot(fsrv, i), fsrv->trace, fsrv->map_size);
            r->status = ffcc_run_status(fsrv, status, timed_out, &r->signal);
            b->elapsed_us[i] = (uint32_t)(ffcc_now_us() - b->case_start_us);
            b->done = i + 1;
        }
        /* else it left between cases (end of its persistent iterations): a fresh
         * child runs the rest */
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ms = b->elapsed_us[i] / 1000u;
        if (c->seg[i].status == FFCC_RUN_OK && ms > fsrv->counters.slowest_exec_ms)
            fsrv->counters.slowest_exec_ms = ms;
        ffcc_classify(c->seg[i].trace, fsrv->map_size);
    }
    fsrv->counters.execs += n;
    return FFCC_RUN_OK;
}

/* Called before every execution that would overwrite the segment while a
 * stage's results wait to be judged (single runs, hang confirmation). */
void ffcc_results_release(struct ffcc_children *c, uint32_t map_size)
{
    if (c->pending != c->seg || c->pending_next >= c->pending_count) return;
    /* Keep the result being judged (pending_next - 1) and those after it. */
    uint32_t from = c->pending_next ? c->pending_next - 1 : 0;
    size_t data_at = 0;
    for (uint32_t i = from; i < c->pending_count; i++) {
        struct ffcc_result *r = &c->stash[i];
        *r = c->seg[i];
        r->trace = c->stash_maps + (size_t)i * map_size;
        r->data = c->stash_data + data_at;
        memcpy(r->trace, c->seg[i].trace, map_size);
        memcpy(r->data, c->seg[i].data, r->len);
        data_at += r->len;
    }
    c->pending = c->stash;
}
