"""Every installed distribution (name, version, where), from the metadata directories on sys.path
(doctor/facts/probes/packages.py scan), bounded in time: what was not listed by the deadline is recorded as
incomplete, never waited for."""

from __future__ import annotations

import time
from typing import Any

from doctor.facts.probes.packages import DEADLINE_S, Found, scan


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
