"""Every installed distribution (name, version, where), from the metadata directories on sys.path.

A `NAME-VERSION.dist-info` (or `.egg-info`) directory name carries the distribution's name and version
(PEP 427 / the binary distribution format's escaping), so one directory listing per path entry reads a
site-packages of vLLM's size (~250 distributions) in milliseconds; only a name without a version (an old
egg-info) opens its PKG-INFO. A path entry's listing is bounded by the probe's deadline: what was not read by
then is recorded as incomplete, never waited for.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

DEADLINE_S = 2.0
_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class Found:
    """One metadata directory: the distribution's canonical name, its version, and where it lies."""

    name: str
    version: str
    location: str
    metadata: Path


def scan(paths: list[str] | None = None, deadline_s: float = DEADLINE_S) -> tuple[list[Found], bool]:
    """Every metadata directory on `paths` (sys.path), in path order, and whether all of them were read in time."""
    started = time.monotonic()
    found: list[Found] = []
    seen_dirs: set[str] = set()
    for entry in paths if paths is not None else sys.path:
        if time.monotonic() - started > deadline_s:
            return found, False
        location = Path(entry or ".")
        try:
            key = str(location.resolve())
        except OSError:
            continue
        if key in seen_dirs:
            continue
        seen_dirs.add(key)
        found.extend(_listed(location))
    return found, True


def first_found(paths: list[str] | None = None) -> dict[str, Found]:
    """Canonical name -> the copy importlib.metadata would read (the first on sys.path)."""
    out: dict[str, Found] = {}
    for dist in scan(paths)[0]:
        out.setdefault(dist.name, dist)
    return out


def probe(paths: list[str] | None = None, deadline_s: float = DEADLINE_S) -> dict[str, Any]:
    """{"source": "metadata", "complete", "locations": {path: "name==version" lines}, "seconds"}."""
    started = time.monotonic()
    found, complete = scan(paths, deadline_s)
    return {"source": "metadata", "complete": complete, "locations": as_locations(found),
            "seconds": round(time.monotonic() - started, 4)}


def as_locations(found: list[Found] | list[tuple[str, str, str]]) -> dict[str, str]:
    """Path -> one `name==version` line per distribution there, in path order. One string per location, not a
    record per distribution: every report redacts every string of the facts it embeds, and ~900 short strings
    of a vLLM environment cost that pass ~300 times what a few long ones do."""
    out: dict[str, list[str]] = {}
    for dist in found:
        name, version, location = (dist.name, dist.version, dist.location) if isinstance(dist, Found) else dist
        out.setdefault(location, []).append(f"{name}=={version}")
    return {location: "\n".join(lines) for location, lines in out.items()}


def _listed(location: Path) -> list[Found]:
    try:
        names = [n for n in (e.name for e in location.iterdir()) if n.endswith(_SUFFIXES)]
    except OSError:
        return []
    out = []
    for dirname in sorted(names):
        name, version = split_metadata_dir(dirname)
        if version is None:
            name, version = _from_pkg_info(location / dirname, name)
        if name and version:
            out.append(Found(canonicalize_name(name), version, str(location), location / dirname))
    return out


def split_metadata_dir(dirname: str) -> tuple[str, str | None]:
    """('flashinfer-python', '0.7.3') from 'flashinfer_python-0.7.3.dist-info'; the version is None when the
    directory name does not carry one ('foo.egg-info'). An egg-info's '-py3.12' tag is dropped."""
    stem = dirname.rsplit(".", 1)[0]
    name, sep, rest = stem.partition("-")
    if not sep:
        return name, None
    version = rest.split("-py", 1)[0] if dirname.endswith(".egg-info") else rest
    return name, version or None


def _from_pkg_info(path: Path, name: str) -> tuple[str, str | None]:
    """Name and version from the headers of a metadata directory's PKG-INFO / METADATA (or an egg-info file)."""
    for candidate in (path / "METADATA", path / "PKG-INFO", path):
        try:
            with candidate.open(encoding="utf-8", errors="replace") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line and line[:1] != " ")
        if fields.get("Version"):
            return fields.get("Name", name), fields["Version"].strip()
    return name, None
