"""Choose the level-1 needles of the file scan: substrings such that every catalogue literal contains one.

A file is scanned for all the needles in one pass (`remedies.needlescan`); only lines holding a needle go
on to the per-entry literals and regexes. Since every literal contains at least one needle, no line that
a literal (hence an entry) matches is ever skipped.

The set is a greedy weighted set cover over the literals' substrings. A substring's weight is the
predicted CPU time of a `bytes.find` pass for it over healthy text (the scan made one per needle before
the one-pass automaton; the weight still favours few, long needles that healthy lines rarely hold), from
two measured facts about CPython 3.11's `bytes.find` on large buffers (bench/explain_speed.py's log, 100 MiB):
- needles of 6+ bytes use a two-way search costing about 0.008 s + 0.38 s / its mean skip, the skip
  at a text byte being the needle's distance from its end to its last byte of the same class
  (`byte & 63`), or its length; shorter needles cost about 0.02 s + 0.3 s / length;
- every hit costs a line lookup and a level-2 check, about 5 us, so substrings frequent in healthy logs
  are avoided (HEALTHY_SAMPLE: the healthy startup logs of tests/data/logs and the bench's healthy
  lines; regenerate it when those change).
"""

from __future__ import annotations

import heapq
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Iterable

HEALTHY_SAMPLE = Path(__file__).with_name("healthy-sample.txt")
MIN_NEEDLE = 3
MAX_NEEDLE = 24
TWO_WAY_FROM = 6
TWO_WAY_BASE, TWO_WAY_COST = 0.008, 0.38
SHORT_BASE, SHORT_COST = 0.02, 0.3
HIT_COST = 5e-6
PER_100MIB = 100 << 20


class Profile:
    """Byte-class frequencies and raw text of healthy log lines, to predict a needle's scan cost."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self._hits: dict[bytes, int] = {}
        size = max(1, len(text))
        self.classes = [0.0] * 64
        for byte, count in Counter(text).items():
            self.classes[byte & 63] += count / size

    def mean_skip(self, needle: bytes) -> float:
        """Expected shift of the two-way search per step over text with this profile."""
        length = len(needle)
        last = {byte & 63: length - 1 - i for i, byte in enumerate(needle)}
        seen = sum(self.classes[c] for c in last)
        return length * (1.0 - seen) + sum(self.classes[c] * shift for c, shift in last.items())

    def cost(self, needle: bytes) -> float:
        """Predicted seconds per 100 MiB of healthy text for one find pass with this needle."""
        if len(needle) >= TWO_WAY_FROM:
            scan = TWO_WAY_BASE + TWO_WAY_COST / max(self.mean_skip(needle), 1.0)
        else:
            scan = SHORT_BASE + SHORT_COST / len(needle)
        return scan + self.hits(needle) * PER_100MIB / max(1, len(self.text)) * HIT_COST

    def hits(self, needle: bytes) -> int:
        """Occurrences in the sample (memoised; a needle whose prefix never occurs is not counted)."""
        found = self._hits.get(needle)
        if found is None:
            found = 0 if self._hits.get(needle[:-1]) == 0 else self.text.count(needle)
            self._hits[needle] = found
        return found


def plan_prefilter(literals: Iterable[str], profile: Profile) -> tuple[str, ...]:
    """Needles such that every literal contains at least one, cheap to scan for in total (greedy cover).

    Lazy greedy: a candidate's score (literals newly covered per second) only falls as literals get
    covered, so a popped candidate whose fresh score still tops the heap is the best one.
    Candidates are the substrings shared by two or more literals, and each whole literal (the longest,
    hence cheapest, needle for a literal on its own).
    """
    distinct = sorted(set(literals))
    holders: dict[str, int] = {}
    for index, literal in enumerate(distinct):
        for i in range(len(literal)):
            for j in range(i + MIN_NEEDLE, min(len(literal), i + MAX_NEEDLE) + 1):
                holders[literal[i:j]] = holders.get(literal[i:j], 0) | 1 << index
    holders = {text: held for text, held in holders.items() if held & (held - 1)}
    for index, literal in enumerate(distinct):
        holders[literal] = holders.get(literal, 0) | 1 << index
    costs = {text: profile.cost(text.encode()) for text in sorted(holders, key=len)}
    heap = [(-held.bit_count() / costs[text], text) for text, held in holders.items()]
    heapq.heapify(heap)
    pending = (1 << len(distinct)) - 1
    chosen: list[str] = []
    while pending:
        _, text = heapq.heappop(heap)
        score = (holders[text] & pending).bit_count() / costs[text]
        if score and heap and score < -heap[0][0]:
            heapq.heappush(heap, (-score, text))
        elif score:
            chosen.append(text)
            pending &= ~holders[text]
    return tuple(chosen)


def _occurrences(literal: str, needles: Iterable[str]) -> list[tuple[int, int]]:
    found = []
    for needle in needles:
        pos = literal.find(needle)
        while pos >= 0:
            found.append((pos, pos + len(needle)))
            pos = literal.find(needle, pos + 1)
    return found


def survives_a_split(literal: str, needles: Iterable[str]) -> bool:
    """Whether the literal holds two disjoint needles, so that one line break anywhere in it (a wrap, or a
    space turned into a newline) leaves one whole."""
    spans = sorted(_occurrences(literal, needles))
    return any(a_end <= b_start for _, a_end in spans for b_start, _ in spans)


def plan_wrap_tolerant(literals: Iterable[str], profile: Profile) -> tuple[str, ...]:
    """Needles such that every literal wrapped once over two lines still shows one of them.

    Each literal is cut in two halves and the cover is planned over the halves: a needle inside each half
    gives two disjoint needles, of which one line break anywhere leaves one whole (`survives_a_split`).
    A literal with a half shorter than MIN_NEEDLE is covered whole (a wrap may hide it).
    """
    wanted = set()
    for literal in set(literals):
        half = len(literal) // 2
        if half >= MIN_NEEDLE and len(literal) - half >= MIN_NEEDLE:
            wanted.update((literal[:half], literal[half:]))
        else:
            wanted.add(literal)
    return plan_prefilter(sorted(wanted), profile)


@lru_cache(maxsize=8)
def cached_prefilter(literals: tuple[str, ...], wrap_tolerant: bool = False) -> tuple[str, ...]:
    """`plan_prefilter` (or `plan_wrap_tolerant`) against the shipped healthy sample, once per set of literals."""
    profile = Profile(HEALTHY_SAMPLE.read_bytes())
    return plan_wrap_tolerant(literals, profile) if wrap_tolerant else plan_prefilter(literals, profile)
