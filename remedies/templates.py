"""The engines' own message templates as ground truth: which raise / log site printed a message.

`scripts/mine_signatures.py` mines every `raise X("...")`, `assert ..., "..."` and `logger.error(...)` of the
serving modules of each release into `remedies/signatures/<package>.json` (template with `{}` holes, kind,
releases, and each raise site: module, function, the guarding `if` test, the flags / environment variables
it names). Every `*.json` there is read, so a new component's file joins without code changes.

`TemplateIndex.lookup(message)` finds the template a message was printed from, tolerantly:

- fixed text is compared as a *skeleton*: lower case, quotes / backticks dropped, escapes (`\\n`, `\\'`) and
  all whitespace removed, so quoting, case, wrapping (with or without a space) and JSON escaping do not
  matter; holes take any text (numbers, paths, hex addresses, units);
- the message may sit anywhere in the text (after an exception name, inside a JSON payload or another
  exception's repr);
- a message cut short (a terminal, an excerpt's end) matches when what is left covers at least
  MIN_PREFIX characters of the template's fixed text and ends inside it or inside a hole;
- a message cut before MIN_PREFIX characters (or with part of it elided, "...") is read only with its
  exception class, and only when every template of that class it starts comes from one raise site;
- a short template is ambiguous: one whose fixed text is under MIN_PREFIX characters must cover half the
  message, one in the words CPython prints for any object ("'X' object has no attribute 'y'") is claimed only
  for a crash of its own package, and a message read with its exception class must match more than the
  class's words ("NotImplementedError:" reads as "Not implemented error: {}").

Among matching templates the one with most fixed text matched wins (a whole match before a cut one).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import pickle
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from doctor.cachedir import cache_home

SIGNATURES_DIR = Path(os.environ.get("QWEN_DOCTOR_SIGNATURES",
                                     Path(__file__).resolve().parent / "signatures"))
CACHE_DIR = cache_home()  # None: no cache (doctor.cachedir)
CACHE_FORMAT = 2  # bump when Template / Site change shape
MIN_PREFIX = 32  # skeleton characters of fixed text a cut message must cover
MAX_MESSAGE = 4000  # characters of a message looked at
_DROP = re.compile(r"\x1b\[[0-9;]{0,16}[A-Za-z]|\\[nrt]|\\(?=['\"])|[\s'\"`\u2018\u2019\u201c\u201d]+")
MAX_HOLE = 24  # skeleton characters a short cut message may hold of the hole it ends in
MAX_CUT = 400  # skeleton characters of a cut message's first piece looked for at the text's end
_ANCHOR = 12  # skeleton characters of a template's longest piece used to shortlist it


def skeleton(text: str) -> str:
    """Text as compared: lower case, without quotes, backslash escapes or whitespace."""
    return _DROP.sub("", text).lower()


class Site(NamedTuple):
    """One place a template is printed: package, module, function and the `if` test guarding it."""

    package: str
    module: str
    function: str
    condition: str = ""
    flags: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.module}::{self.function}" if self.function else self.module

    def to_dict(self) -> dict[str, object]:
        return {"package": self.package, "module": self.module, "function": self.function,
                "condition": self.condition, "flags": list(self.flags)}


class Template(NamedTuple):
    """A mined message template with the releases that print it, its sites and its skeleton pieces."""

    package: str
    text: str
    kind: str
    releases: tuple[str, ...]
    sites: tuple[Site, ...]
    pieces: tuple[str, ...] = ()

    @property
    def raised(self) -> bool:
        return self.kind.startswith("raise:")

    @property
    def fixed(self) -> int:
        """Skeleton characters of fixed text."""
        return sum(map(len, self.pieces))


@dataclass(frozen=True)
class Hit:
    """A template a message matched, how much of its fixed text, and whether the message was cut."""

    template: Template
    matched: int
    whole: bool


def _pieces(text: str) -> tuple[str, ...]:
    return tuple(skeleton(part) for part in text.split("{}"))


def match(pieces: tuple[str, ...], text: str, least: int = MIN_PREFIX, hole: int | None = None
          ) -> tuple[int, bool] | None:
    """(fixed characters matched, whole) when `text` (a skeleton) holds the template's pieces in order, or
    ends (cut) inside a piece or hole after at least `least` fixed characters; otherwise None. Where the text
    marks an elision ("..." or "…": a person shortened the message), the pieces it left out are skipped up to
    the next one found after the mark (a match that is then not whole). With `hole`, a message cut inside a
    hole may hold at most that many characters of it (a figure, a name), not the rest of another message."""
    first = next((i for i, p in enumerate(pieces) if p), None)
    if first is None:
        return None
    head = pieces[first]
    start = text.find(head)
    if start < 0:
        # the message may be cut inside its first piece: the text's tail is a prefix of that piece
        for size in range(min(len(head), len(text)), least - 1, -1):
            if head.startswith(text[-size:]):
                return size, False
        return None
    pos, matched, whole = start + len(head), len(head), True
    index = first + 1
    while index < len(pieces):
        piece = pieces[index]
        index += 1
        if not piece:
            continue
        found = text.find(piece, pos)
        if found >= 0:
            pos, matched = found + len(piece), matched + len(piece)
            continue
        resumed = _after_elision(pieces, index, text, pos)
        if resumed is not None:
            index, pos, extra = resumed
            matched, whole = matched + extra, False
            continue
        rest = text[pos:]
        for begin in range(len(rest) + 1):
            tail = rest[begin:]
            if hole is not None and begin > hole:
                return None
            if piece.startswith(tail):
                return (matched + len(tail), False) if matched + len(tail) >= least else None
        return None
    return (matched, whole) if whole or matched >= least else None


_ELISION = ("...", "\u2026")


def _after_elision(pieces: tuple[str, ...], index: int, text: str, pos: int) -> tuple[int, int, int] | None:
    """Where matching resumes after an elision mark at or after `pos`: the index after the first later piece
    (from `index` on) found after the mark, the text position after it and its length; None without a mark."""
    marks = [m for m in (text.find(e, pos) for e in _ELISION) if m >= 0]
    if not marks:
        return None
    mark = min(marks)
    for later in range(index, len(pieces)):
        piece = pieces[later]
        if len(piece) < 4:
            continue
        found = text.find(piece, mark)
        if found >= 0:
            return later + 1, found + len(piece), len(piece)
    return None


# "NotImplementedError: Unknown load_format=42": the exception class a log line names before its message
_RAISED_AS = re.compile(r"\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt))\s*:")
# Messages CPython itself prints for any object (Objects/object.c `'%.100s' object has no attribute '%U'`,
# Python/ceval.c and Python/getargs.c `%U() got an unexpected keyword argument '%S'`, `%U() takes %d
# positional arguments but %d were given`, `name '%.200s' is not defined`, Objects/listobject.c `list index
# out of range`). A package that raises the same words (SGLang's MultimodalDataItem.__getattr__) cannot be
# told from the runtime by the message: such a template is claimed only for a crash of that package.
_RUNTIME_WORDS = (
    "objecthasnoattribute", "gotanunexpectedkeywordargument", "positionalargument", "isnotdefined",
    "indexoutofrange", "objectisnotsubscriptable", "objectisnotcallable", "notsupportedbetweeninstancesof",
)


class TemplateIndex:
    """Every mined template of every package, shortlisted by anchors: the start of each of its pieces."""

    def __init__(self, templates: Iterable[Template]) -> None:
        self.templates = tuple(templates)
        self._anchored: dict[str, list[Template]] = {}
        self._heads: dict[str, list[Template]] = {}
        for template in self.templates:
            longest = max(template.pieces, key=len)
            for piece in {p[:_ANCHOR] for p in template.pieces if len(p) >= _ANCHOR} or {longest[:_ANCHOR]}:
                self._anchored.setdefault(piece, []).append(template)
            head = next((p for p in template.pieces if p), "")
            if len(head) >= MIN_PREFIX:
                self._heads.setdefault(head[:MIN_PREFIX], []).append(template)

    def __len__(self) -> int:
        return len(self.templates)

    def candidates(self, text: str) -> Iterator[Template]:
        """Templates whose anchor occurs in the skeleton `text`, or whose first piece the text's tail starts
        (a message cut before its anchor)."""
        for anchor, templates in self._anchored.items():
            if anchor in text:
                yield from templates
        size = len(text)
        tail_starts = {text[size - n:size - n + MIN_PREFIX] for n in range(MIN_PREFIX, min(size, MAX_CUT) + 1)}
        for head, templates in self._heads.items():
            if head in tail_starts:
                yield from templates

    def lookup(self, message: str, raised_only: bool = False, package: str | None = None) -> Hit | None:
        """The template `message` was printed from (best match), or None. A message that starts with the exception
        class ("NotImplementedError: Unknown load_format=42") is matched without it first: a raise template is the
        message after the class, and a template such as "Not implemented error: {}" would otherwise read every
        NotImplementedError; on a tie the template raised as that class wins. Matched with the class, a template
        must match more than the class's own words (the skeleton of "NotImplementedError:" is that of
        "Not implemented error:"). `package` is the package the crash came from, when its frames tell: a
        template in words the Python runtime prints for any object is only claimed for that package."""
        named = _RAISED_AS.match(message)
        if named:
            kind = f"raise:{named.group(1).rsplit('.', 1)[-1]}"
            hit = self._best(message[named.end():], raised_only, kind, package, short_whole=True)
            if hit is None:
                hit = self._unique_cut(message[named.end():], kind)
            if hit is None and not _builtin(named.group(1)):
                hit = self._unique_cut(message[named.end():], None)  # a class of the engine's own, renamed
            if hit is not None:
                return hit
            hit = self._best(message, raised_only, None, package)
            beyond = hit.matched - len(skeleton(named.group(0))) if hit is not None else 0
            return hit if beyond >= MIN_PREFIX // 2 else None
        return self._best(message, raised_only, None, package)

    def _unique_cut(self, message: str, kind: str | None) -> Hit | None:
        """A message cut (or elided) before MIN_PREFIX fixed characters, read after its exception class: it is
        ambiguous unless the templates raised as that class that it starts (with at least MIN_PREFIX / 2
        fixed characters) all come from one raise site (one wording per release), then it is that one. With
        no `kind` (a class of the engine's own that no mined release raises the message as: releases rename
        and subclass their exceptions, `ChatTemplateResolutionError` for `ValueError`), any raise counts."""
        text = skeleton(message[:MAX_MESSAGE])
        if len(text) < MIN_PREFIX // 2:
            return None
        hits: dict[tuple[str, str, str], Hit] = {}
        for template in set(self.candidates(text)):
            if (template.kind != kind if kind else not template.raised) or _runtime_words(template):
                continue
            found = match(template.pieces, text, MIN_PREFIX // 2, hole=MAX_HOLE)
            if found is None:
                continue
            hit = Hit(template, *found)
            key = _site_key(template)
            if key not in hits or hit.matched > hits[key].matched:
                hits[key] = hit
        return next(iter(hits.values())) if len(hits) == 1 else None

    def _best(self, message: str, raised_only: bool, kind: str | None, package: str | None = None,
              short_whole: bool = False) -> Hit | None:
        """The best template for `message`; one shorter than MIN_PREFIX / 2 only when `short_whole` (a message
        after its exception class) and only a template it matches whole ("Invalid image: 42"); a template in
        the runtime's own words only for a crash of its package (`lookup`)."""
        text = skeleton(message[:MAX_MESSAGE])
        short = len(text) < MIN_PREFIX // 2
        if short and not short_whole:
            return None
        best: Hit | None = None
        best_key: tuple[bool, int, bool] | None = None
        seen: set[int] = set()
        for template in self.candidates(text):
            if id(template) in seen or (raised_only and not template.raised):
                continue
            seen.add(id(template))
            if _runtime_words(template) and not _same_package(template.package, package):
                continue
            found = match(template.pieces, text)
            if found is None:
                continue
            hit = Hit(template, *found)
            if (short and not hit.whole) or (_incidental(hit, text) and not _same_package(template.package, package)):
                continue
            # a whole match counts first only when it is no short fragment ("speculative decoding") that a longer
            # template's cut prefix beats on fixed characters
            key = (hit.whole and hit.matched >= MIN_PREFIX, hit.matched, hit.whole, template.kind == kind)
            if best_key is None or key > best_key:
                best, best_key = hit, key
        return best


def _incidental(hit: Hit, text: str) -> bool:
    """A template whose few fixed words ("not supported", "{} for {} request {}") occur inside a much longer
    message: the words are common, the match says nothing. A template must match MIN_PREFIX fixed characters
    or half the message, unless the crash's frames name its package."""
    return hit.matched < MIN_PREFIX and hit.matched * 2 < len(text)


def _runtime_words(template: Template) -> bool:
    """Whether the template's fixed text is mostly words the Python runtime prints for any object."""
    fixed = "".join(template.pieces)
    return any(word in fixed for word in _RUNTIME_WORDS) and template.fixed < MIN_PREFIX + len(max(
        (w for w in _RUNTIME_WORDS if w in fixed), key=len))


def _same_package(package: str, crashed_in: str | None) -> bool:
    """Whether a template's package (`sglang_disaggregation` counts as sglang) is the one a crash came from."""
    return crashed_in is not None and (package == crashed_in or package.startswith(f"{crashed_in}_"))


def _builtin(name: str) -> bool:
    """Whether an exception class name is one of Python's own (`ValueError`), not an engine's."""
    return "." not in name and isinstance(getattr(builtins, name, None), type)


def _site_key(template: Template) -> tuple[str, str, str]:
    site = template.sites[0] if template.sites else Site(template.package, "", "")
    return template.package, site.module, site.function


def _read(path: Path) -> Iterator[Template]:
    data = json.loads(path.read_text(encoding="utf-8"))
    package = str(data.get("package", path.stem))
    for item in data.get("templates", []):
        sites = tuple(Site(package, str(s.get("module", "")), str(s.get("function", "")),
                           str(s.get("condition", "")), tuple(s.get("flags", ())))
                      for s in item.get("sites", ())) or tuple(Site(package, m, "") for m in item.get("modules", ()))
        text = str(item["template"])
        yield Template(package, text, str(item["kind"]), tuple(item.get("releases", ())), sites, _pieces(text))


def _cache_file(paths: list[Path]) -> Path | None:
    """Where the parsed templates of these files are kept, named by their paths, sizes and times."""
    if CACHE_DIR is None:
        return None
    stamp = "\n".join(f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths)
    digest = hashlib.sha1(f"{CACHE_FORMAT}\n{stamp}".encode()).hexdigest()[:16]
    return CACHE_DIR / f"templates-{digest}.pickle"


@lru_cache(maxsize=4)
def load_templates(directory: Path | str | None = None) -> TemplateIndex:
    """Every template of every `*.json` in `directory` (remedies/signatures by default; empty if absent).

    Parsing the JSON costs a few tenths of a second, so the parsed templates are kept in the user's cache
    directory, keyed by the files' sizes and times (a cache that cannot be read or written is skipped)."""
    folder = Path(directory or SIGNATURES_DIR)
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    cache = _cache_file(paths)
    try:
        if cache is not None:
            with cache.open("rb") as stream:
                index = pickle.load(stream)
            if isinstance(index, TemplateIndex):
                return index
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ImportError):
        pass
    index = TemplateIndex(t for path in paths for t in _read(path))
    if cache is None:
        return index
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        with partial.open("wb") as stream:
            pickle.dump(index, stream, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(cache)
    except OSError:
        pass
    return index
