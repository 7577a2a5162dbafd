"""Flag schemas per backend version, extracted from the published packages by scripts/extract_flag_schema.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from bisect import bisect_left
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from doctor.errors import DataError

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
BACKENDS = ("vllm", "sglang")


class SchemaError(DataError):
    """A schema file is missing or unreadable, or no version is covered."""


class _NotRecorded:
    """Marks a flag whose default the schema does not record (older schemas, unresolvable expressions)."""

    _instance: "_NotRecorded | None" = None

    def __new__(cls) -> "_NotRecorded":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_RECORDED"

    def __bool__(self) -> bool:
        return False


NOT_RECORDED: Any = _NotRecorded()


@dataclass(frozen=True)
class FlagSpec:
    """One option as argparse defines it: value type, choices, nargs, action, deprecation, and its default.

    `default` is the value the parser hands the engine when the flag is not given (NOT_RECORDED when
    unknown); `default_rule` says how the engine resolves it at startup when that value is only a
    placeholder (e.g. None -> picked from the GPU's memory), `default_source` where (file::function),
    `default_tiers` the per-device values of that rule when the wheel states them as data (vLLM
    get_batch_defaults: first tier whose min_memory_gib and exclude_names match wins).
    """

    name: str
    type: str = "str"
    choices: tuple[str, ...] | None = None
    nargs: str | int | None = None
    action: str = "store"
    deprecated: bool = False
    default: Any = field(default=NOT_RECORDED, hash=False)
    default_rule: str | None = None
    default_source: tuple[str, ...] = ()
    default_tiers: tuple[dict[str, Any], ...] = field(default=(), hash=False)

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
            default=data["default"] if "default" in data else NOT_RECORDED,
            default_rule=data.get("default_rule"),
            default_source=tuple(data.get("default_source", ())),
            default_tiers=tuple(data.get("default_tiers", ())),
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
        if self.default is not NOT_RECORDED:
            out["default"] = self.default
        if self.default_rule:
            out["default_rule"] = self.default_rule
        if self.default_source:
            out["default_source"] = list(self.default_source)
        if self.default_tiers:
            out["default_tiers"] = list(self.default_tiers)
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
        return list(self._spellings)

    @cached_property
    def _spellings(self) -> tuple[str, ...]:
        names = list(self.flags) + list(self.aliases)
        names += ["--no-" + n[2:] for n, s in self.flags.items() if s.action == "bool_optional"]
        return tuple(sorted(names))

    def starting_with(self, prefix: str) -> list[str]:
        """The spellings that `prefix` abbreviates (argparse's allow_abbrev candidates), by bisection of the
        sorted spellings: a file full of unknown flags costs O(log n) each, not a scan of ~600."""
        names = self._spellings
        start = end = bisect_left(names, prefix)
        while end < len(names) and names[end].startswith(prefix):
            end += 1
        return list(names[start:end])

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
    """Covered versions of a backend, ascending (the schema folder is read once per backend)."""
    return list(_covered(backend))


@lru_cache(maxsize=None)
def _covered(backend: str) -> tuple[Version, ...]:
    versions = []
    for path in SCHEMA_DIR.glob(f"{backend}-*.json"):
        try:
            versions.append(Version(path.stem[len(backend) + 1:]))
        except InvalidVersion:
            continue
    return tuple(sorted(versions))


def untagged_build(backend: str, version: str | Version) -> bool:
    """Whether `version` is a vLLM built from a checkout without its release tags: setuptools_scm's default
    guess-next-dev scheme renders a tagless history as tag 0.0 + distance, "0.1.devN+g<sha>" (N counts every commit
    since the root), which says nothing of the release. Public builds log it: vllm-project/recipes#831 ("vLLM
    0.1.dev19754+g3a0914114", the qwen38 image of August 2026), vllm-project/vllm#54846 ("0.1.dev20073+g8e685d198").
    vLLM's own tags have three components (v0.1.0 ... v0.34.0), so a build past any of them is X.Y.(Z+1)[rcN].devN,
    never 0.1.devN."""
    parsed = Version(version) if isinstance(version, str) else version
    return backend == "vllm" and parsed.release == (0, 1) and parsed.dev is not None


def pick_version(backend: str, version: str | None) -> Version:
    """The nearest covered version <= `version` (newest when None or a vLLM built without its release tags,
    untagged_build; oldest when below all)."""
    covered = available_versions(backend)
    if not covered:
        raise SchemaError(f"no flag schema shipped for backend {backend!r}")
    if version is None:
        return covered[-1]
    try:
        wanted = Version(version)
    except InvalidVersion as exc:
        raise SchemaError(f"not a version: {version!r}") from exc
    if untagged_build(backend, wanted):
        return covered[-1]
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


@dataclass(frozen=True)
class FlagDefault:
    """A flag's default in one engine version, as its parser defines it (flag_default)."""

    backend: str
    version: str                 # the covered version it was read from (nearest <= the one asked for)
    flag: str                    # canonical option, e.g. --gpu-memory-utilization
    value: Any                   # what the parser hands the engine when the flag is not given
    rule: str | None = None      # how the engine replaces `value` at startup (then `value` is a placeholder)
    source: tuple[str, ...] = ()
    tiers: tuple[dict[str, Any], ...] = ()   # per-device values of the rule (FlagSpec.default_tiers)

    @property
    def resolved_at_runtime(self) -> bool:
        """True when the engine decides the effective value at startup (GPU memory, model, usage context)."""
        return self.rule is not None


def _option(flag: str) -> str:
    """`gpu_memory_utilization`, `gpu-memory-utilization` or `--gpu-memory-utilization` -> an option string."""
    return flag if flag.startswith("-") else "--" + flag.replace("_", "-")


def flag_default(backend: str, version: str | None, flag: str) -> FlagDefault | None:
    """The default of `flag` in `backend` `version` (the nearest covered version <= it; newest when None).

    None when that version has no such flag or its schema does not record the default.
    """
    schema = load_schema(backend, version)
    option = _option(flag)
    if schema.normalize_underscores and option.startswith("--"):
        option = "--" + option[2:].replace("_", "-")
    canonical = schema.aliases.get(option, option)
    spec = schema.flags.get(canonical)
    if spec is None or spec.default is NOT_RECORDED:
        return None
    return FlagDefault(backend, schema.version, canonical, spec.default, spec.default_rule, spec.default_source,
                       spec.default_tiers)
