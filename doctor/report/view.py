"""Presentation helpers shared by the text, Markdown and HTML renderers (ordering, flattening, charts' data)."""

from __future__ import annotations

import re
from typing import Any

from doctor import shellquote
from doctor.results import Result, Status

PROBLEMS = (Status.ERROR, Status.FAIL, Status.WARN)
# Plan keys shown elsewhere (problems, fixes) or too detailed for a key/value table.
IDENTIFIERS = ("pid", "port", "exit_code")
PLAN_SKIP = ("schema", "problems", "suggestions", "rules", "ranks")


def problems_first(results: list[Result]) -> tuple[list[Result], list[Result]]:
    """(problems, worst first and otherwise in run order; passing and skipped checks in run order)."""
    problems = sorted((r for r in results if r.status in PROBLEMS), key=lambda r: -r.status.rank)
    return problems, [r for r in results if r.status not in PROBLEMS]


def unreported_exercises(sections: dict[str, Any], results: list[Result]) -> list[dict[str, Any]]:
    """Exercises whose verdict is not also a check result (`check_id` names the result that carries it)."""
    reported = {r.check_id for r in results}
    return [ex for ex in sections.get("exercises") or [] if isinstance(ex, dict) and ex.get("check_id") not in reported]


def unreported_remedies(sections: dict[str, Any], results: list[Result]) -> list[dict[str, Any]]:
    """Matched remedies that are not also a result of their own (explain reports each finding as one)."""
    reported = {r.check_id for r in results}
    return [m for m in sections.get("remedies") or [] if isinstance(m, dict) and m.get("id") not in reported]


# Units by key suffix, longest first: `requests_per_s` is a rate, `duration_s` seconds, `p99_ttft_ms` ms.
_UNITS = (("_tokens_per_s", " tok/s"), ("_per_s", "/s"), ("_ms", " ms"), ("_seconds", " s"), ("_s", " s"),
          ("_bytes", " B"), ("_gib", " GiB"), ("_tokens", " tokens"), ("seconds", " s"))
_FRACTIONS = ("kv_usage", "usage", "error_rate")


def number(value: float | int, key: str = "") -> str:
    """A number for people: thousands separators, 3 significant decimals at most, the unit its key implies."""
    unit = next((u for suffix, u in _UNITS if key.endswith(suffix)), "")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}{unit}"
    if key in _FRACTIONS or key.endswith("_perc"):
        return f"{value:.0%}"
    text = f"{value:,.1f}" if abs(value) >= 100 else f"{value:,.3g}" if abs(value) >= 0.001 else f"{value:.2g}"
    return text + unit


def display(value: Any, key: str = "") -> str:
    """A section value as one readable line: numbers with units, small dicts as `key value` pairs (one level of
    nesting in parentheses), lists joined, deeper structures counted."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            if v in (None, "", [], {}):
                continue
            unit_key = key if key in _FRACTIONS else k  # kv_usage {before, after, peak} are all fractions
            if isinstance(v, dict) and all(not isinstance(x, (dict, list)) for x in v.values()):
                parts.append(f"{k} ({display(v, unit_key)})")
            elif isinstance(v, (dict, list)) and any(isinstance(x, (dict, list)) for x in
                                                     (v.values() if isinstance(v, dict) else v)):
                parts.append(f"{k}: {len(v)} entries")
            else:
                parts.append(f"{k} {display(v, unit_key)}")
        return ", ".join(parts) if parts else "-"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return " ".join(display(v, key) for v in value)
        return f"{len(value)} items"
    if isinstance(value, (int, float)):
        return number(value, key)
    return "-" if value is None else str(value)


def section_rows(section: dict[str, Any], skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Key/value rows of a section, for a two-column table; lists and nested objects summarised in one cell."""
    return [(k, str(v) if k in IDENTIFIERS else display(v, k)) for k, v in section.items()
            if k not in skip and v not in (None, "", [], {})]


def verdict_result(results: list[Result]) -> Result | None:
    """The run's own verdict (deploy's QD-DEPLOY-OUTCOME), which banners state first."""
    return next((r for r in results if r.check_id == "QD-DEPLOY-OUTCOME"), None)


def command_line(report: Any) -> str:
    """The command as typed, shell-quoted once (so it can be pasted back)."""
    return "qwen-doctor " + (shellquote.join(report.argv) if report.argv else report.command)


_CODE = re.compile(r"`([^`]+)`")


def code_spans(text: str) -> list[tuple[bool, str]]:
    """Text split into (is_code, part) at Markdown `code` spans (fixes are written with them)."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in _CODE.finditer(text):
        if m.start() > pos:
            out.append((False, text[pos:m.start()]))
        out.append((True, m.group(1)))
        pos = m.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out


def plain(text: str) -> str:
    """Text with Markdown code spans shown plainly (for the terminal)."""
    return _CODE.sub(r"\1", text)


LATENCY_LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2el_ms": "E2E latency",
                  "queue_ms": "queue time"}


def latency_table(sections: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """(label, {p50, p90, p99}) rows: each metric as the client measured it, then as the server did."""
    client = (sections.get("metrics") or {}).get("percentiles") or {}
    server = (sections.get("server") or {}).get("latency") or {}
    rows: list[tuple[str, dict[str, float]]] = []
    for name in [*LATENCY_LABELS, *(k for k in {**client, **server} if k not in LATENCY_LABELS)]:
        label = LATENCY_LABELS.get(name, name)
        if name in client:
            rows.append((f"{label} (client)" if server else label, client[name]))
        if name in server:
            rows.append((f"{label} (server)", server[name]))
    return rows


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
