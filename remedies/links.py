"""Template identity: which catalogue entry covers which mined message template, by raise / log site.

`remedies/template_links.json` (written by `scripts/mine_signatures.py --write-links`, then reviewed) lists,
per entry, the templates its pattern matches and each one's site: package, kind, module, function and the
`if` test guarding it. A template joins an entry when it is one of those wordings, or when it is printed at
a linked site (same package, kind, function and condition) with a wording that shares at least
SIMILAR of its words with a linked one: another release's rewording of the same raise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from remedies.templates import Template

LINKS_FILE = Path(__file__).resolve().parent / "template_links.json"
SIMILAR = 0.5
_WORD = re.compile(r"[a-z0-9_]{3,}")


def words(text: str) -> frozenset[str]:
    """The words of a template's fixed text (holes dropped), lower case."""
    return frozenset(_WORD.findall(text.replace("{}", " ").lower()))


def similarity(left: frozenset[str], right: frozenset[str]) -> float:
    """Jaccard similarity of two word sets."""
    return len(left & right) / len(left | right) if left or right else 0.0


@dataclass(frozen=True)
class Link:
    """One template an entry covers, at one site."""

    remedy_id: str
    package: str
    kind: str
    module: str
    function: str
    condition: str
    template: str

    @property
    def site(self) -> tuple[str, str, str, str]:
        return (self.package, self.kind, self.function, self.condition)


class Links:
    """Entry ids per template: by the template's own text, or by its site and a similar wording."""

    def __init__(self, links: Iterable[Link]) -> None:
        self.links = tuple(links)
        self._by_text: dict[tuple[str, str], set[str]] = {}
        self._by_site: dict[tuple[str, str, str, str], list[tuple[str, frozenset[str]]]] = {}
        for link in self.links:
            self._by_text.setdefault((link.package, link.template), set()).add(link.remedy_id)
            if link.function:
                self._by_site.setdefault(link.site, []).append((link.remedy_id, words(link.template)))

    def entries(self, template: Template) -> tuple[str, ...]:
        """The ids of the entries covering this template (its own wording, else a rewording at a linked site)."""
        own = self._by_text.get((template.package, template.text))
        if own:
            return tuple(sorted(own))
        mine = words(template.text)
        joined = {remedy_id for site in template.sites if site.function
                  for remedy_id, theirs in self._by_site.get((template.package, template.kind, site.function,
                                                              site.condition), ())
                  if similarity(mine, theirs) >= SIMILAR}
        return tuple(sorted(joined))


def read_links(path: Path) -> Links:
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return Links(Link(remedy_id, **item) for remedy_id, items in data.items() for item in items)


@lru_cache(maxsize=2)
def load_links(path: Path | str | None = None) -> Links:
    """The shipped links (remedies/template_links.json), or those of `path`."""
    return read_links(Path(path or LINKS_FILE))
