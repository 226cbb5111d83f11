"""FairFuzz mutation masks (paper §3.1, Algorithm 3).

A mask holds one byte per input position plus one for "append at the end";
each byte is a MaskFlag set: which mutation categories at that position kept
the target branch hit.  The bit values are the C core's, so a numpy mask is
handed to C as it is.
"""
from __future__ import annotations

from enum import IntFlag

import numpy as np
from ffcc.native import lib


class MaskFlag(IntFlag):
    """Mutation categories a position allows."""

    OVERWRITE = lib.FFCC_MASK_OVERWRITE
    INSERT = lib.FFCC_MASK_INSERT
    DELETE = lib.FFCC_MASK_DELETE


ALL = MaskFlag.OVERWRITE | MaskFlag.INSERT | MaskFlag.DELETE


def empty_mask(length: int) -> np.ndarray:
    """A mask for an input of `length` bytes with nothing allowed yet."""
    return np.zeros(length + 1, dtype=np.uint8)


def ok_to_mutate(mask: np.ndarray, flag: MaskFlag, position: int, width: int = 1) -> bool:
    """FairFuzz OKTOMUTATE: every byte the mutation touches allows `flag`."""
    if position < 0 or position + width > len(mask):
        return False
    return bool(np.all(mask[position:position + width] & int(flag)))


def allowed_share(mask: np.ndarray, flag: MaskFlag) -> float:
    """Fraction of input positions (the append slot excluded) that allow `flag`."""
    body = mask[:-1]
    return float(np.count_nonzero(body & int(flag))) / len(body) if len(body) else 0.0
