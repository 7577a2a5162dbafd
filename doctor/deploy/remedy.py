"""The remedy catalogue as deploy sees it: each log line in, matched remedies out, fatal ones flagged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remedies import Matcher
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


class RemedyWatch:
    """Feeds the live log to the remedies `Matcher`; keeps the first hit of each entry."""

    def __init__(self, matcher: Matcher | None = None) -> None:
        self.matcher = matcher or Matcher()
        self.hits: list[RemedyHit] = []
        self._seen: set[str] = set()
        self.stop_line: int | None = None

    def feed(self, line: str, lineno: int) -> list[RemedyHit]:
        """Match one line; return the entries seen for the first time. After the server announces a stop
        request (a `stop` entry: SIGTERM from whoever sent it) nothing more is matched: the rest is the stop."""
        new: list[RemedyHit] = []
        if self.stop_line is not None:
            return new
        for m in self.matcher.feed(line, lineno):
            r = m.remedy
            if r.stop:
                self.stop_line = lineno
                break
            if r.id in self._seen:
                continue
            self._seen.add(r.id)
            hit = RemedyHit(r.id, r.title, r.severity, tuple(s.render() for s in m.fix), tuple(r.source),
                            m.lineno, m.line, r.rank, m.before, r.component, r.why, r.wrapper)
            self.hits.append(hit)
            new.append(hit)
        return new

    @property
    def fatal(self) -> list[RemedyHit]:
        """Fatal hits, closest to the root cause first."""
        return sorted((h for h in self.hits if h.fatal), key=lambda h: (h.rank, h.lineno))
