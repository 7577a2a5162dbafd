"""Aggregate matches from one or more log sources into findings, root cause first."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from doctor.redact import redact_lines
from remedies.advisories import (
    ENGINE_FRAME,
    RELEASE_LINES,
    USER_FACING,
    EngineBug,
    beside_entry,
    engine_bug,
    engine_release,
    native_engine_bug,
    read_head,
    release_without,
)
from remedies.claimwords import claimed_entry
from remedies.consequences import causes_first
from remedies.cuttrace import CUT_KIND, cut_crashes
from remedies.crash import SHUTTING_DOWN, TEARDOWN_FRAMES, Crash, component_of, final_group, peer_gone
from remedies.dependency import Dependency, dependency, engine_of, mismatch
from remedies.enginebug import crash_bug, entry_verdict, steps_for
from remedies.enginepaths import engine_path
from remedies.errorbody import reply_root
from remedies.figures import log_model, uses_log_figures
from remedies.inferred import INFERRED
from remedies.kernelfault import kernel_fault
from remedies.lastrecord import record_crashes
from remedies.levels import as_context
from remedies.nativesites import native_sites
from remedies.recordsite import message_site, record_site
from remedies.loader import load_catalogue
from remedies.matcher import WRAP_SCAN_BYTES, Match, Matcher
from remedies.model import SEVERITIES, UNKNOWN, FixStep, Remedy
from remedies.parallel import scan_parallel
from remedies.partial import scan_partial
from remedies.prose import prose_crashes
from remedies.prosespans import quoted_crashes
from remedies.rustpanic import panic_crashes
from remedies.titleclaim import TITLE_KIND, title_claim, title_crashes
from remedies.silentdeath import KILL_ENTRIES, kill_only, silent_deaths, with_phase
from remedies.bugsigns import signed_bug, signed_crashes, speculative_cut, speculative_fault
from remedies.bugclaims import CLAIM_KIND, claim_crashes
from remedies.claimedbug import claim_verdict, claimed_bug
from remedies.fragment import fragment_crashes
from remedies.reader import STDIN
from remedies.rootcause import Root, cited_sites, cut_traceback_near, root_near, stack_near, window_in
from remedies.source import Located, locate, locate_at, sampled_entry
from remedies.views import Sources, excerpt
from remedies.wrapperlookup import wrapper_lookup


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
    engine_bug: EngineBug | None = None
    values: tuple[tuple[str, str], ...] = ()
    located: Located | None = None
    root: Root | None = None
    dependency: Dependency | None = None

    @property
    def steps(self) -> tuple[FixStep, ...]:
        """The fix steps with this log's figures (the generic wording of each template step when none were
        captured), or a dependency finding's own; for a crash located in the engine's source, what its raise site
        implies first; beside an entry, a known regression's release to move to last."""
        own = self.dependency.steps() if self.dependency is not None else (self.fix or self.remedy.render_fix({}))
        steps = (*self.located.steps(), *own) if self.located is not None else own
        if self.engine_bug is None or not self.engine_bug.beside:
            return steps
        if self.crash is not None:  # no entry's advice to try first: the regression's release leads
            return (*self.engine_bug.leading_steps(), *steps)
        return (*steps, *self.engine_bug.steps())

    def to_dict(self) -> dict[str, Any]:
        remedy = {**self.remedy.to_dict(), "fix": [step.to_dict() for step in self.steps]}
        excerpt = redact_lines([*self.before, self.line, *self.after])  # a secret wrapped over lines goes whole
        before, line, after = excerpt[:len(self.before)], excerpt[len(self.before)], excerpt[len(self.before) + 1:]
        if self.crash is not None or self.root is not None or self.dependency is not None:
            remedy["why"] = self.why
        found: dict[str, Any] = {
            "remedy": remedy,
            "count": self.count,
            "first": {"source": self.first.source, "line": self.first.line},
            "last": {"source": self.last.source, "line": self.last.line},
            "line": line,
            "context": {"before": before, "after": after},
        }
        if self.crash is not None:
            found["crash"] = {**self.crash.to_dict(), "precursor": self.precursor}
        if self.engine_bug is not None:
            found["engine_bug"] = self.engine_bug.to_dict()
        if self.located is not None:
            found["raised_by"] = self.located.to_dict()
        if self.root is not None:
            found["root"] = self.root.to_dict()
        if self.dependency is not None:
            found["dependency"] = self.dependency.to_dict()
        return found

    @property
    def why(self) -> str:
        """The entry's explanation, then the root exception and its raise site (`remedies.rootcause`); for an
        unrecognised crash, what was found and where."""
        if self.crash is None:
            text = self.remedy.why if self.root is None else f"{self.remedy.why.rstrip()} {self.root.why()}"
            text = text if self.dependency is None else f"{text.rstrip()} {self.dependency.why}"
            return text if self.engine_bug is None else f"{text.rstrip()} {self.engine_bug.why}"
        crash = self.crash
        parts = [f"Root exception{f' ({INFERRED})' if crash.kind == 'inferred' else ''}: {crash.exception}"]
        if crash.frame is not None:
            own = self.root is not None and self.root.frame == crash.frame
            parts.append(self.root.site() if own and self.root is not None else f"raised at {crash.frame}")
        elif self.root is not None and self.root.frame is not None:
            parts.append(self.root.site())
        parts.append(f"component: {crash.component}")
        if crash.final != crash.exception:
            parts.append(f"final exception: {crash.final}")
        if self.engine_bug is not None:
            parts.append(self.engine_bug.why.rstrip("."))
        if self.precursor:
            parts.append(f"nearest known precursor: {self.precursor}")
        text = "; ".join(parts) + "."
        if self.located is not None:
            return f"{text} {self.located.why()}"
        if crash.frame is None and self.root is not None and self.root.cited:
            return f"{text} {self.root.cited_site()}"
        return text


class Collector:
    """Fold matches into findings, each remedy once; usable on a live stream or over files. `views` gives the
    lines of a source as the scans read them (`remedies.views`), for reading around a match."""

    def __init__(self, views: Sources | None = None) -> None:
        self._views = views
        self._findings: dict[str, Finding] = {}
        self._crashes: dict[tuple[str, int], Match] = {}
        self._sources: dict[str, int] = {}
        self._stops: dict[str, int] = {}
        self._demoted: dict[str, Remedy] = {}
        self.matched_lines = 0  # lines that matched an entry (counted, not kept: a stream may hold millions)
        self._last_line: tuple[str, int] | None = None
        self.titles: dict[str, str] = {}  # an issue report's title that states a failure, per source

    def add(self, match: Match, source: str) -> None:
        here = Location(source, match.lineno)
        self._sources.setdefault(source, len(self._sources))
        if match.remedy.stop:
            self._stops[source] = min(self._stops.get(source, match.lineno), match.lineno)
            return
        if match.crash is not None:
            self._crashes.setdefault((source, match.lineno), match)
            return
        if self._last_line != (source, match.lineno):  # a scan yields a source's matches in line order
            self._last_line = (source, match.lineno)
            self.matched_lines += 1
        remedy = as_context(match.remedy, match.line)
        if remedy is not match.remedy:
            self._demoted.setdefault(remedy.id, match.remedy)
        found = self._findings.get(match.remedy.id)
        if found is None:
            self._findings[match.remedy.id] = Finding(
                remedy, 1, here, here, match.line, match.before, match.after, len(self._findings),
                match.fix if match.values else (), values=match.values,
            )
        else:
            found.count += 1
            found.last = here
            if remedy.severity != found.remedy.severity and remedy is match.remedy:
                found.remedy = remedy
                self._demoted.pop(remedy.id, None)

    def _stopped(self, where: Location) -> bool:
        """`where` comes after an operator's stop request in its source (a `stop` entry's line): what the
        server prints then is the stop's doing (SIGTERM exit codes, children reaped), not why it failed."""
        stop = self._stops.get(where.source)
        return stop is not None and where.line > stop

    def _standing(self) -> list[Finding]:
        """The findings not first seen after an operator's stop request (the request itself is a marker, not a
        finding: a log that ends in an intended stop is a healthy log)."""
        return [f for f in self._findings.values() if not self._stopped(f.first)]

    def wants_crashes(self) -> bool:
        """No entry other than a wrapper named an error: an unrecognised crash must be looked for."""
        return not any(f.remedy.severity == "error" and not f.remedy.wrapper for f in self._standing())

    def found_nothing(self) -> bool:
        """No entry, of any severity, a wrapper's included, named anything: the paste yields nothing so far."""
        return not self._standing()

    def _precursor(self, source: str, line: int) -> str | None:
        """The last warning an entry named in this source before this line."""
        warned = [f for f in self._findings.values() if f.remedy.severity == "warning"
                  and f.first.source == source and f.first.line < line]
        if not warned:
            return None
        nearest = max(warned, key=lambda f: f.first.line)
        return f"{nearest.remedy.id} ({nearest.remedy.title}) at {nearest.first}"

    def unknown(self) -> Finding | None:
        """QD-R-UNKNOWN for the fatal events that end each log (`remedies.crash.final_group`: not those a
        server survived and carried on after), named by the first of them (the first traceback when there
        is one: its root exception says more than a death notice), unless an entry other than a wrapper
        named an error."""
        crashes = {key: m for key, m in self._crashes.items() if not self._stopped(Location(*key))}
        if not crashes or not self.wants_crashes():
            return None
        ordered = sorted(crashes.items(), key=lambda item: (self._sources[item[0][0]], item[0][1]))
        ending: list[tuple[tuple[str, int], Match]] = []
        for source in sorted(self._sources, key=self._sources.__getitem__):
            events = [item for item in ordered if item[0][0] == source]
            kept = {id(event) for event in final_group(item[1].crash for item in events if item[1].crash)}
            ending += [item for item in events if item[1].crash is not None and id(item[1].crash) in kept]
        if not ending:
            return None
        primary = [item for item in ending if item[1].crash is not None and not peer_gone(item[1].crash.exception)]
        if not primary and all(self._in_shutdown(source, item) for (source, _), item in ending):
            return None
        tracebacks = [item for item in primary or ending if item[1].crash is not None and item[1].crash.kind == "traceback"]
        (source, line), match = _bare_last(tracebacks or primary or ending)[0]
        (last_source, last_line), last_match = ending[-1]
        here, last = Location(source, line), Location(last_source, last_line)
        precursor = self._precursor(source, line)
        assert match.crash is not None
        crash = self._replied(source, match.crash)
        final = last_match.crash
        if final is not None and final is not crash:
            crash = replace(crash, final=final.final, tight="")
        located = locate((*crash.readings, crash.final), package=crash.component)
        if located is None and crash.frame is not None and crash.statement:
            located = locate_at(crash.frame, crash.statement, crash.exception)
        located = located.facing(crash.frame) if located is not None else None
        entry = self._covering(located) or self._sampled(crash) or self._claimed(crash)
        if entry is None and located is None and source in self.titles:
            found = claimed_entry(self.titles[source])  # nothing places the crash: the report's title names it
            entry = load_catalogue().get(found) if found else None
        if entry is not None:
            hit = entry.regex.search(crash.exception)
            values = {k: v for k, v in hit.groupdict().items() if v is not None} if hit else {}
            return Finding(entry, len(ending), here, last, match.line, match.before, match.after, len(self._findings),
                           entry.render_fix(values), root=self._inferred_root(crash, final, located))
        remedy = replace(UNKNOWN, component=crash.component)
        if located is not None:
            template = located.hit.template
            remedy = replace(remedy, component=located.component,
                             title=f"{template.package} raised an error no catalogue entry names; "
                                   "explained from its source")
        return Finding(remedy, len(ending), here, last, match.line, match.before,
                       match.after, len(self._findings), crash=crash, precursor=precursor, located=located)

    @staticmethod
    def _inferred_root(crash: Crash, final: Crash | None, located: Located | None) -> Root | None:
        """The root of an entry named through an exception inferred from its raise site (`remedies.inferred`):
        the crash's own, or the final event's when the entry was found through it (a wrapper's traceback
        printed its exception, the worker's that it wraps did not)."""
        for event in (crash, final):
            if (event is not None and event.kind == "inferred" and located is not None
                    and located.hit.template.text in event.exception):
                return Root(event.exception, event.frame, event.statement, located, inferred=True)
        return None

    def _in_shutdown(self, source: str, match: Match) -> bool:
        """Whether a crash was raised during an intended shutdown: the server said it was stopping in the lines
        before it, or its traceback passes through a teardown function (`remedies.crash.SHUTTING_DOWN`)."""
        crash = match.crash
        if crash is not None and crash.frame is not None and TEARDOWN_FRAMES.match(crash.frame.function):
            return True
        lineno = crash.lineno if crash is not None else match.lineno
        found = window_in(source, lineno, None if self._views is None else self._views.lines(source))
        lines, at = found if found is not None else ([*match.before, match.line], len(match.before))
        return any(SHUTTING_DOWN.search(line) for line in lines[:at])

    @staticmethod
    def _sampled(crash: Crash) -> Remedy | None:
        """The entry whose samples' words the crash's message carries, cut or under another exception class
        (`remedies.source.sampled_entry`), if any."""
        found = sampled_entry((*crash.readings, crash.final))
        return load_catalogue().get(found) if found else None

    def _replied(self, source: str, crash: Crash) -> Crash:
        """The crash, or, when it is a client's schema validation of an error reply, the reply's own message as its
        root (`remedies.errorbody`): raised by the server, not at the client's frame."""
        found = window_in(source, crash.lineno, None if self._views is None else self._views.lines(source))
        said = reply_root(*found) if found is not None else None
        if said is None:
            return crash
        return replace(crash, exception=said, final=said, frame=None, component=component_of((), said),
                       kind="exception", tight="", statement="", frames=())

    @staticmethod
    def _claimed(crash: Crash) -> Remedy | None:
        """The entry an issue title's own words point at (`remedies.claimwords`), for a crash read from the title."""
        if crash.kind != TITLE_KIND:
            return None
        found = claimed_entry(crash.exception)
        return load_catalogue().get(found) if found else None

    @staticmethod
    def _covering(located: Located | None) -> Remedy | None:
        """The catalogue entry (closest to the root cause) that covers a located template, if any."""
        if located is None or not located.entries:
            return None
        catalogue = load_catalogue()
        entries = [e for e in map(catalogue.get, located.entries) if e is not None]
        return min(entries, key=lambda e: e.rank) if entries else None

    def _restore_if_failing(self) -> None:
        """Entries matched only on WARNING records (`remedies.levels`) stay warnings in a log that carries on;
        when the log fails anyway (another entry names an error, or a fatal event ends it) they are candidate
        causes again, ranked as their entries say."""
        if not self._demoted:
            return
        standing = self._standing()
        failing = any(f.remedy.severity == "error" and f.remedy.id not in self._demoted for f in standing)
        if failing or self.unknown() is not None:
            for found in standing:
                if found.remedy.id in self._demoted:
                    found.remedy = self._demoted[found.remedy.id]
            self._demoted.clear()

    def findings(self) -> list[Finding]:
        """Errors before warnings before info; within a severity the root cause first, wrappers last."""
        self._restore_if_failing()
        unknown = self.unknown()
        return _ranked([*self._standing(), *([unknown] if unknown else [])])


def _scan(matcher: Matcher, collector: Collector, source: str | Path, parallel_min_bytes: int | None,
          workers: int | None, crashes: bool, catalogue: bool, views: Sources) -> None:
    if views.view(source) is None:
        split = scan_parallel(matcher, source, parallel_min_bytes, workers, crashes=crashes, catalogue=catalogue)
        if split is not None:
            matches: Iterable[Match] = split[0]
            for match in matches:
                collector.add(match, str(source))
            return
    with views.open(source) as stream:
        for match in matcher.scan(stream, crashes=crashes, catalogue=catalogue):
            collector.add(match, str(source))


def explain_sources(
    sources: Iterable[str | Path],
    matcher: Matcher | None = None,
    *,
    parallel_min_bytes: int | None = None,
    workers: int | None = None,
    collector: Collector | None = None,
) -> list[Finding]:
    """Scan each source (path, gzip path or '-') and return the ranked findings.

    A regular, uncompressed file of at least two shares of `parallel_min_bytes` (default
    $QWEN_DOCTOR_EXPLAIN_PARALLEL_MIN_BYTES or 64 MiB) is scanned by several processes
    (`remedies.parallel`), with the same findings. Fatal events no entry names (`remedies.crash`) matter
    only when no entry named an error, so files are scanned for them in a second pass, only then;
    standard input, which cannot be read twice, is scanned for both at once.
    """
    matcher = matcher or Matcher()
    views = Sources()
    collector = collector or Collector(views)
    files: list[str | Path] = []
    for source in sources:
        again = str(source) != STDIN
        _scan(matcher, collector, source, parallel_min_bytes, workers, crashes=not again, catalogue=True,
              views=views)
        if again:
            files.append(source)
    if collector.wants_crashes():
        for source in files:
            if excerpt(source):
                with views.open(source) as stream:
                    for match in matcher.scan_retyped(stream):
                        collector.add(match, str(source))
    if collector.wants_crashes():
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in scan_partial(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes():
        for source in files:
            _scan(matcher, collector, source, parallel_min_bytes, workers, crashes=True, catalogue=False,
                  views=views)
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in matcher.scan_unclassed(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in prose_crashes(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in panic_crashes(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in signed_crashes(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in fragment_crashes(stream):
                    collector.add(match, str(source))
    if collector.wants_crashes() and collector.unknown() is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in prose_crashes(stream, stated=True):
                    collector.add(match, str(source))
    # where the paste yields nothing else: an entry's finding, of any severity, carries its own root
    for scan in (quoted_crashes, cut_crashes, record_crashes, title_crashes, silent_deaths, claim_crashes):
        unknown = collector.unknown()
        if not collector.found_nothing() or not (unknown is None or scan is silent_deaths and _unexplained(unknown)):
            continue
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                for match in scan(stream):
                    collector.add(match, str(source))
    unplaced = collector.unknown() if collector.wants_crashes() else None
    if unplaced is not None and unplaced.remedy.id == UNKNOWN.id and unplaced.located is None:
        for source in filter(excerpt, files):
            with views.open(source) as stream:
                claim = title_claim(stream.read(WRAP_SCAN_BYTES).decode("utf-8", errors="replace"))
            if claim is not None:
                collector.titles[str(source)] = claim[1]
    heads: dict[str, list[str]] = {}

    def head(source: str) -> list[str]:
        if source not in heads:
            heads[source] = read_head(source)
        return heads[source]

    found = _ranked([_name_dependency(f, head, views) for f in collector.findings()])
    found = [_with_root(f, views) if f.remedy.severity in ROOTED and i < MAX_ROOTS else f
             for i, f in enumerate(found)]
    found = _regression_first([_name_engine_bug(_fit_to_log(finding, head), head) for finding in found], head)
    found = [_with_phase(finding, views) for finding in found]
    return [_in_source(finding, views) for finding in found]


def _with_phase(finding: Finding, views: Sources) -> Finding:
    """A kill's finding told the startup phase its pasted excerpt stopped in (`remedies.silentdeath`)."""
    if finding.remedy.id not in KILL_ENTRIES or not excerpt(finding.first.source):
        return finding
    with views.open(finding.first.source) as stream:
        lines = stream.read(WRAP_SCAN_BYTES).decode("utf-8", "replace").split("\n")
    return replace(finding, remedy=with_phase(finding.remedy, lines))


def _unexplained(unknown: Finding | None) -> bool:
    """No crash was found, or only a kill's mark (`remedies.silentdeath`): the process said nothing of its own."""
    return unknown is None or (unknown.crash is not None and kill_only(unknown.crash.exception)
                               and (unknown.located is None or not unknown.located.hit.template.raised))


# A line that says only `Error: ...` (a client's or a shell's heading, no exception class of its own)
_BARE_ERROR = re.compile(r"^\s*Error:\s")


def _bare_last(events: list[tuple[tuple[str, int], Match]]) -> list[tuple[tuple[str, int], Match]]:
    """The fatal events with a bare `Error: ...` line after those that name an exception class: a client's
    `Error: request failed:` heading is not the root when the payload below it quotes the engine's exception."""
    return sorted(events, key=lambda item: bool(item[1].crash and _BARE_ERROR.match(item[1].crash.exception)))


def _ranked(findings: list[Finding]) -> list[Finding]:
    """Errors before warnings before info; within a severity the root cause first, wrappers last; a cause the
    log printed before the entry that reports it comes before that entry (`remedies.consequences`)."""
    return causes_first(sorted(findings, key=lambda f: (SEVERITIES.index(f.remedy.severity), f.remedy.rank, f.order)))


DEPENDENCY_ID = "QD-R-VLLM-DEPENDENCY-VERSION"


def _name_dependency(finding: Finding, head: Callable[[str], list[str]], views: Sources) -> Finding:
    """An unrecognised crash (or the dependency entry's own match) whose traceback shows a library's API changed
    under its caller (`remedies.dependency`) becomes the dependency entry naming the package, what the log's
    engine release requires of it and the fix."""
    if finding.remedy.id != DEPENDENCY_ID and (finding.crash is None or finding.located is not None
                                               and finding.located.entries):
        return finding
    line = finding.crash.lineno if finding.crash is not None else finding.first.line
    stack = stack_near(finding.first.source, line, (*finding.before, finding.line, *finding.after),
                       len(finding.before), views.lines(finding.first.source))
    exception = finding.crash.exception if finding.crash is not None else (stack[0] if stack else finding.line)
    frames = stack[1] if stack else []
    found = mismatch(exception, frames)
    if found is None:
        return finding
    lines = head(finding.first.source)
    releases = {engine: engine_release(lines, engine) for engine in RELEASE_LINES}
    engine = engine_of([frame for frame, _ in frames], releases)
    entry = load_catalogue().get(DEPENDENCY_ID)
    if entry is None:
        return finding
    facts = dependency(found, engine, releases.get(engine))
    return replace(finding, remedy=entry, crash=None, located=None, precursor=None, dependency=facts)


MAX_ROOTS = 1  # findings (root cause first) given their root exception and raise site: the root cause
# The severities whose first finding is the log's named cause: an error, else a warning-level entry (a request the
# server refused, such as a prompt over the context length, is a warning of the server's and the client's failure).
ROOTED = ("error", "warning")


def _in_source(finding: Finding, views: Sources) -> Finding:
    """The finding with its lines numbered as in its source, where the scans read an unwrapped view of it."""
    first, last = finding.first, finding.last
    if views.view(first.source) is None and views.view(last.source) is None:
        return finding
    return replace(finding, first=Location(first.source, views.source_line(first.source, first.line)),
                   last=Location(last.source, views.source_line(last.source, last.line)))


def _with_root(finding: Finding, views: Sources) -> Finding:
    """The finding with the root exception and raise site read around its first line (`remedies.rootcause`):
    for an entry, what the engine raised; for a crash printed without its frames, the frames above it."""
    if finding.root is not None or (finding.crash is not None and finding.crash.frame is not None):
        return finding
    root = root_near(finding.first.source, finding.first.line, (*finding.before, finding.line, *finding.after),
                     views.lines(finding.first.source))
    if root is None and finding.crash is None:
        return _cited_root(finding)
    if root is None or (finding.crash is not None and root.frame is None):
        return _native_root(finding, views)
    if finding.crash is None:
        printed = message_site(root.exception) if root.frame is None and root.located is None else None
        if printed is not None:
            root = replace(root, frame=printed)
        elif root.frame is None and root.located is None:
            cited = cited_sites(finding.remedy.id, finding.remedy.source)
            native = () if cited else native_sites(root.exception, finding.line)
            logged = None if cited or native else record_site(finding.line, root.exception)
            root = replace(root, cited=cited or native, native=bool(native), frame=logged, logged=logged is not None)
        return replace(finding, root=root)
    component = component_of([root.frame], finding.crash.exception) if root.frame else finding.crash.component
    crash = replace(finding.crash, frame=root.frame, component=component)
    remedy = finding.remedy if finding.located is not None else replace(finding.remedy, component=component)
    return replace(finding, crash=crash, root=root, remedy=remedy)


def _cited_root(finding: Finding) -> Finding:
    """An entry's finding on a message printed without a traceback: the raise sites its mined templates and its
    sources place the message at (`remedies.rootcause.cited_sites`), else the native function that builds it
    (`remedies.nativesites`), else the position its record's prefix names (`remedies.recordsite`); with none of
    them, the message alone is the root the log names."""
    cited = cited_sites(finding.remedy.id, finding.remedy.source)
    native = () if cited else native_sites(finding.line)
    logged = None if cited or native else record_site(finding.line)
    return replace(finding, root=Root(finding.line.strip()[:MAX_ROOT_TEXT], logged, "", None, cited=cited or native,
                                      native=bool(native), logged=logged is not None,
                                      alone=not cited and not native and logged is None))


def _native_root(finding: Finding, views: Sources) -> Finding:
    """A crash printed without frames or a mined template: the native source position its message prints
    (`remedies.recordsite.message_site`), else the C / C++ function that builds its message
    (`remedies.nativesites`) as its root's cited site, else the source position its record's prefix names
    (`remedies.recordsite`), else the deepest frame of a traceback pasted after it and cut before its exception
    (`remedies.rootcause.cut_traceback_near`), which the raise is below."""
    crash = finding.crash
    if crash is None or crash.frame is not None or finding.located is not None:
        return finding
    printed = message_site(crash.exception)
    if printed is not None:
        return replace(finding, root=Root(crash.exception, printed, "", None))
    cited = native_sites(crash.exception, finding.line)
    if cited:
        return replace(finding, root=Root(crash.exception, None, "", None, cited=cited, native=True))
    logged = record_site(finding.line, crash.exception)
    if logged is not None:
        return replace(finding, root=Root(crash.exception, logged, "", None, logged=True))
    cut = cut_traceback_near(finding.first.source, finding.first.line, (*finding.before, finding.line, *finding.after),
                             views.lines(finding.first.source))
    if cut is None:
        return finding
    return replace(finding, root=Root(crash.exception, cut, "", None, below=True))


MAX_ROOT_TEXT = 400


def _fit_to_log(finding: Finding, head: Callable[[str], list[str]]) -> Finding:
    """Steps that state model-specific figures render with the model the log names (`remedies.figures`): the
    figures when it is the model they are for, the generic wording otherwise."""
    if not uses_log_figures(f for step in finding.remedy.fix for f in step.fields):
        return finding
    model = log_model(head(finding.first.source))
    values = {**dict(finding.values), **({"model": model} if model else {})}
    return replace(finding, fix=finding.remedy.render_fix(values))


def _name_engine_bug(finding: Finding, head: Callable[[str], list[str]]) -> Finding:
    """An unrecognised crash raised inside engine code names itself an engine bug, with the known regressions
    of the release its log prints and a release to move to instead of the generic steps (`remedies.advisories`)."""
    if finding.crash is None:   # an entry's line that its own component calls a bug keeps the entry's steps
        native = native_engine_bug(finding.line, lambda: head(finding.first.source))
        if native is not None:
            return replace(finding, engine_bug=native)
        root = finding.root
        verdict = entry_verdict(finding.remedy.id, finding.line, root.exception if root and not root.alone else None,
                                root.frame if root else None, lambda: head(finding.first.source))
        verdict = verdict or speculative_fault(finding.remedy.id, lambda: head(finding.first.source))
        verdict = verdict or speculative_cut(finding.remedy.id, finding.first.line, lambda: head(finding.first.source))
        verdict = verdict or kernel_fault(finding.remedy.id, finding.line, lambda: head(finding.first.source))
        verdict = verdict or wrapper_lookup(finding.remedy.id, lambda: head(finding.first.source))
        verdict = verdict or engine_path(finding.remedy.id, lambda: head(finding.first.source))
        if verdict is None and excerpt(finding.first.source):
            verdict = claim_verdict(finding.remedy, head(finding.first.source))
        if verdict is not None:
            own = finding.fix or finding.remedy.render_fix({})
            return replace(finding, engine_bug=verdict.bug, fix=steps_for(verdict, own))
        return _advised(finding, head)
    cut = finding.crash.kind in (CUT_KIND, TITLE_KIND, CLAIM_KIND)  # no exception to judge the engine's code by
    bug = None if cut else crash_bug(finding.crash, head(finding.first.source), finding.located)
    if bug is None:
        signed = _signed(finding, head)
        return signed if signed.engine_bug is not None else _claimed(signed, head)
    bug = _without_raise(bug, finding.located)
    return replace(finding, engine_bug=bug, fix=bug.steps())


def _claimed(finding: Finding, head: Callable[[str], list[str]]) -> Finding:
    """A crash no frame or sign names the engine's, in a bug report whose words claim an engine bug (a regression
    between releases, an upstream fix, a hang: `remedies.bugclaims`): the bug with the report's workarounds."""
    assert finding.crash is not None
    if not excerpt(finding.first.source):
        return finding
    bug = claimed_bug(finding.crash.exception, head(finding.first.source))
    if bug is None or bug.claim is None:
        return finding
    title = f"The report describes {bug.engine} {_CLAIMED[bug.claim.kind]} (an engine bug, not a setting)"
    remedy = replace(finding.remedy, title=title) if finding.remedy.id == UNKNOWN.id else finding.remedy
    return replace(finding, remedy=remedy, engine_bug=bug, fix=bug.steps())


_CLAIMED = {"regression": "failing where an earlier release, runner or engine worked",
            "upstream": "failing with a fix upstream", "hang": "hanging with no error printed",
            "internal": "failing an internal check of its own"}


def _signed(finding: Finding, head: Callable[[str], list[str]]) -> Finding:
    """A crash no frame places in engine code that a sign names the engine's bug (`remedies.bugsigns`), with the
    kernel source position the sign names as its raise site; else the known regression its words match, if any."""
    assert finding.crash is not None
    bug = signed_bug(finding.crash.exception, head(finding.first.source), finding.crash.frame, finding.line)
    if bug is None:  # raised outside engine code, or printed without frames: a known regression's words still count
        return _advised(finding, head)
    root = finding.root
    if root is None and bug.frame is not None:
        root = Root(finding.crash.exception, bug.frame, "", finding.located)
    if bug.frame is None and root is not None and root.native and root.cited:
        built = root.cited[0].split(" when `", 1)[0]
        bug = replace(bug, raised_at=f"{bug.raised_at}; its message is built in {built}")
    return replace(finding, engine_bug=bug, fix=bug.steps(), root=root)


def _without_raise(bug: EngineBug, located: Located | None) -> EngineBug:
    """An engine bug no advisory covers, with the nearest mined release whose source no longer raises its
    located template (`remedies.advisories.release_without`)."""
    template = located.hit.template if located is not None else None
    if template is None or not bug.release or bug.advisories or template.package != bug.engine:
        return bug
    return replace(bug, without=release_without(bug.engine, template.releases, bug.release))


def _advised(finding: Finding, head: Callable[[str], list[str]]) -> Finding:
    """An entry's finding with the known regression of the log's release whose symptom or raise site is in the
    log beside it (`remedies.advisories.beside_entry`): the entry's steps first, then the release to move to."""
    root = finding.root
    text = finding.line if root is None else f"{finding.line}\n{root.exception}"
    if finding.crash is not None:
        text = f"{text}\n{finding.crash.exception}"
    frame = root.frame if root is not None else finding.crash.frame if finding.crash is not None else None
    bug = beside_entry(text, frame, lambda: head(finding.first.source))
    if bug is None:
        return finding
    return replace(finding, engine_bug=bug)


def _regression_first(found: list[Finding], head: Callable[[str], list[str]]) -> list[Finding]:
    """When the first finding is an entry whose root exception is not its own message but one raised inside engine
    code that refuses no setting of the user's, and that raise is a known regression of the log's release (an
    advisory) or gone from a later release's source, the engine-bug finding for it comes first: the entry's advice
    (sizing, configuration) is not what stops this log."""
    first = found[0] if found else None
    root = first.root if first is not None else None
    if (first is None or root is None or root.frame is None or first.crash is not None or first.dependency is not None
            or first.remedy.regex.search(root.exception) or USER_FACING.search(root.exception)
            or not ENGINE_FRAME.search(root.frame.path.replace("\\", "/"))):
        return found  # checked before the log's head is read: most entries stop here
    crash = Crash(first.first.line, root.exception, root.exception, root.frame,
                  component_of([root.frame], root.exception), "traceback")
    bug = engine_bug(crash, head(first.first.source))
    if bug is None or bug.release is None:
        return found
    bug = _without_raise(bug, root.located)
    if not bug.advisories and bug.without is None:
        return found
    title = (f"A known regression of {bug.engine} {bug.release} stops this log (an engine bug, not a setting)"
             if bug.advisories else f"{bug.engine} {bug.release} raised an internal check that a later release "
                                    f"no longer has (an engine bug, not a setting)")
    lead = Finding(replace(UNKNOWN, component=bug.engine, title=title), first.count, first.first, first.last, first.line,
                   first.before, first.after, -1, bug.steps(), crash=crash, engine_bug=bug,
                   located=root.located, root=root)
    beside = first if first.engine_bug is None or not first.engine_bug.beside else replace(first, engine_bug=None)
    return [lead, replace(beside, root=None), *found[1:]]


def unrecognised_crash(stream: BinaryIO, source: str, matcher: Matcher | None = None) -> Finding | None:
    """QD-R-UNKNOWN for one binary log stream by explain's rule (the first fatal event, only when no entry
    other than a wrapper named an error), or None; `source` names the log in the finding's locations."""
    collector = Collector()
    for match in (matcher or Matcher()).scan(stream, crashes=True, catalogue=True):
        collector.add(match, source)
    found = collector.unknown()
    return None if found is None else _name_engine_bug(found, read_head)
