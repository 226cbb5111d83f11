"""``--in-macros``: put the code that macros expand to within reach of labels.

Each outermost macro invocation inside a selected function body is replaced by its expansion as
the real preprocessor writes it (the backend compiler's ``-E``, run on a copy of the file whose
invocations are wrapped in marker identifiers; the driver builds that command and hands it in as
``LabelOptions.macro_preprocessor``). Stringified and pasted arguments, ``__LINE__``
and ``__FILE__`` therefore come out exactly as the compile would make them, and the rewriters
then see plain code. An expansion is kept only if preprocessing it again gives it back unchanged
(a self-referential macro's name in an expansion would otherwise be expanded a second time) and
if it holds no directive (``_Pragma`` comes out as a ``#pragma`` line); and the expanded file is
used only if it preprocesses to the very tokens the original does (``__COUNTER__`` would not).

An expansion is written on its invocation's first line and followed by as many line breaks as
the invocation spanned, so every other token keeps its line; ``Expansion.to_original`` maps
offsets back to the file on disk for the label records.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from .model import PreprocessCommand
from .unit import Unit, function_body, lex

# A preprocessing directive: its logical line, continuation lines included.
_DIRECTIVE = re.compile(rb"^[ \t]*#(?:\\\r?\n|[^\n])*", re.M)
_MARKED = re.compile(rb"__ffcc_mb_(\d+)_(.*?)__ffcc_me_\1_", re.S)
_MARKER = re.compile(r"__ffcc_m[be]_\d+_")
_PREPROCESS_SECONDS = 120


@dataclass(frozen=True)
class Replacement:
    """Original bytes [old_start, old_end) became expansion bytes [new_start, new_end): the
    expansion's own text up to ``text_end``, then the invocation's line breaks."""

    new_start: int
    text_end: int
    new_end: int
    old_start: int
    old_end: int


class Expansion:
    """The file with macro invocations replaced, and the way back to the file on disk."""

    def __init__(self, original: bytes, replacements: dict[tuple[int, int], bytes]) -> None:
        self.original = original
        pieces: list[bytes] = []
        self.replaced: list[Replacement] = []
        pos = size = 0
        for (start, end), text in sorted(replacements.items()):
            pieces.append(original[pos:start])
            size += start - pos
            padded = text + b"\n" * original.count(b"\n", start, end)
            self.replaced.append(
                Replacement(size, size + len(text), size + len(padded), start, end))
            pieces.append(padded)
            size += len(padded)
            pos = end
        pieces.append(original[pos:])
        self.source = b"".join(pieces)
        self._new_starts = [r.new_start for r in self.replaced]

    def to_original(self, offset: int) -> int:
        """The offset in the file on disk: inside an expansion, its invocation's start."""
        i = bisect.bisect_right(self._new_starts, offset) - 1
        if i < 0:
            return offset
        r = self.replaced[i]
        return r.old_start if offset < r.new_end else offset - r.new_end + r.old_end


def expand_macros(unit: Unit, compile_args: list[str], preprocess_command: PreprocessCommand,
                  only_funcs: frozenset[str] = frozenset(), spelled_path: str | None = None
                  ) -> Expansion | None:
    """The unit's source with its function bodies' macro invocations expanded; None when there
    is none to expand, the preprocessor fails, or the expanded file would not preprocess to
    the very tokens the original does (labels then stay out of macros).  ``spelled_path``: the
    file's name as the compile command spells it, which ``__FILE__`` expands to."""
    ranges = _invocations(unit, only_funcs)
    if not ranges:
        return None
    preprocess = _Preprocessor(spelled_path or unit.path, compile_args, preprocess_command)
    first = preprocess(unit.source, ranges)
    if first is None:
        return None
    expanded = {r: text for r, text in zip(ranges, _marked_texts(first, len(ranges)))
                if text is not None}
    trial = Expansion(unit.source, expanded)
    again = preprocess(trial.source, [(r.new_start, r.text_end) for r in trial.replaced])
    if again is None:
        return None
    stable = {r: text for (r, text), second in zip(sorted(expanded.items()),
                                                   _marked_texts(again, len(expanded)))
              if second is not None and second.split() == text.split()}
    if not stable:
        return None
    final = trial if len(stable) == len(expanded) else Expansion(unit.source, stable)
    check = again if final is trial else preprocess(final.source, [])
    # Markers can split what they wrap from what follows (an object-like macro naming a
    # function-like one), so the reference is the original preprocessed without them.
    reference = preprocess(unit.source, [])
    if check is None or reference is None or _tokens(check) != _tokens(reference):
        return None
    return final


def _invocations(unit: Unit, only_funcs: frozenset[str]) -> list[tuple[int, int]]:
    """Outermost macro invocations within the bodies of the functions to label, outside
    preprocessing directives (a macro in ``#if`` is expanded by the directive itself)."""
    bodies = [unit.span(body) for function in unit.functions()
              if not only_funcs or function.spelling in only_funcs
              if (body := function_body(function)) is not None]
    directives = [m.span() for m in _DIRECTIVE.finditer(unit.source)]
    directive_starts = [start for start, _ in directives]
    found = []
    for start, end in unit.macro_ranges():
        if not any(b_start <= start and end <= b_end for b_start, b_end in bodies):
            continue
        i = bisect.bisect_right(directive_starts, start) - 1
        if i >= 0 and start < directives[i][1]:
            continue
        found.append((start, end))
    return found


class _Preprocessor:
    """The backend's ``-E`` on versions of one file, each range wrapped in markers."""

    def __init__(self, path: str, compile_args: list[str], command: PreprocessCommand) -> None:
        self.path = path
        self.compile_args = compile_args
        self.command = command

    def __call__(self, source: bytes, ranges: list[tuple[int, int]]) -> bytes | None:
        """The preprocessed text; None when the preprocessor fails."""
        pieces = [f"#line 1 {json.dumps(self.path)}\n".encode()]
        pos = 0
        for i, (start, end) in enumerate(ranges):
            pieces += [source[pos:start], b" __ffcc_mb_%d_ " % i, source[start:end],
                       b" __ffcc_me_%d_ " % i]
            pos = end
        pieces.append(source[pos:])
        with tempfile.TemporaryDirectory(prefix="ffcc-macros-") as tmp:
            marked = os.path.join(tmp, os.path.basename(self.path))
            with open(marked, "wb") as out:
                out.write(b"".join(pieces))
            times = os.stat(self.path)  # __TIMESTAMP__ is the preprocessed file's mtime
            os.utime(marked, ns=(times.st_atime_ns, times.st_mtime_ns))
            try:
                done = subprocess.run(self.command(self.compile_args, self.path, marked),
                                      capture_output=True, timeout=_PREPROCESS_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                return None
        return done.stdout if done.returncode == 0 else None


def _marked_texts(output: bytes, count: int) -> list[bytes | None]:
    """Each marked range's text on one line (None for one that comes out holding a directive
    or not at all)."""
    found: list[bytes | None] = [None] * count
    for match in _MARKED.finditer(output):
        text = match.group(2)
        if not re.search(rb"^\s*#", text, re.M):
            found[int(match.group(1))] = b" ".join(text.split(b"\n")).strip()
    return found


def _tokens(output: bytes) -> list[str]:
    """The preprocessed tokens, markers left out."""
    return [t.spelling for t in lex(output) if not _MARKER.fullmatch(t.spelling)]
