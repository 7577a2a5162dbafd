"""Peel the layers a pasted log arrives in, so the scan reads the log as its engine printed it.

A person pasting a log into an issue, a chat or a ticket, or exporting it from a log store, wraps it in
layers that a line-by-line reading of `remedies.normalise` cannot undo, because each one spans lines (or
needs the lines around it to be told apart from a message):

- `grep`: the file name (and line number) `grep -r` / `grep -n` prints before each line
  (`remedies.grepprefix`);
- `one-span`: several log lines run together in one inline code span, split at their record heads
  (`remedies.onespan`);
- `html`: a web page's escapes and tags (`&quot;`, `&#39;`, `&gt;`, `<details>`, `<summary>`, `<pre>`,
  `<br>`), zero-width characters and no-break spaces;
- `escaped`: a traceback escaped into one line, as a JSON or Python string shows it (`\\n` between its
  lines, `\\"` around its paths);
- `table`: a Markdown table whose cells hold the error (`| step | ValueError: ...<br>  File ... |`, `\\|`);
- `gutter`: a code viewer's or editor's line numbers down the left (`55   File "..."`, ` 55 | ...`, `L55:`),
  recognised only as numbers that run consecutively over several lines at one column;
- the layers a log collector or a log store adds (`remedies.exports`): JSON records, a newest-first
  export and its timestamp column, stern's pod prefix;
- `ipython`: a Jupyter / IPython traceback (`Cell In[3], line 5`, `File /x/vllm/y.py:12, in f(a)`,
  `--> 12     raise ...`) rewritten as the standard traceback Python prints;
- `ranks`: workers (tensor / data parallel ranks, Ray actors, torchrun and mpirun ranks, SGLang's `TP0`)
  printing their tracebacks at the same time, frames of several ranks interleaved: each rank's lines are
  gathered into one block (`remedies.ranks`), the most informative traceback (one that prints its
  exception, then the one that started first) first;
- `short-wrap`: a message a web page wrapped at a space right after its first words, the short line joined to
  the next when together they read as a mined template (`remedies.shortwrap`).

`unwrap(text)` peels every layer found, outermost first, and returns a `View` (the lines as read, each with
the source line it came from, and the layers peeled), or None when the text holds none of them. Only a
pasted excerpt is read this way (`remedies.explain`); a machine-written log is scanned as it is.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Callable

from remedies.crash import HEADER
from remedies.exports import peel_export, peel_json, peel_newest_first, peel_pod_prefix
from remedies.grepprefix import peel_grep
from remedies.onespan import split_spans
from remedies.normalise import strip_ansi
from remedies.ranks import gather
from remedies.shortwrap import join_short_wraps

MAX_ROUNDS = 4
MIN_GUTTER = 3
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None) | {0xA0: " ", 0x202F: " "}
_ENTITY = re.compile(r"&(?:quot|apos|amp|lt|gt|nbsp|#\d{1,7}|#x[0-9a-fA-F]{1,6});")
_TAG = re.compile(r"</?(?:details|summary|pre|code|kbd|samp|p|div|span|b|strong|em|i|tt)(?:\s[^<>\n]{0,200})?>",
                  re.IGNORECASE)
_BREAK = re.compile(r"<br\s{0,4}/?>", re.IGNORECASE)


@dataclass(frozen=True)
class View:
    """The lines of a source as read after its layers were peeled, each with its 1-based source line."""

    lines: tuple[str, ...]
    origin: tuple[int, ...]
    layers: tuple[str, ...]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def source_line(self, lineno: int) -> int:
        """The source line of the view's 1-based line `lineno`."""
        if not self.origin:
            return lineno
        return self.origin[min(max(lineno, 1), len(self.origin)) - 1]


_Lines = list[tuple[int, str]]


def unwrap(text: str) -> View | None:
    """The text with every layer it is wrapped in peeled (see the module doc), or None when it has none."""
    lines: _Lines = [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), 1)]
    if lines and not lines[-1][1]:
        lines.pop()
    peeled: list[str] = []
    for _ in range(MAX_ROUNDS):
        changed = False
        for name, layer in LAYERS:
            result = layer(lines)
            if result is not None:
                lines, changed = result, True
                if name not in peeled:
                    peeled.append(name)
        if not changed:
            break
    if not peeled:
        return None
    return View(tuple(line for _, line in lines), tuple(n for n, _ in lines), tuple(peeled))


# --- html ----------------------------------------------------------------------------------------------------

def peel_html(lines: _Lines) -> _Lines | None:
    """Entities unescaped, presentation tags dropped, `<br>` made a line break, invisible characters removed."""
    if not any(("&" in t and _ENTITY.search(t)) or ("<" in t and (_TAG.search(t) or _BREAK.search(t)))
               or (not t.isascii() and t.translate(_INVISIBLE) != t) for _, t in lines):
        return None
    out: _Lines = []
    for number, text in lines:
        text = _TAG.sub("", text.translate(_INVISIBLE))
        for piece in _BREAK.split(text):
            out.append((number, html.unescape(piece) if "&" in piece else piece))
    return out


# --- escaped -------------------------------------------------------------------------------------------------

_ESCAPES = re.compile(r"\\(?:\\|\"|'|t|r)")
_ESCAPED_BREAK = re.compile(r"(?:\\r)?\\n")
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\'": "'", "\\t": "\t", "\\r": ""}


def peel_escaped(lines: _Lines) -> _Lines | None:
    """A traceback escaped into one line (a JSON or Python string pasted as it is: `"Traceback (most recent
    call last):\\n  File \\"...\\", line 3, in f\\n..."`) broken back into its lines, escapes undone."""
    if not any(HEADER in text and text.count("\\n") >= 2 for _, text in lines):
        return None
    out: _Lines = []
    for number, text in lines:
        if HEADER in text and text.count("\\n") >= 2:
            out += [(number, _ESCAPES.sub(lambda m: _UNESCAPE[m.group(0)], piece))
                    for piece in _ESCAPED_BREAK.split(text)]
        else:
            out.append((number, text))
    return out


# --- table ---------------------------------------------------------------------------------------------------

_TABLE_RULE = re.compile(r"^\s{0,3}\|?\s{0,4}:?-{3,}:?\s{0,4}(?:\|\s{0,4}:?-{3,}:?\s{0,4}){0,30}\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def peel_table(lines: _Lines) -> _Lines | None:
    """A Markdown table's cells, each on lines of its own (`<br>` already broken by `peel_html`, `\\|` kept
    as `|`), in place of its rows; only a table with its rule row (`|---|---|`) is read."""
    rules = [i for i, (_, t) in enumerate(lines) if "-" in t and _TABLE_RULE.match(t)]
    if not rules:
        return None
    rows: set[int] = set()
    for rule in rules:
        if rule == 0 or not _row(lines[rule - 1][1]):
            continue
        rows.add(rule)
        index = rule - 1
        rows.add(index)
        index = rule + 1
        while index < len(lines) and _row(lines[index][1]):
            rows.add(index)
            index += 1
    if not rows:
        return None
    out: _Lines = []
    for index, (number, text) in enumerate(lines):
        if index not in rows:
            out.append((number, text))
        elif not _TABLE_RULE.match(text):
            out += [(number, cell) for cell in _cells(text)]
    return out


def _row(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("|") and len(_CELL_SPLIT.findall(stripped)) >= 2


def _cells(text: str) -> list[str]:
    stripped = text.strip()
    inner = stripped[1:-1] if stripped.endswith("|") and not stripped.endswith("\\|") else stripped[1:]
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner) if cell.strip()]


# --- gutter --------------------------------------------------------------------------------------------------

_GUTTER = re.compile(r"^(?P<lead>[ \t]{0,8})(?P<mark>L?)(?P<number>\d{1,6})(?P<sep>[ \t]{0,4}[|\u2502:]|(?=[ \t])|$)(?P<pad>[ \t]{0,12})")


def peel_gutter(lines: _Lines) -> _Lines | None:
    """The lines of a run of at least MIN_GUTTER whose left column holds consecutive numbers (a code viewer's
    or an editor's gutter), without it. A run keeps one style (the same marker and separator) and one column
    (its numbers end, or start, at one place); the gutter is as wide as its narrowest line's (indentation
    after it is the log's own). A number that is part of a message never forms such a run."""
    found = [_GUTTER.match(t) for _, t in lines]
    strip: dict[int, int] = {}
    index = 0
    while index < len(lines):
        run = _run(found, index)
        if len(run) >= MIN_GUTTER:
            widths = [hit.end() for hit in (found[i] for i in run) if hit is not None and hit.string[hit.end():].strip()]
            narrowest = min(widths, default=0)
            for member in run:
                hit = found[member]
                assert hit is not None
                strip[member] = min(narrowest, len(hit.string)) if narrowest else hit.end()
            index = run[-1] + 1
        else:
            index += 1
    if not strip:
        return None
    return [(number, text[strip[i]:] if i in strip else text) for i, (number, text) in enumerate(lines)]


def _style(hit: re.Match[str]) -> tuple[str, str]:
    return hit.group("mark"), hit.group("sep").strip()


def _run(found: list[re.Match[str] | None], start: int) -> list[int]:
    """The indices of the gutter run starting at `start` (consecutive numbers, one style and column)."""
    first = found[start]
    if first is None or (first.group("sep").strip() == ":" and first.string[first.end():first.end() + 1].isdigit()):
        return []
    run = [start]
    style = _style(first)
    begin, end = first.start("number"), first.end("number")
    for index in range(start + 1, len(found)):
        hit, previous = found[index], found[run[-1]]
        assert previous is not None
        if (hit is None or int(hit.group("number")) != int(previous.group("number")) + 1 or _style(hit) != style
                or (hit.start("number") != begin and hit.end("number") != end)):
            break
        run.append(index)
    return run


# --- ipython -------------------------------------------------------------------------------------------------

_IPY_HEADER = re.compile(r"^(?P<name>[A-Za-z_][\w.]{0,200})\s{2,}Traceback \(most recent call last\)")
# IPython 8: `File /x/vllm/y.py:12, in Cls.f(self, a)`, `Cell In[3], line 5`; IPython 7 and before:
# `/x/vllm/y.py in f(self, a)`, `<ipython-input-3-abc> in <module>`, the line number on the `-->` line.
_IPY_FRAME = re.compile(r"^(?:File (?P<path>\S[^\n]{0,2000}?):(?P<line>\d{1,9})(?:, in (?P<func>[\w.<>]{1,256}))?"
                        r"|Cell (?P<cell>In\s?\[\d{1,6}\]), line (?P<cell_line>\d{1,9})"
                        r"|(?P<old>(?:/|[A-Za-z]:\\|<ipython-input-)[^\n]{1,2000}?) in (?P<old_func>[\w.<>]{1,256})(?:\(|$))")
_IPY_CURRENT = re.compile(r"^-{1,4}>\s{0,2}(?P<line>\d{1,9})\s(?P<statement>.*)$")
_IPY_CONTEXT = re.compile(r"^\s{0,10}\d{1,9}\s")
_IPY_RULE = re.compile(r"^-{20,}$")


def peel_ipython(lines: _Lines) -> _Lines | None:
    """An IPython traceback as Python prints it: its header, each frame as `File "path", line N, in f` with
    the statement IPython marks `-->` under it; the numbered source lines around each are dropped."""
    plain = [(number, strip_ansi(text)) for number, text in lines]
    if not any(_IPY_HEADER.match(t.strip()) for _, t in plain):
        return None
    out: _Lines = []
    inside = False
    pending: tuple[str, str] | None = None
    for number, text in plain:
        stripped = text.strip()
        if _IPY_HEADER.match(stripped):
            out.append((number, "Traceback (most recent call last):"))
            inside = True
            continue
        if not inside:
            if not _IPY_RULE.match(stripped):
                out.append((number, text))
            continue
        frame = _IPY_FRAME.match(stripped)
        current = _IPY_CURRENT.match(stripped)
        if frame and frame.group("cell"):
            out.append((number, f'  File "<{frame.group("cell")}>", line {frame.group("cell_line")}, in <module>'))
        elif frame and frame.group("old"):
            pending = (frame.group("old"), frame.group("old_func"))
        elif frame:
            func = (frame.group("func") or "<module>").rsplit(".", 1)[-1]
            out.append((number, f'  File "{frame.group("path")}", line {frame.group("line")}, in {func}'))
        elif current:
            if pending is not None:
                out.append((number, f'  File "{pending[0]}", line {current.group("line")}, in {pending[1]}'))
                pending = None
            out.append((number, f"    {current.group('statement').strip()}"))
        elif _IPY_CONTEXT.match(text) or not stripped or stripped.startswith(("...", "^")):
            continue
        else:
            out.append((number, text))
            inside = not bool(stripped) or text[:1] in " \t"
    return out


LAYERS: tuple[tuple[str, Callable[[_Lines], _Lines | None]], ...] = (
    ("grep", peel_grep),
    ("one-span", split_spans),
    ("json", peel_json),
    ("html", peel_html),
    ("table", peel_table),
    ("escaped", peel_escaped),
    ("ipython", peel_ipython),
    ("gutter", peel_gutter),
    ("newest-first", peel_newest_first),
    ("export", peel_export),
    ("stern", peel_pod_prefix),
    ("ranks", gather),
    ("short-wrap", join_short_wraps),
)
