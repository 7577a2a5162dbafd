"""QD-VER-007: every dependency the engine release pins exactly is served by the configured package index.

A release that pins a version the index does not serve cannot be installed from it (vLLM 0.34.0 pins
flashinfer-python==0.7.3; the index here serves 0.7.2.post1 and 0.7.4): following a version check's fix then
ends in pip's ResolutionImpossible. The pins come from the installed release's own Requires-Dist, else from
the version matrix row of the release a dump names or a profile allows; the index's versions from `check
--index` (doctor/facts/probes/index.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from doctor.context import CheckContext
from doctor.knowledge import BackendPins, parse_version, version_matrix
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip

if TYPE_CHECKING:
    from packaging.requirements import Requirement

BACKENDS = ("vllm", "sglang")
NOT_PROBED = "not probed; run qwen-doctor check --index to ask the package index"


def engine_release(ctx: CheckContext, backend: str) -> tuple[str, Version, list[str]] | None:
    """(distribution, release, exact pins) of the installed engine, else of the release a dump names, else of
    the newest matrix release the profile allows; None when none is known."""
    entry = ctx.facts.package(backend) or {}
    version = parse_version(entry.get("version"))
    if version is not None:
        if entry.get("requires") is not None:
            return entry.get("distribution") or backend, version, list(entry["requires"])
        pins = version_matrix().pins(backend, version)
        return (entry.get("distribution") or backend, version, pins.exact_pins()) if pins else None
    allowed = getattr(ctx.profile, "backend_version", None)
    if allowed is None or getattr(ctx.profile, "backend", None) != backend:
        return None
    rows = [p for p in version_matrix().backends.get(backend, ()) if p.latest and allowed.contains(p.latest)]
    if not rows:
        return None
    newest = max(rows, key=lambda p: p.latest)
    return backend, newest.latest, newest.exact_pins()


def unresolved(pins: list[str], served: dict[str, list[str]]) -> list[tuple[Requirement, list[Version]]]:
    """The pins no served version satisfies, each with the versions the index does serve."""
    from packaging.requirements import Requirement   # ~30 ms to import: only where pins are judged

    out = []
    for text in pins:
        req = Requirement(text)
        versions = _versions(served.get(canonicalize_name(req.name)) or [])
        if not any(req.specifier.contains(v, prereleases=True) for v in versions):
            out.append((req, versions))
    return out


def _versions(texts: list[str]) -> list[Version]:
    out = []
    for text in texts:
        try:
            out.append(Version(text))
        except InvalidVersion:
            continue
    return sorted(out)


def nearest(req: Requirement, versions: list[Version]) -> str:
    """'0.7.2.post1, 0.7.4': the served versions just below and above an exact pin (finals only)."""
    pinned = next((Version(s.version.split("+")[0]) for s in req.specifier if s.operator == "=="), None)
    finals = [v for v in versions if not (v.is_prerelease or v.is_devrelease)]
    if pinned is None or not finals:
        return ", ".join(str(v) for v in finals[-2:]) or "none"
    below = [v for v in finals if Version(v.public) < pinned]
    above = [v for v in finals if Version(v.public) > pinned]
    return ", ".join(str(v) for v in (below[-1:] + above[:1])) or "none"


def nearest_release(backend: str, release: Version, served: dict[str, list[str]]) -> Version | None:
    """The release closest to `release` whose exact pins all resolve on the index (matrix rows' newest)."""
    rows: list[BackendPins] = [p for p in version_matrix().backends.get(backend, ()) if p.latest is not None]
    good = [p.latest for p in rows if p.latest != release and not unresolved(p.exact_pins(), served)]
    return min(good, key=lambda v: (abs(_rank(rows, v) - _rank(rows, release)), v > release), default=None)


def _rank(rows: list[BackendPins], version: Version) -> int:
    ordered = sorted({p.latest for p in rows} | {version})
    return ordered.index(version)


@check("QD-VER-007", "Engine's pinned dependencies resolve on the package index", category="versions",
       severity="high")
def pins_resolve(ctx: CheckContext) -> list[Outcome]:
    """Every exact pin of the installed (or dumped, or profiled) engine release is a version the configured
    package index serves; else installing that release fails with ResolutionImpossible."""
    index: dict[str, Any] = ctx.facts.data.get("index") or {}
    if not index:
        return [skip(NOT_PROBED)]
    if index.get("status") != "ok":
        return [skip(f"the package index was not reachable: {index.get('error') or index.get('status')}")]
    backends = [ctx.backend] if ctx.backend else [b for b in BACKENDS if ctx.facts.package(b)]
    out = []
    for backend in backends or ():
        found = engine_release(ctx, backend)
        if found is None:
            out.append(skip(f"no {backend} release installed, dumped or profiled with known pins", subject=backend))
            continue
        dist, release, pins = found
        missing = unresolved(pins, index.get("projects") or {})
        where = index.get("url") or "the index"
        if not missing:
            out.append(ok(f"all {len(pins)} exact pins of {dist} {release} are served by {where}", subject=backend))
            continue
        better = nearest_release(backend, release, index.get("projects") or {}) if dist == backend else None
        fix = [f"pip install '{backend}=={better}'   # the nearest release whose pins all resolve here"] if better \
            else [f"pip index versions {canonicalize_name(req.name)}" for req, _ in missing]
        out.append(fail(
            f"{dist} {release} pins " + "; ".join(
                f"{req} (not on {where}; nearest: {nearest(req, versions)})" for req, versions in missing),
            details=["pip refuses the install: 'ResolutionImpossible' (the pinned file is not on the index)."],
            fix=fix, evidence={"unresolved": [str(req) for req, _ in missing], "index": where}, subject=backend))
    return out or [skip("no serving backend installed, dumped or profiled")]


def projects_to_ask(ctx: CheckContext) -> set[str]:
    """The projects whose served versions QD-VER-007 needs: the pins of the engine release judged and of every
    matrix row of its backend (for the nearest resolvable release)."""
    from packaging.requirements import Requirement

    names: set[str] = set()
    backends = [ctx.backend] if ctx.backend else [b for b in BACKENDS if ctx.facts.package(b)]
    for backend in backends:
        if (found := engine_release(ctx, backend)) is not None:
            names |= {canonicalize_name(Requirement(p).name) for p in found[2]}
        for row in version_matrix().backends.get(backend, ()):
            names |= {canonicalize_name(Requirement(p).name) for p in row.exact_pins()}
    return names
