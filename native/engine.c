/* engine.c - lifetime of the engine: shared memory, maps, RNG, tokens.
 *
 * The shared-memory segments are marked for removal right after attaching:
 * Linux keeps them alive while attached (the forkserver attaches by id), and
 * nothing leaks if the fuzzer is killed with SIGKILL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#include "engine.h"

/* A private segment of size bytes, or NULL.  Called three times per engine. */
static uint8_t *attach_private_shm(uint32_t size, int *id_out)
{
    int id = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
    if (id < 0) return NULL;
    void *mem = shmat(id, NULL, 0);
    shmctl(id, IPC_RMID, NULL);
    if (mem == (void *)-1) return NULL;
    *id_out = id;
    return mem;
}

/* Seeds the RNG: called four times per engine. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Called once per campaign (twice when the target needs a larger map). */
ffcc_engine *ffcc_engine_new(uint32_t shm_size, uint64_t seed)
{
    ffcc_engine *e = calloc(1, sizeof(*e));
    if (!e) return NULL;
    struct ffcc_forkserver *fsrv = &e->fsrv;
    struct ffcc_mutator *m = &e->mut;
    struct ffcc_children *c = &e->children;
    fsrv->pid = fsrv->child_pid = -1;
    fsrv->ctl_fd = fsrv->st_fd = fsrv->input_fd = fsrv->interrupt_fd = -1;
    fsrv->crash_exitcode = -1;
    fsrv->trace_capacity = shm_size;
    fsrv->trace = attach_private_shm(shm_size, &fsrv->trace_id);
    fsrv->shm_fuzz = attach_private_shm(FFCC_SHM_FUZZ_MAX + sizeof(uint32_t), &fsrv->shm_fuzz_id);
    fsrv->batch = (struct ffcc_batch *)attach_private_shm(FFCC_BATCH_SHM_SIZE, &fsrv->batch_id);
    fsrv->batch_cap = 1;
    c->stash_maps = malloc(FFCC_BATCH_MAPS_SIZE);
    c->stash_data = malloc(FFCC_BATCH_DATA_SIZE);
    m->work = malloc(FFCC_SHM_FUZZ_MAX);
    m->work_mask = malloc(FFCC_SHM_FUZZ_MAX + 1);
    m->spliced = malloc(FFCC_SHM_FUZZ_MAX);
    m->spliced_mask = malloc(FFCC_SHM_FUZZ_MAX + 1);
    m->scratch = malloc(FFCC_SHM_FUZZ_MAX);
    if (!m->scratch || !fsrv->trace || !fsrv->shm_fuzz || !m->work || !m->work_mask ||
        !m->spliced || !m->spliced_mask || !fsrv->batch || !c->stash_maps || !c->stash_data ||
        ffcc_deaths_alloc(&e->deaths)) {
        ffcc_engine_free(e);
        return NULL;
    }
    fsrv->batch->layout = FFCC_BATCH_LAYOUT;
    fsrv->batch->us_per_tick_q32 = ffcc_tick_rate();
    for (int i = 0; i < 4; i++) m->rng[i] = splitmix64(&seed);
    return e;
}

/* The per-map-size buffers, freed on teardown and before re-sizing. */
static void free_maps(struct ffcc_maps *maps)
{
    free(maps->virgin);
    free(maps->virgin_crash);
    free(maps->virgin_hang);
    free(maps->var_bytes);
    free(maps->branch_hits);
    free(maps->first_trace);
    free(maps->simplified);
}

/* Called once per engine, from Python's garbage collector. */
void ffcc_engine_free(ffcc_engine *e)
{
    if (!e) return;
    ffcc_fsrv_stop(e);
    if (e->fsrv.trace) shmdt(e->fsrv.trace);
    if (e->fsrv.shm_fuzz) shmdt(e->fsrv.shm_fuzz);
    if (e->fsrv.batch) shmdt(e->fsrv.batch);
    free(e->children.stash_maps);
    free(e->children.stash_data);
    ffcc_deaths_free(&e->deaths);
    free_maps(&e->maps);
    free(e->mut.work);
    free(e->mut.work_mask);
    free(e->mut.spliced);
    free(e->mut.spliced_mask);
    free(e->mut.scratch);
    free(e);
}

/* Called per forkserver start that changes the map size. */
int ffcc_maps_alloc(struct ffcc_maps *maps, uint32_t map_size)
{
    free_maps(maps);
    maps->virgin = malloc(map_size);
    maps->virgin_crash = malloc(map_size);
    maps->virgin_hang = malloc(map_size);
    maps->var_bytes = calloc(map_size, 1);
    maps->branch_hits = calloc(map_size, sizeof(uint32_t));
    maps->first_trace = malloc(map_size);
    maps->simplified = malloc(map_size);
    if (!maps->virgin || !maps->virgin_crash || !maps->virgin_hang || !maps->var_bytes ||
        !maps->branch_hits || !maps->first_trace || !maps->simplified)
        return -1;
    memset(maps->virgin, 0xff, map_size);
    memset(maps->virgin_crash, 0xff, map_size);
    memset(maps->virgin_hang, 0xff, map_size);
    return 0;
}

/* Accessors: ids and sizes once per forkserver start; counters at every stop check
 * (each stage slice); token counts per fuzzed entry and per status update; the
 * interrupt fd once per engine; the error once per failure. */
int ffcc_engine_shm_id(ffcc_engine *e) { return e->fsrv.trace_id; }
int ffcc_engine_shm_fuzz_id(ffcc_engine *e) { return e->fsrv.shm_fuzz_id; }
int ffcc_engine_batch_shm_id(ffcc_engine *e) { return e->fsrv.batch_id; }
int ffcc_fsrv_batch_size(ffcc_engine *e) { return (int)e->fsrv.batch_cap; }
int ffcc_fsrv_uses_shm_input(ffcc_engine *e) { return e->fsrv.use_shm_input; }
void ffcc_engine_set_crash_exitcode(ffcc_engine *e, int code) { e->fsrv.crash_exitcode = code; }
void ffcc_engine_set_interrupt_fd(ffcc_engine *e, int fd) { e->fsrv.interrupt_fd = fd; }
const char *ffcc_engine_error(ffcc_engine *e) { return e->fsrv.error; }
uint32_t ffcc_engine_token_count(ffcc_engine *e) { return e->mut.token_count; }
uint32_t ffcc_engine_auto_token_count(ffcc_engine *e) { return e->mut.auto_token_count; }
void ffcc_engine_counters(ffcc_engine *e, struct ffcc_counters *out) { *out = e->fsrv.counters; }

/* Called once per forkserver start. */
void ffcc_engine_views(ffcc_engine *e, struct ffcc_views *out)
{
    out->trace = e->fsrv.trace;
    out->virgin = e->maps.virgin;
    out->virgin_crash = e->maps.virgin_crash;
    out->virgin_hang = e->maps.virgin_hang;
    out->var_bytes = e->maps.var_bytes;
    out->branch_hits = e->maps.branch_hits;
    out->calibrated = e->maps.first_trace;
    out->map_size = e->fsrv.map_size;
}

/* Called per token at startup (-x dictionaries, the target's auto-dictionary). */
int ffcc_add_token(struct ffcc_mutator *m, const uint8_t *data, uint32_t len, int is_auto)
{
    if (len == 0 || len > FFCC_MAX_TOKEN_LEN || m->token_count >= FFCC_MAX_TOKENS) return -1;
    for (uint32_t i = 0; i < m->token_count; i++)
        if (m->tokens[i].len == len && !memcmp(m->tokens[i].data, data, len)) return 0;
    struct ffcc_token *t = &m->tokens[m->token_count++];
    t->len = (uint8_t)len;
    memcpy(t->data, data, len);
    if (is_auto) m->auto_token_count++;
    return 0;
}

/* Called per -x token at startup. */
int ffcc_engine_add_token(ffcc_engine *e, const uint8_t *data, uint32_t len)
{
    return ffcc_add_token(&e->mut, data, len, 0);
}
