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

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

ffcc_engine *ffcc_engine_new(uint32_t shm_size, uint64_t seed)
{
    ffcc_engine *e = calloc(1, sizeof(*e));
    if (!e) return NULL;
    e->fsrv_pid = e->child_pid = -1;
    e->ctl_fd = e->st_fd = e->input_fd = -1;
    e->crash_exitcode = -1;
    e->shm_size = shm_size;
    e->shm = attach_private_shm(shm_size, &e->shm_id);
    e->shm_fuzz = attach_private_shm(FFCC_SHM_FUZZ_MAX + sizeof(uint32_t), &e->shm_fuzz_id);
    e->batch = (struct ffcc_batch *)attach_private_shm(FFCC_BATCH_SHM_SIZE, &e->batch_id);
    e->stash_maps = malloc(FFCC_BATCH_MAPS_SIZE);
    e->stash_data = malloc(FFCC_BATCH_DATA_SIZE);
    e->batch_cap = 1;
    e->work = malloc(FFCC_SHM_FUZZ_MAX);
    e->work_mask = malloc(FFCC_SHM_FUZZ_MAX + 1);
    e->spliced = malloc(FFCC_SHM_FUZZ_MAX);
    e->spliced_mask = malloc(FFCC_SHM_FUZZ_MAX + 1);
    e->scratch = malloc(FFCC_SHM_FUZZ_MAX);
    if (!e->scratch || !e->shm || !e->shm_fuzz || !e->work || !e->work_mask || !e->spliced ||
        !e->spliced_mask || !e->batch || !e->stash_maps || !e->stash_data) {
        ffcc_engine_free(e);
        return NULL;
    }
    for (int i = 0; i < 4; i++) e->rng[i] = splitmix64(&seed);
    return e;
}

/* The per-map-size buffers, freed on teardown and before re-sizing. */
static void free_maps(ffcc_engine *e)
{
    free(e->virgin);
    free(e->virgin_crash);
    free(e->virgin_hang);
    free(e->var_bytes);
    free(e->branch_hits);
    free(e->first_trace);
}

void ffcc_engine_free(ffcc_engine *e)
{
    if (!e) return;
    ffcc_fsrv_stop(e);
    if (e->shm) shmdt(e->shm);
    if (e->shm_fuzz) shmdt(e->shm_fuzz);
    if (e->batch) shmdt(e->batch);
    free(e->stash_maps);
    free(e->stash_data);
    free_maps(e);
    free(e->work);
    free(e->work_mask);
    free(e->spliced);
    free(e->spliced_mask);
    free(e->scratch);
    free(e);
}

int ffcc_alloc_maps(ffcc_engine *e, uint32_t map_size)
{
    free_maps(e);
    e->map_size = map_size;
    e->virgin = malloc(map_size);
    e->virgin_crash = malloc(map_size);
    e->virgin_hang = malloc(map_size);
    e->var_bytes = calloc(map_size, 1);
    e->branch_hits = calloc(map_size, sizeof(uint32_t));
    e->first_trace = malloc(map_size);
    if (!e->virgin || !e->virgin_crash || !e->virgin_hang || !e->var_bytes ||
        !e->branch_hits || !e->first_trace)
        return -1;
    memset(e->virgin, 0xff, map_size);
    memset(e->virgin_crash, 0xff, map_size);
    memset(e->virgin_hang, 0xff, map_size);
    return 0;
}

int ffcc_engine_shm_id(ffcc_engine *e) { return e->shm_id; }
int ffcc_engine_shm_fuzz_id(ffcc_engine *e) { return e->shm_fuzz_id; }
int ffcc_engine_batch_shm_id(ffcc_engine *e) { return e->batch_id; }
int ffcc_fsrv_batch_size(ffcc_engine *e) { return (int)e->batch_cap; }
int ffcc_fsrv_uses_shm_input(ffcc_engine *e) { return e->use_shm_input; }
void ffcc_engine_set_crash_exitcode(ffcc_engine *e, int code) { e->crash_exitcode = code; }
uint32_t ffcc_engine_token_count(ffcc_engine *e) { return e->token_count; }
uint32_t ffcc_engine_auto_token_count(ffcc_engine *e) { return e->auto_token_count; }

void ffcc_engine_views(ffcc_engine *e, struct ffcc_views *out)
{
    out->trace = e->shm;
    out->virgin = e->virgin;
    out->virgin_crash = e->virgin_crash;
    out->virgin_hang = e->virgin_hang;
    out->var_bytes = e->var_bytes;
    out->branch_hits = e->branch_hits;
    out->calibrated = e->first_trace;
    out->map_size = e->map_size;
}

void ffcc_engine_counters(ffcc_engine *e, struct ffcc_counters *out) { *out = e->counters; }

int ffcc_add_token(ffcc_engine *e, const uint8_t *data, uint32_t len, int is_auto)
{
    if (len == 0 || len > FFCC_MAX_TOKEN_LEN || e->token_count >= FFCC_MAX_TOKENS) return -1;
    for (uint32_t i = 0; i < e->token_count; i++)
        if (e->tokens[i].len == len && !memcmp(e->tokens[i].data, data, len)) return 0;
    struct ffcc_token *t = &e->tokens[e->token_count++];
    t->len = (uint8_t)len;
    memcpy(t->data, data, len);
    if (is_auto) e->auto_token_count++;
    return 0;
}

int ffcc_engine_add_token(ffcc_engine *e, const uint8_t *data, uint32_t len)
{
    return ffcc_add_token(e, data, len, 0);
}
