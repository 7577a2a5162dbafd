"""Read an engine bug reported in prose: the exception class and message inside a sentence, no traceback.

Bug reports often name the failure only in their text: "calling `/wake_up` fails with **`AttributeError:
'NoneType' object has no attribute 'x'`**". The crash scan reads exception lines and tracebacks, and an
exception quoted inside a record only when a mined raise template confirms it (`Matcher._quoted_raise`);
Python's own invariant errors (`remedies.enginebug.INTERNAL`) have no template. Here a sentence's quoted
exception counts when it is such an internal invariant and the page names an engine (vLLM, SGLang); failing
that, any exception the page states with a message of its own (in its title, a sentence, a bullet, an inline
code span, CJK quotes included): explain reads prose only when no log line named a failure, so the page's own
words are the failure. Prose that mentions an error class without a message, or a page about another program,
stays silent.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import Crash, component_of, exception_line
from remedies.enginebug import ENGINE_WORD, internal
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise

# An exception inside a sentence: after a space, quote, backtick, asterisk or bracket; its message runs to the
# closing code / bold marker or the end of the line.
INLINE = re.compile(r"(?:^|[\s`*\"'(\[:\u300c\u300e\u3010\u201c\uff08\uff1a])(?P<exception>(?:[A-Za-z_]\w{0,60}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception))"
                    r"[:\uff1a] ?(?P<message>[^`*\n\u300d\u300f\u201d]{3,400}?)(?:[`\u300d\u300f\u201d]|\*\*|\s*$)")
MIN_MESSAGE = 3
MIN_STATED = 16  # characters of message an exception stated in prose needs when it is no internal invariant
# a sentence (words before the quoted exception, Latin or CJK), or a Markdown heading (an issue's title)
_WORDS_BEFORE = re.compile(r"[A-Za-z]{2,}|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def inline_exception(text: str, stated: bool = False) -> str | None:
    """`Name: message` of an internal-invariant exception quoted inside a sentence or a heading, or None. With
    `stated`, any exception stated there with a message of MIN_STATED characters counts (the page has no
    traceback or log line that names its failure: what the prose says is all there is)."""
    heading = bool(_HEADING.match(text))
    for found in INLINE.finditer(text):
        if not heading and not _WORDS_BEFORE.search(text, 0, found.start("exception")):
            continue
        message = found.group("message").strip().rstrip(".,;\u3002\uff0c")
        named = f"{found.group('exception')}: {message}"
        if len(message) >= MIN_MESSAGE and internal(named, framed=False):
            return named
        if stated and len(message) >= MIN_STATED and " " in message.strip():
            return named
    return None


def prose_crashes(stream: BinaryIO, stated: bool = False) -> Iterator[Match]:
    """Crashes a pasted excerpt (at most WRAP_SCAN_BYTES) reports in its prose, when the excerpt names vLLM or
    SGLang: the first line outside a log record that quotes an internal-invariant exception; with `stated`
    (explain's last resort, after every scan of log lines found nothing), else the first that states any
    exception with a message (a title, a sentence, a bullet, an inline code span)."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if not ENGINE_WORD.search(text):
        return
    lines = text.split("\n")
    for loose in (False, True)[:1 + stated]:
        for lineno, raw in enumerate(lines, 1):
            line = normalise(raw[:MAX_LINE])
            if line.level is not None or line.text[:1] in " \t" or exception_line(line.text.strip()):
                continue  # a record, a traceback's line or an exception line: the crash scan reads those
            named = inline_exception(line.text, loose)
            if named is None:
                continue
            yield Match(UNKNOWN, lineno, raw.strip()[:400],
                        crash=Crash(lineno, named, named, None, component_of((), text[:4096]), "exception"))
            return
