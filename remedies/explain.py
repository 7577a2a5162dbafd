"""Aggregate matches from one or more log sources into findings, root cause first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from remedies.matcher import Match, Matcher
from remedies.model import SEVERITIES, Remedy
from remedies.parallel import scan_parallel
from remedies.reader import open_log


@dataclass(frozen=True)
class Location:
    """Where a line is: the source as given ('-' for stdin) and its 1-based line number."""

    source: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass
class Finding:
    """One remedy matched in the logs: how often, where first and last, and the first line with context."""

    remedy: Remedy
    count: int
    first: Location
    last: Location
    line: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    order: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "remedy": self.remedy.to_dict(),
            "count": self.count,
            "first": {"source": self.first.source, "line": self.first.line},
            "last": {"source": self.last.source, "line": self.last.line},
            "line": self.line,
            "context": {"before": list(self.before), "after": list(self.after)},
        }


class Collector:
    """Fold matches into findings, each remedy once; usable on a live stream or over files."""

    def __init__(self) -> None:
        self._findings: dict[str, Finding] = {}

    def add(self, match: Match, source: str) -> None:
        here = Location(source, match.lineno)
        found = self._findings.get(match.remedy.id)
        if found is None:
            self._findings[match.remedy.id] = Finding(
                match.remedy, 1, here, here, match.line, match.before, match.after, len(self._findings)
            )
        else:
            found.count += 1
            found.last = here

    def findings(self) -> list[Finding]:
        """Errors before warnings before info; within a severity the root cause first, wrappers last."""
        return sorted(
            self._findings.values(),
            key=lambda f: (SEVERITIES.index(f.remedy.severity), f.remedy.rank, f.order),
        )


def explain_sources(
    sources: Iterable[str | Path],
    matcher: Matcher | None = None,
    *,
    parallel_min_bytes: int | None = None,
    workers: int | None = None,
) -> list[Finding]:
    """Scan each source (path, gzip path or '-') and return the ranked findings.

    A regular, uncompressed file of at least two shares of `parallel_min_bytes` (default
    $QWEN_DOCTOR_EXPLAIN_PARALLEL_MIN_BYTES or 64 MiB) is scanned by several processes
    (`remedies.parallel`), with the same findings.
    """
    matcher = matcher or Matcher()
    collector = Collector()
    for source in sources:
        split = scan_parallel(matcher, source, parallel_min_bytes, workers)
        if split is not None:
            for match in split[0]:
                collector.add(match, str(source))
            continue
        with open_log(source) as stream:
            for match in matcher.scan(stream):
                collector.add(match, str(source))
    return collector.findings()
