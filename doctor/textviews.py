"""Views of a text in which a disguised or wrapped secret reads as it would to a person, each mapped back to the
original text, so that redaction can find a secret in the view and replace it in the original.

- `normalised`: NFKC (a full-width `＝` or `：` is `=` / `:`, a no-break space a space) with format characters
  removed (zero-width space / joiner, word joiner, BOM, soft hyphen: Unicode category Cf);
- `joined`: logical lines: a backslash continuation removed, a YAML block scalar's indicator dropped, every
  other line break (and the next line's indentation) read as one space (`Authorization:` / `Bearer x` on the
  next line, a JSON key and its value on two lines, a folded scalar), except before a line that starts with
  its own `key:`;
- `unwrapped`: a line break between two token characters removed (a token cut by a fixed line width).

A view is (text, origin) with origin[i] the index in the original of the view's i-th character. Every pattern
is linear (bounded quantifiers, no nested repetition).
"""

from __future__ import annotations

import re
import unicodedata

View = tuple[str, list[int]]

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_CONTINUATION = re.compile(r"\\\r?\n[ \t]{0,200}")
_BLOCK_SCALAR = re.compile(r"(?<=[:=])[ \t]{0,8}[>|][+-]?[0-9]?[ \t]{0,8}\r?\n[ \t]{0,200}")
# Not before a line that starts with its own `key:` (a nested mapping stays a mapping).
_BREAK = re.compile(r"[ \t]{0,200}\r?\n[ \t]*+(?![-\w\"'.]{1,80}[ \t]{0,8}:(?:[ \t]|$))", re.M)
_WRAP = re.compile(r"(?<=[A-Za-z0-9_+/=.-])\r?\n(?=[A-Za-z0-9_+/=.-])")


def normalised(text: str) -> View:
    """NFKC with format characters removed; ASCII runs are copied as they are."""
    out: list[str] = []
    origin: list[int] = []
    pos = 0
    for m in _NON_ASCII.finditer(text):
        out.append(text[pos:m.start()])
        origin.extend(range(pos, m.start()))
        for i in range(m.start(), m.end()):
            ch = text[i]
            if unicodedata.category(ch) == "Cf":
                continue
            folded = unicodedata.normalize("NFKC", ch)
            out.append(folded)
            origin.extend([i] * len(folded))
        pos = m.end()
    out.append(text[pos:])
    origin.extend(range(pos, len(text)))
    return "".join(out), origin


def _rewritten(view: View, pattern: re.Pattern[str], replacement: str) -> View:
    """`view` with each match of `pattern` replaced by `replacement` (whose characters map to the match start)."""
    text, origin = view
    out: list[str] = []
    mapped: list[int] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append(text[pos:m.start()])
        mapped.extend(origin[pos:m.start()])
        out.append(replacement)
        mapped.extend([origin[m.start()]] * len(replacement))
        pos = m.end()
    if not out:
        return view
    out.append(text[pos:])
    mapped.extend(origin[pos:])
    return "".join(out), mapped


def joined(view: View) -> View:
    """Logical lines: continuations removed, block-scalar indicators dropped, line breaks read as a space."""
    view = _rewritten(view, _CONTINUATION, "")
    view = _rewritten(view, _BLOCK_SCALAR, " ")
    return _rewritten(view, _BREAK, " ")


def unwrapped(view: View) -> View:
    """Line breaks between two token characters removed (continuations too)."""
    return _rewritten(_rewritten(view, _CONTINUATION, ""), _WRAP, "")


def identity(text: str) -> View:
    return text, list(range(len(text)))


def views(text: str) -> list[View]:
    """The views worth scanning besides the text itself: none for single-line ASCII text."""
    out: list[View] = []
    if text.isascii() and "\n" not in text:
        return out
    base = identity(text)
    if not text.isascii():
        base = normalised(text)
        if base[0] != text:
            out.append(base)
    if "\n" in text:
        out.append(joined(base))
        wrapped = unwrapped(base)
        if wrapped[0] != base[0]:
            out.append(wrapped)
    return out


def original_spans(view: View, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of the view as spans of the original text."""
    _text, origin = view
    return [(origin[start], origin[end - 1] + 1) for start, end in spans if end > start]
