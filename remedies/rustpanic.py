"""Read a Rust component's panic: the serving frontends and routers written in Rust (SGLang's router, Dynamo's
frontend) die without a Python traceback, with the line Rust's default panic hook prints.

The hook (rust-lang/rust library/std/src/panicking.rs `default_hook`) writes, since Rust 1.73,
`thread '<name>' panicked at <file>.rs:<line>:<column>:` and the panic message on the next line; before, the
message came first: `thread '<name>' panicked at '<message>', <file>.rs:<line>:<column>`. Either is read as a
crash whose root is the message and whose raise site is the source position; a `note: run with
`RUST_BACKTRACE=1`` line is not the message. explain reads panics only in an excerpt in which nothing else
named a failure.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import Crash, Frame, component_of
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise

PANIC = re.compile(
    r"\bthread '(?P<thread>[^'\n]{0,120})' panicked at "
    r"(?:'(?P<old>[^\n]{1,2000}?)', (?P<old_path>[^\s'\"]{1,300}\.rs):(?P<old_line>\d{1,7})(?::\d{1,7})?"
    r"|(?P<path>[^\s'\"]{1,300}\.rs):(?P<line>\d{1,7})(?::\d{1,7})?:?[ \t]*(?P<rest>[^\n]*))"
)
_NOTE = re.compile(r"^note: run with `RUST_BACKTRACE")
MAX_MESSAGE = 400


def panic_site(text: str) -> Frame | None:
    """The source position a panic line names, as a frame (function `panic`), or None."""
    hit = PANIC.search(text)
    if hit is None:
        return None
    path = hit.group("old_path") or hit.group("path")
    return Frame(path, int(hit.group("old_line") or hit.group("line")), "panic")


def panic_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The first Rust panic of a pasted excerpt (at most WRAP_SCAN_BYTES) as a crash: `thread 'x' panicked at
    <file>.rs:<line>: <message>`, the message read from the next line where the hook put it there."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if "panicked at" not in text:
        return
    lines = text.split("\n")
    for index, raw in enumerate(lines):
        if "panicked at" not in raw:
            continue
        line = normalise(raw[:MAX_LINE]).text.strip()
        hit = PANIC.search(line)
        frame = panic_site(line)
        if hit is None or frame is None:
            continue
        message = hit.group("old") or hit.group("rest").strip()
        if not message:
            following = (normalise(x[:MAX_LINE]).text.strip() for x in lines[index + 1:index + 4])
            message = next((x for x in following if x and not _NOTE.match(x)), "")
        exception = f"thread '{hit.group('thread')}' panicked at {frame.path}:{frame.line}: {message}"[:MAX_MESSAGE]
        yield Match(UNKNOWN, index + 1, raw.strip()[:400],
                    crash=Crash(index + 1, exception, exception, frame, component_of((), text[:4096]), "exception"))
        return
