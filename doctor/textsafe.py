"""Text from logs made safe to show: ANSI colour sequences dropped, other control characters visibly escaped.

A server log may carry raw ESC, NUL, BEL or carriage returns; copied into a terminal, an HTML page, Markdown or
JUnit XML (which XML 1.0 forbids most C0 characters in) they repaint the screen, hide text or break the file.
`visible` keeps tab and newline, removes colour/cursor escape sequences (the obvious intent of a coloured log
line is its text) and writes every other control character as `\\xNN` (or `\\uNNNN` for the bidirectional
controls of Unicode's Trojan Source list, overrides, isolates and the LRM / RLM / ALM marks, which reorder what a
reader sees, and for the line and paragraph separators U+2028 / U+2029, which some viewers break a line at).
Every pattern is linear: bounded quantifiers only.
"""

from __future__ import annotations

import os
import re
from typing import Any

# CSI (ESC [ params intermediates final) and OSC (ESC ] ... BEL or ESC \) sequences, bounded; 8-bit CSI too.
_ANSI = re.compile(r"\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]|\x9b[0-?]{0,64}[ -/]{0,8}[@-~]"
                   r"|\x1b\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                      "\ufffe\uffff]")


_ESCAPES = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
            for code in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0), *range(0x202a, 0x202f),
                         *range(0x2066, 0x206a), 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0xfffe, 0xffff]}


def visible(text: str) -> str:
    """`text` without colour escape sequences and with every other control character shown as an escape."""
    if _CONTROL.search(text) is None:
        return text
    return _ANSI.sub("", text).translate(_ESCAPES)


def one_line(text: str) -> str:
    """`visible(text)` with its line breaks shown as `\\n` too: a field a report prints on a line of its own
    (a title naming the user's files, a host name), which a name holding a newline must not split."""
    return visible(text).replace("\r", "\\r").replace("\n", "\\n")


COLOR_CHOICES = ("auto", "always", "never")


def use_color(choice: str | None, stream: Any) -> bool:
    """Whether to colour `stream`: `--color always/never` decide; `auto` (the default) colours a terminal
    unless NO_COLOR is set to a non-empty value (https://no-color.org)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False
