"""Read a traceback fragment that stops on an `assert` statement: the AssertionError it raised, cut from the paste.

People paste the part of a traceback that looks relevant: a worker's ERROR records from the middle of the
traceback down to the deepest frame and its source line, without the `AssertionError` line that followed. When
that source line is an `assert` statement inside engine code (vllm/, sglang/) and nothing follows the frame, the
exception is that assert's AssertionError, raised there: an internal invariant of the engine, read as a crash
with the frame as its raise site (the engine-bug verdict of `remedies.enginebug` then applies as to any other).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.bugsigns import survived
from remedies.crash import Crash, Frame, exception_line
from remedies.enginebug import ENGINE_CODE, ENGINE_WORD
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise

_FRAME = re.compile(r'^\s{0,8}File "(?P<path>[^"\n]{1,1024})", line (?P<line>\d{1,9}), in (?P<func>[\w.<>]{1,200})\s*$')
_ASSERT = re.compile(r"^\s{0,16}(?P<statement>assert\b[^\n]{1,400})$")
# What may follow the statement in a paste that stops there: the caret line Python 3.11+ prints under it, blank
# lines, a closing fence.
_AFTER = re.compile(r"^\s*(?:[~^]{1,400})?\s*$")


def fragment_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The `assert` an excerpt's (at most WRAP_SCAN_BYTES) last traceback frame stops on, as a crash, when that
    frame is engine code, nothing after it is an exception line and the excerpt names vLLM or SGLang."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if "assert " not in text or not ENGINE_WORD.search(text):
        return
    raw_lines = text.split("\n")
    lines = [normalise(raw[:MAX_LINE]).text for raw in raw_lines]
    for index in range(len(lines) - 1):
        frame = _FRAME.match(lines[index])
        statement = _ASSERT.match(lines[index + 1]) if frame else None
        if frame is None or statement is None or not ENGINE_CODE.search(frame.group("path")):
            continue
        if not _stops_here(lines, index + 2) or survived(raw_lines, index + 1):
            continue
        where = Frame(frame.group("path"), int(frame.group("line")), frame.group("func"))
        exception = f"AssertionError: {statement.group('statement').strip()} (the paste stops on the assert)"
        component = "sglang" if "sglang" in where.path else "vllm"
        yield Match(UNKNOWN, index + 2, raw_lines[index + 1].strip()[:400],
                    crash=Crash(index + 2, exception, exception, where, component, "exception",
                                statement=statement.group("statement").strip(), frames=(where,)))
        return


def _stops_here(lines: list[str], start: int) -> bool:
    """Whether the traceback ends at `start`: no further frame and no exception line before the paste moves on."""
    for text in lines[start:start + 8]:
        if _FRAME.match(text) or exception_line(text.strip()):
            return False
        if not _AFTER.match(text):
            return True
    return True
