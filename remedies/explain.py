"""Aggregate matches from one or more log sources into findings, root cause first."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from remedies.crash import Crash
from remedies.matcher import Match, Matcher
from remedies.model import SEVERITIES, UNKNOWN, FixStep, Remedy
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
    fix: tuple[FixStep, ...] = ()
    crash: Crash | None = None
    precursor: str | None = None

    @property
    def steps(self) -> tuple[FixStep, ...]:
        """The fix steps with this log's figures (the entry's own steps when none were captured)."""
        return self.fix or self.remedy.fix

    def to_dict(self) -> dict[str, Any]:
        remedy = {**self.remedy.to_dict(), "fix": [step.to_dict() for step in self.steps]}
        if self.crash is not None:
            remedy["why"] = self.why
        found: dict[str, Any] = {
            "remedy": remedy,
            "count": self.count,
            "first": {"source": self.first.source, "line": self.first.line},
            "last": {"source": self.last.source, "line": self.last.line},
            "line": self.line,
            "context": {"before": list(self.before), "after": list(self.after)},
        }
        if self.crash is not None:
            found["crash"] = {**self.crash.to_dict(), "precursor": self.precursor}
        return found

    @property
    def why(self) -> str:
        """The entry's explanation; for an unrecognised crash, what was found and where."""
        if self.crash is None:
            return self.remedy.why
        crash = self.crash
        parts = [f"Root exception: {crash.exception}"]
        if crash.frame is not None:
            parts.append(f"raised at {crash.frame}")
        parts.append(f"component: {crash.component}")
        if crash.final != crash.exception:
            parts.append(f"final exception: {crash.final}")
        if self.precursor:
            parts.append(f"nearest known precursor: {self.precursor}")
        return "; ".join(parts) + "."


class Collector:
    """Fold matches into findings, each remedy once; usable on a live stream or over files."""

    def __init__(self) -> None:
        self._findings: dict[str, Finding] = {}
        self._crashes: list[tuple[Match, Location, str | None]] = []

    def add(self, match: Match, source: str) -> None:
        here = Location(source, match.lineno)
        if match.crash is not None:
            warned = [f for f in self._findings.values() if f.remedy.severity == "warning" and f.first.source == source]
            precursor = f"{warned[-1].remedy.id} at {warned[-1].first}" if warned else None
            self._crashes.append((match, here, precursor))
            return
        found = self._findings.get(match.remedy.id)
        if found is None:
            self._findings[match.remedy.id] = Finding(
                match.remedy, 1, here, here, match.line, match.before, match.after, len(self._findings),
                match.fix if match.values else (),
            )
        else:
            found.count += 1
            found.last = here

    def _unknown(self) -> Finding | None:
        """QD-R-UNKNOWN for the first fatal event, unless an entry other than a wrapper named an error."""
        if not self._crashes or any(f.remedy.severity == "error" and not f.remedy.wrapper
                                    for f in self._findings.values()):
            return None
        match, here, precursor = self._crashes[0]
        last = self._crashes[-1][1]
        assert match.crash is not None
        crash = match.crash
        final = self._crashes[-1][0].crash
        if final is not None and final is not crash:
            crash = Crash(crash.lineno, crash.exception, final.final, crash.frame, crash.component, crash.kind)
        return Finding(replace(UNKNOWN, component=crash.component), len(self._crashes), here, last, match.line, match.before, match.after,
                       len(self._findings), crash=crash, precursor=precursor)

    def findings(self) -> list[Finding]:
        """Errors before warnings before info; within a severity the root cause first, wrappers last."""
        unknown = self._unknown()
        return sorted(
            [*self._findings.values(), *([unknown] if unknown else [])],
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
        split = scan_parallel(matcher, source, parallel_min_bytes, workers, crashes=True)
        if split is not None:
            for match in split[0]:
                collector.add(match, str(source))
            continue
        with open_log(source) as stream:
            for match in matcher.scan(stream, crashes=True):
                collector.add(match, str(source))
    return collector.findings()
