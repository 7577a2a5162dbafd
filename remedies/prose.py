"""Read an engine bug reported in prose: the exception class and message inside a sentence, no traceback.

Bug reports often name the failure only in their text: "calling `/wake_up` fails with **`AttributeError:
'NoneType' object has no attribute 'x'`**". The crash scan reads exception lines and tracebacks, and an
exception quoted inside a record only when a mined raise template confirms it (`Matcher._quoted_raise`);
Python's own invariant errors (`remedies.enginebug.INTERNAL`) have no template. Here a sentence's quoted
exception counts when it is such an internal invariant and the page names an engine (vLLM, SGLang): ordinary
prose that mentions an error class without a message, or a page about another program, stays silent.
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
INLINE = re.compile(r"(?:^|[\s`*\"'(\[:])(?P<exception>(?:[A-Za-z_]\w{0,60}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception))"
                    r": ?(?P<message>[^`*\n]{3,400}?)(?:`|\*\*|\s*$)")
MIN_MESSAGE = 3
_WORDS_BEFORE = re.compile(r"[A-Za-z]{2,}")  # a sentence: words before the quoted exception


def inline_exception(text: str) -> str | None:
    """`Name: message` of an internal-invariant exception quoted inside a sentence, or None."""
    for found in INLINE.finditer(text):
        if not _WORDS_BEFORE.search(text, 0, found.start("exception")):
            continue
        named = f"{found.group('exception')}: {found.group('message').strip().rstrip('.,;')}"
        if len(found.group("message").strip()) >= MIN_MESSAGE and internal(named, framed=False):
            return named
    return None


def prose_crashes(stream: BinaryIO) -> Iterator[Match]:
    """Crashes a pasted excerpt (at most WRAP_SCAN_BYTES) reports in its prose: the first line outside a log
    record that quotes an internal-invariant exception, when the excerpt names vLLM or SGLang."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if not ENGINE_WORD.search(text):
        return
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = normalise(raw[:MAX_LINE])
        if line.level is not None or line.text[:1] in " \t" or exception_line(line.text.strip()):
            continue  # a record, a traceback's line or an exception line: the crash scan reads those
        named = inline_exception(line.text)
        if named is None:
            continue
        yield Match(UNKNOWN, lineno, raw.strip()[:400],
                    crash=Crash(lineno, named, named, None, component_of((), text[:4096]), "exception"))
        return
