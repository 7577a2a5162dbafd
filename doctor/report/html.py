"""One self-contained HTML file for tickets: jinja2 with autoescape, inline CSS, no scripts, no external assets."""

from __future__ import annotations

import json
from typing import Any

import jinja2
from markupsafe import Markup

from doctor.report.model import REPORT_SCHEMA_VERSION, Report
from doctor.report.sections import PERCENTILES, SECTION_ORDER, as_status, fix_text
from doctor.report.svg import latency_chart
from doctor.report.sweep_svg import sweep_charts
from doctor.report.text import summary_line
from doctor.report.view import (PLAN_SKIP, code_spans, command_line, display, grid, latency_table, problems_first,
                                section_rows, unreported_exercises, verdict_result)

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("doctor.report", "templates"), autoescape=True,
                          keep_trailing_newline=True)


def _codes(text: Any) -> Markup:
    """Escaped text whose Markdown `code` spans become <code> elements."""
    return Markup("").join(Markup("<code>{}</code>").format(part) if code else Markup.escape(part)
                           for code, part in code_spans(str(text)))


_ENV.filters["codes"] = _codes


def render_html(report: Report) -> str:
    report = report.redacted()
    problems, passing = problems_first(report.results)
    sections = report.sections
    metrics = sections.get("metrics") or {}
    latency = latency_table(sections)
    server = sections.get("server") or {}
    exercises = [{**ex, "status": as_status(ex.get("status"))} for ex in sections.get("exercises") or []]
    remedies = [{**m, "count": m.get("count") or 1, "fix": [fix_text(f) for f in m.get("fix") or []],
                 "context": {"before": (m.get("context") or {}).get("before") or [],
                             "after": (m.get("context") or {}).get("after") or []}}
                for m in sections.get("remedies") or []]
    extra = {k: v for k, v in sections.items() if k not in SECTION_ORDER}
    grids = [g for g in (grid(k, v) for k, v in extra.items()) if g is not None]
    other = {k: v for k, v in extra.items() if grid(k, v) is None}
    n_problems = len(problems) + sum(1 for ex in unreported_exercises(sections, report.results)
                                     if as_status(ex.get("status")).rank >= 2)
    counted = f"{n_problems} problem{'s' if n_problems != 1 else ''} found" if n_problems else "No problems found"
    outcome = verdict_result(report.results)
    return _ENV.get_template("report.html.j2").render(
        r=report, s=report.facts_summary, counts=report.counts(), problems=problems, passing=passing,
        headline=f"Deploy {outcome.status.value}: {outcome.summary}" if outcome else counted,
        verdict=(f"{counted} · " if outcome else "") + summary_line(report), exercises=exercises, metrics=metrics,
        command_line=command_line(report),
        chart=Markup(latency_chart(latency)), pct_names=PERCENTILES, sweep_chart=Markup(_sweep_chart(sections)),
        percentiles=[(n, {p: _ms(row.get(p)) for p in PERCENTILES}) for n, row in latency],
        server=server, server_rows=section_rows(server, skip=("latency",)),
        probe=sections.get("probe"), probe_rows=section_rows(sections.get("probe") or {}),
        metric_rows=section_rows(metrics, skip=("percentiles",)), remedies=remedies,
        plan=sections.get("plan"), plan_rows=section_rows(sections.get("plan") or {}, skip=PLAN_SKIP),
        deployment=sections.get("deployment"),
        deployment_rows=section_rows(sections.get("deployment") or {}, skip=("log_excerpt",)),
        gpus=report.facts_summary.get("gpu_table") or [], logs=sections.get("logs") or [], grids=grids,
        other_sections=json.dumps(other, indent=1, default=str) if other else "",
        facts_json=json.dumps(report.facts, indent=1, default=str) if report.facts is not None else "",
        schema_version=REPORT_SCHEMA_VERSION)


def _sweep_chart(sections: dict[str, Any]) -> str:
    sweep = sections.get("sweep")
    if not isinstance(sweep, dict) or not isinstance(sweep.get("levels"), list):
        return ""
    return sweep_charts(sweep["levels"], sweep.get("knee"), sweep.get("max_concurrency_meeting_slo"))


def _ms(value: Any) -> str:
    return display(round(value, 1)) if isinstance(value, (int, float)) else "-"
