"""Terminal rendering in the style of `flutter doctor`: a line per check, the fix under every problem."""

from __future__ import annotations

from itertools import groupby

from doctor.report.model import Report
from doctor.results import Result, Status, worst

_COLOR = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.ERROR: "35", Status.SKIP: "90"}


def _paint(text: str, status: Status, color: bool) -> str:
    return f"\x1b[{_COLOR[status]}m{text}\x1b[0m" if color else text


def render_text(report: Report, verbose: bool = False, color: bool = False) -> str:
    """Grouped by category; details show for problems (and everything with verbose), fixes under problems."""
    s = report.facts_summary
    lines = [f"qwen-doctor {report.tool_version} · {report.command} · host {s.get('hostname') or '?'} · "
             f"{s.get('source', 'live')}"]
    if s:
        lines.append(f"  driver {s.get('driver_version') or '-'} · GPUs: {s.get('gpus')} · "
                     + " · ".join(f"{k} {v}" for k, v in (s.get("packages") or {}).items()))
    lines.append("")
    for category, group in groupby(report.results, key=lambda r: r.category):
        items = list(group)
        status = worst(items)
        lines.append(_paint(f"[{status.symbol}] {category}", status, color))
        for r in items:
            lines.extend(_result_lines(r, verbose, color))
    lines.append("")
    if report.sections.get("fleet"):
        from doctor.fleet.table import render_table

        lines.append(render_table(report.sections["fleet"]))
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def _result_lines(r: Result, verbose: bool, color: bool) -> list[str]:
    subject = f" [{r.subject}]" if r.subject else ""
    out = [f"    {_paint(r.status.symbol, r.status, color)} {r.check_id}{subject} {r.title}: {r.summary}"]
    problem = r.status in (Status.WARN, Status.FAIL, Status.ERROR)
    if problem or verbose:
        out += [f"        • {d}" for d in r.details]
    if problem:
        out += [f"        → {f}" for f in r.fix]
        if r.remedy_ids:
            out.append(f"        see: qwen-doctor remedies show {' '.join(r.remedy_ids)}")
    return out


def summary_line(report: Report) -> str:
    c = report.counts()
    problems = {r.category for r in report.results if r.status in (Status.WARN, Status.FAIL, Status.ERROR)}
    verdict = "No issues found!" if not problems else f"Issues in {len(problems)} categor{'y' if len(problems) == 1 else 'ies'}."
    parts = [f"{c['ok']} ok", f"{c['warn']} warn", f"{c['fail']} fail"]
    if c["error"]:
        parts.append(f"{c['error']} error")
    parts.append(f"{c['skip']} skipped")
    return f"{verdict} ({', '.join(parts)})"
