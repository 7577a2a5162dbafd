"""Check registration: the `@check` decorator for built-ins and the `qwen_doctor.checks` entry-point group."""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Iterable

from doctor.context import CheckContext
from doctor.errors import DoctorError
from doctor.results import SEVERITIES, Outcome

ENTRY_POINT_GROUP = "qwen_doctor.checks"
DISABLE_AUTOLOAD_ENV = "QWEN_DOCTOR_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_MODULES = (
    "checks.driver",
    "checks.versions",
    "checks.packages",
    "checks.resolve",
    "checks.gpu",
    "checks.memory",
    "checks.host",
    "checks.topology",
    "checks.profile",
    "checks.planner",
    "checks.recipes",
    "checks.network",
    "checks.hf",
    "checks.fleet",
    "checks.fleet_network",
    "checks.fleet_reach",
)
CATEGORY_ORDER = ("plugins", "driver", "versions", "packages", "gpu", "memory", "plan", "topology", "host", "network", "hf", "fleet")
ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")

CheckFn = Callable[[CheckContext], "Outcome | Iterable[Outcome]"]


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: stable id, what it is about, and the function that judges the facts."""

    id: str
    title: str
    category: str
    severity: str
    fn: CheckFn
    backends: tuple[str, ...] = ()
    description: str = ""
    source: str = "builtin"

    def applies_to(self, backend: str | None) -> bool:
        return not self.backends or backend is None or backend in self.backends


@dataclass
class Registry:
    """Every known check by id, plus plugins that failed to load (reported, never fatal)."""

    checks: dict[str, CheckSpec] = field(default_factory=dict)
    load_errors: list[tuple[str, str]] = field(default_factory=list)

    def add(self, spec: CheckSpec) -> None:
        existing = self.checks.get(spec.id)
        if existing is not None and existing.fn is not spec.fn:
            raise DoctorError(f"check id {spec.id} is registered twice ({existing.source} and {spec.source})")
        self.checks[spec.id] = spec

    def ordered(self) -> list[CheckSpec]:
        """Checks in reading order: categories as in CATEGORY_ORDER (others after), then by id."""
        rank = {c: i for i, c in enumerate(CATEGORY_ORDER)}
        return sorted(self.checks.values(), key=lambda s: (rank.get(s.category, len(rank)), s.category, s.id))


_REGISTRY = Registry()
_current_source = "builtin"


def check(
    id: str,
    title: str,
    category: str,
    severity: str = "high",
    backends: Iterable[str] = (),
) -> Callable[[CheckFn], CheckFn]:
    """Register a check function. The first paragraph of its docstring becomes its description."""
    if not ID_PATTERN.match(id):
        raise ValueError(f"check id {id!r} must look like QD-DRV-001")
    if severity not in SEVERITIES:
        raise ValueError(f"severity of {id} must be one of {SEVERITIES}")

    def decorate(fn: CheckFn) -> CheckFn:
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        _REGISTRY.add(CheckSpec(id, title, category, severity, fn, tuple(backends),
                                " ".join(doc.split()), _current_source))
        return fn

    return decorate


def load(plugins: bool = True) -> Registry:
    """Import the built-in checks and, unless disabled, the entry-point plugins."""
    global _current_source
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    if plugins and not os.environ.get(DISABLE_AUTOLOAD_ENV):
        for ep in _entry_points():
            _current_source = f"plugin {ep.name} ({ep.value})"
            try:
                loaded = ep.load()
                if callable(loaded) and not isinstance(loaded, type):
                    _register_callable(ep.name, loaded)
            except Exception as exc:
                _REGISTRY.load_errors.append((ep.name, f"{type(exc).__name__}: {exc}"))
            finally:
                _current_source = "builtin"
    return _REGISTRY


def _register_callable(name: str, fn: Any) -> None:
    """An entry point may name a module (checks register on import) or a `register()` hook taking `check`."""
    if getattr(fn, "__name__", "") == "register":
        fn(check)


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def registry() -> Registry:
    return _REGISTRY
