"""FairFuzz mutation masks (paper §3.1, Algorithm 3).

A mask holds one byte per input position plus one for "append at the end";
each byte is a MaskFlag set: which mutation categories at that position kept
the target branch hit.  The C core computes masks (the MASK stage) and obeys
them; the bit values are its own, so a numpy mask is handed to C as it is.
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
