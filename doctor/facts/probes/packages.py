"""Installed package versions, read from metadata and files: nothing heavy is imported."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from doctor.facts.probes import inventory
from doctor.installed import DISTRIBUTIONS

ENGINES = ("vllm", "sglang")
_VERSION_PY = re.compile(r"^(\w+)\s*(?::\s*[^=]+)?=\s*(.+)$", re.M)


def probe() -> dict[str, Any]:
    """Every known package: `{"version", "distribution", ...}` or None when not installed. One listing of the
    metadata directories on sys.path answers them all (inventory.first_found: the copy importlib.metadata
    reads); only an installed engine's own METADATA is opened, for its exact pins."""
    listed = inventory.first_found()
    out: dict[str, Any] = {}
    for name, dists in DISTRIBUTIONS.items():
        found = next(((dist, listed[canonicalize_name(dist)]) for dist in dists if canonicalize_name(dist) in listed),
                     None)
        out[name] = {"version": found[1].version, "distribution": found[0]} if found else None
    if out["torch"]:
        out["torch"].update(_torch_build())
    for engine in ENGINES:
        if out.get(engine):
            out[engine]["requires"] = exact_pins(listed[canonicalize_name(out[engine]["distribution"])].metadata)
    return out


def exact_pins(metadata_dir: Path) -> list[str]:
    """The `name==version` requirements among a distribution's Requires-Dist that apply here (markers
    evaluated, extras left out): the releases it was built and tested against. Only the METADATA headers are
    read, not the long description after them."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for line in _headers(metadata_dir / "METADATA"):
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if any(s.operator in ("==", "===") for s in req.specifier):
            out.append(f"{req.name}{req.specifier}")
    return out


def _headers(path: Path) -> list[str]:
    lines = []
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                lines.append(line.rstrip("\n"))
    except OSError:
        return []
    return lines


def _torch_build() -> dict[str, Any]:
    """torch's build facts from `torch/version.py`, read as text (importing torch costs seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {"build": None}
    root = Path(next(iter(spec.submodule_search_locations)))
    return parse_torch_version_py(_read(root / "version.py")) | {
        "has_cuda_lib": any((root / "lib").glob("libtorch_cuda*.so*")),
    }


def parse_torch_version_py(text: str) -> dict[str, Any]:
    """Pick `__version__`, `cuda`, `hip` and `git_version` out of torch/version.py."""
    values: dict[str, str | None] = {}
    for key, raw in _VERSION_PY.findall(text):
        raw = raw.strip()
        values[key] = None if raw == "None" else raw.strip("'\"")
    return {
        "build": values.get("__version__"),
        "cuda": values.get("cuda"),
        "hip": values.get("hip"),
        "git_version": values.get("git_version"),
    }


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
