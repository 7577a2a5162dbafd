"""Presentation helpers shared by the text, Markdown and HTML renderers (ordering, flattening, charts' data)."""

from __future__ import annotations

from typing import Any

from doctor.results import Result, Status

PROBLEMS = (Status.ERROR, Status.FAIL, Status.WARN)
# Plan keys shown elsewhere (problems, fixes) or too detailed for a key/value table.
IDENTIFIERS = ("pid", "port", "exit_code")
PLAN_SKIP = ("schema", "problems", "suggestions", "rules", "ranks")


def problems_first(results: list[Result]) -> tuple[list[Result], list[Result]]:
    """(problems, worst first and otherwise in run order; passing and skipped checks in run order)."""
    problems = sorted((r for r in results if r.status in PROBLEMS), key=lambda r: -r.status.rank)
    return problems, [r for r in results if r.status not in PROBLEMS]


def display(value: Any) -> str:
    """A section value as one readable line: small dicts as k=v pairs, lists joined, nested lists counted."""
    if isinstance(value, dict):
        if all(not isinstance(v, (dict, list)) for v in value.values()):
            return ", ".join(f"{k}={v}" for k, v in value.items())
        return f"{len(value)} entries"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return " ".join(str(v) for v in value)
        return f"{len(value)} items"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "-" if value is None else str(value)


def section_rows(section: dict[str, Any], skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Key/value rows of a section, for a two-column table; lists and nested objects summarised in one cell."""
    return [(k, str(v) if k in IDENTIFIERS else display(v)) for k, v in section.items()
            if k not in skip and v not in (None, "", [], {})]


def grid(name: str, section: Any) -> tuple[str, list[str], list[list[str]]] | None:
    """A section shaped {columns: [...], rows: [{name, values: [...]}]} (e.g. the fleet's per-node table) as
    (title, header, rows); None for any other shape."""
    if not (isinstance(section, dict) and isinstance(section.get("columns"), list)
            and isinstance(section.get("rows"), list)
            and all(isinstance(r, dict) and isinstance(r.get("values"), list) for r in section["rows"])):
        return None
    label = " ".join(str(section[k]) for k in ("engine", "target", "status") if section.get(k))
    title = f"{name} ({label})" if label else name
    header = ["", *(str(c) for c in section["columns"])]
    return title, header, [[str(r.get("name", "")), *(display(v) for v in r["values"])] for r in section["rows"]]
