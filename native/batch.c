/* batch.c - the fuzzer side of ffcc's batch protocol (ffcc_protocol.h).
 *
 * Children are gathered into a batch, run by one request, and judged one by
 * one afterwards from their map slots, in the order they were made, so the
 * virgin maps and hit counts evolve exactly as with one request per child.
 * A stage may return to Python (a find) with children still to judge; any
 * execution before it resumes (calibrating the find, confirming a hang) would
 * overwrite the segment, so the remaining results are first copied aside.
 *
 * The persistent child runs the cases back to back; the fuzzer only sees the
 * segment's counters move.  Every wait on it has a deadline: the running case
 * must end within the timeout of its start, and when no case runs (before the
 * first, between two, after the loop, at exit) the child has the timeout from
 * the moment the fuzzer saw the last case end.  Past it the child is killed
 * and the batch goes on in a fresh one.
 *
 * A child that crashes outside every case was armed by a case it ran (an
 * atexit handler, a destructor, a timer).  The cases of the live child are
 * kept (its life log); when it crashes outside a case they become suspects.
 * Once the batch is judged they are replayed in fresh children told to leave
 * their loop after the last suspect, the newest alone first (most crashes at
 * exit need no arming), then halves, newer half first, until one case alone
 * reproduces the crash: that case is the crash to save, if its simplified
 * trace is new.  A search costs about two lives of the child; when searches
 * keep finding known crashes (a target armed in most lives), the next ones
 * are spaced out, up to one in FFCC_SEARCH_SPACING_MAX + 1 such crashes. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "engine.h"

/* How a request ended. */
#define END_STOPPED 0     /* the child ran the batch and waits for the next one */
#define END_DIED 1        /* the child died; the forkserver sent its status */
#define END_TIMED_OUT 2   /* the fuzzer killed it at a deadline */
#define END_INTERRUPTED 3 /* the fuzzer got a signal and killed it */

/* Child i's map slot in the segment: its block bitmap, then its map.  Called
 * per child of a batch. */
static uint8_t *slot(const struct ffcc_forkserver *fsrv, uint32_t i)
{
    return ffcc_batch_slot(fsrv->batch, i, fsrv->map_size);
}

static uint8_t *slot_map(const struct ffcc_forkserver *fsrv, uint32_t i)
{
    return slot(fsrv, i) + ffcc_batch_bits_size(fsrv->map_size);
}

/* Zero the blocks the slots used since the last clearing hold, and their
 * bitmaps, so that the target need copy only a case's non-zero blocks.
 * Called per batch. */
static void clear_slots(struct ffcc_forkserver *fsrv)
{
    uint32_t bits_size = ffcc_batch_bits_size(fsrv->map_size);
    for (uint32_t i = 0; i < fsrv->slots_used; i++) {
        uint64_t *bits = (uint64_t *)slot(fsrv, i);
        uint64_t *map = (uint64_t *)((uint8_t *)bits + bits_size);
        struct ffcc_spans s;
        uint32_t from, to;
        for (ffcc_spans_start(&s, bits, fsrv->map_size); ffcc_spans_next(&s, &from, &to);)
            memset(map + from, 0, (size_t)(to - from) * 8);
        memset(bits, 0, bits_size);
    }
    fsrv->slots_used = 0;
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

/* -- case logs ---------------------------------------------------------- */

/* Called per child gone, per search. */
static void log_clear(struct ffcc_case_log *log) { log->count = log->bytes = 0; }

/* Called per case a persistent child runs. */
static void log_add(struct ffcc_case_log *log, const uint8_t *data, uint32_t len)
{
    if (log->count == FFCC_LOG_CASES || FFCC_LOG_BYTES - log->bytes < len) log_clear(log);
    log->offset[log->count] = log->bytes;
    log->len[log->count] = len;
    memcpy(log->data + log->bytes, data, len);
    log->count++;
    log->bytes += len;
}

/* Cases [from, to) of the batch ran in the live child.  Their bytes lie back
 * to back in the segment, so they go into the log in one copy (a batch always
 * fits an empty log).  Called per request. */
static void log_batch(ffcc_engine *e, uint32_t from, uint32_t to)
{
    struct ffcc_case_log *log = &e->deaths.life;
    const struct ffcc_result *seg = e->children.seg;
    if (e->deaths.replaying || from >= to) return;
    uint32_t bytes = (uint32_t)(seg[to - 1].data + seg[to - 1].len - seg[from].data);
    if (FFCC_LOG_CASES - log->count < to - from || FFCC_LOG_BYTES - log->bytes < bytes)
        log_clear(log);
    memcpy(log->data + log->bytes, seg[from].data, bytes);
    for (uint32_t i = from; i < to; i++) {
        log->offset[log->count] = log->bytes + (uint32_t)(seg[i].data - seg[from].data);
        log->len[log->count++] = seg[i].len;
    }
    log->bytes += bytes;
}

/* Called per child gone (died, killed, forkserver restarted). */
void ffcc_deaths_child_gone(struct ffcc_deaths *d) { log_clear(&d->life); }

/* The dead child's cases join the suspects.  Called per crash outside a case. */
static void add_suspects(struct ffcc_deaths *d)
{
    struct ffcc_case_log *life = &d->life, *suspects = &d->suspects;
    if (!suspects->count) { /* the usual case: hand the buffers over */
        struct ffcc_case_log empty = *suspects;
        *suspects = *life;
        *life = empty;
        return;
    }
    for (uint32_t i = 0; i < life->count; i++)
        log_add(suspects, life->data + life->offset[i], life->len[i]);
}

/* A child died outside every case with this waitpid() status.  A normal exit
 * ends a persistent loop; a crash makes the child's cases suspects (or, in a
 * replay, answers it); a kill at the deadline counts as a hang.  Called per
 * child that ends outside a case. */
static void died_outside(ffcc_engine *e, int32_t status, int timed_out)
{
    struct ffcc_deaths *d = &e->deaths;
    int sig;
    if (ffcc_run_status(&e->fsrv, status, timed_out, &sig) == FFCC_RUN_CRASH) {
        if (d->replaying) {
            d->replay_crashed = 1;
            d->replay_signal = sig;
        } else {
            add_suspects(d);
            d->signal = sig;
        }
    }
    log_clear(&d->life);
}

/* Called once per engine. */
static int log_alloc(struct ffcc_case_log *log)
{
    log->data = malloc(FFCC_LOG_BYTES);
    log->offset = malloc(FFCC_LOG_CASES * sizeof(uint32_t));
    log->len = malloc(FFCC_LOG_CASES * sizeof(uint32_t));
    log_clear(log);
    return log->data && log->offset && log->len ? 0 : -1;
}

static void log_free(struct ffcc_case_log *log)
{
    free(log->data);
    free(log->offset);
    free(log->len);
}

/* Called once per engine. */
int ffcc_deaths_alloc(struct ffcc_deaths *d)
{
    return log_alloc(&d->life) | log_alloc(&d->suspects);
}

void ffcc_deaths_free(struct ffcc_deaths *d)
{
    log_free(&d->life);
    log_free(&d->suspects);
}

/* -- one request ----------------------------------------------------------- */

/* Send a request and read the pid of the child that takes it: the live child
 * itself, or a fresh one the forkserver forks.  A live child that died while
 * it waited for the request (a timer, its pipes closed) is reported by the
 * forkserver first: its status comes where its pid was expected, a word that
 * is not its pid.  Called per request. */
static int send_request(ffcc_engine *e)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    int32_t word;
    if (fsrv->pid <= 0) return ffcc_fsrv_fail(fsrv, "no forkserver runs");
    ffcc_stamp_clock(fsrv->batch);
    if (ffcc_write_word(fsrv->ctl_fd, 0)) return ffcc_fsrv_silent(fsrv, FFCC_WAIT_BROKEN);
    uint64_t deadline = ffcc_now_us() + FFCC_GRACE_MS * 1000ull;
    int rc = ffcc_wait_word(fsrv, &word, deadline, 0);
    if (rc == FFCC_WAIT_OK && fsrv->child_pid > 0 && word != fsrv->child_pid) {
        fsrv->child_pid = -1;
        died_outside(e, word, 0);
        rc = ffcc_wait_word(fsrv, &word, deadline, 0);
    }
    if (rc != FFCC_WAIT_OK) return ffcc_fsrv_silent(fsrv, rc);
    if (word <= 0) return ffcc_fsrv_fail(fsrv, "the forkserver sent %d for a child's pid", word);
    fsrv->child_pid = word;
    return FFCC_RUN_OK;
}

/* Kill the child; a stopped status that beats the kill means it finished the
 * batch first, and its death follows.  Called when a child is late, or when
 * the fuzzer is interrupted. */
static int kill_child(ffcc_engine *e, int32_t *status, int *end)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    int32_t death;
    log_clear(&e->deaths.life);
    int rc = ffcc_kill_child(fsrv, status);
    if (rc == FFCC_WAIT_OK && WIFSTOPPED(*status)) {
        *end = END_STOPPED;
        rc = ffcc_wait_word(fsrv, &death, ffcc_now_us() + FFCC_GRACE_MS * 1000ull, 0);
    }
    return rc == FFCC_WAIT_OK ? FFCC_RUN_OK : ffcc_fsrv_silent(fsrv, rc);
}

/* Wait for the end of the request: the child's stopped status or its death
 * status from the forkserver, by the deadlines at the top of this file; a
 * late child is killed.  interruptible: a signal to the fuzzer kills it too.
 * Called per request. */
static int wait_status(ffcc_engine *e, uint32_t timeout_ms, int interruptible, int32_t *status,
                       int *end)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    const struct ffcc_batch *b = fsrv->batch;
    uint64_t limit = (uint64_t)timeout_ms * 1000u, slice = limit / 4 ? limit / 4 : 1;
    uint64_t sent = ffcc_now_us(), seen = sent;
    uint32_t started = b->started, done = b->done;
    int rc;
    for (;;) {
        uint64_t now = ffcc_now_us();
        if (b->started != started || b->done != done) {
            started = b->started;
            done = b->done;
            seen = now;
        }
        /* A running case is timed by the target's clock, but from no later
         * than the fuzzer saw it start and no earlier than the request. */
        uint64_t since = seen;
        if (started > done && b->case_start_us < since)
            since = b->case_start_us > sent ? b->case_start_us : sent;
        uint64_t deadline = since + limit;
        if (now >= deadline) {
            rc = FFCC_WAIT_LATE;
            break;
        }
        rc = ffcc_wait_word(fsrv, status, now + slice < deadline ? now + slice : deadline,
                            interruptible);
        if (rc == FFCC_WAIT_OK) {
            *end = WIFSTOPPED(*status) ? END_STOPPED : END_DIED;
            return FFCC_RUN_OK;
        }
        if (rc == FFCC_WAIT_BROKEN) return ffcc_fsrv_silent(fsrv, rc);
        if (rc == FFCC_WAIT_INTERRUPTED) break;
    }
    *end = rc == FFCC_WAIT_INTERRUPTED ? END_INTERRUPTED : END_TIMED_OUT;
    return kill_child(e, status, end);
}

/* -- batches ----------------------------------------------------------------- */

/* The one child of a batch without the batch protocol.  Called per child
 * of a stage when the target takes no batches. */
static int run_single(ffcc_engine *e, uint32_t timeout_ms, int interruptible, uint32_t *ran)
{
    struct ffcc_result *r = &e->children.seg[0];
    r->trace = e->fsrv.trace;
    r->blocks = NULL;
    r->status = ffcc_execute(e, r->data, r->len, timeout_ms, interruptible, &r->signal);
    *ran = r->status != FFCC_RUN_INTERRUPTED;
    return r->status == FFCC_RUN_ERROR ? FFCC_RUN_ERROR : FFCC_RUN_OK;
}

/* The child died in case i: the status and the trace in the shared map are its.
 * Called per child that dies in a case. */
static void died_in_case(ffcc_engine *e, uint32_t i, int32_t status, int timed_out)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_result *r = &e->children.seg[i];
    uint64_t now = ffcc_now_us(), start = fsrv->batch->case_start_us;
    ffcc_batch_store(slot(fsrv, i), fsrv->trace, fsrv->map_size, fsrv->map_size);
    r->status = ffcc_run_status(fsrv, status, timed_out, &r->signal);
    fsrv->batch->elapsed_us[i] = start < now && now - start < UINT32_MAX ? (uint32_t)(now - start) : 0;
    log_clear(&e->deaths.life);
}

/* Run the segment's n cases, in fresh children as earlier ones die; with
 * leave, the child leaves its loop after the last case.  See ffcc_batch_run
 * for deadline_us and *ran.  Called per batch, and per replay. */
static int run_batch(ffcc_engine *e, uint32_t n, int leave, uint32_t timeout_ms,
                     uint64_t deadline_us, uint32_t *ran)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_children *c = &e->children;
    struct ffcc_batch *b = fsrv->batch;
    uint32_t done = 0;
    b->count = n;
    b->map_size = fsrv->map_size;
    b->leave = (uint32_t)leave;
    clear_slots(fsrv);
    fsrv->slots_used = n;
    for (uint32_t i = 0; i < n; i++) {
        c->seg[i].status = FFCC_RUN_OK;
        c->seg[i].signal = 0;
        c->seg[i].trace = slot_map(fsrv, i);
        c->seg[i].blocks = (const uint64_t *)slot(fsrv, i);
    }
    while (done < n) {
        if (done && deadline_us && ffcc_now_us() >= deadline_us) break; /* no fresh child now */
        uint32_t from = done;
        int32_t status;
        int end;
        memset(fsrv->trace, 0, fsrv->map_size);
        b->started = b->done = from;
        if (send_request(e) || wait_status(e, timeout_ms, deadline_us != 0, &status, &end))
            return FFCC_RUN_ERROR;
        uint32_t started = b->started;
        done = b->done;
        if (done < from || done > n || started < done || started > done + 1)
            return ffcc_fsrv_fail(fsrv, "the target broke the batch protocol (case %u of %u "
                                  "begun, %u done): fuzz it with --no-batch", started, n, done);
        if (end == END_STOPPED) {
            if (done < n)
                return ffcc_fsrv_fail(fsrv, "the target stopped in the middle of a batch (not "
                                      "an ffcc runtime?): fuzz it with --no-batch");
            if (fsrv->child_pid > 0) log_batch(e, from, n);
            break;
        }
        fsrv->child_pid = -1;
        if (end == END_INTERRUPTED) break; /* the running case and the rest never ran */
        if (started > done) {
            died_in_case(e, done++, status, end == END_TIMED_OUT);
        } else { /* between cases, after its loop or at exit: a fresh child runs the rest */
            log_batch(e, from, done);
            died_outside(e, status, end == END_TIMED_OUT);
        }
    }
    *ran = done;
    for (uint32_t i = 0; i < done; i++) {
        uint32_t ms = b->elapsed_us[i] / 1000u;
        if (c->seg[i].status == FFCC_RUN_OK && ms > fsrv->counters.slowest_exec_ms)
            fsrv->counters.slowest_exec_ms = ms;
        ffcc_classify(c->seg[i].trace, c->seg[i].blocks, fsrv->map_size);
    }
    fsrv->counters.execs += done;
    return FFCC_RUN_OK;
}

/* Called per batch: up to batch_cap children of a stage, or one single run. */
int ffcc_batch_run(ffcc_engine *e, uint32_t timeout_ms, uint64_t deadline_us, uint32_t *ran)
{
    struct ffcc_children *c = &e->children;
    uint32_t n = c->seg_cases;
    c->seg_cases = c->seg_bytes = 0; /* the next batch starts empty, whatever becomes of this one */
    if (!e->fsrv.use_batch) return run_single(e, timeout_ms, deadline_us != 0, ran);
    return run_batch(e, n, 0, timeout_ms, deadline_us, ran);
}

/* Called before every execution that would overwrite the segment while a
 * stage's results wait to be judged (single runs, hang confirmation). */
void ffcc_results_release(struct ffcc_children *c, uint32_t map_size)
{
    /* Keep the result being judged (pending_next - 1, the last one too) and those after it. */
    uint32_t from = c->pending_next ? c->pending_next - 1 : 0;
    if (c->pending != c->seg || from >= c->pending_count) return;
    size_t data_at = 0;
    for (uint32_t i = from; i < c->pending_count; i++) {
        struct ffcc_result *r = &c->stash[i];
        *r = c->seg[i];
        r->trace = c->stash_maps + (size_t)i * map_size;
        r->blocks = NULL;
        r->data = c->stash_data + data_at;
        memcpy(r->trace, c->seg[i].trace, map_size);
        memcpy(r->data, c->seg[i].data, r->len);
        data_at += r->len;
    }
    c->pending = c->stash;
}

/* -- crashes outside a case -------------------------------------------------- */

/* Ask the live child to leave its loop at once (an empty batch with leave
 * set), so that a crash it is armed for happens now, its cases known; a
 * child that answers anyway is killed.  Called once per search. */
static int retire(ffcc_engine *e, uint32_t timeout_ms)
{
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_batch *b = fsrv->batch;
    int32_t status;
    int end;
    if (fsrv->child_pid <= 0) return FFCC_RUN_OK;
    b->count = b->started = b->done = 0;
    b->leave = 1;
    if (send_request(e) || wait_status(e, timeout_ms, 0, &status, &end)) return FFCC_RUN_ERROR;
    if (end == END_STOPPED) return fsrv->child_pid > 0 ? kill_child(e, &status, &end) : FFCC_RUN_OK;
    fsrv->child_pid = -1;
    died_outside(e, status, end == END_TIMED_OUT);
    return FFCC_RUN_OK;
}

/* Replay suspects [lo, hi) in a fresh child (more when one dies in a case)
 * that leaves its loop after the last.  Returns 1 when a child crashed outside
 * a case, 0 when none did, -1 when the replay failed or ran out of time.
 * Called a few times per search. */
static int replay(ffcc_engine *e, uint32_t lo, uint32_t hi, uint32_t timeout_ms,
                  uint64_t deadline_us)
{
    struct ffcc_deaths *d = &e->deaths;
    const struct ffcc_case_log *s = &d->suspects;
    int32_t status;
    int end;
    d->replay_crashed = 0;
    while (lo < hi) {
        uint32_t n = 0, ran;
        uint8_t *out;
        while (lo < hi && (out = ffcc_batch_next(e)) != NULL) {
            memcpy(out, s->data + s->offset[lo], s->len[lo]);
            ffcc_batch_commit(e, s->len[lo++]);
            n++;
        }
        e->children.seg_cases = e->children.seg_bytes = 0;
        if (run_batch(e, n, lo == hi, timeout_ms, deadline_us, &ran) || ran < n) return -1;
    }
    if (e->fsrv.child_pid > 0 && kill_child(e, &status, &end)) return -1; /* it did not leave */
    return d->replay_crashed;
}

/* Which suspect alone reproduces the crash: the newest, else halves of the
 * others, the newer half first.  Its index, or -1.  Called once per search. */
static int64_t find_culprit(ffcc_engine *e, uint32_t timeout_ms, uint64_t deadline_us)
{
    uint32_t lo = 0, hi = e->deaths.suspects.count;
    int r = replay(e, hi - 1, hi, timeout_ms, deadline_us);
    if (r) return r > 0 ? (int64_t)hi - 1 : -1;
    hi--;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((r = replay(e, mid, hi, timeout_ms, deadline_us)) > 0)
            lo = mid;
        else if (r < 0 || replay(e, lo, mid, timeout_ms, deadline_us) <= 0)
            return -1;
        else
            hi = mid;
    }
    /* One case left: it must reproduce the crash alone (which also leaves its trace in seg[0]). */
    return lo < hi && replay(e, lo, hi, timeout_ms, deadline_us) > 0 ? (int64_t)lo : -1;
}

/* Whether the crash is new (and now known); always when no trace could be
 * had.  The answer spaces out the next searches.  Called once per search. */
static int crash_is_new(struct ffcc_engine *e, const uint8_t *trace)
{
    struct ffcc_deaths *d = &e->deaths;
    uint32_t size = e->fsrv.map_size;
    int is_new = !trace || ffcc_fault_is_new(&e->maps, trace, e->maps.virgin_crash, size);
    d->spacing = is_new ? 0 : d->spacing * 2 + 1;
    if (d->spacing > FFCC_SEARCH_SPACING_MAX) d->spacing = FFCC_SEARCH_SPACING_MAX;
    d->skip = d->spacing;
    return is_new;
}

/* Called per stage slice, between batches. */
int ffcc_outside_crash(ffcc_engine *e, uint32_t timeout_ms, struct ffcc_result *out)
{
    struct ffcc_deaths *d = &e->deaths;
    if (!d->suspects.count) return 0;
    if (d->skip) {
        d->skip--;
        log_clear(&d->suspects);
        return 0;
    }
    int replayable = retire(e, timeout_ms) == FFCC_RUN_OK;
    uint32_t last = d->suspects.count - 1;
    int64_t found = -1;
    d->replaying = 1;
    if (replayable) found = find_culprit(e, timeout_ms, ffcc_now_us() + FFCC_SEARCH_MS * 1000ull);
    /* Not pinned on one case: the last the child ran stands for the crash, as
     * without batches; its replay gives the trace that says whether it is new. */
    if (found < 0 && replayable) replayable = replay(e, last, last + 1, timeout_ms, 0) >= 0;
    d->replaying = 0;
    uint32_t i = found >= 0 ? (uint32_t)found : last;
    out->data = d->suspects.data + d->suspects.offset[i];
    out->len = d->suspects.len[i];
    out->pos = -1;
    out->status = FFCC_RUN_CRASH;
    out->signal = found >= 0 ? d->replay_signal : d->signal;
    out->trace = replayable ? e->children.seg[0].trace : NULL;
    log_clear(&d->suspects); /* its bytes stay where they are until the next such crash */
    return crash_is_new(e, out->trace);
}
