/* havoc.c - stacked random mutations that respect a FairFuzz mask.
 *
 * Each mutation has a category (overwrite, insert, delete) and a width.  With
 * a mask, its position is drawn uniformly among the positions where every
 * byte it touches carries that category (FairFuzz RANDOMOKTOMUTATE); when
 * there is none the mutation is skipped.  Inserts and deletes edit the mask
 * like the input, new bytes being fully modifiable, so later mutations of
 * the same stack still see an aligned (if approximate) mask. */
#include <stdint.h>
#include <string.h>

#include "engine.h"

/* 2..16 stacked mutations per child, as AFL++ 4 stacks them: few enough that
 * children stay close to their parent (and small). */
#define HAVOC_STACK_POW2 4
#define BLK_SMALL 32
#define BLK_MEDIUM 128
#define BLK_LARGE 1500
#define BLK_XL 32768
#define MASK_ALL (FFCC_MASK_OVERWRITE | FFCC_MASK_INSERT | FFCC_MASK_DELETE)

const int8_t ffcc_interesting8[FFCC_INTERESTING8_LEN] = {-128, -1, 0, 1, 16, 32, 64, 100, 127};
const int16_t ffcc_interesting16[FFCC_INTERESTING16_LEN] = {
    -128, -1, 0, 1, 16, 32, 64, 100, 127, -32768, -129, 128, 255, 256, 512, 1000, 1024, 4096,
    32767};
const int32_t ffcc_interesting32[FFCC_INTERESTING32_LEN] = {
    -128,   -1,    0,     1,          16,     32,    64,         100,       127,
    -32768, -129,  128,   255,        256,    512,   1000,       1024,      4096,
    32767,  INT32_MIN, -100663046, -32769, 32768, 65535, 65536, 100663045, INT32_MAX};

enum havoc_op {
    OP_FLIP_BIT,
    OP_INTEREST8,
    OP_INTEREST16,
    OP_INTEREST32,
    OP_ARITH8,
    OP_ARITH16,
    OP_ARITH32,
    OP_RANDOM_BYTE,
    OP_DELETE,
    OP_DELETE_TOO, /* deletes twice as likely: keeps inputs short, like AFL */
    OP_INSERT,
    OP_OVERWRITE,
    OP_TOKEN_OVERWRITE,
    OP_TOKEN_INSERT,
    OP_COUNT
};

/* Called per mask byte looked at while placing a masked mutation. */
static int all_set(const uint8_t *mask, uint32_t width, uint8_t bit)
{
    for (uint32_t i = 0; i < width; i++)
        if (!(mask[i] & bit)) return 0;
    return 1;
}

/* pick_position with a mask: a few rejection tries first (uniform when they
 * succeed), then an exact count-and-pick pass (uniform too), so the mixture
 * stays uniform.  Called per masked mutation. */
static int64_t pick_masked(struct ffcc_mutator *m, const uint8_t *mask, uint32_t span,
                           uint32_t width, uint8_t bit)
{
    for (int t = 0; t < 8; t++) {
        uint32_t k = ffcc_rand_below(m, span);
        if (all_set(mask + k, width, bit)) return k;
    }
    uint32_t run = 0, n = 0, end = span + width - 1;
    for (uint32_t i = 0; i < end; i++) {
        run = (mask[i] & bit) ? run + 1 : 0;
        if (run >= width) n++;
    }
    if (!n) return -1;
    uint32_t r = ffcc_rand_below(m, n);
    run = 0;
    for (uint32_t i = 0; i < end; i++) {
        run = (mask[i] & bit) ? run + 1 : 0;
        if (run >= width && r-- == 0) return (int64_t)i - width + 1;
    }
    return -1;
}

/* A start k in [0, span) whose width mask bytes all carry bit, uniformly, or
 * -1; without a mask any k.  Inline: without a mask a call would cost more
 * than the draw.  Called per mutation. */
static inline int64_t pick_position(struct ffcc_mutator *m, const uint8_t *mask, uint32_t span,
                                    uint32_t width, uint8_t bit)
{
    if (span == 0) return -1;
    if (!mask) return ffcc_rand_below(m, span);
    return pick_masked(m, mask, span, width, bit);
}

/* AFL's block length for inserts, overwrites and deletes; cycle (the havoc
 * block level) opens the larger classes.  Called per block mutation. */
static uint32_t choose_block_len(struct ffcc_mutator *m, uint32_t limit, uint32_t cycle)
{
    uint32_t min_len, max_len, rlim = cycle < 2 ? 1 : (cycle < 3 ? 2 : 3);
    switch (ffcc_rand_below(m, rlim)) {
    case 0: min_len = 1; max_len = BLK_SMALL; break;
    case 1: min_len = BLK_SMALL; max_len = BLK_MEDIUM; break;
    default:
        if (ffcc_rand_below(m, 10)) {
            min_len = BLK_MEDIUM;
            max_len = BLK_LARGE;
        } else {
            min_len = BLK_LARGE;
            max_len = BLK_XL;
        }
    }
    if (min_len >= limit) min_len = 1;
    if (max_len > limit) max_len = limit;
    return min_len + ffcc_rand_below(m, max_len - min_len + 1);
}

/* Byte swaps for big-endian values.  Called per 2- or 4-byte value mutation. */
static uint16_t swap16(uint16_t x) { return (uint16_t)(x << 8 | x >> 8); }
static uint32_t swap32(uint32_t x) { return __builtin_bswap32(x); }

/* Called per insert mutation. */
static void insert_bytes(uint8_t *buf, uint8_t *mask, uint32_t len, uint32_t at,
                         const uint8_t *src, uint32_t n)
{
    memmove(buf + at + n, buf + at, len - at);
    memcpy(buf + at, src, n);
    if (mask) {
        memmove(mask + at + n, mask + at, len + 1 - at);
        memset(mask + at, MASK_ALL, n);
    }
}

/* Called per delete mutation. */
static void delete_bytes(uint8_t *buf, uint8_t *mask, uint32_t len, uint32_t at, uint32_t n)
{
    memmove(buf + at, buf + at + n, len - at - n);
    if (mask) memmove(mask + at, mask + at + n, len + 1 - at - n);
}

/* Add or subtract 1..FFCC_ARITH_MAX to a width-byte integer, either
 * endianness.  Called per arithmetic mutation. */
static void arith(struct ffcc_mutator *m, uint8_t *p, uint32_t width)
{
    uint32_t delta = 1 + ffcc_rand_below(m, FFCC_ARITH_MAX);
    int sub = ffcc_rand_below(m, 2), big = ffcc_rand_below(m, 2);
    if (width == 1) {
        *p = (uint8_t)(sub ? *p - delta : *p + delta);
    } else if (width == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        if (big) v = swap16(v);
        v = (uint16_t)(sub ? v - delta : v + delta);
        if (big) v = swap16(v);
        memcpy(p, &v, 2);
    } else {
        uint32_t v;
        memcpy(&v, p, 4);
        if (big) v = swap32(v);
        v = sub ? v - delta : v + delta;
        if (big) v = swap32(v);
        memcpy(p, &v, 4);
    }
}

/* Overwrite with an interesting value.  Called per interesting-value mutation. */
static void interesting(struct ffcc_mutator *m, uint8_t *p, uint32_t width)
{
    int big = ffcc_rand_below(m, 2);
    if (width == 1) {
        *p = (uint8_t)ffcc_interesting8[ffcc_rand_below(m, FFCC_INTERESTING8_LEN)];
    } else if (width == 2) {
        uint16_t v = (uint16_t)ffcc_interesting16[ffcc_rand_below(m, FFCC_INTERESTING16_LEN)];
        if (big) v = swap16(v);
        memcpy(p, &v, 2);
    } else {
        uint32_t v = (uint32_t)ffcc_interesting32[ffcc_rand_below(m, FFCC_INTERESTING32_LEN)];
        if (big) v = swap32(v);
        memcpy(p, &v, 4);
    }
}

/* Apply one mutation; returns the new length.  *applied is cleared when the
 * mutation had no room (no allowed position, input too short or too long).
 * Called 2..16 times per havoc child. */
static uint32_t mutate_once(struct ffcc_mutator *m, uint8_t *buf, uint32_t len, uint8_t *mask,
                            uint32_t cycle, int *applied)
{
    uint32_t n_ops = m->token_count ? OP_COUNT : OP_TOKEN_OVERWRITE;
    int op = (int)ffcc_rand_below(m, n_ops);
    int64_t k;
    *applied = 1;
    switch (op) {
    case OP_FLIP_BIT:
        if ((k = pick_position(m, mask, len, 1, FFCC_MASK_OVERWRITE)) < 0) break;
        buf[k] ^= (uint8_t)(128u >> ffcc_rand_below(m, 8));
        return len;
    case OP_RANDOM_BYTE:
        if ((k = pick_position(m, mask, len, 1, FFCC_MASK_OVERWRITE)) < 0) break;
        buf[k] ^= (uint8_t)(1 + ffcc_rand_below(m, 255));
        return len;
    case OP_INTEREST8:
    case OP_INTEREST16:
    case OP_INTEREST32:
    case OP_ARITH8:
    case OP_ARITH16:
    case OP_ARITH32: {
        static const uint32_t widths[] = {1, 2, 4, 1, 2, 4};
        uint32_t w = widths[op - OP_INTEREST8];
        if (len < w) break;
        if ((k = pick_position(m, mask, len - w + 1, w, FFCC_MASK_OVERWRITE)) < 0) break;
        if (op <= OP_INTEREST32) interesting(m, buf + k, w);
        else arith(m, buf + k, w);
        return len;
    }
    case OP_DELETE:
    case OP_DELETE_TOO: {
        if (len < 2) break;
        uint32_t n = choose_block_len(m, len - 1, cycle);
        if ((k = pick_position(m, mask, len - n + 1, n, FFCC_MASK_DELETE)) < 0) break;
        delete_bytes(buf, mask, len, (uint32_t)k, n);
        return len - n;
    }
    case OP_INSERT: {
        if (len == 0 || len + 1 >= FFCC_SHM_FUZZ_MAX) break;
        int clone = ffcc_rand_below(m, 4) != 0;
        uint32_t n = clone ? choose_block_len(m, len, cycle)
                           : choose_block_len(m, BLK_XL, cycle);
        if (len + n > FFCC_SHM_FUZZ_MAX) break;
        if ((k = pick_position(m, mask, len + 1, 1, FFCC_MASK_INSERT)) < 0) break;
        uint8_t *block = m->scratch;
        if (clone) memcpy(block, buf + ffcc_rand_below(m, len - n + 1), n);
        else memset(block, ffcc_rand_below(m, 2) ? (int)ffcc_rand_below(m, 256) : buf[ffcc_rand_below(m, len)], n);
        insert_bytes(buf, mask, len, (uint32_t)k, block, n);
        return len + n;
    }
    case OP_OVERWRITE: {
        if (len < 2) break;
        uint32_t n = choose_block_len(m, len - 1, cycle);
        if ((k = pick_position(m, mask, len - n + 1, n, FFCC_MASK_OVERWRITE)) < 0) break;
        if (ffcc_rand_below(m, 4)) memmove(buf + k, buf + ffcc_rand_below(m, len - n + 1), n);
        else memset(buf + k, ffcc_rand_below(m, 2) ? (int)ffcc_rand_below(m, 256) : buf[ffcc_rand_below(m, len)], n);
        return len;
    }
    case OP_TOKEN_OVERWRITE: {
        const struct ffcc_token *t = &m->tokens[ffcc_rand_below(m, m->token_count)];
        if (t->len > len) break;
        if ((k = pick_position(m, mask, len - t->len + 1, t->len, FFCC_MASK_OVERWRITE)) < 0) break;
        memcpy(buf + k, t->data, t->len);
        return len;
    }
    case OP_TOKEN_INSERT: {
        const struct ffcc_token *t = &m->tokens[ffcc_rand_below(m, m->token_count)];
        if (len + t->len > FFCC_SHM_FUZZ_MAX) break;
        if ((k = pick_position(m, mask, len + 1, 1, FFCC_MASK_INSERT)) < 0) break;
        insert_bytes(buf, mask, len, (uint32_t)k, t->data, t->len);
        return len + t->len;
    }
    }
    *applied = 0;
    return len;
}

/* Called per havoc child. */
uint32_t ffcc_havoc_apply(struct ffcc_mutator *m, uint8_t *buf, uint32_t len, uint8_t *mask,
                          uint32_t cycle, uint32_t *applied)
{
    uint32_t stack = 1u << (1 + ffcc_rand_below(m, HAVOC_STACK_POW2));
    *applied = 0;
    for (uint32_t i = 0; i < stack; i++) {
        int ok;
        len = mutate_once(m, buf, len, mask, cycle, &ok);
        *applied += (uint32_t)ok;
    }
    return len;
}

/* Called by tests and tools only. */
uint32_t ffcc_havoc_mutate(ffcc_engine *e, uint8_t *buf, uint32_t len, uint8_t *mask,
                           uint32_t cycle)
{
    uint32_t applied;
    return ffcc_havoc_apply(&e->mut, buf, len, mask, cycle, &applied);
}

/* AFL's splice: cut between the first and last differing bytes, keep a's
 * head and b's tail.  The head keeps a's mask, the tail is fully modifiable
 * (FairFuzz README).  Returns the new length (b's), 0 if no useful cut
 * exists; *split_out is the cut.  Called once per splice stage. */
uint32_t ffcc_splice_apply(struct ffcc_mutator *m, const uint8_t *a, uint32_t a_len,
                           const uint8_t *a_mask, const uint8_t *b, uint32_t b_len, uint8_t *out,
                           uint8_t *out_mask, uint32_t *split_out)
{
    uint32_t common = a_len < b_len ? a_len : b_len;
    int64_t first = -1, last = -1;
    for (uint32_t i = 0; i < common; i++) {
        if (a[i] != b[i]) {
            if (first < 0) first = i;
            last = i;
        }
    }
    if (first < 0 || last < 2 || first == last) return 0;
    uint32_t split = (uint32_t)first + ffcc_rand_below(m, (uint32_t)(last - first));
    *split_out = split;
    return ffcc_splice_at(a, a_mask, b, b_len, split, out, out_mask);
}

/* a's head up to split and b's tail into out (split <= both lengths), the
 * masks as ffcc_splice_apply gives them.  Called per splice, and again when a
 * batch cut short goes back to an earlier splice. */
uint32_t ffcc_splice_at(const uint8_t *a, const uint8_t *a_mask, const uint8_t *b,
                        uint32_t b_len, uint32_t split, uint8_t *out, uint8_t *out_mask)
{
    memcpy(out, a, split);
    memcpy(out + split, b + split, b_len - split);
    if (out_mask) {
        if (a_mask) memcpy(out_mask, a_mask, split);
        else memset(out_mask, MASK_ALL, split);
        memset(out_mask + split, MASK_ALL, b_len - split + 1);
    }
    return b_len;
}

/* Called by tests and tools only. */
uint32_t ffcc_splice(ffcc_engine *e, const uint8_t *a, uint32_t a_len, const uint8_t *a_mask,
                     const uint8_t *b, uint32_t b_len, uint8_t *out, uint8_t *out_mask,
                     uint32_t *split_out)
{
    return ffcc_splice_apply(&e->mut, a, a_len, a_mask, b, b_len, out, out_mask, split_out);
}
