/* coverage.c - what a trace means: hit-count buckets, new bits, FairFuzz
 * branch hit counts, crash/hang simplification, checksums.
 *
 * Every loop walks the map a 64-bit word at a time and skips zero words:
 * traces are sparse, so the cost follows the covered edges, not the map.  A
 * batch slot's trace also says which of its blocks may be non-zero (its
 * bitmap, ffcc_protocol.h), and the per-child walks visit only those. */
#include <stdint.h>
#include <string.h>

#include "engine.h"

/* AFL buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+.  Called 65536 times,
 * once per process, to fill the lookup table. */
static uint8_t bucket_of(uint32_t count)
{
    if (count == 0) return 0;
    if (count <= 2) return (uint8_t)count;
    if (count == 3) return 4;
    if (count <= 7) return 8;
    if (count <= 15) return 16;
    if (count <= 31) return 32;
    if (count <= 127) return 64;
    return 128;
}

static uint16_t bucket16[65536]; /* two bytes' hit counts -> their buckets */
static int bucket16_ready;       /* bucket16 is filled */

/* Called once per process. */
static void init_buckets(void)
{
    for (uint32_t i = 0; i < 65536; i++)
        bucket16[i] = (uint16_t)(bucket_of(i >> 8) << 8 | bucket_of(i & 0xff));
    bucket16_ready = 1;
}

/* Hit counts to buckets, in place.  Called per execution. */
void ffcc_classify(uint8_t *trace, const uint64_t *blocks, uint32_t size)
{
    if (FFCC_UNLIKELY(!bucket16_ready)) init_buckets();
    uint64_t *w = (uint64_t *)trace;
    struct ffcc_spans s;
    uint32_t from, to;
    for (ffcc_spans_start(&s, blocks, size); ffcc_spans_next(&s, &from, &to);) {
        for (uint32_t i = from; i < to; i++) {
            if (FFCC_LIKELY(!w[i])) continue;
            uint16_t h[4];
            memcpy(h, &w[i], 8);
            for (int j = 0; j < 4; j++) h[j] = bucket16[h[j]];
            memcpy(&w[i], h, 8);
        }
    }
}

/* FairFuzz numHits of one word's eight indices: one more for each hit.
 * Branch-free: which bytes of a word are hit changes from child to child,
 * and a branch per byte mispredicted more than the adds cost. */
static inline void count_word(const uint8_t *bytes, uint32_t *hits)
{
    for (int j = 0; j < 8; j++) hits[j] += bytes[j] != 0;
}

/* has_new_bits' verdict on one word where trace and virgin share bits: 2 = a
 * byte never seen before, 1 = only a new bucket; ret is the verdict so far. */
static inline int word_news(const uint8_t *cur, const uint8_t *vir, int ret)
{
    for (int j = 0; j < 8; j++) {
        if (cur[j] && vir[j] == 0xff) ret = 2;
        else if ((cur[j] & vir[j]) && ret < 1) ret = 1;
    }
    return ret;
}

/* FairFuzz numHits: one more for each index the trace hit.  Called per
 * seed calibration and per judged crash or hang. */
void ffcc_count_branch_hits(const uint8_t *trace, uint32_t *hits, uint32_t size)
{
    const uint64_t *w = (const uint64_t *)trace;
    for (uint32_t i = 0; i < size / 8; i++) {
        if (FFCC_LIKELY(!w[i])) continue;
        count_word(trace + (size_t)i * 8, hits + (size_t)i * 8);
    }
}

/* 2 = a byte never seen before, 1 = only a new bucket, 0 = nothing new.
 * Clears the seen bits in virgin, like AFL's has_new_bits.  Called per
 * calibration run and per judged crash or hang. */
int ffcc_has_new_bits(const uint8_t *trace, uint8_t *virgin, uint32_t size)
{
    const uint64_t *cur = (const uint64_t *)trace;
    uint64_t *vir = (uint64_t *)virgin;
    int ret = 0;
    for (uint32_t i = 0; i < size / 8; i++) {
        if (FFCC_LIKELY(!cur[i]) || FFCC_LIKELY(!(cur[i] & vir[i]))) continue;
        if (ret < 2) ret = word_news(trace + (size_t)i * 8, virgin + (size_t)i * 8, ret);
        vir[i] &= ~cur[i];
    }
    return ret;
}

/* ffcc_count_branch_hits and ffcc_has_new_bits in one walk over the trace:
 * the judgement of every child that ran to its end, the hot path, where two
 * walks over a label-dense map cost as much as the mutation.  Called per
 * judged child. */
int ffcc_count_hits_new_bits(const uint8_t *trace, const uint64_t *blocks, uint32_t *hits,
                             uint8_t *virgin, uint32_t size)
{
    const uint64_t *cur = (const uint64_t *)trace;
    uint64_t *vir = (uint64_t *)virgin;
    int ret = 0;
    struct ffcc_spans s;
    uint32_t from, to;
    for (ffcc_spans_start(&s, blocks, size); ffcc_spans_next(&s, &from, &to);) {
        for (uint32_t i = from; i < to; i++) {
            uint64_t w = cur[i];
            if (FFCC_LIKELY(!w)) continue;
            count_word(trace + (size_t)i * 8, hits + (size_t)i * 8);
            if (FFCC_LIKELY(!(w & vir[i]))) continue;
            if (ret < 2) ret = word_news(trace + (size_t)i * 8, virgin + (size_t)i * 8, ret);
            vir[i] &= ~w;
        }
    }
    return ret;
}

/* Whether a crash's or hang's trace is new to `virgin` (virgin_crash or
 * virgin_hang), which then knows it.  Such traces are compared as hit / not hit
 * (AFL's simplify_trace), where every byte is non-zero, so in a copy: the trace
 * may be a batch slot's map, which is cleared only where its block bits say the
 * target wrote, and each later case in the slot must find its other bytes zero.
 * Called per crashing or hanging child. */
int ffcc_fault_is_new(struct ffcc_maps *maps, const uint8_t *trace, uint8_t *virgin,
                      uint32_t size)
{
    for (uint32_t i = 0; i < size; i++) maps->simplified[i] = trace[i] ? 0x80 : 0x01;
    return ffcc_has_new_bits(maps->simplified, virgin, size);
}

/* The trace's checksum.  Called per calibration run and per trim step. */
uint64_t ffcc_hash_trace(const uint8_t *trace, uint32_t size)
{
    const uint64_t *w = (const uint64_t *)trace;
    uint64_t h = 0x2545f4914f6cdd1dULL ^ size;
    for (uint32_t i = 0; i < size / 8; i++) {
        if (!w[i]) continue;
        h ^= (w[i] + i) * 0x9e3779b97f4a7c15ULL;
        h = (h << 29 | h >> 35) * 0xbf58476d1ce4e5b9ULL;
    }
    return h ^ (h >> 31);
}

/* Non-zero bytes (AFL's bitmap size).  Called per calibration. */
uint32_t ffcc_count_bytes(const uint8_t *trace, uint32_t size)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < size; i++) n += trace[i] != 0;
    return n;
}
