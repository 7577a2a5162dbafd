"""Join a message a web page wrapped at a space right after its first words, leaving a short line.

The scan joins a line to the one before it only when that one is long enough to have been wrapped
(`remedies.matcher.MIN_WRAP`): a terminal wraps at its width. A web page (an issue, a forum, a blog) wraps at a
space wherever its column ends, so a message can stop after a few words ("ValueError: The quantization") and go
on on the next line. Such a pair is joined when the joined text is a mined message template (`remedies.templates`)
with more of its fixed text than either piece matches on its own: the pair is one message, not two lines.

Only pairs that can be such a wrap are looked up (the short line neither a traceback frame nor indented, the next
one no new record), at most MAX_LOOKUPS per excerpt, so the layer stays cheap on long pastes.
"""

from __future__ import annotations

from remedies.crash import HEADER
from remedies.normalise import normalise
from remedies.templates import MIN_PREFIX, TemplateIndex, load_templates

SHORT = 40  # remedies.matcher.MIN_WRAP: a shorter line is not joined by the scan
MIN_WORDS_CHARS = 4
MAX_LOOKUPS = 48
MIN_GAIN = 8  # skeleton characters of template text the join must add to the better piece
_Lines = list[tuple[int, str]]


def join_short_wraps(lines: _Lines) -> _Lines | None:
    """The lines with each short-wrapped message joined back into one line, or None when none is."""
    index: TemplateIndex | None = None
    out: _Lines = []
    looked = 0
    changed = False
    position = 0
    while position < len(lines):
        number, text = lines[position]
        if position + 1 < len(lines) and looked < MAX_LOOKUPS and _may_wrap(text, lines[position + 1][1]):
            looked += 1
            index = index or load_templates()
            joined = f"{text.rstrip()} {lines[position + 1][1].strip()}"
            if _one_message(index, joined, text, lines[position + 1][1]):
                out.append((number, joined))
                position += 2
                changed = True
                continue
        out.append((number, text))
        position += 1
    return out if changed else None


def _may_wrap(short: str, following: str) -> bool:
    """Whether `short` can be the head of a message a page wrapped at a space and `following` its rest."""
    head = normalise(short)
    text = head.text.strip()
    if not MIN_WORDS_CHARS <= len(text) < SHORT or text.startswith(("File ", HEADER)) or head.text[:1] in " \t":
        return False
    if not any(c.isalpha() for c in text):
        return False
    rest = normalise(following)
    return bool(rest.text.strip()) and not rest.record and len(text) + len(rest.text) >= MIN_PREFIX


def _one_message(index: TemplateIndex, joined: str, head: str, rest: str) -> bool:
    """Whether the joined text reads as a template clearly better than either piece does alone."""
    whole = index.lookup(normalise(joined).text.strip())
    if whole is None:
        return False
    pieces = [index.lookup(normalise(piece).text.strip()) for piece in (head, rest)]
    best = max((hit.matched for hit in pieces if hit is not None), default=0)
    return whole.matched >= best + MIN_GAIN
