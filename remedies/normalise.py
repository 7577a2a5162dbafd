"""Read a log line as a person reads it: without the prefixes, escapes and wrapping that transports add.

`normalise(line)` strips, in the order they nest, what containers, Ray, launchers and loggers put in front
of a message, and returns the message with the record's log level when one was printed:

    vllm-1  | 2026-12-03T10:00:00.123Z (EngineCore_DP0 pid=7) [rank3]: ERROR 12-03 10:00:00 [core.py:12] msg

becomes ``Line(text="msg", level="ERROR", record=True)``. ANSI escapes, NUL bytes, CR / CRLF, Markdown quote markers
(``> ``), Markdown fences (a ```` ``` ```` line ends the record before it) and code / bold markers
around a pasted record or exception, Windows path separators and quotes escaped in a JSON or repr'd string
(``model\\'s``) are normalised too. `record` says the line starts a new log record
(it carried a logger/timestamp prefix, or it is a traceback line, indented by two spaces or a tab, or an
exception line); a line that does
not is a continuation of the record before it (a message wrapped by a terminal or a web page, or the
rest of a multi-line message), and `join` glues such pieces back together.

Every pattern here is anchored at the start and bounded, so the cost is linear in the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b(?:\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])")
_QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?){1,8}")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\[^\s\"'<>|]{1,1024}")

# Transport prefixes: added by whatever carried the line (container runtime, Ray, launchers), in any order.
_TRANSPORT = re.compile(
    r"^(?:"
    r"[A-Za-z0-9][\w.-]{0,63}[ \t]{0,16}\|[ \t]?"  # docker compose: `vllm-1  | `
    # journalctl -o short-iso / short-iso-precise: `2026-12-03T10:00:00+0000 host unit[pid]: `
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})[ \t][\w.-]{1,64} [\w./@-]{1,64}\[\d{1,10}\]:[ \t]?"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?[ \t]"  # docker logs -t, k8s, GitHub Actions
    # syslog, journalctl (short, short-precise)
    r"|[A-Z][a-z]{2}[ \t]{1,2}\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})? [\w.-]{1,64} [\w./@-]{1,64}(?:\[\d{1,10}\])?:[ \t]?"
    r"|\[pod/[\w.-]{1,253}/[\w.-]{1,63}\][ \t]?"  # kubectl logs --prefix: `[pod/name/container] `
    r"|##\[(?:error|warning|notice|debug|group|endgroup|command|section)\][ \t]?"  # GitHub Actions workflow commands
    r"|\((?:[^()\n]{0,80}?\bpid=\d{1,10}[^()\n]{0,80}|raylet[^()\n]{0,60}|gcs_server[^()\n]{0,60})\)[ \t]?"  # Ray
    r"|\[(?:rank|default)\d{1,6}\]:[ \t]?"  # torchrun `[rank3]:`, `[default0]:`
    r"|\[\d{1,6},\d{1,6}\]<std(?:out|err)>:[ \t]?"  # mpirun `[1,0]<stderr>:`
    r")"
)
_LEVELS = r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG|TRACE)"
# Record prefixes: a logger's timestamp / level / location; the level is captured.
_RECORD = re.compile(
    r"^(?:"
    # vLLM: `INFO 12-03 10:00:00 [file.py:12] ` (older: `file.py:12] `)
    rf"(?P<vllm>{_LEVELS})[ \t]{{1,4}}\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,6}})?[ \t]{{1,4}}"
    r"(?:\[?[\w./-]{1,128}:\d{1,7}\][ \t]?)?"
    # SGLang and most Python apps: `[2026-12-03 10:00:00 TP0] `, `[2026-12-03 10:00:00,123 E 12 34] `
    r"|\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:[ \t](?P<bracket>[A-Z]\b)?[^\]\n]{0,60})?\][ \t]?"
    r"(?:[\w.-]{1,64}\.(?:cc|cpp|h|py):\d{1,7}:[ \t]?)?"
    # loguru (its default LOGURU_FORMAT, loguru/_defaults.py; Xinference, many wrappers):
    # `2026-12-03 10:00:00.123 | ERROR    | module:function:12 - `, and the bare `2026-12-03 10:00:00.123 | `
    rf"|\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d{{1,9}})?[ \t]{{1,4}}\|[ \t]?"
    rf"(?:(?P<loguru>{_LEVELS}|SUCCESS)[ \t]{{0,8}}\|[ \t]?(?:[\w.<>-]{{1,128}}:[\w.<>-]{{1,128}}:\d{{1,7}}[ \t]-[ \t])?)?"
    # ISO / logging.basicConfig / Ray: `2026-12-03 10:00:00,123\tINFO worker.py:1841 -- `
    rf"|\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d{{1,9}})?(?:Z|[+-]\d{{2}}:?\d{{2}})?[ \t]{{1,4}}"
    rf"(?:(?:-[ \t])?(?P<iso>{_LEVELS})\b[ \t]{{0,4}}(?:[-:][ \t]?)?(?:[\w.-]{{1,64}}:\d{{1,7}}[ \t]--[ \t]|[\w.$-]{{1,128}}:[ \t])?)?"
    # Spark / log4j: `24/12/03 10:00:00 ERROR Executor: `
    rf"|\d{{2}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}[ \t](?P<log4j>{_LEVELS})[ \t][\w.$-]{{1,128}}:[ \t]"
    # glog (Ray C++, NCCL plugins): `E1203 10:00:00.123456  1234 file.cc:12] `
    r"|(?P<glog>[IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d{1,6}[ \t]{1,8}\d{1,10} [\w.-]{1,64}:\d{1,7}\][ \t]?"
    # torch's own C++ logger (c10/util/Logging.cpp MessageLogger without glog: "FEWIV"[severity], then month-day
    # and time, the file and line): `[W901 07:40:19.971184476 ProcessGroupNCCL.cpp:1826] `; older: `[W file.cpp:12] `
    r"|\[(?P<c10>[FEWIV])(?:\d{3,4} \d{2}:\d{2}:\d{2}\.\d{1,9})? [\w.-]{1,64}:\d{1,7}\][ \t]?"
    # Python logging without a timestamp: `ERROR:root:`, uvicorn `INFO:     `, `[ERROR] `
    rf"|(?P<plain>{_LEVELS}):(?:[\w.]{{1,128}}:|[ \t]{{1,8}})"
    rf"|\[(?P<square>{_LEVELS})\][ \t]?"
    rf"|(?P<bare>{_LEVELS})[ \t]{{1,8}}(?=\S)"
    r")"
)
_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
# Ray's C++ records `[2025-12-12 15:10:48,697 C 42791 42791]`: spdlog's short level letters (%L: T D I W E C;
# ray src/ray/util/logging.cc), where RAY_LOG(FATAL) / a failed RAY_CHECK is written at C(ritical) and aborts.
_BRACKET_LEVEL = {**_GLOG_LEVEL, "T": "TRACE", "D": "DEBUG", "C": "CRITICAL"}
# A line that starts a record although it has no logger prefix: traceback structure, an exception line.
_STARTS_RECORD = re.compile(
    r"^(?:[ \t]{2}|\t|$|Traceback \(most recent call last\)|During handling of the above exception"
    r"|The above exception was the direct cause"
    r"|(?:[A-Za-z_][\w.]{0,128})?(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)\b"
    r"|\[[\w./ -]{1,64}\]"
    # a native abort printed straight to stderr between a server's records (remedies/crash.py _DEATH)
    r"|LLVM ERROR: |Fatal Python error|terminate called after throwing|Segmentation fault|Aborted \(core dumped\)"
    r")"
)
MAX_TEXT = 1 << 20
# Markdown a person pasting a log adds: a fence line (```text) around it, `code` or **bold** around a line.
_FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})[\w+-]{0,20}[ \t]*$")
_MARKUP_HEAD = re.compile(r"^(?:`{1,3}|\*\*|__)(?=[A-Za-z(\[])")
_MARKUP_TAIL = re.compile(r"(?<=\S)[ \t]*(?:`{1,3}|\*\*|__)[ \t]*$")
_EXCEPTION_START = re.compile(r"^(?:[A-Za-z_][\w.]{0,128})?(?:Error|Exception|Exit|Interrupt)\b")


@dataclass(frozen=True)
class Line:
    """One log line as read: the message, its level when printed, and whether it starts a record."""

    text: str
    level: str | None
    record: bool


def strip_ansi(text: str) -> str:
    """Remove ANSI colour / cursor escapes."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _visible(line: str) -> str:
    line = line.rstrip("\r\n")
    if "\x00" in line:  # a log written over a hole (logrotate's copytruncate) or cut by a crash: NULs mean nothing
        line = line.replace("\x00", "")
    if "\r" in line:
        pieces = [p for p in line.split("\r") if p.strip()]
        line = pieces[-1] if pieces else ""
    return strip_ansi(line)


def _level(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    for key in ("vllm", "iso", "loguru", "log4j", "plain", "square", "bare"):
        if groups.get(key):
            level = groups[key]
            return {"WARN": "WARNING", "SUCCESS": "INFO"}.get(level, level)
    if groups.get("glog"):
        return _GLOG_LEVEL[groups["glog"]]
    if groups.get("c10"):
        return _BRACKET_LEVEL.get(groups["c10"], "DEBUG")
    if groups.get("bracket"):
        return _BRACKET_LEVEL.get(groups["bracket"])
    return None


def normalise(line: str) -> Line:
    """The message of one raw log line, its level and whether it starts a record (see the module doc)."""
    text = _visible(line[:MAX_TEXT])
    quoted = _QUOTE.match(text)
    if quoted:
        text = text[quoted.end():]
    if "`" in text or "~~~" in text or "**" in text or "__" in text:
        if _FENCE.match(text):
            return Line("", None, True)
        text, marked = _unmark_head(text)
    else:
        marked = False
    prefixed = logged = False
    level: str | None = None
    for _ in range(8):
        found = _TRANSPORT.match(text)
        if found is None or found.end() == 0:
            break
        text = text[found.end():]
        prefixed = True
    for _ in range(3):
        found = _RECORD.match(text)
        if found is None or found.end() == 0:
            break
        level = _level(found) or level
        text = text[found.end():]
        prefixed = logged = True
        again = _TRANSPORT.match(text)
        if again is not None and again.end():
            text = text[again.end():]
    if ":\\" in text:
        text = _WINDOWS_PATH.sub(lambda m: m.group(0).replace("\\", "/"), text)
    if "\\'" in text or '\\"' in text:
        text = text.replace("\\'", "'").replace('\\"', '"')
    if marked and ("`" in text or "**" in text or "__" in text):
        text = _MARKUP_TAIL.sub("", text)
    elif text.endswith("`") and text.count("`") % 2 and _EXCEPTION_START.match(text):
        text = _MARKUP_TAIL.sub("", text)  # the closing quote of a pasted `...` block, its opening lines above
    record = logged or bool(_STARTS_RECORD.match(text)) or (prefixed and not text.strip())
    return Line(text, level, record)


def _unmark_head(text: str) -> tuple[str, bool]:
    """The line without a Markdown code / bold marker in front of a log record or an exception (a person
    pasted `ValueError: ...` in backticks), and whether one was removed."""
    found = _MARKUP_HEAD.match(text)
    if found is None:
        return text, False
    rest = text[found.end():]
    if _RECORD.match(rest) or _EXCEPTION_START.match(rest) or rest.startswith("Traceback ("):
        return rest, True
    return text, False


def starts_record(line: str) -> bool:
    """Whether this raw line begins a new record (else it continues the one before it)."""
    return normalise(line).record


def join(pieces: list[str], separator: str = " ") -> str:
    """Glue a record's normalised pieces: a wrapped message reads as one line again. With a separator the
    pieces are trimmed (a web page turned a space into the break); without, they are kept as they are (a
    terminal cut the line at its width, spaces included)."""
    if not separator:
        return "".join(pieces)
    return separator.join(p.strip() if i else p.rstrip() for i, p in enumerate(pieces))
