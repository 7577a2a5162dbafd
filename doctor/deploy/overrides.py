"""`--flag NAME=VALUE` / `--flag NAME`: override or add a backend flag of the profile from the command line,
checked against the backend's flag schema first (an unknown name or a bad value is one line, exit 2)."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from doctor.command_options import HOST, MODEL, PORT
from doctor.deployment.table import ENDPOINT_OPTIONS, MODEL_OPTIONS
from doctor.errors import DoctorError
from doctor.safeio import parse_json

# Names `--flag` refuses: the model and the endpoint are set by our own options (doctor/cli/deploy.py).
RESERVED = {**dict.fromkeys(MODEL_OPTIONS, MODEL), **dict(zip(ENDPOINT_OPTIONS, (HOST, PORT)))}


def _value(text: str) -> Any:
    """A value as a profile's YAML would hold it: int, float, JSON object/list, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if text[:1] in "{[":
        try:
            return parse_json(text, f"--flag value {text[:40]!r}")
        except ValueError as exc:
            raise DoctorError(f"--flag value {text!r} is not valid JSON: {exc}") from None
    return text


def parse(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """`NAME=VALUE` -> {name: value}, `NAME` -> {name: True}; names without the leading dashes."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().lstrip("-")
        if not name:
            raise DoctorError(f"--flag expects NAME=VALUE or NAME, got {item!r}")
        if name in RESERVED:
            raise DoctorError(f"--flag {name}: use {RESERVED[name]} instead")
        out[name] = _value(value) if sep else True
    return out


def parse_sets(items: tuple[str, ...] | list[str], shape: str = "NAME=VALUE") -> dict[str, str]:
    """`--set NAME=VALUE` items -> {name: value} (profile variables and overrides); `shape`: the option's metavar,
    as the error names it."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise DoctorError(f"--set expects {shape}, got {item!r}")
        out[name] = value
    return out


def validate(flags: dict[str, Any], backend: str, version: str | None) -> None:
    """Raise DoctorError unless every flag is one the backend's schema (nearest version) accepts."""
    from doctor.flags.schema import load_schema
    from doctor.flags.validate import validate_args
    from doctor.deployment import Flag

    if not flags:
        return
    try:
        schema = load_schema(backend, version)
    except Exception as exc:
        raise DoctorError(f"cannot check --flag: no {backend} flag schema ({exc})") from None
    for name, value in flags.items():
        option = f"--{name}"
        if schema.lookup(option) is None and not (value is True and schema.lookup(f"--no-{name}")):
            close = difflib.get_close_matches(option, schema.option_strings(), n=1)
            hint = f" (did you mean {close[0][2:]}?)" if close else ""
            raise DoctorError(f"--flag {name}: {backend} {schema.version} has no option {option}{hint}")
        issues = [i for i in validate_args(Flag(f"--{name}", value).render(), schema) if i.is_error]
        if issues:
            raise DoctorError(f"--flag {name}: {issues[0].message}")


def apply(profile: Any, flags: dict[str, Any]) -> Any:
    """The profile with `flags` overriding or added to its own (order kept, new ones last)."""
    if not flags:
        return profile
    return dataclasses.replace(profile, flags={**dict(profile.flags), **flags})
