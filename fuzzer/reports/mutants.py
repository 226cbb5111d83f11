"""What a weak-mutation label's mutant looks like in source, from its label record alone.

A record names its operator by id (``wm.<group>.<what>_<by>``; ffcc.rewriters.operators owns
the list) and, in ``mutants``, carries the original expression as each of its WM operators
mutates it: ffcc writes the text where it knows C's operators, so nothing here spells them
again.  A record without it (a database of an ffcc before ``mutants``) gives a mutant with no
replacement, described by its operator id, original text and kill condition.
"""
from __future__ import annotations

from dataclasses import dataclass

from ffcc.runtime.abi import LabelRecord


@dataclass(frozen=True)
class Mutant:
    group: str                # ROR, AOR, COR, ABS, ... (the id's middle part, upper case)
    replacement: str | None   # the original expression as mutated, where the record has it
    description: str          # what was replaced by what, and when the mutant is killed


def describe(record: LabelRecord) -> Mutant:
    """The mutant of a WM label record (of its ``operator``: an objective from ``also`` is a
    record of that operator, label_coverage.objectives)."""
    group = record.operator.split(".")[1]
    replacement = record.mutants.get(record.operator)
    change = f"{record.original} replaced by {replacement}" if replacement is not None \
        else f"mutates {record.original}"
    return Mutant(group.upper(), replacement,
                  f"{record.operator}: {change}; killed when {record.predicate}")
