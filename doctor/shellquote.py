"""Shell quoting for the command lines qwen-doctor prints to be copied (`profiles show --render`,
`deploy --dry-run`): shlex's quoting, except that a value holding a control character (ESC, BEL, CR, a C1 or
bidirectional control) is written in bash's ANSI-C form `$'...'` with the character as `\\xNN` / `\\uNNNN`.

shlex.quote keeps such a character raw inside single quotes: printed, it repaints the user's terminal instead of
showing the value; `$'\\x1b'` is the same byte to bash and zsh, and shows as text.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def quote(text: str) -> str:
    """`text` as one shell word: shlex.quote, or `$'...'` with escapes where it holds a control character."""
    if _CONTROL.search(text) is None:
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(ch) for ch in text) + "'"


def shown(text: str) -> str:
    """`text` (a path) as it is where it holds no control character, else as `quote` writes it: a file name with
    a newline stays on the one line that reports it, in a form the shell reads back."""
    return text if _CONTROL.search(text) is None else quote(text)


def join(argv: Iterable[str]) -> str:
    """The words as one shell line (shlex.join with `quote`)."""
    return " ".join(quote(word) for word in argv)


def _ansi_c(ch: str) -> str:
    if ch in "\\'":
        return "\\" + ch
    if _CONTROL.match(ch) or ch == "\t":
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch
