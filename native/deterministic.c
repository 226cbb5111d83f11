/* deterministic.c - AFL's deterministic stages as numbered mutants.
 *
 * A stage is a sequence of mutants 0, 1, 2, ...; mutant idx is built from
 * the parent alone, so a stage can stop on a finding and resume at idx + 1.
 * Bit flips ignore the mask (FairFuzz keeps them for AFL's token detection);
 * every other stage skips mutants that touch a byte the mask protects. */
#include <stdint.h>
#include <string.h>

#include "engine.h"

/* Whether every byte of [pos, pos + width) allows overwriting.  Called per
 * masked mutant. */
static int overwritable(const uint8_t *mask, uint32_t pos, uint32_t width)
{
    if (!mask) return 1;
    for (uint32_t i = 0; i < width; i++)
        if (!(mask[pos + i] & FFCC_MASK_OVERWRITE)) return 0;
    return 1;
}

/* Called per value mutant (arith, interesting). */
static void store(uint8_t *p, uint32_t value, uint32_t width, int big_endian)
{
    if (width == 1) {
        *p = (uint8_t)value;
    } else if (width == 2) {
        uint16_t v = (uint16_t)value;
        if (big_endian) v = (uint16_t)(v << 8 | v >> 8);
        memcpy(p, &v, 2);
    } else {
        uint32_t v = big_endian ? __builtin_bswap32(value) : value;
        memcpy(p, &v, 4);
    }
}

/* Called per arith mutant. */
static uint32_t load(const uint8_t *p, uint32_t width, int big_endian)
{
    if (width == 1) return *p;
    if (width == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return big_endian ? (uint16_t)(v << 8 | v >> 8) : v;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return big_endian ? __builtin_bswap32(v) : v;
}

/* Bytes a mutant of this kind touches.  Called per mutant. */
static uint32_t width_of(int kind)
{
    switch (kind) {
    case FFCC_STAGE_FLIP16: case FFCC_STAGE_ARITH16: case FFCC_STAGE_INTEREST16: return 2;
    case FFCC_STAGE_FLIP32: case FFCC_STAGE_ARITH32: case FFCC_STAGE_INTEREST32: return 4;
    default: return 1;
    }
}

/* Mutants per position for value stages (both endiannesses above 1 byte).
 * Called per mutant. */
static uint32_t variants_of(int kind)
{
    switch (kind) {
    case FFCC_STAGE_ARITH8: return 2 * FFCC_ARITH_MAX;
    case FFCC_STAGE_ARITH16: case FFCC_STAGE_ARITH32: return 4 * FFCC_ARITH_MAX;
    case FFCC_STAGE_INTEREST8: return FFCC_INTERESTING8_LEN;
    case FFCC_STAGE_INTEREST16: return 2 * FFCC_INTERESTING16_LEN;
    case FFCC_STAGE_INTEREST32: return 2 * FFCC_INTERESTING32_LEN;
    default: return 1;
    }
}

/* Called per deterministic mutant, run or skipped. */
int64_t ffcc_det_mutant(const struct ffcc_mutator *m, int kind, uint64_t idx, const uint8_t *in,
                        uint32_t len, const uint8_t *mask, uint8_t *out, int64_t *pos)
{
    switch (kind) {
    case FFCC_STAGE_FLIP1:
    case FFCC_STAGE_FLIP2:
    case FFCC_STAGE_FLIP4: {
        uint32_t bits = kind == FFCC_STAGE_FLIP1 ? 1 : kind == FFCC_STAGE_FLIP2 ? 2 : 4;
        if ((uint64_t)len * 8 < bits || idx > (uint64_t)len * 8 - bits) return FFCC_DET_END;
        memcpy(out, in, len);
        for (uint32_t b = 0; b < bits; b++) {
            uint64_t bit = idx + b;
            out[bit >> 3] ^= (uint8_t)(128u >> (bit & 7));
        }
        *pos = (int64_t)(idx >> 3);
        return len;
    }
    case FFCC_STAGE_FLIP16:
    case FFCC_STAGE_FLIP32: {
        uint32_t w = width_of(kind);
        if (len < w || idx > len - w) return FFCC_DET_END;
        memcpy(out, in, len);
        for (uint32_t b = 0; b < w; b++) out[idx + b] ^= 0xff;
        *pos = (int64_t)idx;
        return len;
    }
    case FFCC_STAGE_ARITH8:
    case FFCC_STAGE_ARITH16:
    case FFCC_STAGE_ARITH32:
    case FFCC_STAGE_INTEREST8:
    case FFCC_STAGE_INTEREST16:
    case FFCC_STAGE_INTEREST32: {
        uint32_t w = width_of(kind), n = variants_of(kind);
        uint64_t p = idx / n;
        uint32_t j = (uint32_t)(idx % n);
        if (len < w || p > len - w) return FFCC_DET_END;
        *pos = (int64_t)p;
        if (!overwritable(mask, (uint32_t)p, w)) return FFCC_DET_SKIP;
        memcpy(out, in, len);
        uint32_t value;
        int big;
        if (kind <= FFCC_STAGE_ARITH32) {
            uint32_t delta = j % FFCC_ARITH_MAX + 1, sub = (j / FFCC_ARITH_MAX) & 1;
            big = (int)(j / (2 * FFCC_ARITH_MAX));
            uint32_t old = load(in + p, w, big);
            value = sub ? old - delta : old + delta;
        } else {
            big = w > 1 && (j & 1);
            uint32_t k = w > 1 ? j / 2 : j;
            value = w == 1 ? (uint32_t)(uint8_t)ffcc_interesting8[k]
                  : w == 2 ? (uint32_t)(uint16_t)ffcc_interesting16[k]
                           : (uint32_t)ffcc_interesting32[k];
        }
        store(out + p, value, w, big);
        if (!memcmp(out + p, in + p, w)) return FFCC_DET_SKIP;
        return len;
    }
    case FFCC_STAGE_TOKEN_OVERWRITE:
    case FFCC_STAGE_TOKEN_INSERT: {
        uint32_t n = m->token_count;
        uint32_t positions = kind == FFCC_STAGE_TOKEN_INSERT ? len + 1 : len;
        if (n == 0 || idx / n >= positions) return FFCC_DET_END;
        uint32_t p = (uint32_t)(idx / n);
        const struct ffcc_token *t = &m->tokens[idx % n];
        *pos = p;
        if (kind == FFCC_STAGE_TOKEN_OVERWRITE) {
            if (p + t->len > len || !overwritable(mask, p, t->len)) return FFCC_DET_SKIP;
            if (!memcmp(in + p, t->data, t->len)) return FFCC_DET_SKIP;
            memcpy(out, in, len);
            memcpy(out + p, t->data, t->len);
            return len;
        }
        if (len + t->len > FFCC_SHM_FUZZ_MAX) return FFCC_DET_SKIP;
        if (mask && !(mask[p] & FFCC_MASK_INSERT)) return FFCC_DET_SKIP;
        memcpy(out, in, p);
        memcpy(out + p, t->data, t->len);
        memcpy(out + p + t->len, in + p, len - p);
        return (int64_t)len + t->len;
    }
    }
    return FFCC_DET_END;
}

/* FairFuzz Algorithm 3 as mutants: 3 per position (flip the byte, insert a
 * random byte before it, delete it) and one final insert at the end.  Called
 * per mask probe. */
int64_t ffcc_mask_mutant(struct ffcc_mutator *m, uint64_t idx, const uint8_t *in, uint32_t len,
                         uint8_t *out, int64_t *pos, uint8_t *bit)
{
    if (idx > (uint64_t)len * 3) return FFCC_DET_END;
    uint32_t p = (uint32_t)(idx / 3);
    uint32_t c = idx == (uint64_t)len * 3 ? 1 : (uint32_t)(idx % 3);
    *pos = p;
    if (c == 0) {
        memcpy(out, in, len);
        out[p] ^= 0xff;
        *bit = FFCC_MASK_OVERWRITE;
        return len;
    }
    if (c == 1) {
        if (len + 1 > FFCC_SHM_FUZZ_MAX) return FFCC_DET_SKIP;
        memcpy(out, in, p);
        out[p] = (uint8_t)ffcc_rand_below(m, 256);
        memcpy(out + p + 1, in + p, len - p);
        *bit = FFCC_MASK_INSERT;
        return (int64_t)len + 1;
    }
    if (len == 1) return FFCC_DET_SKIP; /* AFL never runs an empty input */
    memcpy(out, in, p);
    memcpy(out + p, in + p + 1, len - p - 1);
    *bit = FFCC_MASK_DELETE;
    return (int64_t)len - 1;
}
