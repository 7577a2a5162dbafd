"""Cause before consequence: an entry that reports another component's failure follows that failure's entry.

`remedies/consequences.yaml` lists, from the engines' source, which entries are one component reporting the
failure of another (SGLang's PD transfer failure reports its transfer engine's, a TCPStore client's timeout its
master's bind failure) and which entries name those causes. When a log printed a cause before its consequence,
the cause is the root: `causes_first` names it ahead of the consequence, whatever their root_cause_rank say.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, Sequence, TypeVar

from remedies.datalist import read_list
from remedies.errors import CatalogueError

RELATIONS_PATH = Path(__file__).parent / "consequences.yaml"
_FIELDS = {"consequence", "reported_by", "causes", "sources"}


@dataclass(frozen=True)
class Relation:
    """An entry (`consequence`) that reports the failure the `causes` patterns' entries name."""

    consequence: str
    reported_by: str
    causes: tuple[str, ...]
    sources: tuple[str, ...]

    def caused_by(self, remedy_id: str) -> bool:
        return any(fnmatchcase(remedy_id, pattern) for pattern in self.causes)


class _Where(Protocol):
    source: str
    line: int


class _Remedy(Protocol):
    id: str
    severity: str


class _Finding(Protocol):
    remedy: _Remedy
    first: _Where


F = TypeVar("F", bound=_Finding)


def load_relations(path: Path | str | None = None) -> tuple[Relation, ...]:
    """The validated relations (remedies/consequences.yaml by default), cached per process."""
    return _load(Path(path or RELATIONS_PATH).resolve())


@lru_cache(maxsize=4)
def _load(path: Path) -> tuple[Relation, ...]:
    return tuple(_relation(path, raw) for raw in read_list(path, "relations"))


def _relation(path: Path, raw: Any) -> Relation:
    if not isinstance(raw, dict) or set(raw) != _FIELDS:
        raise CatalogueError(f"{path}: each relation has exactly {', '.join(sorted(_FIELDS))}")
    lists = {key: raw[key] for key in ("causes", "sources")}
    if (not isinstance(raw["consequence"], str) or not isinstance(raw["reported_by"], str)
            or not all(isinstance(v, list) and v and all(isinstance(i, str) for i in v) for v in lists.values())):
        raise CatalogueError(f"{path}: relation {raw.get('consequence')!r}: consequence and reported_by are "
                             "strings, causes and sources non-empty lists of strings")
    return Relation(raw["consequence"], " ".join(raw["reported_by"].split()), tuple(raw["causes"]),
                    tuple(raw["sources"]))


def causes_first(findings: Sequence[F], relations: tuple[Relation, ...] | None = None) -> list[F]:
    """The ranked findings with every error finding that a relation names as a cause of a consequence finding,
    and that the same log printed before it, moved just ahead of that consequence (keeping their order)."""
    pool = load_relations() if relations is None else relations
    ordered = list(findings)
    for relation in pool:
        at = next((i for i, f in enumerate(ordered) if f.remedy.id == relation.consequence), None)
        if at is None:
            continue
        effect = ordered[at]
        earlier = [f for f in ordered[at + 1:] if f.remedy.severity == "error" and relation.caused_by(f.remedy.id)
                   and f.first.source == effect.first.source and f.first.line < effect.first.line]
        if earlier:
            rest = [f for f in ordered if not any(f is e for e in earlier)]
            at = next(i for i, f in enumerate(rest) if f is effect)
            ordered = [*rest[:at], *earlier, *rest[at:]]
    return ordered
