"""Find catalogue entries in log lines: a literal prefilter, then each candidate entry's regex.

Two entry points share one compiled plan:
- `Matcher.feed(line, lineno)` for a live stream, one line at a time (anchors, then literals, then regexes);
- `Matcher.scan(stream)` for files, which scans big byte chunks for all the level-1 needles at once
  (`remedies.prefilter`: substrings covering every literal; `remedies.needlescan`: one automaton pass per
  chunk) instead of touching every line from Python; a line holding a needle is checked against the anchors
  whose literals contain that needle (a literal in the line brings its own needles), then their literals
  and regexes. An entry with `also` literals (other wordings of its message) is planned once per literal.
An anchor is a phrase shared by several literals (or a whole literal); every literal contains its anchor
and at least one needle, so neither filter misses a line that the regex would match. Candidate lines are
decoded with errors='replace' and capped at MAX_LINE bytes; a longer line is scanned in MAX_LINE pieces (a
message straddling two pieces is missed).

Literals and regexes see what a reader sees (`remedies.normalise`): prefixes, escapes and CRs removed, and
a candidate line read together with the lines of its record (continuations before and after it, at most
JOIN_LINES each way, within one chunk), so a message wrapped by a terminal or a web page matches. Each line
is matched on its own first (numbered as itself), then the joined record for what is left. With
`crashes`, fatal events no entry names (`remedies.crash`) are reported too, from their own needles.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace
from typing import AbstractSet, BinaryIO, Generator, Iterable, Iterator, Mapping

from remedies import crash as crash_rules
from remedies.crash import Crash
from remedies.inferred import inferred
from remedies.loader import Catalogue, load_catalogue
from remedies.model import CONTEXT_LINES, UNKNOWN, FixStep, Remedy
from remedies.needlescan import NeedleScan
from remedies.normalise import Line, join, normalise
from remedies.prefilter import cached_prefilter
from remedies.templates import MIN_PREFIX, load_templates
from remedies.validationroot import MAX_DETAIL_LINES, awaits_detail, detail

CHUNK = 8 << 20
MAX_LINE = 1 << 20
MAX_SHOWN = 400
CONTEXT = 2
MIN_SHARED = 8
JOIN_LINES = 12
MIN_WRAP = 40
WRAP_SCAN_BYTES = 1 << 20
CRASH = -1
MIN_UNCLASSED = 24  # characters of a line read as an engine message pasted without its exception class
# An exception line typed in lower case: `valueerror: ...`, `torch.outofmemoryerror: ...`
_RETYPED = re.compile(r"^[a-z_][a-z0-9_.]{0,80}(?:error|exception):\s")


@dataclass(frozen=True)
class Match:
    """One log record (a line, or a message wrapped over several lines) that matched one entry.

    `values` are the regex's named groups (the figures in the message), used to render the fix; `crash` is
    set instead of a catalogue match for a fatal event no entry names (see `remedies.crash`).
    """

    remedy: Remedy
    lineno: int
    line: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    values: tuple[tuple[str, str], ...] = ()
    crash: Crash | None = None

    @property
    def fix(self) -> tuple[FixStep, ...]:
        """The entry's fix steps rendered with this message's figures."""
        return self.remedy.render_fix(dict(self.values))


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


def _variants(pieces: list[Line]) -> list[str]:
    """The record's text as read: pieces joined with a space (a web page wrapped at a space) or, for a
    terminal that cut a word at the column limit, with nothing."""
    texts = [p.text for p in pieces]
    return [texts[0]] if len(texts) == 1 else [join(texts, " "), join(texts, "")]


def _piece_of(pieces: list[Line], literal: str) -> int:
    """The piece where a literal split over several pieces starts (by its first word)."""
    head = literal.split(" ", 1)[0]
    return next((i for i, p in enumerate(pieces) if head and head in p.text), 0)


def with_context(found: list[tuple[int, Remedy, tuple[tuple[str, str], ...]]], before: list[str]
                 ) -> list[tuple[int, Remedy, tuple[tuple[str, str], ...]]]:
    """Apply entries' `context` to (line, entry, values) matches of one record, given the normalised lines
    before it (read line by line and glued, for a word a terminal cut): an entry whose context is not there
    is dropped, one whose context is gains its named groups (the last occurrence's) and names its line alone
    (entries on that line matched without context evidence are dropped)."""
    kept: list[tuple[int, Remedy, tuple[tuple[str, str], ...]]] = []
    texts = ("\n".join(before), "".join(before))
    for line, remedy, values in found:
        if remedy.context_regex is None:
            kept.append((line, remedy, values))
            continue
        hit = None
        for text in texts:
            for hit in remedy.context_regex.finditer(text):
                pass
            if hit is not None:
                break
        if hit is not None:
            extra = tuple((k, v) for k, v in hit.groupdict().items() if v is not None)
            kept.append((line, remedy, values + tuple(e for e in extra if e[0] not in dict(values))))
    specific = {line for line, remedy, _ in kept if remedy.context_regex is not None}
    return [(line, remedy, values) for line, remedy, values in kept
            if remedy.context_regex is not None or line not in specific]


class Matcher:
    """Match log records against a catalogue (the shipped one by default).

    Lines are normalised (`remedies.normalise`) before the literals and regexes see them, and a line that
    continues the record before it is joined to it, so prefixes, escapes and wrapping do not hide a message.
    """

    def __init__(self, catalogue: Catalogue | None = None, context: int = CONTEXT) -> None:
        self.catalogue = catalogue or load_catalogue()
        self.context = context
        forms = [form for remedy in self.catalogue for form in remedy.forms()]
        self._entry = {remedy.id: remedy for remedy in self.catalogue}
        self._anchors = [
            _Anchor(text.encode(), text, members) for text, members in plan_anchors(forms)
        ]
        literals = tuple(sorted({r.literal for r in forms}))
        self._needles = [n.encode() for n in cached_prefilter(literals)]
        self._plan = self._plan_for(self._needles)
        self._wrap_plan = self._plan_for([n.encode() for n in cached_prefilter(literals, wrap_tolerant=True)])
        self._crash_needles = [n.encode() for n in cached_prefilter(tuple(sorted(crash_rules.LITERALS)))]
        self._scanners: dict[tuple[bool, bool, bool], NeedleScan] = {}
        self._recent: deque[str] = deque(maxlen=context)
        self._history: deque[str] = deque(maxlen=CONTEXT_LINES)
        self._contexts = any(form.context_regex is not None for form in forms)
        self._pieces: list[Line] = []
        self._last_len = 0
        self._record_hits: set[str] = set()
        self._folded: list[tuple[Remedy, re.Pattern[str]]] | None = None

    def _scanner(self, catalogue: bool, small: bool, crashes: bool) -> NeedleScan:
        """The one-pass needle scan for a chunk (`remedies.needlescan`): the catalogue's needles (the
        wrap-tolerant set for a small file), and the crash markers when `crashes`; built once per kind."""
        key = (catalogue, catalogue and small, crashes)
        scanner = self._scanners.get(key)
        if scanner is None:
            plan = (self._wrap_plan if small else self._plan) if catalogue else []
            crash = [(needle, frozenset({CRASH})) for needle in self._crash_needles] if crashes else []
            scanner = self._scanners[key] = NeedleScan([*plan, *crash])
        return scanner

    def _plan_for(self, needles: list[bytes]) -> list[tuple[bytes, frozenset[int]]]:
        """Each needle with the anchors whose literals contain it."""
        return [(n, frozenset(i for i, a in enumerate(self._anchors) if any(n in r.literal.encode() for r in a.remedies)))
                for n in needles]

    @property
    def needles(self) -> list[str]:
        """The level-1 needles of the file scan (see `remedies.prefilter`), for inspection and tests."""
        return [n.decode() for n in self._needles]

    @property
    def anchors(self) -> list[str]:
        """The prefilter's anchors, for inspection and tests."""
        return [a.text for a in self._anchors]

    def match_line(self, line: str) -> list[Remedy]:
        """Entries whose literal and regex both match this one line, normalised (no state, no joining); an
        entry with a `context` needs the lines before the message, so it never names a line alone."""
        return [self._entry[r.id] for r, _ in self._match_texts([normalise(line[:MAX_LINE]).text],
                                                                range(len(self._anchors)))
                if r.context_regex is None]

    def _match_texts(self, texts: list[str], anchors: Iterable[int]) -> list[tuple[Remedy, tuple[tuple[str, str], ...]]]:
        found: list[tuple[Remedy, tuple[tuple[str, str], ...]]] = []
        seen: set[str] = set()
        for anchor in map(self._anchors.__getitem__, sorted(a for a in anchors if a != CRASH)):
            for remedy in anchor.remedies:
                best: tuple[tuple[str, str], ...] | None = None
                for text in texts:
                    if remedy.id in seen or anchor.text not in text or remedy.literal not in text:
                        continue
                    hit = remedy.regex.search(text)
                    if hit:
                        values = tuple((k, v) for k, v in hit.groupdict().items() if v is not None)
                        best = values if best is None or len(values) > len(best) else best
                if best is not None:
                    seen.add(remedy.id)
                    found.append((remedy, best))
        return found

    def scan_retyped(self, stream: BinaryIO) -> Iterator[Match]:
        """Exception lines a person retyped in lower case (`valueerror: bfloat16 is only supported on gpus ...`),
        read by the entries' patterns without case. The file scan's needles are case-sensitive, so explain runs
        this only on a pasted excerpt (a file of at most WRAP_SCAN_BYTES) in which nothing else named an error."""
        if self._folded is None:
            self._folded = [(form, re.compile(form.regex.pattern, form.regex.flags | re.IGNORECASE))
                            for remedy in self.catalogue if remedy.context_regex is None and not remedy.stop
                            for form in remedy.forms()]
        data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            text = normalise(_decode(raw[:MAX_LINE])).text.strip()
            if not _RETYPED.match(text) or text != text.lower():
                continue
            seen: set[str] = set()
            for form, regex in self._folded:
                hit = regex.search(text) if form.id not in seen else None
                if hit:
                    seen.add(form.id)
                    values = tuple((k, v) for k, v in hit.groupdict().items() if v is not None)
                    yield Match(self._entry[form.id], lineno, _shorten(text), (), (), values)

    def scan_unclassed(self, stream: BinaryIO) -> Iterator[Match]:
        """Engine error messages pasted without their exception class or any log prefix (a quoted message in an
        issue's prose: `"The input (70000 tokens) is longer than the model's context length (40960)."`), as
        crashes: a line whose best mined template (`remedies.templates`) is a raise, matched whole or by at
        least MIN_PREFIX fixed characters. Template lookups cost about a millisecond a line, so explain runs
        this only on a pasted excerpt in which nothing else was found."""
        index = load_templates()
        data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            shown = _decode(raw[:MAX_LINE]).strip()
            line = normalise(shown)
            text = line.text.strip().strip("\"'")
            if (line.level is not None or line.text.strip() != shown or len(text) < MIN_UNCLASSED
                    or crash_rules.exception_line(text) or self.match_line(shown)):
                continue  # a record, a short line, an exception line (the crash scan's) or an entry's line
            hit = index.lookup(text)
            if hit is None or not hit.template.raised or (not hit.whole and hit.matched < MIN_PREFIX):
                continue
            yield Match(UNKNOWN, lineno, _shorten(text),
                        crash=Crash(lineno, text, text, None, crash_rules.component_of((), hit.template.package),
                                    "exception"))

    def feed(self, line: str | bytes, lineno: int) -> list[Match]:
        """Match one line of a live stream; the lines fed before it become its context.

        A line that continues the record before it is joined to it and the whole record is matched again;
        an entry is reported once per record, numbered with the record's first line.
        """
        text = _decode(line) if isinstance(line, bytes) else line
        text = text.rstrip("\r\n")
        piece = normalise(text[:MAX_LINE])
        wrapped = bool(self._pieces) and not piece.record and self._last_len >= MIN_WRAP
        self._last_len = len(text)
        if not wrapped:
            self._pieces, self._record_hits = [piece], set()
            before = tuple(self._recent)
        elif len(self._pieces) < JOIN_LINES:
            self._pieces.append(piece)
            before = tuple(self._recent)[:-len(self._pieces) + 1] if len(self._pieces) <= self.context else ()
        else:
            self._recent.append(_shorten(text))
            self._history.append(piece.text[:MAX_SHOWN * 4])
            return []
        shown = _shorten(text) if len(self._pieces) == 1 else _shorten(join([p.text for p in self._pieces]))
        self._recent.append(_shorten(text))
        found = []
        texts = [piece.text] if len(self._pieces) == 1 else [piece.text, *_variants(self._pieces)]
        hits = [(lineno, remedy, values) for remedy, values in self._match_texts(texts, range(len(self._anchors)))]
        if self._contexts and hits:  # every line before this one, the record's own earlier lines included
            hits = with_context(hits, list(self._history))
        self._history.append(piece.text[:MAX_SHOWN * 4])
        for _, remedy, values in hits:
            if remedy.id not in self._record_hits:
                self._record_hits.add(remedy.id)
                found.append(Match(self._entry[remedy.id], lineno, shown, before, (), values))
        return found

    def scan(self, stream: BinaryIO, crashes: bool = False, catalogue: bool = True) -> Iterator[Match]:
        """Every match in a binary stream, in line order; lines are numbered from 1. With `crashes`, fatal
        events (tracebacks, deaths; see `remedies.crash`) come too, as matches whose `crash` is set; without
        `catalogue`, only they come (their needles are planned apart, so a scan for both costs their sum)."""
        yield from self.scan_range(stream, crashes=crashes, catalogue=catalogue)

    def scan_range(self, stream: BinaryIO, head: bytes = b"", stop: int | None = None,
                   crashes: bool = False, catalogue: bool = True) -> Generator[Match, None, int]:
        """Matches in a stream, in line order, numbered from 1; returns the number of newlines scanned.

        The stream is read CHUNK bytes at a time into one reused buffer: a partial last line moves to its
        front and the next read fills in behind it, so no chunk is copied or reallocated. `head` is data
        already read (it starts the buffer, as a partial line would); `stop` ends the scan once that many
        bytes (counting `head`) are scanned, which must be where a chunk ends (see `remedies.parallel`).

        A whole stream of at most WRAP_SCAN_BYTES (a pasted excerpt, a short log) is scanned with the
        wrap-tolerant needles (`remedies.prefilter.plan_wrap_tolerant`), so a message a terminal or a web
        page wrapped over two lines is found; bigger logs are machine-written and keep the cheaper set.
        """
        buf = bytearray(CHUNK + max(CHUNK, MAX_LINE))
        view = memoryview(buf)
        buf[:len(head)] = head
        lineno, filled, done = 1, len(head), 0
        if stop is None and not head:
            while filled < CHUNK:
                got = stream.readinto(view[filled:CHUNK])
                if not got:
                    small = filled <= WRAP_SCAN_BYTES
                    lineno = yield from self._scan_chunk(buf, filled, lineno, crashes, catalogue, small)
                    return lineno - 1
                filled += got
        first = filled > 0 and not head
        while stop is None or done < stop:
            got = filled if first else stream.readinto(view[filled:filled + CHUNK])
            filled += 0 if first else (got or 0)
            first = False
            if not got:
                if filled:
                    lineno = yield from self._scan_chunk(buf, filled, lineno, crashes, catalogue)
                    done += filled
                break
            cut = buf.rfind(b"\n", 0, filled) + 1
            if cut == 0 and filled < MAX_LINE:
                continue
            if cut == 0:
                cut = filled
            lineno = yield from self._scan_chunk(buf, cut, lineno, crashes, catalogue)
            done += cut
            buf[:filled - cut] = buf[cut:filled]
            filled -= cut
        if stop is not None and done != stop:
            raise ValueError(f"scan ended at byte {done}, not at the chunk boundary {stop}")
        return lineno - 1

    def _records(self, chunk: bytearray, limit: int, starts: Mapping[int, AbstractSet[int]]
                 ) -> Iterator[tuple[int, int, int, list[Line], int, set[int]]]:
        """(first, start, last, pieces, at, anchors) of each record holding a needle, in order, one at a time (a
        chunk of nothing but matching lines holds hundreds of thousands): the needles of the lines a record
        takes in after its start join its anchors."""
        ordered = sorted(starts)
        i = 0
        while i < len(ordered):
            start = ordered[i]
            first, last, pieces, at = self._record(chunk, start, limit)
            anchors = set(starts[start])
            i += 1
            while i < len(ordered) and ordered[i] < last:
                anchors.update(starts[ordered[i]])
                i += 1
            yield first, start, last, pieces, at, anchors

    def _scan_chunk(self, chunk: bytearray, limit: int, lineno: int, crashes: bool = False,
                    catalogue: bool = True, small: bool = False) -> Generator[Match, None, int]:
        """Matches in chunk[:limit] (whole lines) numbered from `lineno`; returns the next line's number.

        Each line holding a needle is read with the lines of its record (continuations before and after it,
        at most JOIN_LINES each way, within the chunk), normalised; the record is matched once.
        """
        starts = self._scanner(catalogue, small, crashes).line_starts(chunk, limit)
        counted = 0
        parsed_until = -1
        for first, start, last, pieces, at, anchors in self._records(chunk, limit, starts):
            lineno += chunk.count(b"\n", counted, start)
            counted = start
            line_end = self._line_end(chunk, start, limit)
            if line_end - start > MAX_LINE:
                yield from self._huge_line(chunk, start, line_end, limit, lineno, anchors)
                continue
            for number, shown, span, remedy, values in self._match_record(chunk, first, pieces, lineno - at, anchors, limit):
                yield Match(self._entry[remedy.id], number, shown, *self._context(chunk, *span, limit), values)
            if crashes and CRASH in anchors and first >= parsed_until:
                event, parsed_until = self._crash(chunk, first, last, limit,
                                                  lineno - chunk.count(b"\n", first, start), pieces)
                if event is not None and (event.kind == "inferred"
                                          or not any(self.match_line(text) for text in event.readings)):
                    shown = f"{event.frame}: {event.statement}" if event.kind == "inferred" else event.exception
                    yield Match(UNKNOWN, event.lineno, _shorten(shown), crash=event)
        return lineno + chunk.count(b"\n", counted, limit)

    def _match_record(self, chunk: bytearray, first: int, pieces: list[Line], number: int, anchors: set[int],
                      limit: int) -> list[tuple[int, str, tuple[int, int], Remedy, tuple[tuple[str, str], ...]]]:
        """Each piece matched on its own (numbered as its line), then the joined record for what is left
        (numbered as the piece where the entry's literal starts), in line order."""
        spans: list[tuple[int, int]] = []
        pos = first
        for _ in pieces:
            end = self._line_end(chunk, pos, limit)
            spans.append((pos, end))
            pos = end + 1
        found = []
        seen: set[str] = set()
        for index, piece in enumerate(pieces):
            for remedy, values in self._match_texts([piece.text], anchors):
                seen.add(remedy.id)
                shown = _shorten(_decode(chunk[spans[index][0]:spans[index][1]][:MAX_LINE]))
                found.append((number + index, shown, spans[index], remedy, values))
        if len(pieces) > 1:
            joined = _shorten(join([p.text for p in pieces]))
            for remedy, values in self._match_texts(_variants(pieces), anchors):
                if remedy.id in seen:
                    continue
                index = _piece_of(pieces, remedy.literal)
                found.append((number + index, joined, (spans[0][0], spans[-1][1]), remedy, values))
        if any(f[3].context_regex is not None for f in found):
            shown = {(f[0], f[3].id): (f[1], f[2]) for f in found}
            before, kept = self._before(chunk, first), []
            for line in sorted({f[0] for f in found}):  # the record's own lines above the match count too
                earlier = [p.text for p in pieces[:line - number]]
                kept += with_context([(f[0], f[3], f[4]) for f in found if f[0] == line], before + earlier)
            found = [(line, *shown[(line, remedy.id)], remedy, values) for line, remedy, values in kept]
        return sorted(found, key=lambda f: f[0])

    @staticmethod
    def _before(chunk: bytearray, start: int) -> list[str]:
        """The CONTEXT_LINES lines before byte `start` (within the chunk), normalised, for entries' `context`."""
        pos = start
        for _ in range(CONTEXT_LINES):
            if pos <= 0:
                break
            pos = chunk.rfind(b"\n", 0, pos - 1) + 1
        return [normalise(line).text for line in _decode(chunk[pos:start][:MAX_LINE]).split("\n")]

    def _huge_line(self, chunk: bytearray, start: int, end: int, limit: int, lineno: int,
                   anchors: set[int]) -> Iterator[Match]:
        """A line over MAX_LINE: each anchor is looked for in the MAX_LINE window around its first hit."""
        for index in sorted(a for a in anchors if a != CRASH):
            anchor = self._anchors[index]
            pos = chunk.find(anchor.needle, start, end)
            if pos < 0:
                continue
            lo = max(start, pos - MAX_LINE // 2)
            text = normalise(_decode(chunk[lo:min(end, lo + MAX_LINE)])).text
            for remedy, values in self._match_texts([text], [index]):
                yield Match(self._entry[remedy.id], lineno, _shorten(text), *self._context(chunk, start, end, limit), values)

    @staticmethod
    def _line_end(chunk: bytearray, start: int, limit: int) -> int:
        end = chunk.find(b"\n", start, limit)
        return limit if end < 0 else end

    def _read(self, chunk: bytearray, start: int, limit: int) -> tuple[int, Line]:
        end = self._line_end(chunk, start, limit)
        return end, normalise(_decode(chunk[start:min(end, start + MAX_LINE)]))

    def _record(self, chunk: bytearray, start: int, limit: int) -> tuple[int, int, list[Line], int]:
        """The record around the line at `start`: its first byte, the end of its last line, its pieces and
        the index of the piece at `start`. A line continues the one before it when it starts no record and
        the line before is long enough to have been wrapped (MIN_WRAP)."""
        end, line = self._read(chunk, start, limit)
        pieces, first = [line], start
        while not pieces[0].record and first > 0 and len(pieces) < JOIN_LINES:
            prev = chunk.rfind(b"\n", 0, first - 1) + 1
            if first - 1 - prev < MIN_WRAP:
                break
            _, earlier = self._read(chunk, prev, first - 1)
            pieces.insert(0, earlier)
            first = prev
        at = len(pieces) - 1
        line_start = start
        while end + 1 < limit and len(pieces) - at <= JOIN_LINES and end - line_start >= MIN_WRAP:
            following, later = self._read(chunk, end + 1, limit)
            if later.record:
                break
            pieces.append(later)
            line_start, end = end + 1, following
        return first, end, pieces, at

    def _crash(self, chunk: bytearray, first: int, last: int, limit: int, lineno: int,
               pieces: list[Line]) -> tuple[Crash | None, int]:
        """A fatal event starting at this record (ending at byte `last`), with the records of progress that
        follow it counted (`remedies.crash.progress`), and the byte up to which its lines were read."""
        head = pieces[0]
        if not crash_rules.starts_traceback(head.text) or crash_rules.flattened(head.text):
            text = join([p.text for p in pieces]).strip()
            fatal = crash_rules.death(Line(text, head.level, True))
            if fatal is None and len(pieces) > 1:  # a bare `AssertionError` the next line seemed to continue
                fatal = crash_rules.death(head)
            if fatal is None:
                fatal = next(filter(None, map(self._quoted_raise, [Line(text, head.level, True), *pieces[1:]])), None)
            if fatal is None:
                return None, first
            kind = "exception" if crash_rules.exception_line(fatal) else "died"
            if kind == "exception" and awaits_detail(fatal):
                fatal = self._with_detail(chunk, last, limit, fatal)
            tight = join([p.text for p in pieces], "").strip() if len(pieces) > 1 else ""
            return Crash(lineno, fatal, fatal, None, crash_rules.component_of((), fatal), kind, tight,
                         self._carried_on(chunk, last, limit)), first
        level = head.level
        if level is None and first > 0:
            previous = self._read(chunk, chunk.rfind(b"\n", 0, first - 1) + 1, first - 1)[1].level
            level = previous if previous == "WARNING" else None
        ends = {lineno: self._line_end(chunk, first, limit)}

        def following() -> Iterator[tuple[int, Line]]:
            number, pos = lineno, ends[lineno]
            while pos < limit:
                end, line = self._read(chunk, pos + 1, limit)
                number += 1
                ends[number] = end
                yield number, line
                pos = end

        event, used = crash_rules.parse_traceback(following(), level)
        end = ends.get(used, ends[lineno])
        if event is not None and event.kind == "cut":
            exception = inferred(event.frame, event.statement) if event.frame is not None else None
            event = None if exception is None else replace(event, exception=exception, final=exception,
                                                           kind="inferred")
        if event is not None:
            event = replace(event, carried_on=self._carried_on(chunk, end, limit))
        return event, end

    def _with_detail(self, chunk: bytearray, end: int, limit: int, exception: str) -> str:
        """A pydantic validation header (a bare exception line, no traceback) read with its first error's message
        from the indented lines below it (`remedies.validationroot`)."""
        pos = end
        for _ in range(MAX_DETAIL_LINES):
            if pos + 1 >= limit:
                break
            pos, line = self._read(chunk, pos + 1, limit)
            if line.text[:1] not in " \t":
                break
            said = detail(line.text)
            if said is not None:
                return f"{exception} {said}"
        return exception

    @staticmethod
    def _quoted_raise(line: Line) -> str | None:
        """An exception quoted inside the line (a JSON payload, a client's repr) whose message a mined raise
        template of the engines prints (`remedies.templates`), or None: only the engines' own errors count, so
        a healthy record that merely mentions an exception name raises no alarm. A whole traceback a web page
        flattened into one line (`crash.flattened`) counts whatever raised it."""
        quoted = crash_rules.embedded(line)
        if quoted is None:
            return None
        if crash_rules.flattened(line.text) or load_templates().lookup(quoted, raised_only=True) is not None:
            return quoted
        return None

    def _carried_on(self, chunk: bytearray, end: int, limit: int) -> int:
        """Records of progress after the line ending at byte `end`, up to the next fatal-looking line (at most
        CARRIED_ON counted, LOOKAHEAD_LINES read, within the chunk)."""
        count, pos = 0, end
        for _ in range(crash_rules.LOOKAHEAD_LINES):
            if pos + 1 >= limit or count >= crash_rules.CARRIED_ON:
                break
            pos, line = self._read(chunk, pos + 1, limit)
            if crash_rules.fatal_looking(line):
                break
            count += crash_rules.progress(line)
        return count

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
