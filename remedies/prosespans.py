"""Read an engine message quoted in prose without its exception class: in a title, a bullet, bold or a code span.

A report often names the failure only in its words: `# Server fails: The number of required GPUs exceeds the
total number of available GPUs in the placement group`, a bullet "- error: **CUDA_HOME environment variable is
not set**", a one-line question with the message in backticks. `remedies.prose` reads an exception stated with its
class; here the quoted pieces of a line outside the log's records (its code spans, bold runs, quotes, CJK quotes,
and for a heading or a bullet its text after the last colon) count when they are the message of a mined raise
template (`remedies.source.locate`) or of a catalogue entry's sample (`remedies.source.sampled_entry`): the
engine's own words, not a paraphrase. A summary paragraph that a page or an editor wrapped carries the message
unquoted over several lines: its lines are joined and looked up whole (a raise template's words found inside it).
The first such piece (else paragraph) is read as the crash, and the crash's path
(`Collector.unknown`) names the entry covering its template, or explains it from its source. explain reads this
only in a pasted excerpt in which nothing else named a failure.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import Crash, component_of, exception_line
from remedies.loader import load_catalogue
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import Line, normalise
from remedies.source import sampled_entry
from remedies.templates import load_templates

MAX_PARAGRAPHS = 50  # lookups cost about a millisecond per 100 characters: a long page is read in part
MAX_PIECES = 400
MAX_PARAGRAPH = 1200
MIN_PIECE = 24  # characters: shorter quoted pieces are names and flags, not messages
MAX_PIECE = 600
_QUOTED = re.compile(
    r"`(?P<code>[^`\n]{%d,%d})`|\*\*(?P<bold>[^*\n]{%d,%d})\*\*|\"(?P<quote>[^\"\n]{%d,%d})\""
    r"|[\u300c\u300e\u201c](?P<cjk>[^\u300d\u300f\u201d\n]{%d,%d})[\u300d\u300f\u201d]"
    % ((MIN_PIECE, MAX_PIECE) * 4)
)
_HEADED = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d{1,2}[.)]\s)(?P<text>.+)$")
_AFTER_COLON = re.compile(r"[:\uff1a]\s*(?P<rest>[^:\uff1a]{%d,%d})$" % (MIN_PIECE, MAX_PIECE))
_TRIM = " .,;!?\u3002\uff0c"
# Python's warnings (`file.py:24: DeprecationWarning: ...`) and a library's bracketed warning records
_WARNING = re.compile(r"\b[A-Z]\w{0,40}Warning\b|\bdeprecat", re.I)


def pieces(text: str) -> list[str]:
    """The quoted pieces of a prose line, then (for a heading or a bullet) its text after the last colon."""
    found = [next(g for g in hit.groups() if g is not None).strip(_TRIM) for hit in _QUOTED.finditer(text)]
    headed = _HEADED.match(text)
    if headed:
        tail = _AFTER_COLON.search(headed.group("text").replace("**", "").replace("`", ""))
        found += [tail.group("rest").strip(_TRIM)] if tail else []
    return [piece for piece in found if len(piece) >= MIN_PIECE]


def engine_message(piece: str) -> str | None:
    """A quoted piece as the exception it was raised as (`ValueError: piece`), when it is a mined raise template's
    message (not a warning's) or a catalogue error entry's sample's; else None."""
    hit = load_templates().lookup(piece, raised_only=True)
    if hit is not None:
        kind = hit.template.kind.partition(":")[2]
        return f"{kind}: {piece}" if kind else piece
    sampled = sampled_entry((piece,))
    entry = load_catalogue().get(sampled) if sampled else None
    return piece if entry is not None and entry.severity == "error" else None


def _prose(line: Line) -> bool:
    """Whether a normalised line is the reporter's prose: no log record, no traceback line, no exception line, no
    warning."""
    return not (line.level is not None or line.text[:1] in " \t" or exception_line(line.text.strip())
                or _WARNING.search(line.text))


def quoted_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The first piece of prose in a pasted excerpt (at most WRAP_SCAN_BYTES) that quotes an engine's message
    without its exception class, as a crash (its entry, or its source, is named on the crash's path); else the
    first paragraph of prose (its lines joined, as a page wrapped them) that carries a raise template's words."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    raws = data.decode("utf-8", errors="replace").split("\n")
    lines = [normalise(raw[:MAX_LINE]) for raw in raws]
    looked = 0
    for lineno, line in enumerate(lines, 1):
        if not _prose(line):
            continue  # a record, a traceback's line or an exception line: the crash scan reads those
        for piece in pieces(line.text):
            looked += 1
            if looked > MAX_PIECES:
                break
            named = engine_message(piece)
            if named is not None:
                yield _crash(lineno, raws[lineno - 1], named)
                return
    for first, text in paragraphs(lines)[:MAX_PARAGRAPHS]:
        hit = load_templates().lookup(text, raised_only=True)
        if hit is not None:
            yield _crash(first, raws[first - 1], text)
            return


def paragraphs(lines: list[Line]) -> list[tuple[int, str]]:
    """Runs of at least two prose lines (1-based first line, the lines joined with spaces), at most
    MAX_PARAGRAPH characters each: a sentence a page or an editor wrapped."""
    found: list[tuple[int, str]] = []
    run: list[tuple[int, str]] = []
    for lineno, line in enumerate([*lines, Line("", None, True)], 1):
        text = line.text.strip()
        if text and _prose(line) and not _HEADED.match(line.text):
            run.append((lineno, text))
            continue
        if len(run) >= 2:
            found.append((run[0][0], " ".join(t for _, t in run)[:MAX_PARAGRAPH]))
        run = []
    return found


def _crash(lineno: int, raw: str, named: str) -> Match:
    return Match(UNKNOWN, lineno, raw.strip()[:400],
                 crash=Crash(lineno, named[:MAX_PIECE], named[:MAX_PIECE], None, component_of((), named), "exception"))
