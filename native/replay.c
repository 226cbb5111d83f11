/* replay.c - saved inputs run again for their traces (ffuzz report, benchmarks).
 *
 * Many inputs per call: a batching target runs them as batches (batch.c),
 * any other target one request each from this loop; Python sees only the
 * statuses and the traces.  Each input still runs on its own map, in order;
 * an input that crashes or hangs is reported as such and the next one runs
 * in a fresh child, as in a stage.  Nothing is judged: no virgin map, hit
 * count or crash search is touched, so a replay reports what each input does
 * whatever was replayed before. */
#include <stdint.h>
#include <string.h>

#include "engine.h"

/* Called once per replay call. */
int ffcc_replay(ffcc_engine *e, const uint8_t *data, const uint32_t *lens, uint32_t n,
                uint32_t timeout_ms, int *statuses, uint8_t *traces, uint32_t *done)
{
    struct ffcc_children *c = &e->children;
    uint32_t size = e->fsrv.map_size;
    const uint8_t *next = data;
    *done = 0;
    ffcc_results_release(c, size); /* a stage's unjudged children wait aside, as for single runs */
    while (*done < n) {
        uint32_t first = *done, count = 0, ran;
        uint8_t *out;
        while (first + count < n && (out = ffcc_batch_next(e)) != NULL) {
            uint32_t len = lens[first + count] < FFCC_SHM_FUZZ_MAX ? lens[first + count]
                                                                   : FFCC_SHM_FUZZ_MAX;
            memcpy(out, next, len);
            ffcc_batch_commit(e, len);
            next += lens[first + count];
            count++;
        }
        /* Without a deadline a batch runs to its end, in fresh children as children die. */
        if (ffcc_batch_run(e, timeout_ms, 0, &ran) != FFCC_RUN_OK) return FFCC_RUN_ERROR;
        if (ran != count)
            return ffcc_fsrv_fail(&e->fsrv, "the target ran %u of %u inputs", ran, count);
        for (uint32_t i = 0; i < ran; i++) {
            statuses[first + i] = c->seg[i].status;
            memcpy(traces + (size_t)(first + i) * size, c->seg[i].trace, size);
        }
        *done = first + ran;
    }
    return FFCC_RUN_OK;
}
