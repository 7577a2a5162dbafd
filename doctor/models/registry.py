"""The model registry: known checkpoints as data (registry.yaml), validated at load."""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from doctor.models.config_reader import read_config_dir, spec_from_config
from doctor.models.errors import ModelConfigError
from doctor.models.spec import ModelSpec

_ENTRY_KEYS = {"aliases", "source", "vram_minimum_gb", "config", "base", "quantization_config"}


def _load_entries(text: str) -> dict[str, dict[str, Any]]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ModelConfigError(f"model registry is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("models"), dict):
        raise ModelConfigError("model registry must have schema: 1 and a models mapping")
    return data["models"]


def _resolve(name: str, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    entry = entries[name]
    if not isinstance(entry, dict):
        raise ModelConfigError(f"registry entry {name!r} must be a mapping")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise ModelConfigError(f"registry entry {name!r} has unknown keys {sorted(unknown)}")
    if "base" in entry:
        if entry["base"] not in entries or "base" in entries[entry["base"]]:
            raise ModelConfigError(f"registry entry {name!r}: base {entry['base']!r} is not a base model")
        config = copy.deepcopy(entries[entry["base"]]["config"])
    elif isinstance(entry.get("config"), dict):
        config = copy.deepcopy(entry["config"])
    else:
        raise ModelConfigError(f"registry entry {name!r} needs config or base")
    if "quantization_config" in entry:
        config["quantization_config"] = entry["quantization_config"]
    if not entry.get("source"):
        raise ModelConfigError(f"registry entry {name!r} must cite a source")
    return config


def build_registry(text: str) -> dict[str, ModelSpec]:
    """Parse and validate registry YAML text into {name: ModelSpec} (aliases included, lower-case)."""
    entries = _load_entries(text)
    out: dict[str, ModelSpec] = {}
    for name in entries:
        spec = spec_from_config(_resolve(name, entries), name=name, source=str(entries[name]["source"]))
        for key in [name, *(entries[name].get("aliases") or [])]:
            if key.lower() in out:
                raise ModelConfigError(f"registry name or alias {key!r} is used twice")
            out[key.lower()] = spec
    return out


@lru_cache(maxsize=1)
def registry() -> dict[str, ModelSpec]:
    """The shipped registry (cached)."""
    text = resources.files("doctor.models").joinpath("registry.yaml").read_text(encoding="utf-8")
    return build_registry(text)


def resolved_config(name: str) -> dict[str, Any]:
    """The config.json content of a shipped registry entry (base config plus quantization_config)."""
    text = resources.files("doctor.models").joinpath("registry.yaml").read_text(encoding="utf-8")
    return _resolve(registry()[name.lower()].name, _load_entries(text))


@lru_cache(maxsize=1)
def drafter_entries() -> dict[str, dict[str, Any]]:
    """The `drafters:` of registry.yaml as written: separate speculative drafters, each with its config.json fields."""
    text = resources.files("doctor.models").joinpath("registry.yaml").read_text(encoding="utf-8")
    return (yaml.safe_load(text) or {}).get("drafters") or {}


def known_models() -> list[str]:
    """Canonical names of the shipped models."""
    return sorted({spec.name for spec in registry().values()})


def get_model(name_or_path: str) -> ModelSpec:
    """A registry name / alias, or a local checkpoint directory (or config.json) path."""
    spec = registry().get(name_or_path.lower())
    if spec is not None:
        return spec
    if os.path.exists(name_or_path):
        return read_config_dir(name_or_path)
    raise ModelConfigError(
        f"unknown model {name_or_path!r}: not in the registry ({', '.join(known_models())}) "
        "and not a local checkpoint directory")
