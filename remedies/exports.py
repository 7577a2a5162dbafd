"""The layers a log collector or a log store wraps a log in, peeled (one step each of `remedies.layers`).

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
- `stern`: the `pod container ` prefix stern puts in front of every line it tails.

Each `peel_*` takes the lines (each with its source line number) and returns them peeled, or None when the
layer is not there.
"""

from __future__ import annotations

import json
import re

_Lines = list[tuple[int, str]]
MIN_JSON_SHARE = 0.5


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
            except (ValueError, RecursionError):  # not JSON, or nested past the decoder's stack: not a record
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
