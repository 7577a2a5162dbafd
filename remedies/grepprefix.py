"""Peel the file name grep puts in front of each line it prints from several files (`grep -r`, `grep -H`).

`grep -r ERROR logs/` prints `logs/prefill-0.log:ERROR ...`; with `-n` the line number follows
(`logs/prefill-0.log:1041:  File "..."`), and context lines (`-A` / `-B` / `-C`) use `-` instead of `:`
(`logs/prefill-0.log-1042-    raise ValueError(`), as GNU grep's documentation of its output prefixes says
(https://www.gnu.org/software/grep/manual/grep.html, "Output Line Prefix Control"). The prefix hides a
traceback's indentation and each record's own prefix from the scans, so it is removed from every line that
carries it. A line is read as such a prefix only where one file name, with a path or a log file's extension,
starts at least MIN_LINES lines with `:` (a message that happens to start with a word and a colon is no file,
and a source file's `path.py:12:` is the site a warning or a compiler names).
"""

from __future__ import annotations

import re

MIN_LINES = 2
# a source file's own `path.py:12:` (Python's warnings, compilers) is a site, not grep's prefix
_SOURCE = re.compile(r"\.(?:py|pyx|pyi|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go|java|js|ts|sh)$")
_PREFIX = re.compile(
    r"^(?P<path>(?:\.{0,2}/)?(?:[\w.@+~-]{1,128}/){0,16}[\w.@+~-]{1,128}"
    r"\.(?:log|txt|out|err|jsonl|json|md|trace)(?:\.\d{1,3})?|(?:\.{0,2}/)?(?:[\w.@+~-]{1,128}/){1,16}[\w.@+~-]{1,128})"
    r"(?P<sep>[:-])(?:(?P<number>\d{1,9})(?P=sep))?"
)
_Lines = list[tuple[int, str]]


def peel_grep(lines: _Lines) -> _Lines | None:
    """The lines without grep's `file:` / `file:N:` / `file-N-` prefix, or None when no file name prefixes
    MIN_LINES lines with `:`."""
    found = [_PREFIX.match(text) for _, text in lines]
    counts: dict[str, int] = {}
    for hit in found:
        if hit is not None and hit.group("sep") == ":" and not _SOURCE.search(hit.group("path")):
            counts[hit.group("path")] = counts.get(hit.group("path"), 0) + 1
    files = {path for path, count in counts.items() if count >= MIN_LINES}
    if not files:
        return None
    return [(number, text[hit.end():] if hit is not None and hit.group("path") in files else text)
            for (number, text), hit in zip(lines, found)]
