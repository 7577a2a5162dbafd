"""The remedy catalogue as deploy sees it: each live log line through explain's Matcher and Collector, the
findings as report hits, fatal ones flagged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remedies import Matcher
from remedies.explain import Collector, Finding
from remedies.model import SEVERITIES


@dataclass(frozen=True)
class RemedyHit:
    """A catalogue entry matched on one server log line."""

    id: str
    title: str
    severity: str
    fix: tuple[str, ...]
    source: tuple[str, ...]
    lineno: int
    line: str
    rank: int = 50
    context: tuple[str, ...] = field(default=())
    component: str = ""
    why: str = ""
    wrapper: bool = False

    @property
    def fatal(self) -> bool:
        """An error signature: the server is (or is about to be) dead."""
        return self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "severity": self.severity, "fix": list(self.fix),
                "source": list(self.source), "lineno": self.lineno, "line": self.line}

    def to_section(self, log: str) -> dict[str, Any]:
        """The report's `sections.remedies[]` entry (the shape `remedy_from_finding` gives explain's findings)."""
        where = {"source": log, "line": self.lineno}
        return {"id": self.id, "title": self.title, "severity": self.severity, "component": self.component,
                "count": 1, "first_line": where, "last_line": where, "line": self.line,
                "context": {"before": list(self.context), "after": []}, "why": self.why, "fix": list(self.fix),
                "source": list(self.source), "wrapper": self.wrapper}


def ranked(hits: list[RemedyHit]) -> list[RemedyHit]:
    """Hits in explain's order: errors before warnings before info, then root causes first (catalogue
    rank; QD-R-UNKNOWN after the named causes, before the wrappers), then log order."""
    return sorted(hits, key=lambda h: (SEVERITIES.index(h.severity), h.rank, h.lineno))


def hit_of(finding: Finding) -> RemedyHit:
    """A finding of remedies.explain as deploy reports it."""
    r = finding.remedy
    return RemedyHit(r.id, r.title, r.severity, tuple(step.render() for step in finding.steps), tuple(r.source),
                     finding.first.line, finding.line, r.rank, finding.before, r.component, finding.why, r.wrapper)


class RemedyWatch:
    """Feeds the live log to the remedies `Matcher` and folds the matches with explain's `Collector` (each entry
    once; nothing first seen after the server announced a stop request: the rest is the stop)."""

    def __init__(self, matcher: Matcher | None = None, source: str = "server log") -> None:
        self.matcher = matcher or Matcher()
        self.collector = Collector()
        self.source = source
        self.hits: list[RemedyHit] = []
        self.stop_line: int | None = None
        self._seen: set[str] = set()

    def feed(self, line: str, lineno: int) -> list[RemedyHit]:
        """Match one line; return the entries seen for the first time."""
        matches = self.matcher.feed(line, lineno)
        if not matches:
            return []
        for match in matches:
            self.collector.add(match, self.source)
            if match.remedy.stop and self.stop_line is None:
                self.stop_line = match.lineno
        new = [hit_of(f) for f in self.collector.findings() if f.remedy.id not in self._seen]
        self._seen.update(h.id for h in new)
        self.hits += new
        return new

    @property
    def fatal(self) -> list[RemedyHit]:
        """Fatal hits, closest to the root cause first."""
        return sorted((h for h in self.hits if h.fatal), key=lambda h: (h.rank, h.lineno))
