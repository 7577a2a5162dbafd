"""Split a backtick span that holds several log lines run together back into its lines.

A person pasting a few lines into a chat or an issue sometimes puts them in one inline code span
(`` `INFO 12-05 10:00:00 [api_server.py:1052] ... ERROR 12-05 10:00:01 [core.py:12] ValueError: ...` ``): the
line breaks are gone, so the whole span reads as the first record (an INFO line) and the error inside it is
never read as its own line. A span is split where a log record starts inside it (a vLLM, SGLang, ISO-timestamp
or glog record head, a traceback header, a docker-compose prefix, an exception line) when the span opens with
such a head and holds at least MIN_HEADS; a span that opens with prose is a message quoted in a sentence and
stays as it is.
"""

from __future__ import annotations

import re

MIN_HEADS = 2
_SPAN = re.compile(r"(?<!`)`(?P<body>[^`\n]{40,20000})`(?!`)")
# where a record starts inside the span: after a space, one of the record heads `remedies.normalise` reads
_HEAD = re.compile(
    r"(?<=\s)(?="
    r"(?:CRITICAL|ERROR|WARNING|INFO|DEBUG) \d{2}-\d{2} \d{2}:\d{2}:\d{2}"  # vLLM
    r"|\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"  # SGLang, Python apps
    r"|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"  # ISO, Ray, loguru
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d"  # glog
    r"|Traceback \(most recent call last\)"
    r"|[A-Za-z0-9][\w.-]{0,63} {1,16}\| "  # docker compose `vllm-1  | `
    r"|(?:[A-Za-z_][\w.]{0,100}\.)?[A-Z]\w{0,60}(?:Error|Exception): "  # an exception line
    r")"
)
_STARTS = re.compile(_HEAD.pattern.replace("(?<=\\s)", "^", 1))
_Lines = list[tuple[int, str]]


def _heads(body: str) -> int:
    """Record heads in a span: those after a space, and its start when a record starts it (a span that opens
    with prose is a quoted message, whatever it holds)."""
    return len(_HEAD.findall(body)) + 1 if _STARTS.match(body) else 0


def split_spans(lines: _Lines) -> _Lines | None:
    """The lines with every backtick span of MIN_HEADS or more record heads broken into one line per record
    (text before and after the span kept on lines of their own), or None when no span holds that many."""
    out: _Lines = []
    changed = False
    for number, text in lines:
        found = _SPAN.search(text) if "`" in text else None
        if found is None or _heads(found.group("body")) < MIN_HEADS:
            out.append((number, text))
            continue
        body = found.group("body")
        pieces = [piece.strip() for piece in _HEAD.split(body)]
        head, tail = text[:found.start()].strip(), text[found.end():].strip()
        out += [(number, piece) for piece in (head, *pieces, tail) if piece]
        changed = True
    return out if changed else None
