"""The root exception behind a finding and where it was raised, read from the lines around it.

A catalogue entry names the cause; whoever reads the finding still wants the exception the engine raised
and the line that raised it, as a crash no entry names gets them (`remedies.crash`). `root_near(source,
lineno, context)` reads the lines around a finding's first line (`window`): the exception line at or after
it (a vLLM record that prints its message before the traceback: `ERROR ... engine.py:389] Ray does not
allocate ...` then the frames), else before it; the traceback frames above that line, the deepest one in
engine code (vllm / sglang) first, with the statement Python printed under it (for a bare `assert`, its
test); and the mined template of the message (`remedies.source`): module, function, releases and the `if`
test that raised it.

A plain file is read by counting newlines in blocks up to the line (no scan of its text); a gzip file is
read through; standard input, a pipe or a FIFO, which cannot be read again, gives the finding's own context
lines.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Iterable

from remedies.crash import (_BARE, _FRAME, CHAINS, FLAT_FRAME, HEADER, Frame, component_of, embedded, exception_line,
                            flattened)
from remedies.bareassert import statement_of, with_statement
from remedies.inferred import INFERRED
from remedies.links import load_links
from remedies.normalise import Line, normalise
from remedies.reader import GZIP_MAGIC, STDIN
from remedies.source import Located, locate

WINDOW_BEFORE = 120
WINDOW_AFTER = 40
FORWARD = 30
BACKWARD = 30
BLOCK = 1 << 22
ENGINES = ("vllm", "sglang")
MAX_EXCEPTION = 600
MAX_CITED = 3
# A catalogue source that cites engine code: `vllm-project/vllm vllm/lora/peft_helper.py (validate_legal)`.
_CITED_FILE = re.compile(r"^[\w.-]{1,64}/[\w.-]{1,100} (?P<path>[\w./-]{1,200}\.(?:py|cc|cpp|cu|cuh|h|c|go|rs))\b"
                         r"(?P<rest>.*)$")


@dataclass(frozen=True)
class Root:
    """The root exception as printed, the frame that raised it and its statement, and its mined template."""

    exception: str
    frame: Frame | None
    statement: str
    located: Located | None
    cited: tuple[str, ...] = ()
    below: bool = False
    inferred: bool = False
    native: bool = False  # `cited` names the C / C++ function that builds the message (`remedies.nativesites`)
    logged: bool = False  # `frame` is the position the log record's own prefix names (`remedies.recordsite`)
    alone: bool = False  # no exception line near the entry's message: the message itself is the root

    def site(self) -> str:
        """Where it was raised, as the log's traceback says it."""
        if self.frame is None:
            return ""
        if self.logged:
            return f"printed at {self.frame} (the source position its log record names)"
        if self.below:  # its traceback was printed after it, and may have been cut before the raise
            return f"raised below {self.frame}, the deepest frame of the traceback printed after it"
        return f"raised at {self.frame}" + (f" (`{self.statement}`)" if self.statement else "")

    def why(self) -> str:
        """One sentence per fact: the exception, the frame, the template's raise site and condition."""
        parts = [f"Root exception{f' ({INFERRED})' if self.inferred else ''}: {self.exception}"]
        if self.frame is not None:
            parts.append(self.site())
        text = "; ".join(parts) + "."
        if self.located is not None:
            return f"{text} {self.located.why()}"
        if self.frame is None and self.cited:
            return f"{text} {self.cited_site()}"
        if self.frame is None:
            return f"{text} The log prints no traceback for it and no mined engine release raises these words."
        return text

    def cited_site(self) -> str:
        """Where the sources place a raise the log prints no traceback for."""
        whose = "its native sources" if self.native else "the entry's engine sources"
        return f"The log prints no traceback for it; {whose} place the raise in {'; '.join(self.cited)}."

    def to_dict(self) -> dict[str, object]:
        return {"exception": self.exception, "inferred": self.inferred,
                "raised_at": str(self.frame) if self.frame else None,
                "statement": self.statement or None, "cited": list(self.cited),
                "raised_by": self.located.to_dict() if self.located is not None else None}


def window(source: str, lineno: int) -> tuple[list[str], int] | None:
    """The lines around line `lineno` (1-based) of a file and the index of that line among them, or None."""
    if source == STDIN:
        return None
    first = max(1, lineno - WINDOW_BEFORE)
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None  # a pipe, a FIFO, /dev/stdin: read once already, it cannot be read again
        with open(source, "rb") as raw:
            gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            if gzipped:
                with gzip.open(raw) as stream:
                    lines = list(islice(stream, first - 1, lineno + WINDOW_AFTER))
            else:
                lines = _plain_lines(raw, first, lineno + WINDOW_AFTER)
    except (OSError, EOFError, ValueError):
        return None
    if len(lines) < lineno - first + 1:
        return None
    return [line.decode("utf-8", "replace") for line in lines], lineno - first


def _window_of(lines: list[str], lineno: int) -> tuple[list[str], int] | None:
    """The lines around line `lineno` (1-based) of lines in memory, and the index of that line among them."""
    if not 1 <= lineno <= len(lines):
        return None
    first = max(1, lineno - WINDOW_BEFORE)
    return lines[first - 1:lineno + WINDOW_AFTER], lineno - first


def _plain_lines(raw, first: int, last: int) -> list[bytes]:
    """Lines first..last (1-based) of an uncompressed file, found by counting newlines a block at a time."""
    seen, offset = 0, 0
    buffer = bytearray(BLOCK)
    while seen < first - 1:
        size = raw.readinto(buffer)
        if not size:
            return []
        count = buffer.count(b"\n", 0, size)
        if seen + count < first - 1:
            seen, offset = seen + count, offset + size
            continue
        pos = -1
        for _ in range(first - 1 - seen):
            pos = buffer.index(b"\n", pos + 1, size)
        offset += pos + 1
        seen = first - 1
    raw.seek(offset)
    return list(islice(raw, last - first + 1))


def window_in(source: str, lineno: int, lines: list[str] | None = None) -> tuple[list[str], int] | None:
    """`window` of the source, or of `lines` when given: the source's lines as the scans read them
    (`remedies.views`), numbered as the findings are."""
    return window(source, lineno) if lines is None else _window_of(lines, lineno)


def root_near(source: str, lineno: int, context: Iterable[str] = (), lines: list[str] | None = None) -> Root | None:
    """The root exception around a finding's first line (see the module doc), or None; `lines`, when given,
    are the source's lines as the scan read them (`remedies.views`), read instead of the file."""
    found = window_in(source, lineno, lines)
    if found is None:
        lines = list(context)
        return root_of(lines, len(lines) // 2) if lines else None
    return root_of(*found)


def stack_near(source: str, lineno: int, context: Iterable[str] = (), at: int = 0,
               lines: list[str] | None = None) -> tuple[str, list[tuple[Frame, str]]] | None:
    """The exception at or around line `lineno` of a file (else around index `at` of `context`, when the file
    cannot be read again) and the traceback frames printed above it, outermost first, each with its statement;
    `lines` as for `root_near`."""
    found = window_in(source, lineno, lines)
    lines, index = found if found is not None else (list(context), at)
    if not lines:
        return None
    read = [normalise(line) for line in lines]
    exc = _exception_index(read, index)
    if exc is None:
        return None
    text = read[exc].text.strip()
    return text, _frames_above(read, exc) or _frames_within(text, text)


def cut_traceback_near(source: str, lineno: int, context: Iterable[str] = (),
                       lines: list[str] | None = None) -> Frame | None:
    """The deepest engine frame (else the deepest frame) of a traceback that starts within FORWARD lines after
    line `lineno` (its header, or its first frame when the paste dropped the header) and is cut before its
    exception line (a paste that quotes the exception in prose or a heading, or puts it above its frames, then
    only part of the traceback), or None; `lines` as for `root_near`."""
    found = window_in(source, lineno, lines)
    lines, at = found if found is not None else (list(context), len(list(context)) // 2)
    read = [normalise(line) for line in lines]
    for index in range(at + 1, min(len(read), at + FORWARD)):
        if _FRAME.match(read[index].text):
            index -= 1  # a traceback pasted without its header starts at this frame
        elif not read[index].text.strip().startswith(HEADER):
            continue
        end = index + 1
        while end < len(read) and (_FRAME.match(read[end].text) or read[end].text[:1] in " \t"):
            end += 1
        if end < len(read) and _is_exception(read, end):
            return None  # a whole traceback: its own exception is the crash scan's
        return _engine_frame(_frames_above(read, end))[0]
    return None


def root_of(lines: list[str], at: int) -> Root | None:
    """The root exception among raw `lines` for the finding at index `at` (see the module doc)."""
    read = [normalise(line) for line in lines]
    exc = _exception_index(read, at)
    if exc is None:
        message = read[at].text.strip() if 0 <= at < len(read) else ""
        if not message:
            return None
        frame, statement = _engine_frame(_frames_below(read, at))
        return Root(message[:MAX_EXCEPTION], frame, statement, locate([message]), below=frame is not None)
    text = read[exc].text.strip()
    quoted = embedded(Line(text, read[exc].level, True)) if not exception_line(text) else None
    exception = (quoted or text)[:MAX_EXCEPTION]
    frames = _frames_above(read, exc) or _frames_within(text, exception)
    exception = with_statement(exception, frames[-1][1]) if frames else exception
    below = not frames
    if below:
        frames = _frames_below(read, exc)
    frame, statement = _engine_frame(frames)
    component = component_of([f for f, _ in frames], exception)
    return Root(exception, frame, statement, locate([exception], package=component), below=below and bool(frames))


def _exception_index(read: list[Line], at: int) -> int | None:
    """The exception line for the finding at `at`: at or after it (within FORWARD lines), else before it."""
    for index in range(at, min(len(read), at + FORWARD)):
        if _is_exception(read, index):
            return index
    for index in range(at - 1, max(-1, at - BACKWARD), -1):
        if _is_exception(read, index):
            return index
    if 0 <= at < len(read) and embedded(read[at]) is not None:
        return at
    return None


def _is_exception(read: list[Line], index: int) -> bool:
    text = read[index].text.strip()
    if read[index].level in ("WARNING", "INFO", "DEBUG"):
        return False
    if exception_line(text) and ":" in text:
        return True
    return bool(_BARE.match(text)) and index > 0 and bool(_frames_above(read, index))


def _frames_above(read: list[Line], exc: int) -> list[tuple[Frame, str]]:
    """The traceback frames printed above line `exc`, outermost first, each with the statement under it."""
    frames: list[tuple[Frame, str]] = []
    printed: list[str] = []  # the lines under the frame being read, first first
    for index in range(exc - 1, max(-1, exc - WINDOW_BEFORE), -1):
        text = read[index].text
        stripped = text.strip()
        found = _FRAME.match(text)
        if found:
            frames.append((Frame(found.group("path"), int(found.group("line")), found.group("func") or ""),
                           statement_of(printed)))
            printed = []
        elif stripped.startswith(HEADER) or any(stripped.startswith(c) for c in CHAINS):
            break
        elif not stripped or text[:1] in " \t" or stripped.startswith(("^", "~")):
            if stripped and not stripped.startswith(("^", "~")):
                printed.insert(0, stripped)
        else:
            break
    frames.reverse()
    return frames


def _frames_within(text: str, exception: str) -> list[tuple[Frame, str]]:
    """The frames of a traceback flattened into one line (`remedies.crash.flattened`), before its exception."""
    if not flattened(text):
        return []
    end = text.rfind(exception.split(":", 1)[0])
    return [(Frame(m.group("path"), int(m.group("line")), m.group("func")), "")
            for m in FLAT_FRAME.finditer(text, 0, end if end > 0 else len(text))]


def _frames_below(read: list[Line], exc: int) -> list[tuple[Frame, str]]:
    """The frames of a traceback that starts within FORWARD lines after the exception (a record that prints
    its message first, or a paste that put the exception above its traceback), outermost first."""
    for index in range(exc + 1, min(len(read), exc + FORWARD)):
        if read[index].text.strip().startswith(HEADER):
            end = next((i for i in range(index + 1, len(read)) if _is_exception(read, i)), len(read))
            return _frames_above(read, end)
    return []


def _engine_frame(frames: list[tuple[Frame, str]]) -> tuple[Frame | None, str]:
    """The deepest frame in engine code (vllm / sglang), else the deepest frame, with its statement."""
    for frame, statement in reversed(frames):
        parts = Path(frame.path.replace("\\", "/")).parts
        if any(engine in parts for engine in ENGINES):
            return frame, statement
    return frames[-1] if frames else (None, "")


def cited_sites(remedy_id: str, sources: Iterable[str]) -> tuple[str, ...]:
    """Where an entry's own sources say its message is raised: the mined sites linked to it
    (`remedies.links`: module::function when `test`), else the engine files its `source` cites."""
    sites: list[str] = []
    for link in load_links().links:
        if link.remedy_id != remedy_id or not link.module:
            continue
        where = f"{link.module}::{link.function}" if link.function else link.module
        where += f" when `{link.condition}`" if link.condition else ""
        if where not in sites:
            sites.append(where)
    if not sites:
        for source in sources:
            found = _CITED_FILE.match(source.strip())
            if found:
                rest = found.group("rest").strip()
                sites.append(found.group("path") + (f" {rest}" if rest.startswith("(") else ""))
    return tuple(sites[:MAX_CITED])
