"""'Did you mean ...?' for unknown names (flags, profiles), from an index built once per name list.

`difflib.get_close_matches(word, names, n=1)` rebuilds a matcher for every candidate, about 13 ms per unknown
flag against a schema's ~600 spellings: a 4 MiB file full of unknown flags took minutes. `NameIndex` gives the
same answer (the best `SequenceMatcher.ratio` at or above the cutoff, ties to the larger name, as difflib's
heap does) but prunes first by length (difflib's real_quick_ratio bound) and by character counts computed
once per name (its quick_ratio bound), remembers each word's answer, and suggests for at most
MAX_SUGGESTED_WORDS distinct words per index (later unknown words get no suggestion, never slower output).
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Iterable

MAX_SUGGESTED_WORDS = 256


class NameIndex:
    """Known names indexed for close-match suggestions."""

    def __init__(self, names: Iterable[str], cutoff: float = 0.6) -> None:
        self.cutoff = cutoff
        self._by_length: dict[int, list[tuple[str, Counter[str]]]] = {}
        for name in sorted(set(names)):
            self._by_length.setdefault(len(name), []).append((name, Counter(name)))
        self._answers: dict[str, str | None] = {}

    def closest(self, word: str) -> str | None:
        """The closest known name, or None below the cutoff (or past MAX_SUGGESTED_WORDS distinct words)."""
        if word in self._answers:
            return self._answers[word]
        if len(self._answers) >= MAX_SUGGESTED_WORDS:
            return None
        answer = self._search(word)
        self._answers[word] = answer
        return answer

    def _search(self, word: str) -> str | None:
        """Candidates by decreasing quick_ratio bound; the exact ratio only until no bound can beat the best."""
        size = len(word)
        counts = Counter(word)
        bounded: list[tuple[float, str]] = []
        for length, entries in self._by_length.items():
            total = size + length
            if not total or 2.0 * min(size, length) / total < self.cutoff:
                continue
            for name, name_counts in entries:
                shared = sum(min(n, counts[ch]) for ch, n in name_counts.items() if ch in counts)
                bound = 2.0 * shared / total
                if bound >= self.cutoff:
                    bounded.append((bound, name))
        bounded.sort(reverse=True)
        matcher = SequenceMatcher()
        matcher.set_seq2(word)
        best: tuple[float, str] | None = None
        for bound, name in bounded:
            if best is not None and bound < best[0]:
                break
            matcher.set_seq1(name)
            score = matcher.ratio()
            if score >= self.cutoff and (best is None or (score, name) > best):
                best = (score, name)
        return best[1] if best else None


@lru_cache(maxsize=32)
def index_of(names: tuple[str, ...], cutoff: float = 0.6) -> NameIndex:
    """One shared index per name list (a flag schema's spellings), built on first use."""
    return NameIndex(names, cutoff)


def closest(word: str, names: Iterable[str], cutoff: float = 0.6) -> str | None:
    """`difflib.get_close_matches(word, names, n=1, cutoff)[0]` (or None), from a cached index."""
    return index_of(tuple(names), cutoff).closest(word)
