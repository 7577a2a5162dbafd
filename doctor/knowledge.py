"""Shipped knowledge (driver table, version matrix, torch arch lists): YAML data, validated when loaded."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from doctor.errors import DataError


def load_yaml(package: str, name: str) -> Any:
    """Parse one YAML file shipped in `package`; a broken file is a DataError naming it."""
    import yaml

    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise DataError(f"{package}/{name}: invalid YAML: {exc}") from None


def parse_version(text: str | None) -> Version | None:
    """A version, or None for anything unparsable (local tags such as +cu130 are kept)."""
    if not text:
        return None
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def development_build(version: Version) -> bool:
    """A nightly, release candidate or source build (0.16.1rc1.dev204+g5f4ab3b1c): it may carry what its base
    release lacks. A release built for one CUDA or CPU (0.16.0+cu130) is that release."""
    return bool(version.is_prerelease or version.is_devrelease)


def _spec(text: str, where: str) -> SpecifierSet:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise DataError(f"{where}: invalid version specifier {text!r}") from None


@dataclass(frozen=True)
class BackendPins:
    """What one range of backend releases requires."""

    versions: SpecifierSet
    torch: str
    transformers: tuple[SpecifierSet, ...]
    flashinfer: SpecifierSet | None
    sgl_kernel: Version | None = None
    kernel_dist: str = "sgl-kernel"      # the distribution SGLang's kernel pin names (sglang-kernel from 0.4.0)
    ray: SpecifierSet | None = None
    source: str = ""
    latest: Version | None = None        # the newest release the row was read from

    def exact_pins(self) -> list[str]:
        """The row's `name==version` requirements (what the release's wheel pins exactly)."""
        out = [f"torch=={self.torch}"]
        for name, spec in (("transformers", self.transformers[0] if len(self.transformers) == 1 else None),
                           ("flashinfer-python", self.flashinfer)):
            if spec is not None and all(s.operator == "==" for s in spec) and len(spec) == 1:
                out.append(f"{name}{spec}")
        if self.sgl_kernel is not None:
            out.append(f"{self.kernel_dist}=={self.sgl_kernel}")
        return out


@dataclass(frozen=True)
class VersionMatrix:
    minimum: dict[str, tuple[Version, str]]
    backends: dict[str, tuple[BackendPins, ...]]
    index_latest: dict[str, Version]

    def pins(self, backend: str, version: Version) -> BackendPins | None:
        """The pins of the release holding `version` (compared without its local tag): a row naming that single
        release wins over a range holding it."""
        public = Version(version.public)
        rows = [p for p in self.backends.get(backend, ()) if p.versions.contains(public, prereleases=True)]
        exact = [p for p in rows if all(s.operator in ("==", "===") for s in p.versions)]
        return (exact or rows or [None])[0]


@lru_cache(maxsize=None)
def version_matrix() -> VersionMatrix:
    raw = load_yaml("doctor.data", "version_matrix.yaml")
    where = "doctor/data/version_matrix.yaml"
    try:
        minimum = {k: (Version(v["version"]), v["source"]) for k, v in raw["qwen35_minimum"].items()}
        backends = {
            name: tuple(
                BackendPins(
                    versions=_spec(row["versions"], where),
                    torch=str(row["torch"]),
                    transformers=tuple(_spec(s, where) for s in row["transformers"]),
                    flashinfer=_spec(row["flashinfer"], where) if row.get("flashinfer") else None,
                    sgl_kernel=Version(str(row["sgl_kernel"])) if row.get("sgl_kernel") else None,
                    kernel_dist=str(row.get("kernel_dist") or "sgl-kernel"),
                    ray=_spec(row["ray"], where) if row.get("ray") else None,
                    source=str(row.get("source") or ""),
                    latest=Version(str(row["latest"])) if row.get("latest") else None,
                )
                for row in rows
            )
            for name, rows in raw["backends"].items()
        }
        latest = {k: Version(str(v["version"])) for k, v in (raw.get("index_latest") or {}).items()}
    except (KeyError, TypeError, InvalidVersion) as exc:
        raise DataError(f"{where}: malformed entry ({type(exc).__name__}: {exc})") from None
    return VersionMatrix(minimum, backends, latest)


@dataclass(frozen=True, order=True)
class DriverVersion:
    """An NVIDIA driver version: compared numerically, printed as NVIDIA writes it (580.65.06)."""

    version: Version
    text: str

    @classmethod
    def parse(cls, text: str) -> "DriverVersion":
        return cls(Version(text), text)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class DriverTable:
    toolkits: tuple[tuple[Version, DriverVersion], ...]
    major_floor: dict[int, DriverVersion]
    source: str

    def minimum_for(self, cuda: Version) -> DriverVersion | None:
        """Minimum driver of the newest listed toolkit not newer than `cuda` (same major)."""
        best = None
        for toolkit, driver in self.toolkits:
            if toolkit.major == cuda.major and toolkit <= cuda:
                best = driver
        return best


@lru_cache(maxsize=None)
def driver_table() -> DriverTable:
    raw = load_yaml("doctor.data", "cuda_drivers.yaml")
    try:
        rows = tuple(sorted((Version(r["cuda"]), DriverVersion.parse(str(r["driver"]))) for r in raw["toolkits"]))
        floors = {int(k): DriverVersion.parse(str(v)) for k, v in raw["major_floor"].items()}
    except (KeyError, TypeError, ValueError, InvalidVersion) as exc:
        raise DataError(f"doctor/data/cuda_drivers.yaml: malformed entry ({exc})") from None
    return DriverTable(rows, floors, raw.get("source", ""))


@lru_cache(maxsize=None)
def torch_arch_lists() -> dict[str, tuple[str, ...]]:
    raw = load_yaml("doctor.data", "torch_arch.yaml")
    try:
        return {str(k): tuple(v["arch"] if isinstance(v, dict) else v) for k, v in raw["by_cuda"].items()}
    except (KeyError, TypeError) as exc:
        raise DataError(f"doctor/data/torch_arch.yaml: malformed entry ({exc})") from None


@lru_cache(maxsize=None)
def _capability_patterns() -> tuple[tuple[Any, str], ...]:
    import re

    raw = load_yaml("doctor.data", "gpus.yaml")
    try:
        return tuple((re.compile(row["pattern"], re.I), str(row["capability"])) for row in raw["patterns"])
    except (KeyError, TypeError, re.error) as exc:
        raise DataError(f"doctor/data/gpus.yaml patterns: malformed entry ({exc})") from None


def capability_of(name: str | None) -> str | None:
    """The compute capability of a GPU product name ('NVIDIA H100 PCIe' -> '9.0'), None when unknown."""
    if not name:
        return None
    return next((cc for pattern, cc in _capability_patterns() if pattern.search(name)), None)
