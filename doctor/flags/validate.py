"""Validate backend arguments against a flag schema the way argparse would, without starting anything."""

from __future__ import annotations

import difflib

from doctor.flags.issues import FlagIssue, ValidationReport
from doctor.flags.schema import FlagSchema, FlagSpec, load_schema
from doctor.flags.values import human_readable_int, human_readable_int_or_auto
from doctor.safeio import parse_json
from doctor.name_index import closest

__all__ = ["FlagIssue", "ValidationReport", "validate", "validate_args", "validate_command"]



def validate(args: list[str], backend: str, version: str | None = None, method: str = "auto") -> ValidationReport:
    """Validate with the backend's real parser when it is installed (method auto/real), else the flag schema.

    `version` picks the schema (default: the installed version, else the newest covered one).
    """
    if method in ("auto", "real"):
        from doctor.flags.bridge import find_backend_python, real_parse

        python = find_backend_python(backend)
        if python is not None:
            report = real_parse(backend, args, python=python)
            if report is not None:
                return report
        if method == "real":
            from doctor.errors import DoctorError

            from doctor.flags.bridge import python_hint

            raise DoctorError(f"{backend} is not installed here ({python_hint(backend)}), or use the schema")
    from doctor.facts.installed import installed_version

    return validate_command(args, backend, version or installed_version(backend))


def validate_command(args: list[str], backend: str, version: str | None = None) -> ValidationReport:
    """Validate backend arguments against the schema of the nearest covered version <= `version`."""
    schema = load_schema(backend, version)
    return ValidationReport(backend, schema.version, f"schema {backend} {schema.version}", validate_args(args, schema))


def validate_args(args: list[str], schema: FlagSchema) -> list[FlagIssue]:
    """Walk `args` like argparse: resolve each option, consume its values, check type and choices."""
    issues: list[FlagIssue] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-") or token == "-" or _is_number(token):
            continue
        name, inline = (token.split("=", 1) + [None])[:2] if "=" in token else (token, None)
        if schema.normalize_underscores and name.startswith("--"):
            head, dot, tail = name[2:].partition(".")
            name = "--" + head.replace("_", "-") + dot + tail
        if schema.normalize_underscores and name.startswith("-O") and name != "-O":
            name, inline = "--optimization-level", name[2:].lstrip("=")
        spec, resolved = _resolve(name, schema)
        if spec is None:
            issues.append(_unknown(token, name, schema))
            i = _skip_values(args, i, inline)
            continue
        if schema.lookup(name) is not None:
            resolved = name  # report the spelling the user typed (alias, --no- form); abbreviations resolve
        if spec.deprecated:
            issues.append(FlagIssue("deprecated", resolved, f"argument {resolved}: deprecated"))
        if "." in name:
            i = _skip_values(args, i, inline)
            continue
        values, i = _take_values(args, i, spec, inline)
        if values is None:
            issues.append(FlagIssue("missing_value", resolved, _expects(resolved, spec)))
            continue
        for value in values:
            problem = _check_value(resolved, spec, value)
            if problem:
                issues.append(problem)
                break
    return issues


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _resolve(name: str, schema: FlagSchema) -> tuple[FlagSpec | None, str]:
    if "." in name and name.startswith("--"):
        base = name.split(".", 1)[0].rstrip("+")
        spec = schema.lookup(base)
        if spec is not None and spec.type == "json":
            return spec, base
        return None, name
    spec = schema.lookup(name)
    if spec is not None:
        return spec, schema.aliases.get(name, name)
    if name.startswith("--"):
        matches = schema.starting_with(name)
        if len(matches) == 1:
            return schema.lookup(matches[0]), matches[0]
    return None, name


def _unknown(token: str, name: str, schema: FlagSchema) -> FlagIssue:
    suggestion = closest(name, schema.option_strings())
    hint = f" (did you mean {suggestion}?)" if suggestion else ""
    return FlagIssue("unknown_flag", name, f"unrecognized arguments: {token}{hint}", suggestion)


def _skip_values(args: list[str], i: int, inline: str | None) -> int:
    if inline is not None:
        return i
    while i < len(args) and (not args[i].startswith("-") or _is_number(args[i])):
        i += 1
    return i


def _take_values(args: list[str], i: int, spec: FlagSpec, inline: str | None) -> tuple[list[str] | None, int]:
    if not spec.takes_value:
        return [], i
    if inline is not None:
        return [inline], i
    def is_value(tok: str) -> bool:
        return not tok.startswith("-") or _is_number(tok) or tok == "-"
    if spec.nargs in ("+", "*"):
        start = i
        while i < len(args) and is_value(args[i]):
            i += 1
        values = args[start:i]
        return (values if values or spec.nargs == "*" else None), i
    if spec.nargs == "?":
        if i < len(args) and is_value(args[i]):
            return [args[i]], i + 1
        return [], i
    count = spec.nargs if isinstance(spec.nargs, int) else 1
    values = args[i:i + count]
    if len(values) < count or not all(is_value(v) for v in values):
        return None, i
    return values, i + count


def _expects(flag: str, spec: FlagSpec) -> str:
    if spec.nargs in ("+",):
        return f"argument {flag}: expected at least one argument"
    return f"argument {flag}: expected one argument"


def _check_value(flag: str, spec: FlagSpec, value: str) -> FlagIssue | None:
    kind = spec.type
    if value in ("None", "") and spec.choices is None and kind != "str":
        return None
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "human_int":
            human_readable_int(value)
        elif kind == "human_int_or_auto":
            human_readable_int_or_auto(value)
        elif kind == "json" and not value.lstrip("-").isdigit():
            parse_json(value, f"argument {flag}")
    except ValueError:
        label = {"human_int": "int", "human_int_or_auto": "int", "json": "JSON"}.get(kind, kind)
        return FlagIssue("bad_type", flag, f"argument {flag}: invalid {label} value: {value!r}")
    if spec.choices is not None and value not in spec.choices:
        close = difflib.get_close_matches(value, spec.choices, n=1, cutoff=0.5)
        choices = ", ".join(repr(c) for c in spec.choices)
        return FlagIssue(
            "invalid_choice", flag, f"argument {flag}: invalid choice: {value!r} (choose from {choices})",
            close[0] if close else None,
        )
    return None
