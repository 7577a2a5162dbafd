"""Secret values a redaction pass has seen, hidden wherever else they appear, in time linear in the text.

A report can hold thousands of distinct secrets (a bearer token per logged request): testing each one against
each string would be quadratic. A book of up to SMALL values tests them directly; a larger one indexes each
value by its longest alphanumeric run and tests only the values whose run occurs in the text as a whole run
(a secret glued to other letters is then left to the text patterns, which see it in its context).

A short value (WORD_MIN to LONG_MIN - 1 characters, `password: q7x`) is hidden only where it stands as a whole
word: replaced inside other words, `q7x` would take pieces of unrelated text with it. Shorter values and bare
numbers (a 2-character password, a PIN that reads like a port or a count) are hidden where they were found only.
"""

from __future__ import annotations

import re

_RUN = re.compile(r"[A-Za-z0-9]{4,}")
_START_MIN, _START_MAX = 3, 12
WORD_MIN, LONG_MIN = 3, 6


def worth_keeping(value: str) -> bool:
    """Whether a secret value is long enough, and unlike a number enough, to hide wherever else it appears."""
    return len(value) >= LONG_MIN or (len(value) >= WORD_MIN and not value.isdigit() and value.strip() == value
                                      and not any(c.isspace() for c in value))


class SecretBook:
    """Known secret values: `replace` hides them in a text, `starts_one` recognises a secret's cut start."""

    SMALL = 64

    def __init__(self) -> None:
        self.values: set[str] = set()
        self._by_run: dict[str, list[str]] = {}
        self._unindexed: list[str] = []
        self._starts: dict[str, list[str]] = {}
        self._longest_first: list[str] | None = None
        self._words: set[str] = set()
        self._word_pattern: re.Pattern[str] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: str) -> None:
        if value in self.values:
            return
        self.values.add(value)
        if len(value) < LONG_MIN:
            self._words.add(value)
            self._word_pattern = None
            return
        self._longest_first = None
        runs = _RUN.findall(value)
        if runs:
            self._by_run.setdefault(max(runs, key=len), []).append(value)
        else:
            self._unindexed.append(value)
        self._starts.setdefault(value[:_START_MAX], []).append(value)
        for n in range(_START_MIN, min(len(value), _START_MAX)):
            self._starts.setdefault(value[:n], [])

    def replace(self, text: str, mark: str) -> str:
        """`text` with every known value replaced by `mark`, longest first."""
        if not self.values:
            return text
        if self._words:
            text = self._whole_words().sub(mark, text)
        if len(self.values) - len(self._words) <= self.SMALL:
            if self._longest_first is None:
                self._longest_first = sorted(self.values - self._words, key=len, reverse=True)
            candidates = self._longest_first
        else:
            found = {v for run in _RUN.findall(text) for v in self._by_run.get(run, ())}
            candidates = sorted(found.union(self._unindexed), key=len, reverse=True)
        for value in candidates:
            if value in text:
                text = text.replace(value, mark)
        return text

    def _whole_words(self) -> re.Pattern[str]:
        if self._word_pattern is None:
            alternatives = "|".join(re.escape(w) for w in sorted(self._words, key=len, reverse=True))
            self._word_pattern = re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])")
        return self._word_pattern

    def starts_one(self, word: str) -> bool:
        """Whether `word` (3 characters or more) is the start of a known value."""
        if len(word) < _START_MIN:
            return False
        if len(word) < _START_MAX:
            return word in self._starts
        return any(v.startswith(word) for v in self._starts.get(word[:_START_MAX], ()))
