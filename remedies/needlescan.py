"""Find the lines of a buffer that hold any of a set of needles, in one pass over the buffer.

The file scan (`remedies.matcher`) looks for its level-1 needles (`remedies.prefilter`) in big chunks. One
`bytes.find` pass per needle costs about 0.035 s per 100 MiB each, so ~110 needles made the needle passes
~90% of `explain`'s time on a big healthy log. An Aho-Corasick automaton (ahocorasick_rs, the Rust
aho-corasick crate's DFA) reports every occurrence of every needle in one pass, at a cost that does not
grow with the number of needles; each occurrence names its line, so the lines found are exactly those that
the per-needle passes found. Where the library is not installed (an environment set up before it became a
dependency, a platform without its wheel) the same lines are found with one `bytes.find` pass per needle.
"""

from __future__ import annotations

from typing import Iterable

WINDOW = 64 << 10  # bytes of whole lines the automaton scans at a time (it lists every occurrence at once)

try:
    from ahocorasick_rs import BytesAhoCorasick, Implementation
except ImportError:  # pragma: no cover - exercised by tests that hide the module
    BytesAhoCorasick = None


class NeedleScan:
    """Needles, each with the labels (the anchors it leads to) of the lines holding it."""

    def __init__(self, plan: Iterable[tuple[bytes, frozenset[int]]]) -> None:
        labels: dict[bytes, set[int]] = {}
        for needle, marks in plan:
            labels.setdefault(needle, set()).update(marks)
        self.needles = tuple(labels)
        self._labels = tuple(frozenset(labels[needle]) for needle in self.needles)
        self._automaton = (BytesAhoCorasick(list(self.needles), implementation=Implementation.DFA)
                           if self.needles and BytesAhoCorasick is not None else None)
        self._multiline = any(b"\n" in needle for needle in self.needles)  # then a window could cut one

    def line_starts(self, chunk: bytes | bytearray, limit: int) -> dict[int, frozenset[int]] | dict[int, set[int]]:
        """The start of each line of chunk[:limit] that holds a whole needle within chunk[:limit], with the
        labels of all the needles it holds."""
        starts: dict[int, frozenset[int]] = {}
        if not self.needles or limit <= 0:
            return starts
        if self._automaton is None:
            return self._line_starts_by_find(chunk, limit)
        shared: dict[frozenset[int], frozenset[int]] = {}
        begin = 0
        while begin < limit:
            # The automaton lists every occurrence at once: windows of whole lines keep that list bounded.
            end = limit if self._multiline or limit - begin <= WINDOW else chunk.rfind(b"\n", begin, begin + WINDOW) + 1
            end = end if end > begin else min(limit, (chunk.find(b"\n", begin + WINDOW, limit) + 1) or limit)
            with memoryview(chunk) as whole, whole[begin:end] as window:
                hits = self._automaton.find_matches_as_indexes(window, overlapping=True)
            line_start, line_end = 0, -1
            needles: set[int] = set()
            for index, at, _ in hits:
                pos = begin + at
                if not line_start <= pos < line_end:
                    self._settle(starts, line_start, needles, shared)
                    needles = set()
                    line_start = chunk.rfind(b"\n", 0, pos) + 1
                    line_end = chunk.find(b"\n", pos, limit)
                    line_end = limit if line_end < 0 else line_end
                needles.add(index)
            self._settle(starts, line_start, needles, shared)
            begin = end
        return starts

    def _settle(self, starts: dict[int, frozenset[int]], line_start: int, needles: set[int],
                shared: dict[frozenset[int], frozenset[int]]) -> None:
        """Record the labels of the needles a line holds; lines holding the same needles share one set (a chunk
        of like lines, `yes ERROR | explain -`, would otherwise hold hundreds of labels per line)."""
        if not needles:
            return
        key = frozenset(needles)
        labels = shared.get(key)
        if labels is None:
            labels = shared[key] = frozenset().union(*(self._labels[i] for i in key))
        before = starts.get(line_start)
        starts[line_start] = labels if before is None else before | labels

    def _line_starts_by_find(self, chunk: bytes | bytearray, limit: int) -> dict[int, set[int]]:
        """line_starts without the automaton: one `bytes.find` pass per needle."""
        starts: dict[int, set[int]] = {}
        for needle, labels in zip(self.needles, self._labels):
            pos = chunk.find(needle, 0, limit)
            while pos >= 0:
                starts.setdefault(chunk.rfind(b"\n", 0, pos) + 1, set()).update(labels)
                end = chunk.find(b"\n", pos, limit)
                if end < 0:
                    break
                pos = chunk.find(needle, end, limit)
        return starts
