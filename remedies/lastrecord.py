"""Read the failing record a paste ends with when it names no exception: a C library's report, an ERROR record.

Some pastes are log-shaped but hold no exception and no line an entry knows: a GPU communication library's
source-location lines (`transport/net_ib.cc:123 NCCL WARN ...`, NVSHMEM's `init.cu:1007: non-zero status: 7
...`) ending in a cut line, or an engine's worker ERROR record for a failed handshake cut mid-dict. The crash
scan reads exceptions and deaths; here the last such record of an excerpt (the first of the group of them it
ends) counts as the crash when nothing after it shows the server carrying on (fewer than CARRIED_ON records of
progress, `remedies.crash.progress`, and no answered HTTP request): a C
library's report (`remedies.cuttrace.UPSTREAM`, or a `file.c|cc|cpp|cu:N:` position followed by error words) at
any level but INFO / DEBUG, else a record logged at ERROR / CRITICAL / FATAL. Its raise site is what the crash's
path reads from its words (`remedies.recordsite`, `remedies.nativesites`). explain reads this only in a pasted
excerpt in which nothing else named a failure.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import CARRIED_ON, FATAL_LEVELS, HARMLESS_LEVELS, Crash, component_of, progress, starts_traceback
from remedies.cuttrace import UPSTREAM
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise

MAX_RECORD = 400
# a native source position followed by words of a failure: `init.cu:1007: non-zero status: 7 ...`
NATIVE_SITE = re.compile(r"\b[\w./-]{1,200}\.(?:c|cc|cpp|cxx|cu|h|hpp):\d{1,7}\b:?\s[^\n]{0,300}?"
                         r"(?i:\b(?:error|errors|failed|failure|fatal|abort(?:ed)?|non-zero status)\b)")
# an HTTP access record (uvicorn's `"POST /v1/chat/completions HTTP/1.1" 404 Not Found`)
ANSWERED = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) /[^"\n]{0,400} HTTP/\d(?:\.\d)?" \d{3}\b')
_QUIET = re.compile(r"\b(?:INFO|DEBUG|TRACE)\b")


def failing(raw: str) -> str | None:
    """The failing text of a record (see the module doc), or None."""
    line = normalise(raw[:MAX_LINE])
    text = line.text.strip()
    if not text or line.level in HARMLESS_LEVELS or starts_traceback(text):
        return None  # a traceback's header is no message: remedies.cuttrace reads a traceback cut after it
    if (UPSTREAM.search(text) or NATIVE_SITE.search(text)) and not _QUIET.search(text):
        return text[:MAX_RECORD]
    return text[:MAX_RECORD] if line.level in FATAL_LEVELS else None


def record_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The last failing record of a pasted excerpt (at most WRAP_SCAN_BYTES) that the server did not carry on
    after, as a crash."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    lines = data.decode("utf-8", errors="replace").split("\n")
    carried = 0
    for index in range(len(lines) - 1, -1, -1):
        text = failing(lines[index])
        if text is None:
            if ANSWERED.search(lines[index][:MAX_LINE]):
                return  # the server answered a request after it: a request's error, not the server's end
            carried += progress(normalise(lines[index][:MAX_LINE]))
            if carried >= CARRIED_ON:
                return
            continue
        while index > 0 and failing(lines[index - 1]) is not None:
            index -= 1  # the group's first report: what the later lines of it follow from
        text = failing(lines[index]) or text
        yield Match(UNKNOWN, index + 1, lines[index].strip()[:MAX_RECORD], tuple(lines[max(0, index - 2):index]),
                    tuple(lines[index + 1:index + 3]),
                    crash=Crash(index + 1, text, text, None, component_of((), text), "died"))
        return
