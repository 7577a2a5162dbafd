"""Peel the layers a pasted log arrives in, so the scan reads the log as its engine printed it.

A person pasting a log into an issue, a chat or a ticket, or exporting it from a log store, wraps it in
layers that a line-by-line reading of `remedies.normalise` cannot undo, because each one spans lines:

- `html`: a web page's escapes and tags (`&quot;`, `&#39;`, `&gt;`, `<details>`, `<summary>`, `<pre>`,
  `<br>`), zero-width characters and no-break spaces;
- `table`: a Markdown table whose cells hold the error (`| step | ValueError: ...<br>  File ... |`, `\\|`);
- `gutter`: a code viewer's or editor's line numbers down the left (`55   File "..."`, ` 55 | ...`, `L55:`),
  recognised only as numbers that run consecutively over several lines at one column;
- `json`: one JSON record a line, as structured loggers and log collectors write them (python-json-logger's
  `message` / `exc_info`; Ray's JSONFormatter, ray python/ray/_common/formatters.py `asctime` / `levelname` /
  `message` / `exc_text`, and before it python/ray/_private/structured_logging/formatters.py `ts` / `level` /
  `msg` / `exc_text`; Docker's json-file `log`; Loki's `line`; GCP's `textPayload`; journald's `MESSAGE` and
  `PRIORITY`; structlog's `event` / `exception`; loguru's serialised `text`); an object without a level, a
  time, an exception or a collector's line field (an API's error body) is left as it is;
- `newest-first`: an export from CloudWatch, Loki or Grafana listing the newest record first (its timestamps
  run backwards), put back in the order it was written (a record's untimestamped continuation lines stay
  with it);
- `export`: such an export's message column, without the timestamp column, label set and CSV quotes;
- `stern`: the `pod container ` prefix stern puts in front of every line it tails;
- `ipython`: a Jupyter / IPython traceback (`Cell In[3], line 5`, `File /x/vllm/y.py:12, in f(a)`,
  `--> 12     raise ...`) rewritten as the standard traceback Python prints;
- `ranks`: workers (tensor / data parallel ranks, Ray actors, torchrun and mpirun ranks, SGLang's `TP0`)
  printing their tracebacks at the same time, frames of several ranks interleaved: each rank's lines are
  gathered into one block, the most informative traceback (one that prints its exception, then the most
  frames) first.

`unwrap(text)` peels every layer found, outermost first, and returns a `View` (the lines as read, each with
the source line it came from, and the layers peeled), or None when the text holds none of them. Only a
pasted excerpt is read this way (`remedies.explain`); a machine-written log is scanned as it is.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Callable

from remedies.normalise import strip_ansi
from remedies.ranks import gather

MAX_ROUNDS = 4
MIN_GUTTER = 3
MIN_JSON_SHARE = 0.5
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None) | {0xA0: " ", 0x202F: " "}
_ENTITY = re.compile(r"&(?:quot|apos|amp|lt|gt|nbsp|#\d{1,7}|#x[0-9a-fA-F]{1,6});")
_TAG = re.compile(r"</?(?:details|summary|pre|code|kbd|samp|p|div|span|b|strong|em|i|tt)(?:\s[^<>\n]{0,200})?>",
                  re.IGNORECASE)
_BREAK = re.compile(r"<br\s{0,4}/?>", re.IGNORECASE)


@dataclass(frozen=True)
class View:
    """The lines of a source as read after its layers were peeled, each with its 1-based source line."""

    lines: tuple[str, ...]
    origin: tuple[int, ...]
    layers: tuple[str, ...]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def source_line(self, lineno: int) -> int:
        """The source line of the view's 1-based line `lineno`."""
        if not self.origin:
            return lineno
        return self.origin[min(max(lineno, 1), len(self.origin)) - 1]


_Lines = list[tuple[int, str]]


def unwrap(text: str) -> View | None:
    """The text with every layer it is wrapped in peeled (see the module doc), or None when it has none."""
    lines: _Lines = [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), 1)]
    if lines and not lines[-1][1]:
        lines.pop()
    peeled: list[str] = []
    for _ in range(MAX_ROUNDS):
        changed = False
        for name, layer in LAYERS:
            result = layer(lines)
            if result is not None:
                lines, changed = result, True
                if name not in peeled:
                    peeled.append(name)
        if not changed:
            break
    if not peeled:
        return None
    return View(tuple(line for _, line in lines), tuple(n for n, _ in lines), tuple(peeled))


# --- html ----------------------------------------------------------------------------------------------------

def peel_html(lines: _Lines) -> _Lines | None:
    """Entities unescaped, presentation tags dropped, `<br>` made a line break, invisible characters removed."""
    if not any(("&" in t and _ENTITY.search(t)) or ("<" in t and (_TAG.search(t) or _BREAK.search(t)))
               or (not t.isascii() and t.translate(_INVISIBLE) != t) for _, t in lines):
        return None
    out: _Lines = []
    for number, text in lines:
        text = _TAG.sub("", text.translate(_INVISIBLE))
        for piece in _BREAK.split(text):
            out.append((number, html.unescape(piece) if "&" in piece else piece))
    return out


# --- table ---------------------------------------------------------------------------------------------------

_TABLE_RULE = re.compile(r"^\s{0,3}\|?\s{0,4}:?-{3,}:?\s{0,4}(?:\|\s{0,4}:?-{3,}:?\s{0,4}){0,30}\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def peel_table(lines: _Lines) -> _Lines | None:
    """A Markdown table's cells, each on lines of its own (`<br>` already broken by `peel_html`, `\\|` kept
    as `|`), in place of its rows; only a table with its rule row (`|---|---|`) is read."""
    rules = [i for i, (_, t) in enumerate(lines) if "-" in t and _TABLE_RULE.match(t)]
    if not rules:
        return None
    rows: set[int] = set()
    for rule in rules:
        if rule == 0 or not _row(lines[rule - 1][1]):
            continue
        rows.add(rule)
        index = rule - 1
        rows.add(index)
        index = rule + 1
        while index < len(lines) and _row(lines[index][1]):
            rows.add(index)
            index += 1
    if not rows:
        return None
    out: _Lines = []
    for index, (number, text) in enumerate(lines):
        if index not in rows:
            out.append((number, text))
        elif not _TABLE_RULE.match(text):
            out += [(number, cell) for cell in _cells(text)]
    return out


def _row(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("|") and len(_CELL_SPLIT.findall(stripped)) >= 2


def _cells(text: str) -> list[str]:
    stripped = text.strip()
    inner = stripped[1:-1] if stripped.endswith("|") and not stripped.endswith("\\|") else stripped[1:]
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner) if cell.strip()]


# --- gutter --------------------------------------------------------------------------------------------------

_GUTTER = re.compile(r"^(?P<lead>[ \t]{0,8})(?P<mark>L?)(?P<number>\d{1,6})(?P<sep>[ \t]{0,4}[|\u2502:]|(?=[ \t])|$)(?P<pad>[ \t]{0,12})")


def peel_gutter(lines: _Lines) -> _Lines | None:
    """The lines of a run of at least MIN_GUTTER whose left column holds consecutive numbers (a code viewer's
    or an editor's gutter), without it. A run keeps one style (the same marker and separator) and one column
    (its numbers end, or start, at one place); the gutter is as wide as its narrowest line's (indentation
    after it is the log's own). A number that is part of a message never forms such a run."""
    found = [_GUTTER.match(t) for _, t in lines]
    strip: dict[int, int] = {}
    index = 0
    while index < len(lines):
        run = _run(found, index)
        if len(run) >= MIN_GUTTER:
            widths = [hit.end() for hit in (found[i] for i in run) if hit is not None and hit.string[hit.end():].strip()]
            narrowest = min(widths, default=0)
            for member in run:
                hit = found[member]
                assert hit is not None
                strip[member] = min(narrowest, len(hit.string)) if narrowest else hit.end()
            index = run[-1] + 1
        else:
            index += 1
    if not strip:
        return None
    return [(number, text[strip[i]:] if i in strip else text) for i, (number, text) in enumerate(lines)]


def _style(hit: re.Match[str]) -> tuple[str, str]:
    return hit.group("mark"), hit.group("sep").strip()


def _run(found: list[re.Match[str] | None], start: int) -> list[int]:
    """The indices of the gutter run starting at `start` (consecutive numbers, one style and column)."""
    first = found[start]
    if first is None or (first.group("sep").strip() == ":" and first.string[first.end():first.end() + 1].isdigit()):
        return []
    run = [start]
    style = _style(first)
    begin, end = first.start("number"), first.end("number")
    for index in range(start + 1, len(found)):
        hit, previous = found[index], found[run[-1]]
        assert previous is not None
        if (hit is None or int(hit.group("number")) != int(previous.group("number")) + 1 or _style(hit) != style
                or (hit.start("number") != begin and hit.end("number") != end)):
            break
        run.append(index)
    return run


# --- json ----------------------------------------------------------------------------------------------------

_MESSAGE_KEYS = ("message", "msg", "log", "line", "textPayload", "MESSAGE", "event", "text", "body")
_EXCEPTION_KEYS = ("exc_info", "exc_text", "exception", "stack_trace", "stacktrace", "stack", "traceback", "error")
_LEVEL_KEYS = ("level", "levelname", "severity", "log.level", "lvl", "PRIORITY")
_NESTED_KEYS = ("jsonPayload", "fields", "record", "payload", "data")
_LINE_KEYS = ("log", "line", "textPayload", "MESSAGE")
_TIME_KEYS = ("timestamp", "time", "ts", "@timestamp", "asctime", "__REALTIME_TIMESTAMP", "date")
_SYSLOG_PRIORITY = {"0": "CRITICAL", "1": "CRITICAL", "2": "CRITICAL", "3": "ERROR", "4": "WARNING", "5": "INFO",
                    "6": "INFO", "7": "DEBUG"}


def peel_json(lines: _Lines) -> _Lines | None:
    """Each JSON record line as the lines its logger would have printed: `[LEVEL] message` then the
    traceback of its exception field; other lines stay. At least half the non-empty lines must be records."""
    records: dict[int, dict[str, object]] = {}
    filled = 0
    for index, (_, text) in enumerate(lines):
        stripped = text.strip()
        if not stripped:
            continue
        filled += 1
        if stripped.startswith("{") and stripped.endswith("}"):
            try:
                record = json.loads(stripped)
            except ValueError:
                continue
            if isinstance(record, dict) and _message(record) is not None and _logged(record):
                records[index] = record
    if not records or len(records) < MIN_JSON_SHARE * filled:
        return None
    out: _Lines = []
    for index, (number, text) in enumerate(lines):
        record = records.get(index)
        if record is None:
            out.append((number, text))
            continue
        out += [(number, piece) for piece in _printed(record)]
    return out


def _fields(record: dict[str, object]) -> list[dict[str, object]]:
    nested = [v for k, v in record.items() if k in _NESTED_KEYS and isinstance(v, dict)]
    return [record, *nested]


def _pick(record: dict[str, object], keys: tuple[str, ...]) -> object | None:
    for fields in _fields(record):
        for key in keys:
            if key in fields and fields[key] not in (None, "", [], {}):
                return fields[key]
    return None


def _logged(record: dict[str, object]) -> bool:
    """Whether a JSON object is a log record (a level, a time, an exception or a collector's line field), not a
    payload such as an API's error body (`{"object": "error", "message": ...}`), which is read as it is."""
    return any(_pick(record, keys) is not None for keys in (_LEVEL_KEYS, _TIME_KEYS, _EXCEPTION_KEYS, _LINE_KEYS))


def _message(record: dict[str, object]) -> str | None:
    found = _pick(record, _MESSAGE_KEYS)
    return found if isinstance(found, str) else None


def _printed(record: dict[str, object]) -> list[str]:
    message = (_message(record) or "").rstrip("\n")
    level = _pick(record, _LEVEL_KEYS)
    level_name = _SYSLOG_PRIORITY.get(str(level), str(level).upper()) if level is not None else ""
    head = message.split("\n")
    if level_name and level_name.isalpha() and not head[0].lstrip().startswith(("Traceback", " ")):
        head[0] = f"[{level_name}] {head[0]}"
    exception = _pick(record, _EXCEPTION_KEYS)
    extra: list[str] = []
    if isinstance(exception, list) and all(isinstance(x, str) for x in exception):
        exception = "".join(exception)
    if isinstance(exception, dict):  # loguru / structlog: {"type": ..., "value": ..., "traceback": ...}
        kind, value = exception.get("type"), exception.get("value")
        tail = exception.get("traceback")
        exception = (tail if isinstance(tail, str) else "") + (f"\n{kind}: {value}" if kind and value else "")
    if isinstance(exception, str) and exception.strip() and exception.strip() not in message:
        extra = exception.rstrip("\n").split("\n")
    return [*head, *extra]


# --- newest-first --------------------------------------------------------------------------------------------

_STAMP = re.compile(
    r"^[ \t\"]{0,2}(?:(?P<epoch>1\d{9}(?:\d{3}(?:\d{3}(?:\d{3})?)?)?)(?:\.\d{1,9})?"
    r"|(?P<iso>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?))(?=[\s\",|;]|Z|[+-]\d{2})"
)
MIN_STAMPED = 4


def peel_newest_first(lines: _Lines) -> _Lines | None:
    """Records back in the order they were written when the export lists the newest first: at least
    MIN_STAMPED lines start with a timestamp, and those timestamps never rise and fall at least once."""
    stamps = [(i, _stamp(t)) for i, (_, t) in enumerate(lines)]
    stamped = [(i, s) for i, s in stamps if s is not None]
    if len(stamped) < MIN_STAMPED:
        return None
    values = [s for _, s in stamped]
    if any(b > a for a, b in zip(values, values[1:])) or values[0] == values[-1]:
        return None
    groups: list[_Lines] = []
    head: _Lines = []
    for index, (number, text) in enumerate(lines):
        if stamps[index][1] is not None:
            groups.append([(number, text)])
        elif groups:
            groups[-1].append((number, text))
        else:
            head.append((number, text))
    return head + [line for group in reversed(groups) for line in group]


_COLUMN = re.compile(r"\t|,|[ \t](?=\{[^{}\n]{0,2000}\}[ \t])")
_LABELS = re.compile(r"^\{[^{}\n]{0,2000}\}[ \t]")
EXPORT_SHARE = 0.8


def peel_export(lines: _Lines) -> _Lines | None:
    """The message column of a log store's export (CloudWatch's and Loki's `timestamp<TAB>message`, a CSV's
    `1733360000000,"message"`, logcli's `timestamp {labels} message`): when at least EXPORT_SHARE of the
    non-empty lines (and MIN_STAMPED) start with an epoch or RFC 3339 timestamp and a column separator (a
    tab, a comma, a label set), the timestamp, the separator, the label set and CSV quotes are removed."""
    stamped: dict[int, int] = {}
    filled = 0
    for index, (_, text) in enumerate(lines):
        if not text.strip():
            continue
        filled += 1
        found = _STAMP.match(text)
        if found is None or not (found.group("epoch") or "T" in found.group("iso")):
            continue  # a logger's own `2026-12-03 10:00:00,123` starts its records, not an export's rows
        end = found.end()
        end += len(re.match(r"(?:Z|[+-]\d{2}:?\d{2})?\"?", text[end:]).group(0))
        column = _COLUMN.match(text, end)
        if column is not None:
            stamped[index] = column.end()
    if len(stamped) < max(MIN_STAMPED, EXPORT_SHARE * filled):
        return None
    out: _Lines = []
    for index, (number, text) in enumerate(lines):
        if index in stamped:
            text = _unquoted(_LABELS.sub("", text[stamped[index]:], count=1))
        out.append((number, text))
    return out


def _unquoted(text: str) -> str:
    """A CSV field without its quotes; a doubled quote inside it is one quote."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        return stripped[1:-1].replace('""', '"')
    return text


def _stamp(text: str) -> str | None:
    found = _STAMP.match(text)
    if found is None:
        return None
    if found.group("epoch"):
        return found.group("epoch").ljust(19, "0")
    return found.group("iso").replace("T", " ").replace(",", ".")


# --- stern ---------------------------------------------------------------------------------------------------

# stern's default template `{{color .PodColor .PodName}} {{color .ContainerColor .ContainerName}} {{.Message}}`
# (stern/stern, the template of its default output): a pod name (DNS labels, a generated suffix after its
# last `-`), a container name.
_POD_PREFIX = re.compile(r"^(?:\x1b\[[0-9;]{0,16}m){0,2}(?P<pod>[a-z0-9][a-z0-9.-]{0,251}-[a-z0-9]{1,10})"
                         r"(?:\x1b\[[0-9;]{0,16}m){0,2} (?:\x1b\[[0-9;]{0,16}m){0,2}(?P<container>[a-z0-9][a-z0-9-]{0,62})"
                         r"(?:\x1b\[[0-9;]{0,16}m){0,2} ")
MAX_PODS = 16


def peel_pod_prefix(lines: _Lines) -> _Lines | None:
    """Lines without stern's `pod container ` prefix, when at least EXPORT_SHARE of the non-empty lines carry
    one of at most MAX_PODS such prefixes."""
    found = [_POD_PREFIX.match(text) for _, text in lines]
    filled = sum(1 for _, text in lines if text.strip())
    prefixes = {(hit.group("pod"), hit.group("container")) for hit in found if hit}
    hits = sum(1 for hit in found if hit)
    if not prefixes or len(prefixes) > MAX_PODS or hits < max(MIN_STAMPED, EXPORT_SHARE * filled):
        return None
    return [(number, text[hit.end():] if hit else text) for (number, text), hit in zip(lines, found)]


# --- ipython -------------------------------------------------------------------------------------------------

_IPY_HEADER = re.compile(r"^(?P<name>[A-Za-z_][\w.]{0,200})\s{2,}Traceback \(most recent call last\)")
# IPython 8: `File /x/vllm/y.py:12, in Cls.f(self, a)`, `Cell In[3], line 5`; IPython 7 and before:
# `/x/vllm/y.py in f(self, a)`, `<ipython-input-3-abc> in <module>`, the line number on the `-->` line.
_IPY_FRAME = re.compile(r"^(?:File (?P<path>\S[^\n]{0,2000}?):(?P<line>\d{1,9})(?:, in (?P<func>[\w.<>]{1,256}))?"
                        r"|Cell (?P<cell>In\s?\[\d{1,6}\]), line (?P<cell_line>\d{1,9})"
                        r"|(?P<old>(?:/|[A-Za-z]:\\|<ipython-input-)[^\n]{1,2000}?) in (?P<old_func>[\w.<>]{1,256})(?:\(|$))")
_IPY_CURRENT = re.compile(r"^-{1,4}>\s{0,2}(?P<line>\d{1,9})\s(?P<statement>.*)$")
_IPY_CONTEXT = re.compile(r"^\s{0,10}\d{1,9}\s")
_IPY_RULE = re.compile(r"^-{20,}$")


def peel_ipython(lines: _Lines) -> _Lines | None:
    """An IPython traceback as Python prints it: its header, each frame as `File "path", line N, in f` with
    the statement IPython marks `-->` under it; the numbered source lines around each are dropped."""
    plain = [(number, strip_ansi(text)) for number, text in lines]
    if not any(_IPY_HEADER.match(t.strip()) for _, t in plain):
        return None
    out: _Lines = []
    inside = False
    pending: tuple[str, str] | None = None
    for number, text in plain:
        stripped = text.strip()
        if _IPY_HEADER.match(stripped):
            out.append((number, "Traceback (most recent call last):"))
            inside = True
            continue
        if not inside:
            if not _IPY_RULE.match(stripped):
                out.append((number, text))
            continue
        frame = _IPY_FRAME.match(stripped)
        current = _IPY_CURRENT.match(stripped)
        if frame and frame.group("cell"):
            out.append((number, f'  File "<{frame.group("cell")}>", line {frame.group("cell_line")}, in <module>'))
        elif frame and frame.group("old"):
            pending = (frame.group("old"), frame.group("old_func"))
        elif frame:
            func = (frame.group("func") or "<module>").rsplit(".", 1)[-1]
            out.append((number, f'  File "{frame.group("path")}", line {frame.group("line")}, in {func}'))
        elif current:
            if pending is not None:
                out.append((number, f'  File "{pending[0]}", line {current.group("line")}, in {pending[1]}'))
                pending = None
            out.append((number, f"    {current.group('statement').strip()}"))
        elif _IPY_CONTEXT.match(text) or not stripped or stripped.startswith(("...", "^")):
            continue
        else:
            out.append((number, text))
            inside = not bool(stripped) or text[:1] in " \t"
    return out


LAYERS: tuple[tuple[str, Callable[[_Lines], _Lines | None]], ...] = (
    ("json", peel_json),
    ("html", peel_html),
    ("table", peel_table),
    ("ipython", peel_ipython),
    ("gutter", peel_gutter),
    ("newest-first", peel_newest_first),
    ("export", peel_export),
    ("stern", peel_pod_prefix),
    ("ranks", gather),
)
