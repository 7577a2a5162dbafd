"""Read an issue's title as the report's claim when nothing in its body names the failure.

Issue reports often carry the failure only in their title, in the reporter's words ("Qwen3.5 MoE fails with
KeyError on load", "DeepGEMM failures kill engine init"), over a body that is something else: an environment
dump, the commands that were run, a code fence, frames cut mid-line. The title is then all the report says of
its failure, and explain names it: the first H1 / H2 heading (its `[Bug]`-style tags dropped) when it states a
failure (`FAILS`: an exception class, "error", "fails", "cannot", "crash", "hang", CJK "报错" ...) on a page
that is an issue report (a `[Bug]` / `[Usage]` tag in the title, or the headings of an issue form: "Describe the
bug", "Your current environment", "Error message", "Reproduction"), so that a tutorial's or a README's heading
stays silent. The crash's path (`Collector.unknown`) then names the entry or the source a mined template
places the title's words at. explain reads this only in a pasted excerpt in which nothing else named a failure.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import Crash, component_of
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN

MAX_TITLE = 400
TITLE = re.compile(r"^\s{0,3}#{1,2}\s+(?P<tags>(?:\[[^\]\n]{1,40}\]:?\s*)*)(?P<text>\S.{8,})$")
# a title that states a failure: an exception class or a failure word (English, CJK)
FAILS = re.compile(
    r"\b[A-Z]\w{1,60}(?:Error|Exception)\b|(?i:\b(?:error|exception|fail(?:s|ed|ure|ures)?|cannot|can't|unable"
    r"|refused|in use|not (?:found|supported|available|work(?:ing)?)|invalid|crash(?:es|ed)?|timed? ?out|denied"
    r"|hangs?|hung|deadlocks?|stuck|freezes?|kill(?:s|ed)?|broken|regression|segfault)\b)"
    r"|报错|失败|错误|异常|崩溃|卡住|无法"
)
ISSUE_TAG = re.compile(r"(?i)\[(?:bug|usage|question|issue|performance|installation|misc|feature|doc)s?\]")
ISSUE_FORM = re.compile(
    r"(?im)^\s{0,3}(?:#{1,6}\s*|\*\*)\W{0,4}(?:describe the bug|your current environment|current environment"
    r"|how to reproduce|reproduction|steps to reproduce|expected behaviou?r|error message|error log|logs?"
    r"|system info|environment|问题描述|错误信息|复现|环境)\b"
)


def title_claim(text: str) -> tuple[int, str] | None:
    """The 0-based line and text of an issue report's title that states a failure (see the module doc), or None."""
    lines = text.split("\n")
    for index, raw in enumerate(lines):
        found = TITLE.match(raw[:MAX_LINE].rstrip())
        if found is None:
            continue
        claim = found.group("text").replace("**", "").replace("`", "").strip()[:MAX_TITLE]
        issue = ISSUE_TAG.search(found.group("tags")) or ISSUE_FORM.search("\n".join(lines[index + 1:]))
        return (index, claim) if FAILS.search(claim) and issue else None
    return None


def title_crashes(stream: BinaryIO) -> Iterator[Match]:
    """An issue report's title that states a failure (see the module doc), as a crash, in a pasted excerpt (at
    most WRAP_SCAN_BYTES)."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    claim = title_claim(text)
    if claim is None:
        return
    index, said = claim
    lines = text.split("\n")
    yield Match(UNKNOWN, index + 1, lines[index].strip()[:MAX_TITLE], (), tuple(lines[index + 1:index + 3]),
                crash=Crash(index + 1, said, said, None, component_of((), text[:4096]), TITLE_KIND))


TITLE_KIND = "title"  # the crash's kind: the reporter's words, no exception to judge the engine's code by
