"""The result model shared by every check, renderer and exit-code policy."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Status(str, Enum):
    """Outcome of one check, ordered from best to worst by `rank`."""

    OK = "ok"
    SKIP = "skip"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def symbol(self) -> str:
        return _SYMBOL[self]


_RANK = {Status.OK: 0, Status.SKIP: 1, Status.WARN: 2, Status.FAIL: 3, Status.ERROR: 4}
_SYMBOL = {Status.OK: "✓", Status.SKIP: "-", Status.WARN: "!", Status.FAIL: "✗", Status.ERROR: "☠"}

SEVERITIES = ("info", "low", "medium", "high", "critical")


@dataclass
class Outcome:
    """What a check function returns: the verdict, before the runner stamps the check's identity on it."""

    status: Status
    summary: str
    details: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    remedy_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str | None = None


def ok(summary: str, **kw: Any) -> Outcome:
    """A passing verdict."""
    return Outcome(Status.OK, summary, **kw)


def warn(summary: str, **kw: Any) -> Outcome:
    """Works, but worse than it should, or risky: the fix is advice."""
    return Outcome(Status.WARN, summary, **kw)


def fail(summary: str, **kw: Any) -> Outcome:
    """Will break the deployment: the fix is required."""
    return Outcome(Status.FAIL, summary, **kw)


def skip(summary: str, **kw: Any) -> Outcome:
    """Not applicable, or a fact it needs is missing."""
    return Outcome(Status.SKIP, summary, **kw)


@dataclass
class Result:
    """One check's verdict with its identity; the unit every report format renders."""

    check_id: str
    title: str
    category: str
    severity: str
    status: Status
    summary: str
    details: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    remedy_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        return cls(**{**data, "status": Status(data["status"])})


def worst(results: list[Result]) -> Status:
    """The worst status among results (OK when empty)."""
    return max((r.status for r in results), key=lambda s: s.rank, default=Status.OK)


def counts(results: list[Result]) -> dict[str, int]:
    """Number of results per status, every status present."""
    tally = {s.value: 0 for s in Status}
    for r in results:
        tally[r.status.value] += 1
    return tally
