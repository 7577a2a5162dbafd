"""Read a message cut before its end: a terminal, a log viewer or an excerpt stopped the line mid-word.

A line cut at a column (`Input length (160062 tokens) exceeds the maximum allowed len`) no longer holds the
words an entry's pattern needs past the cut. It names an entry here when it is the start of one of the entry's
wordings (its samples, figures made holes, and its mined `versions`), compared as `remedies.templates` does
(skeletons: case, quotes, escapes and spaces aside), covering at least MIN_PREFIX characters of the wording's
fixed text and ending inside it or at most MAX_HOLE characters into a hole: the line stops where the wording
goes on. The message may follow prose or a log prefix. Two entries that the cut text starts equally well are
told apart only by a figure as printed in one entry's sample (an errno); otherwise such a line names neither. A whole line that merely shares the wording's opening words and
then says something else does not count (it does not end inside the wording).
"""

from __future__ import annotations

import re
from functools import lru_cache

from remedies.loader import load_catalogue
from remedies.normalise import normalise
from remedies.templates import MAX_HOLE, MIN_PREFIX, Template, TemplateIndex, _pieces, match, skeleton

_FIGURE = re.compile(r"\d+(?:\.\d+)*")
# An exception class before the message: matched without it (a raise template is the message after the class).
_CLASS = re.compile(r"\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\s*:\s*")
# what a person's quote leaves after a cut: a code span, 」, an ellipsis (a full stop is text: a sentence that ends
# where the wording goes on is another message, not a cut one)
_CLOSERS = "`*\"'\u300d\u201d\u2019\u2026 \t"
_ELLIPSIS = re.compile(r"(?:\.{3}|\u2026)[`*\"'\u300d\u201d\u2019 \t]*$")
KIND = "cut:"


def _message(text: str, figures: bool = False) -> str:
    """A wording as a template: figures made holes (kept as printed with `figures`), an exception class in front
    of it dropped."""
    plain = normalise(text).text.strip()
    plain = plain if figures else _FIGURE.sub("{}", plain)
    named = _CLASS.match(plain)
    return plain[named.end():] if named else plain


@lru_cache(maxsize=1)
def _printed() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Each entry's samples with their figures as printed, as one-piece templates: the tie-break between
    entries whose wordings differ only in a figure (uvicorn's `[Errno 98]` and `[Errno 99]` bind failures)."""
    return {remedy.id: tuple((skeleton(_message(sample, figures=True)),) for sample in remedy.samples)
            for remedy in load_catalogue()}


@lru_cache(maxsize=1)
def cut_index() -> TemplateIndex:
    """Each entry's wordings (samples and mined versions) that are long enough to be told from a cut."""
    templates = []
    for remedy in load_catalogue():
        if remedy.stop or remedy.context_regex is not None or remedy.severity != "error":
            continue
        texts = {_message(sample) for sample in remedy.free_samples} | {w.template for w in remedy.versions}
        for text in texts:
            if len(text.replace("{}", "")) >= MIN_PREFIX:
                templates.append(Template("catalogue", text, f"{KIND}{remedy.id}", (), (), _pieces(text)))
    return TemplateIndex(templates)


def cut_entry(text: str) -> str | None:
    """The id of the one entry whose wording `text` (a normalised line) is the start of, cut short, or None."""
    body = _ELLIPSIS.sub("", text).rstrip(_CLOSERS)
    found = skeleton(body)
    if len(found) < MIN_PREFIX:
        return None
    best: dict[str, int] = {}
    for template in set(cut_index().candidates(found)):
        hit = match(template.pieces, found, MIN_PREFIX, hole=MAX_HOLE)
        if hit is None or hit[1]:
            continue  # no match, or the whole wording: the entry's own pattern reads a whole message
        entry = template.kind[len(KIND):]
        best[entry] = max(best.get(entry, 0), hit[0])
    if not best:
        return None
    top = max(best.values())
    tied = [entry for entry, matched in best.items() if matched == top]
    if len(tied) > 1:  # the cut stops before the words that tell the entries apart, unless a figure does
        tied = [entry for entry in tied
                if any(match(pieces, found, MIN_PREFIX) is not None for pieces in _printed().get(entry, ()))]
    return tied[0] if len(tied) == 1 else None
