"""ffcc_batch_store (runtime/ffcc_protocol.h), the target's end of every batched case, against
the rule it implements, byte by byte: each 64-byte block of the map's first ``used`` bytes
with a non-zero byte is copied into the slot, its bit set and the block cleared; all-zero
blocks, and the bytes past ``used`` (a label region no label wrote), are left alone.  It
scans in 16-byte vectors and 512-byte superblocks, so maps of every size (short last blocks,
sizes not a multiple of 16), every ``used`` and hits at every offset are tried, under gcc and
clang."""

from __future__ import annotations

import subprocess

import pytest
from helpers import have, run_program

from ffcc import runtime

CHECK_C = r"""
#include "ffcc_protocol.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rule, one byte at a time. */
static void reference(uint8_t *slot, uint8_t *map, uint32_t size, uint32_t used)
{
  uint64_t *bits = (uint64_t *)slot;
  uint8_t *into = slot + ffcc_batch_bits_size(size);
  for (uint32_t at = 0; at < used; at += FFCC_BATCH_BLOCK) {
    uint32_t len = used - at < FFCC_BATCH_BLOCK ? used - at : FFCC_BATCH_BLOCK;
    int hit = 0;
    for (uint32_t k = 0; k < len; k++) hit |= map[at + k] != 0;
    if (!hit) continue;
    memcpy(into + at, map + at, len);
    memset(map + at, 0, len);
    bits[at / FFCC_BATCH_BLOCK / 64] |= (uint64_t)1 << (at / FFCC_BATCH_BLOCK % 64);
  }
}

#define MAX 70000
static uint8_t map_a[MAX], map_b[MAX], slot_a[2 * MAX], slot_b[2 * MAX];

int main(void)
{
  srand(7);
  for (int round = 0; round < 5000; round++) {
    uint32_t size = round < 600 ? (uint32_t)round + 1 : 1 + (uint32_t)(rand() % (MAX - 1));
    uint32_t used = round % 3 ? size : (uint32_t)rand() % (size + 1);
    memset(map_a, 0, sizeof map_a);
    memset(slot_a, 0, sizeof slot_a);
    memset(slot_b, 0, sizeof slot_b);
    for (int h = rand() % 40; h > 0; h--) map_a[rand() % size] = (uint8_t)(1 + rand() % 255);
    if (round % 7 == 0) map_a[size - 1] = 1; /* the last byte of a short block */
    memcpy(map_b, map_a, sizeof map_a);
    reference(slot_a, map_a, size, used);
    ffcc_batch_store(slot_b, map_b, size, used);
    if (memcmp(slot_a, slot_b, sizeof slot_a) || memcmp(map_a, map_b, sizeof map_a)) {
      printf("differs: round %d, map of %u bytes, %u used\n", round, size, used);
      return 1;
    }
  }
  puts("same");
  return 0;
}
"""


@pytest.mark.parametrize("cc", [c for c in ("gcc", "clang") if have(c)])
def test_batch_store_keeps_exactly_the_non_zero_blocks(tmp_path, cc) -> None:
    (tmp_path / "check.c").write_text(CHECK_C)
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                    f"-I{runtime.RUNTIME_DIR}", "-o", str(tmp_path / "check"),
                    str(tmp_path / "check.c")], check=True)
    done = run_program([str(tmp_path / "check")], timeout=60)
    assert done.status == 0 and done.stdout == b"same\n", done.stdout
