"""The exception of a traceback printed without its last line, inferred from the statement that raised it.

A paste that ends early, or a worker whose final line only another worker printed, leaves a traceback whose
deepest frame is the raise itself: Python prints that frame's statement under it (`raise ValueError(` or the
whole `raise ValueError(f"...")`, or `assert test, "..."`). The statement names the exception class; the
mined templates (`remedies.templates`: every `raise X(...)` of the engines with its module and function)
name the message when the templates of that class raised in that function of that module are one message
(its wordings over releases: the newest is told), or the statement's own text picks one.

`inferred(frame, statement)` returns `Class: message` (holes `{}` where the message has figures), the class
alone when no template decides it, or None when the statement raises nothing. `completed(frame, statement,
exception)` finds the template an exception line cut short (`ValueError: Current node has no G`) was printed
from, among those of the site that printed it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from remedies.crash import Frame
from packaging.version import InvalidVersion, Version

from remedies.templates import Template, load_templates, match, skeleton

_RAISE = re.compile(r"^raise\s+(?P<name>[A-Za-z_][\w.]{0,200})\s*(?:\((?P<rest>.*))?$")
_ASSERT = re.compile(r"^assert\b(?P<rest>.*)$")
_LITERAL = re.compile(r"""[fbru]{0,2}(?P<q>["'])(?P<text>(?:\\.|(?!(?P=q)).){4,})(?P=q)""")
MIN_WORDS = 8
INFERRED = "inferred from the statement that raised it; the log does not print the exception"


@lru_cache(maxsize=1)
def _raise_sites() -> dict[tuple[str, str], tuple[Template, ...]]:
    """Raised templates by (module file name, function name without its class)."""
    sites: dict[tuple[str, str], list[Template]] = {}
    for template in load_templates().templates:
        if not template.raised:
            continue
        for site in template.sites:
            key = (site.module.rsplit("/", 1)[-1], site.function.rsplit(".", 1)[-1])
            sites.setdefault(key, []).append(template)
    return {key: tuple(found) for key, found in sites.items()}


def inferred(frame: Frame, statement: str) -> str | None:
    """The exception the statement under the deepest frame raised (see the module doc), or None."""
    statement = statement.strip()
    raised = _RAISE.match(statement)
    if raised is not None:
        name, rest = raised.group("name"), raised.group("rest") or ""
    else:
        asserted = _ASSERT.match(statement)
        if asserted is None:
            return None
        name, rest = "AssertionError", asserted.group("rest")
    message = _message(frame, name.rsplit(".", 1)[-1], rest)
    if message is None and raised is None:
        test = rest.split(",", 1)[0].strip()
        return f"AssertionError (assert {test})" if test else name
    return f"{name}: {message}" if message else name


def _message(frame: Frame, kind: str, rest: str) -> str | None:
    """The one mined message of class `kind` raised in the frame's module and function that the statement's
    text fits, or None when there is none or several."""
    candidates = _at_site(frame, kind)
    literal = _LITERAL.search(rest)
    if literal is not None:
        candidates = _starting(candidates, literal.group("text").split("{", 1)[0]) or candidates
    found = _one(candidates)
    return found.text if found is not None else None


def completed(frame: Frame, statement: str, exception: str) -> Template | None:
    """The mined template raised at the frame's site by its statement that an exception line cut short
    (`NotImplementedError: FlashAttention V1 with FP8 KV cache no`) starts, or None."""
    raised = _RAISE.match(statement.strip())
    kind = raised.group("name") if raised is not None else "AssertionError" if _ASSERT.match(statement.strip()) else ""
    name, _, message = exception.partition(":")
    if not kind or kind.rsplit(".", 1)[-1] != name.strip().rsplit(".", 1)[-1]:
        return None
    if kind == "AssertionError" and message.strip().startswith("assert"):
        return _statement_at(frame, message.strip())
    candidates = _starting(_at_site(frame, name.strip().rsplit(".", 1)[-1]), message.strip())
    literal = _LITERAL.search(statement)
    if literal is not None:
        candidates = _starting(candidates, literal.group("text").split("{", 1)[0]) or candidates
    return _one(candidates)


def _statement_at(frame: Frame, printed: str) -> Template | None:
    """The one bare assert statement mined at the frame's site that the printed part of it starts (Python
    before 3.13 prints only the first line of a multi-line statement, `assert (`), or None."""
    start = skeleton(printed)
    found: dict[str, list[Template]] = {}
    for template in _at_site(frame, "AssertionError"):
        if template.text.startswith("assert ") and skeleton(template.text).startswith(start):
            found.setdefault(skeleton(template.text), []).append(template)  # one statement, reformatted
    return max(next(iter(found.values())), key=_newest) if len(found) == 1 else None


def _at_site(frame: Frame, kind: str) -> list[Template]:
    """The mined templates of class `kind` raised in the frame's module and function."""
    path = frame.path.replace("\\", "/")
    key = (path.rsplit("/", 1)[-1], frame.function.rsplit(".", 1)[-1])
    return [t for t in _raise_sites().get(key, ())
            if t.kind == f"raise:{kind}" and any(path.endswith(s.module) for s in t.sites)]


def _starting(candidates: list[Template], text: str) -> list[Template]:
    """The templates whose message starts with `text` (at least MIN_WORDS skeleton characters of it)."""
    words = skeleton(text)
    if len(words) < MIN_WORDS:
        return []
    return [t for t in candidates if match(t.pieces, words, MIN_WORDS)]


def _one(candidates: list[Template]) -> Template | None:
    """The one message among templates (its wordings over releases: the newest), or None for several."""
    heads = {next((p for p in t.pieces if p), "") for t in candidates}
    if len(heads) != 1:
        return None
    return max(candidates, key=_newest)


def _newest(template: Template) -> Version:
    versions = []
    for release in template.releases:
        try:
            versions.append(Version(release))
        except InvalidVersion:
            continue
    return max(versions, default=Version("0"))
