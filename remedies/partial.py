"""Read a message quoted in part: its leading clause cut, an ellipsis in its place, a figure left out.

Prose quotes the engine's message as `… exceeds available Mamba cache blocks (196). Each decode sequence
requires one …`: the entry's literal is there, but its pattern, written for the whole sentence, needs the
clause that was cut. A line counts for an entry here when it shares with one of the entry's wordings (its
source templates, `versions`, and its samples) one contiguous run of text that holds the entry's literal and
reaches at least MIN_RUN characters and MIN_BEYOND characters past the literal, figures compared as figures
(any number equals any other and a template's `{}`), and that is cut where a quote, a code span or an ellipsis
begins or ends. A short common fragment (the literal alone in a sentence), or a whole line that shares a long
run with a wording but differs from it before the run (another library's name in the same sentence), does not
count. A line cut before its end (`remedies.cutline`) is read here too. explain runs this only on a pasted excerpt in which nothing else named an error.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import BinaryIO, Iterator

from remedies.crash import exception_line
from remedies.cutline import cut_entry
from remedies.loader import load_catalogue
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import Remedy
from remedies.normalise import normalise

MIN_RUN = 32  # as remedies.templates.MIN_PREFIX: the fixed characters a cut message must cover
MIN_BEYOND = 3  # the run reaches past the literal (into its figure or its next words)
QUIET_LEVELS = ("DEBUG", "INFO", "WARNING", "TRACE")  # records that report no failure
_FIGURE = re.compile(r"\{[^{}]{0,40}\}|\d+(?:\.\d+)?")
_ELLIPSIS = re.compile(r"\.{3}|…")
_CRASH_READ = re.compile(r"^[\w.]{0,200}(?:Error|Exception): ")  # remedies.crash.LITERALS' exception needles


def figured(text: str) -> str:
    """The text with every figure and every template placeholder as '#', ellipses as a break ('\\x00')."""
    return _FIGURE.sub("#", _ELLIPSIS.sub("\x00", text))


@lru_cache(maxsize=1)
def _wordings() -> tuple[tuple[Remedy, str, tuple[str, ...]], ...]:
    """Each catalogue entry that can name a line alone, its literal, and its wordings with figures as '#'."""
    found = []
    for remedy in load_catalogue():
        if remedy.context_regex is not None or remedy.stop or remedy.wrapper:
            continue
        texts = (*(w.template for w in remedy.versions), *remedy.free_samples)
        found.append((remedy, remedy.literal, tuple(figured(t) for t in texts)))
    return tuple(found)


def shared_run(line: str, wording: str, literal: str) -> int:
    """The length of the longest run of `line` and `wording` (both `figured`) around `literal` that is a quote
    cut short (`_cut`), 0 when there is none."""
    best = 0
    start = line.find(literal)
    while start >= 0:
        spot = wording.find(literal)
        while spot >= 0:
            left = 0
            while (start - left > 0 and spot - left > 0 and line[start - left - 1] == wording[spot - left - 1]
                   and line[start - left - 1] != "\x00"):
                left += 1
            right = len(literal)
            while (start + right < len(line) and spot + right < len(wording)
                   and line[start + right] == wording[spot + right] and line[start + right] != "\x00"):
                right += 1
            if _cut(line, start - left, start + right, spot - left == 0):
                best = max(best, left + right)
            spot = wording.find(literal, spot + 1)
        start = line.find(literal, start + 1)
    return best


_BOUNDARY = "`\"'\x00*("


def _cut(line: str, begin: int, end: int, from_start: bool) -> bool:
    """Whether a shared run is a quote cut short: it starts where a quote, a code span or an ellipsis opens (the
    leading clause was cut), or it starts the wording and ends where the quote ends (its tail was cut). A run
    inside a whole sentence that goes on differently is another message, not a cut one."""
    before = line[:begin].rstrip()
    if before and before[-1] in _BOUNDARY:
        return True
    after = line[end:].lstrip()
    return from_start and (not after or after[0] in _BOUNDARY)


def partial_entry(text: str) -> Remedy | None:
    """The entry a line quotes in part (see the module doc), or None."""
    line = figured(text)
    for remedy, literal, wordings in _wordings():
        if literal not in text:
            continue
        key = figured(literal)
        need = max(MIN_RUN, len(key) + MIN_BEYOND)
        if any(shared_run(line, wording, key) >= need for wording in wordings):
            return remedy
    return None


def _cut_short(text: str) -> Remedy | None:
    """The entry whose message `text` is the start of, cut short (`remedies.cutline`), if any."""
    found = cut_entry(text)
    return load_catalogue().get(found) if found else None


def scan_partial(stream: BinaryIO, named: set[str] | None = None) -> Iterator[Match]:
    """Lines of a pasted excerpt (at most WRAP_SCAN_BYTES) that quote an entry's message in part, each entry
    once; entries in `named` (already matched whole) are skipped."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    seen = set(named or ())
    for lineno, raw in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
        line = normalise(raw[:MAX_LINE])
        text = line.text.strip()
        if len(text) < MIN_RUN or line.level in QUIET_LEVELS:
            continue  # a short line, or a record reporting no failure
        if exception_line(text):  # the crash scan reads `...Error: ` / `...Exception: ` lines, cut ones too
            remedy = None if _CRASH_READ.search(text) else _cut_short(text)
        else:
            remedy = partial_entry(text) or _cut_short(text)
        if remedy is not None and remedy.id not in seen:
            seen.add(remedy.id)
            yield Match(remedy, lineno, raw.strip()[:400])
