"""labels.info: the labels as an lcov tracefile, so that genhtml renders them on the sources.

Every label that was not pruned is a branch of its line: ``BRDA:line,0,label id,taken``, taken
being the number of saved inputs that lit it.  Block and branch are numbers because Debian's
lcov 1.16 (genhtml) accepts nothing else; the branch number is the label id, which names the
same label in the summary, mutation.json and the label database.  A line with labels gets
``DA:line,count``: the number of saved inputs that lit at least one of its labels.
"""
from __future__ import annotations

from collections.abc import Iterable

from ffcc.fuzzer.reports.label_coverage import LabelResult, grouped


def file_record(path: str, labels: list[LabelResult], line_hits: dict[int, int]) -> str:
    """One SF ... end_of_record section."""
    out = ["TN:", f"SF:{path}"]
    for label in sorted(labels, key=lambda label: (label.record.line, label.record.id)):
        out.append(f"BRDA:{label.record.line},0,{label.record.id},{label.hits}")
    out += [f"BRF:{len(labels)}", f"BRH:{sum(label.covered for label in labels)}"]
    out += [f"DA:{line},{hits}" for line, hits in sorted(line_hits.items())]
    out += [f"LF:{len(line_hits)}", f"LH:{sum(hits > 0 for hits in line_hits.values())}",
            "end_of_record"]
    return "\n".join(out) + "\n"


def tracefile(labels: Iterable[LabelResult], line_hits: dict[tuple[str, int], int]) -> str:
    """The whole tracefile; ``line_hits``: (file, line) -> inputs, for every line with labels."""
    goals = [label for label in labels if not label.pruned]
    return "".join(
        file_record(path, file_labels,
                    {line: hits for (file, line), hits in line_hits.items() if file == path})
        for path, file_labels in grouped(goals, lambda label: label.record.file).items())
