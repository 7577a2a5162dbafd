"""Recognise a crash that no catalogue entry names: a traceback, a fatal exception line, a process that died.

`parse_traceback(lines)` reads one Python traceback (and the exceptions chained to it, "The above exception
was the direct cause..." / "During handling of the above exception...") from normalised lines and returns
one `Crash` whose root is the innermost cause (the first exception printed) and whose final line is the
outermost one (the last printed). `death(line)` recognises a fatal line outside a traceback: a process that
exited non-zero, was killed or crashed natively, or an exception line printed at error level (a bare
`AssertionError` too, when the level is printed: the end of a traceback whose header an excerpt cut off).

A traceback or exception line logged at WARNING / INFO / DEBUG level is not fatal (a handled error); so is
a traceback without a level of its own right after a WARNING record (`logger.warning(..., exc_info=True)`).
A record that ends with the traceback header (SGLang's `Scheduler hit an exception: Traceback (most recent
call last):`) starts a traceback like a bare header does.

Not every error-looking traceback ends a log: a server that catches an exception and logs it goes on
working (SGLang 0.5.16 logs each multimodal processor it cannot import, torchcodec's five FFmpeg tracebacks
included, under `logger.warning(f"Ignore import error when loading {name}: " f"{e}")`, a format that prints
no level: python/sglang/srt/managers/multimodal_processor.py, import_processors). So each fatal event
records `carried_on`: how many records of normal `progress` follow it before the next fatal-looking line
(at most CARRIED_ON are counted). Events printed back to back, with fewer than CARRIED_ON such records
between them, belong together (one message holding several tracebacks; a root cause and its wrappers); a
group whose last event is followed by CARRIED_ON records of progress was survived, and the crash is the
group that ends the log (`final_group`). A dying server's own notices ("Received sigquit from a child
process", "kill_process_tree called", "Shutting down") are not progress.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from remedies.bareassert import continues, with_statement
from remedies.labels import label_line
from remedies.normalise import Line
from remedies.validationroot import awaits_detail, detail

HEADER = "Traceback (most recent call last)"
# Native aborts that say themselves they are their component's bug, not a user's setting: Ray's fatal records
# (RAY_LOG(FATAL), a failed RAY_CHECK; ray src/ray/util/logging.cc) and LLVM's report_fatal_error, which prints
# `LLVM ERROR: ` and aborts (llvm lib/Support/ErrorHandling.cpp; in a serving process, Triton's compiler).
RAY_FATAL = "You have likely discovered a bug in Ray"
LLVM_FATAL = "LLVM ERROR: "
CHAINS = ("The above exception was the direct cause of the following exception",
          "During handling of the above exception, another exception occurred")
# Substrings of every line `death` or `parse_traceback` can start from: the file scan's prefilter needles
# are planned to cover them (with the catalogue's literals), so a fatal line is never skipped.
LITERALS = (
    HEADER, "Error: ", "Exception: ", "Segmentation fault", "core dumped", "Killed", "exited with",
    "exit code", "exitcode", "Fatal Python error", "terminate called after throwing", "died with",
    "AssertionError", LLVM_FATAL, "Check failed: ", RAY_FATAL, " exception=", " received at time=",
)
HARMLESS_LEVELS = ("WARNING", "INFO", "DEBUG", "TRACE")
FATAL_LEVELS = ("ERROR", "CRITICAL", "FATAL")
# An exception printed without a message (a bare `assert`): the last line of a traceback whose header an
# excerpt cut off, logged at error level (vLLM's `EngineCore failed to start` records every traceback line).
_BARE = re.compile(r"^(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception)$")
PROGRESS_LEVELS = (None, "INFO", "DEBUG", "TRACE")
CARRIED_ON = 3
LOOKAHEAD_LINES = 400
MAX_FRAMES_LINES = 4000
MAX_MESSAGE_LINES = 20

_FRAME = re.compile(r'^[ \t]*File "(?P<path>[^"\n]{1,2048})", line (?P<line>\d{1,9})(?:, in (?P<func>[^\s,]{1,256}))?')
_EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w.]{0,200}(?:\([\w.]{0,200}\))?)(?::[ \t]?(?P<message>.*)|:?)$")
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|Abort)\b|^(?:[\w.]+\.)?[A-Z]\w{0,100}$")
# Native aborts besides: glog / RAY_CHECK print `Check failed: ` before aborting.
_DEATH = re.compile(
    r"Segmentation fault|core dumped|Fatal Python error|terminate called after throwing"
    rf"|^{re.escape(LLVM_FATAL)}|\bCheck failed: |{re.escape(RAY_FATAL)}"
    r"|(?:^|[\s:])Killed(?:[\s:]|$)|exited with (?:exit )?code[ =:]{0,3}-?[1-9]|exit ?code[ =:]{1,3}-?[1-9]"
    r"|died with <Signals\.SIG"
    r"|^\*\*\* SIG(?:SEGV|ABRT|BUS|FPE|ILL) received at time="  # absl failure_signal_handler.cc: a native crash
)
# Words of a process that is stopping: its notices are the end of a log, not a server carrying on.
_SHUTDOWN = re.compile(
    r"(?i)kill|\bsig[a-z]{0,3}(?:quit|term|int|abrt|kill)|shut ?down|shutting|terminat|\bexit|abort|crash"
    r"|clean ?up|destroy|\bdied\b|\bdead\b|\bstopp|finished server|\bfail"
)
_COMPONENTS = (
    ("vllm", "vllm"), ("sglang", "sglang"), ("ray", "ray"), ("transformers", "transformers"),
    ("huggingface_hub", "huggingface_hub"), ("torch", "torch"), ("triton", "torch"), ("nccl", "nccl"),
)
_COMPONENT_IN_PATH = re.compile(r"(?:^|[/\\])(vllm|sglang|ray|transformers|huggingface_hub|torch|triton)[/\\]")


@dataclass(frozen=True)
class Frame:
    """One `File "...", line N, in f` frame."""

    path: str
    line: int
    function: str

    def __str__(self) -> str:
        return f'{self.path}, line {self.line}, in {self.function}' if self.function else f"{self.path}, line {self.line}"


@dataclass(frozen=True)
class Crash:
    """A fatal event: the root exception (innermost cause), where it was raised, the final line printed."""

    lineno: int
    exception: str
    final: str
    frame: Frame | None
    component: str
    kind: str
    tight: str = field(default="", compare=False)
    carried_on: int = field(default=0, compare=False)
    statement: str = field(default="", compare=False)
    frames: tuple[Frame, ...] = field(default=(), compare=False)  # the root exception's traceback, outermost first

    @property
    def readings(self) -> tuple[str, ...]:
        """The root exception as read: pieces joined with spaces (a web page's wrap) and without (a terminal's)."""
        return (self.exception, self.tight) if self.tight else (self.exception,)

    def to_dict(self) -> dict[str, object]:
        return {"line": self.lineno, "exception": self.exception, "final": self.final, "kind": self.kind,
                "raised_at": str(self.frame) if self.frame else None, "component": self.component}


# c10d's and gloo's words when the process on the other end of a socket went away: the TCPStore client's
# recvBytes (torch/csrc/distributed/c10d/Utils.hpp: "Failed to recv, got 0 bytes. Connection was likely closed. Did
# the remote server shutdown or crash?") and gloo's pair (gloo/transport/tcp/pair.cc: "Connection closed by
# peer"). They follow another process's exit - the store's host shutting down first, or crashing - so they are
# never a root cause of their own: the other process's event is, or, during a shutdown, nothing is.
PEER_GONE = re.compile(r"(?i)failed to recv, got 0 bytes|connection closed by peer|connection reset by peer")
# A server's own words that it is stopping on purpose (vLLM's launcher "Shutting down FastAPI HTTP server.",
# uvicorn's "Shutting down", vLLM's "[shutdown] EngineCore: trigger received signal=", SGLang's "SIGTERM
# received"), and the teardown functions a traceback raised in during a shutdown passes through.
SHUTTING_DOWN = re.compile(r"(?i)\bshutting down\b|trigger received signal=|\bSIG(?:TERM|INT) received"
                           r"|\bKeyboardInterrupt\b")
TEARDOWN_FRAMES = re.compile(r"^(?:destroy_process_group|destroy_model_parallel|destroy_distributed_environment"
                             r"|shutdown|_shutdown|close|__del__|cleanup|_cleanup|atexit\w{0,40}|_exit_function)$")


def peer_gone(exception: str) -> bool:
    """Whether an exception is only the socket of a process that went away (PEER_GONE)."""
    return bool(PEER_GONE.search(exception))


def component_of(frames: Iterable[Frame], text: str) -> str:
    """The package a crash came from: the innermost frame in a known package (the last package directory in
    its path, so `/opt/torch/.venv/.../transformers/x.py` is transformers), else the message's words."""
    for frame in reversed(list(frames)):
        found = _COMPONENT_IN_PATH.findall(frame.path.replace("\\", "/"))
        if found:
            return dict(_COMPONENTS)[found[-1]]
    lowered = text.lower()
    if "nccl" in lowered:
        return "nccl"
    for word, component in _COMPONENTS:
        if word in lowered:
            return component
    if "cuda" in lowered or text.startswith(LLVM_FATAL):  # in a serving process LLVM is Triton's compiler
        return "torch"
    return "unknown"


def exception_line(text: str) -> bool:
    """Whether a normalised line reads like Python's last traceback line (`ValueError: ...`)."""
    found = _EXCEPTION.match(text)
    return bool(found and _EXCEPTION_NAME.search(found.group("name"))
                and not label_line(found.group("name"), found.group("message")))


def starts_traceback(text: str) -> bool:
    """Whether a normalised line opens a traceback: the bare header, or a record that ends with it."""
    stripped = text.strip()
    return stripped.startswith(HEADER) or stripped.rstrip(":").endswith(HEADER)


def fatal_looking(line: Line) -> bool:
    """Whether a line could start or continue a fatal event (a traceback, a chain line, an exception, a death)."""
    text = line.text.strip()
    return (starts_traceback(text) or any(text.startswith(c) for c in CHAINS) or exception_line(text)
            or bool(_DEATH.search(text)))


def progress(line: Line) -> bool:
    """Whether a line shows a server carrying on: a record of its own at INFO / DEBUG level or without one,
    not indented (a traceback frame or a wrapped message), neither fatal-looking, a shutdown notice nor an
    answer of 5xx."""
    text = line.text
    return (line.record and line.level in PROGRESS_LEVELS and bool(text.strip()) and text[:1] not in " \t"
            and not fatal_looking(line) and not _SHUTDOWN.search(text) and not _FAILED_ANSWER.search(text))


# An access record answering 5xx (uvicorn's `"POST /v1/... HTTP/1.1" 503 Service Unavailable`): a server that
# fails every request after an exception is not carrying on.
_FAILED_ANSWER = re.compile(r'HTTP/\d(?:\.\d)?" 5\d\d\b')


def final_group(events: Iterable[Crash]) -> list[Crash]:
    """The fatal events (of one log, in order) that end it: events printed back to back form a group, which
    ends at an event followed by CARRIED_ON records of progress (a survived group, dropped) or at the log's
    end (the group kept). Empty when the server carried on after every event."""
    group: list[Crash] = []
    for event in events:
        group.append(event)
        if event.carried_on >= CARRIED_ON:
            group = []
    return group


# asyncio's report of an exception nobody awaited ("Future exception was never retrieved" / "Task exception was
# never retrieved", then `future: <Future finished exception=AssertionError('msg')>`: cpython Lib/asyncio/
# futures.py __del__ and base_futures._format_callbacks / repr): the exception is named inside the repr, and
# the traceback printed after it is often cut before its own last line.
_UNRETRIEVED = re.compile(r"<(?:Future|Task) finished\b[^\n]{0,400}? exception=(?P<name>[A-Za-z_][\w.]{0,200}?(?:Error|"
                          r"Exception|Exit|Interrupt|Failure|Fault|Timeout))\((?P<message>[^\n]{0,2000})\)>")


def unretrieved(text: str) -> str | None:
    """`Name: message` of the exception an asyncio "never retrieved" record names, or None."""
    found = _UNRETRIEVED.search(text)
    if found is None:
        return None
    message = found.group("message").strip()
    if len(message) >= 2 and message[0] == message[-1] and message[0] in "'\"":
        message = message[1:-1]
    return f"{found.group('name')}: {message}" if message else found.group("name")


def death(line: Line) -> str | None:
    """The fatal part of a line outside a traceback (a process died, an error-level exception), or None."""
    if line.level in HARMLESS_LEVELS:
        return None
    text = line.text.strip()
    if _DEATH.search(text):
        return text
    named = unretrieved(text)
    if named is not None:
        return named
    if exception_line(text) and ":" in text and line.level in (None, "ERROR", "CRITICAL", "FATAL"):
        return text
    if line.level in FATAL_LEVELS and _BARE.match(text):
        return text
    return None


# An exception quoted inside another record: a JSON error payload ("detail": "...\\nValueError: ..."), an
# OpenAI / LiteLLM client error's repr, a wrapper's message that quotes it. Found anywhere after a separator.
_EMBEDDED = re.compile(
    r"(?:\\n|[\s\"'{(\[:=])(?P<exception>(?:[A-Za-z_]\w{0,60}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception)): ?"
    r"(?P<message>\S[^\n]{11,})"
)
MAX_EMBEDDED = 600
_TRAILING = re.compile(r"(?:^|\s)(?P<exception>(?:[A-Za-z_]\w{0,60}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception))\s*$")


def embedded(line: Line) -> str | None:
    """An exception quoted inside a line outside a traceback, not at its start (`{"detail": "...\\nValueError:
    msg"}`), as `Name: message` (at most MAX_EMBEDDED characters), or None; only for a line not logged at a
    harmless level. The caller confirms it against the mined raise templates before calling it a crash."""
    if line.level in HARMLESS_LEVELS:
        return None
    found = _EMBEDDED.search(line.text)
    if found is None:
        bare = _TRAILING.search(line.text[-200:]) if flattened(line.text) else None
        return bare.group("exception") if bare else None  # a flattened traceback ending in a bare `assert`
    if flattened(line.text):  # the exception a flattened traceback ends with, not one it quotes on the way
        found = list(_EMBEDDED.finditer(line.text))[-1]
    return f"{found.group('exception')}: {found.group('message')}"[:MAX_EMBEDDED]


_FLATTENED = re.compile(r'Traceback \(most recent call last\):?.{0,4000}?\bFile "[^"\n]{1,400}", line \d{1,9}')
# A frame inside a flattened line, as pages and error-mirror sites render it: the path quoted or not, the commas
# after it and the line number kept or dropped (`File "/x/y.py", line 3, in f`, `File /x/y.py line 3 in f`).
FLAT_FRAME = re.compile(r'\bFile "?(?P<path>[^"\n]{1,400}?\.py)"?,? line (?P<line>\d{1,9}),? in (?P<func>[\w.<>]{1,200})')
MIN_FLAT_FRAMES = 2


def flattened(text: str) -> bool:
    """Whether a line holds a whole traceback run together (a page or a tool joined its lines): the header
    and a frame after it, or without the header at least MIN_FLAT_FRAMES frames; the exception at the end."""
    if "Traceback (most recent call last)" in text and _FLATTENED.search(text):
        return True
    if text.count("File ") < MIN_FLAT_FRAMES:
        return False
    frames = FLAT_FRAME.finditer(text)
    return all(next(frames, None) is not None for _ in range(MIN_FLAT_FRAMES))


def parse_traceback(lines: Iterator[tuple[int, Line]], header_level: str | None = None) -> tuple[Crash | None, int]:
    """Read a traceback (and its chain) whose header was just consumed; return it and the last line number used.

    `lines` yields (line number, normalised line) after the header. Returns (None, n) when the traceback is
    a handled one (logged below error level). One that ends (the input ends, or another record starts) before
    its exception line is returned as kind "cut", without an exception: its deepest frame, numbered as its
    line, and the statement printed under that frame (`remedies.inferred` reads the exception from it). A
    whole one carries its root frame's statement too.
    """
    chain: list[tuple[str, list[Frame], int]] = []
    tight: list[str] = []
    frames: list[Frame] = []
    statement, deepest = "", 0
    statements: list[str] = []
    state, last, message, used = "frames", 0, 0, 0
    harmless = header_level in HARMLESS_LEVELS
    for lineno, line in lines:
        used += 1
        if used > MAX_FRAMES_LINES:
            break
        text = line.text
        stripped = text.strip()
        if state == "frames":
            frame = _FRAME.match(text)
            if frame:
                frames.append(Frame(frame.group("path"), int(frame.group("line")), frame.group("func") or ""))
                statement, deepest = "", lineno
            elif not stripped or text[:1] in " \t" or stripped.startswith("[Previous line repeated"):
                if stripped and frames and not statement and not stripped.startswith(("^", "~", "[Previous")):
                    statement = stripped
                elif stripped and continues(statement) and not stripped.startswith(("^", "~")):
                    statement = f"{statement} {stripped}"
            elif exception_line(stripped):
                chain.append((stripped, frames, lineno))
                statements.append(statement)
                tight.append(text.strip())
                state, message = "message", 0
            elif line.level in HARMLESS_LEVELS:
                pass
            else:
                break
            last = lineno
        elif state == "message":
            if any(stripped.startswith(c) for c in CHAINS):
                state = "chained"
            elif not stripped:
                message = MAX_MESSAGE_LINES
            elif text[:1] in " \t" and awaits_detail(chain[-1][0]) and message < MAX_MESSAGE_LINES:
                said = detail(text)
                if said is not None:
                    text_, f, n = chain[-1]
                    chain[-1] = (f"{text_} {said}", f, n)
                    tight[-1] += f" {said}"
                message += 1
            elif line.record or message >= MAX_MESSAGE_LINES:
                break
            else:
                text_, f, n = chain[-1]
                chain[-1] = (f"{text_} {stripped}".strip(), f, n)
                tight[-1] += text
                message += 1
            last = lineno
        elif state == "chained":
            if stripped.startswith(HEADER):
                frames, state = [], "frames"
            elif stripped:
                break
            last = lineno
    if harmless:
        return None, last
    if not chain:
        if not frames or state != "frames":
            return None, last
        return Crash(deepest, "", "", frames[-1], component_of(frames, ""), "cut", statement=statement,
                     frames=tuple(frames)), last
    root, root_frames, root_line = chain[0]
    root = with_statement(root, statements[0]) if root_frames else root
    every = [f for _, fs, _ in chain for f in fs]
    return Crash(root_line, root, chain[-1][0], root_frames[-1] if root_frames else None,
                 component_of(root_frames or every, root), "traceback", tight[0] if tight[0] != root else "",
                 statement=statements[0] if root_frames else "", frames=tuple(root_frames)), last
