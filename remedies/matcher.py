"""Find catalogue entries in log lines: a literal prefilter, then each candidate entry's regex.

Two entry points share one compiled plan:
- `Matcher.feed(line, lineno)` for a live stream, one line at a time (anchors, then literals, then regexes);
- `Matcher.scan(stream)` for files, which scans big byte chunks with one `bytes.find` pass per level-1
  needle (`remedies.prefilter`: substrings covering every literal, fewer and cheaper than the anchors)
  instead of touching every line from Python; a line holding a needle is checked against the anchors
  whose literals contain that needle (a literal in the line brings its own needles), then their literals
  and regexes.
An anchor is a phrase shared by several literals (or a whole literal); every literal contains its anchor
and at least one needle, so neither filter misses a line that the regex would match. Candidate lines are
decoded with errors='replace' and capped at MAX_LINE bytes; a longer line is scanned in MAX_LINE pieces (a
message straddling two pieces is missed).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import BinaryIO, Generator, Iterable, Iterator

from remedies.loader import Catalogue, load_catalogue
from remedies.model import Remedy
from remedies.prefilter import cached_prefilter

CHUNK = 8 << 20
MAX_LINE = 1 << 20
MAX_SHOWN = 400
CONTEXT = 2
MIN_SHARED = 8


@dataclass(frozen=True)
class Match:
    """One log line that matched one entry."""

    remedy: Remedy
    lineno: int
    line: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Anchor:
    needle: bytes
    text: str
    remedies: tuple[Remedy, ...]


def _shorten(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + " …"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _scan_cost(length: int) -> float:
    """Seconds per 100 MiB of one `bytes.find` pass, as measured for needles of this length (CPython 3.11):
    about 0.028 from 24 bytes on, rising to about 0.07 for 8-byte needles, which skip less."""
    return 0.028 + 0.0025 * max(0, 24 - length)


def _shared_phrases(literal: str) -> set[str]:
    words = literal.split(" ")
    phrases = {" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(len(words), i + 4) + 1)}
    return {p for p in phrases if len(p) >= MIN_SHARED}


def plan_anchors(remedies: Iterable[Remedy]) -> list[tuple[str, tuple[Remedy, ...]]]:
    """Group entries under as few `bytes.find` passes as pay off.

    Each distinct literal is its own anchor unless a phrase of at least MIN_SHARED characters shared by
    several literals is cheaper to scan for once than the literals one by one (greedy set cover).
    """
    by_literal: dict[str, list[Remedy]] = {}
    for remedy in remedies:
        by_literal.setdefault(remedy.literal, []).append(remedy)
    holders: dict[str, set[str]] = {}
    for literal in by_literal:
        for phrase in _shared_phrases(literal):
            holders.setdefault(phrase, set()).add(literal)
    shared = {p: lits for p, lits in holders.items() if len(lits) >= 2}
    pending = set(by_literal)
    groups: list[tuple[str, tuple[Remedy, ...]]] = []
    while True:
        best: tuple[float, str, set[str]] | None = None
        for phrase, holding in shared.items():
            members = holding & pending
            saving = sum(_scan_cost(len(lit)) for lit in members) - _scan_cost(len(phrase))
            if len(members) >= 2 and saving > 0 and (best is None or (saving, phrase) > best[:2]):
                best = (saving, phrase, members)
        if best is None:
            break
        _, phrase, members = best
        groups.append((phrase, tuple(r for lit in sorted(members) for r in by_literal[lit])))
        pending -= members
    groups.extend((lit, tuple(by_literal[lit])) for lit in sorted(pending))
    return groups


class Matcher:
    """Match log lines against a catalogue (the shipped one by default)."""

    def __init__(self, catalogue: Catalogue | None = None, context: int = CONTEXT) -> None:
        self.catalogue = catalogue or load_catalogue()
        self.context = context
        self._anchors = [
            _Anchor(text.encode(), text, members) for text, members in plan_anchors(self.catalogue)
        ]
        self._needles = [n.encode() for n in cached_prefilter(tuple(sorted({r.literal for r in self.catalogue})))]
        self._needle_anchors = [
            frozenset(i for i, a in enumerate(self._anchors) if any(n in r.literal.encode() for r in a.remedies))
            for n in self._needles
        ]
        self._recent: deque[str] = deque(maxlen=context)

    @property
    def needles(self) -> list[str]:
        """The level-1 needles of the file scan (see `remedies.prefilter`), for inspection and tests."""
        return [n.decode() for n in self._needles]

    @property
    def anchors(self) -> list[str]:
        """The prefilter's anchors, for inspection and tests."""
        return [a.text for a in self._anchors]

    def match_line(self, line: str) -> list[Remedy]:
        """Entries whose literal and regex both match this one line (no state, no context)."""
        line = line[:MAX_LINE]
        found: list[Remedy] = []
        for anchor in self._anchors:
            if anchor.text in line:
                found.extend(r for r in anchor.remedies if r.literal in line and r.regex.search(line))
        return found

    def feed(self, line: str | bytes, lineno: int) -> list[Match]:
        """Match one line of a live stream; the lines fed before it become its context."""
        text = _decode(line) if isinstance(line, bytes) else line
        text = text.rstrip("\r\n")
        hits = self.match_line(text)
        before = tuple(self._recent)
        self._recent.append(_shorten(text))
        return [Match(r, lineno, _shorten(text), before) for r in hits]

    def scan(self, stream: BinaryIO) -> Iterator[Match]:
        """Every match in a binary stream, in line order; lines are numbered from 1.

        The stream is read into one reused buffer: a partial last line moves to its front and the
        next read fills in behind it, so no chunk is copied or reallocated.
        """
        buf = bytearray(CHUNK + max(CHUNK, MAX_LINE))
        view = memoryview(buf)
        lineno, filled = 1, 0
        while True:
            got = stream.readinto(view[filled:filled + CHUNK])
            filled += got or 0
            if not got:
                if filled:
                    yield from self._scan_chunk(buf, filled, lineno)
                return
            cut = buf.rfind(b"\n", 0, filled) + 1
            if cut == 0 and filled < MAX_LINE:
                continue
            if cut == 0:
                cut = filled
            lineno = yield from self._scan_chunk(buf, cut, lineno)
            buf[:filled - cut] = buf[cut:filled]
            filled -= cut

    def _scan_chunk(self, chunk: bytearray, limit: int, lineno: int) -> Generator[Match, None, int]:
        """Matches in chunk[:limit] (whole lines) numbered from `lineno`; returns the next line's number."""
        starts: dict[int, set[int]] = {}
        for needle, anchors in zip(self._needles, self._needle_anchors):
            pos = chunk.find(needle, 0, limit)
            while pos >= 0:
                starts.setdefault(chunk.rfind(b"\n", 0, pos) + 1, set()).update(anchors)
                end = chunk.find(b"\n", pos, limit)
                if end < 0:
                    break
                pos = chunk.find(needle, end, limit)
        counted = 0
        for start in sorted(starts):
            lineno += chunk.count(b"\n", counted, start)
            counted = start
            end = chunk.find(b"\n", start, limit)
            end = limit if end < 0 else end
            for anchor in map(self._anchors.__getitem__, sorted(starts[start])):
                pos = chunk.find(anchor.needle, start, end)
                if pos < 0:
                    continue
                lo = start if end - start <= MAX_LINE else max(start, pos - MAX_LINE // 2)
                raw = chunk[lo:min(end, lo + MAX_LINE)]
                text: str | None = None
                for remedy in anchor.remedies:
                    if remedy.literal.encode() not in raw:
                        continue
                    text = _decode(raw) if text is None else text
                    if remedy.regex.search(text):
                        yield Match(remedy, lineno, _shorten(text), *self._context(chunk, start, end, limit))
        return lineno + chunk.count(b"\n", counted, limit)

    def _context(self, chunk: bytearray, start: int, end: int, limit: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        before: list[str] = []
        pos = start
        for _ in range(self.context):
            if pos == 0:
                break
            prev = chunk.rfind(b"\n", 0, pos - 1) + 1
            before.insert(0, _shorten(_decode(chunk[prev:pos - 1][:MAX_LINE])))
            pos = prev
        after: list[str] = []
        pos = end + 1
        for _ in range(self.context):
            if pos >= limit:
                break
            nxt = chunk.find(b"\n", pos, limit)
            nxt = limit if nxt < 0 else nxt
            after.append(_shorten(_decode(chunk[pos:nxt][:MAX_LINE])))
            pos = nxt + 1
        return tuple(before), tuple(after)
