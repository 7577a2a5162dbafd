"""Markdown for pasting into an issue: summary, problems first with their fixes, sections, facts collapsed."""

from __future__ import annotations

import json
import re
from typing import Any

from doctor.report.model import Report
from doctor.report.sections import PERCENTILES, SECTION_ORDER, as_status, fix_text
from doctor.report.view import (PLAN_SKIP, code_spans, command_line, grid, latency_table, problems_first,
                                section_rows, verdict_result)
from doctor.results import Result, Status

_SPECIAL = re.compile(r"([\\`*\[\]|])")
_ENTITY = re.compile(r"&(#?\w+;)")


def md(text: Any) -> str:
    """Inline text that cannot open HTML tags or entities, tables, links or code spans ('>' stays readable)."""
    escaped = _ENTITY.sub(r"&amp;\1", _SPECIAL.sub(r"\\\1", str(text)))
    return escaped.replace("<", "&lt;").replace("\n", " ")


def code(text: str) -> str:
    """An inline code span that survives backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def rich(text: Any) -> str:
    """Inline text whose Markdown `code` spans stay code spans; everything else escaped like `md`."""
    return "".join(code(part) if is_code else md(part) for is_code, part in code_spans(str(text)))


def fenced(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def render_markdown(report: Report) -> str:
    report = report.redacted()
    s = report.facts_summary
    c = report.counts()
    out = [f"## qwen-doctor report: {report.status.symbol} {report.status.value}", ""]
    outcome = verdict_result(report.results)
    if outcome is not None:
        out += [f"**Deploy {outcome.status.value}: {rich(outcome.summary)}**", ""]
    out += [f"{code(command_line(report))} · qwen-doctor {md(report.tool_version)} · {md(report.created_at)}"
            + (f" · host {md(s['hostname'])}" if s.get("hostname") else ""), ""]
    if s.get("gpus"):
        out += [f"GPUs: {md(s.get('gpus', 'none'))} · driver {md(s.get('driver_version') or '-')} · "
                + " · ".join(f"{md(k)} {md(v)}" for k, v in (s.get("packages") or {}).items()), ""]
    out += ["| ok | warn | fail | error | skip |", "|---:|---:|---:|---:|---:|",
            f"| {c['ok']} | {c['warn']} | {c['fail']} | {c['error']} | {c['skip']} |", ""]
    problems, passing = problems_first(report.results)
    if problems:
        out += ["### Problems", ""]
        for r in problems:
            out += _problem(r)
    if passing:
        out += ["<details><summary>Passing and skipped checks</summary>", "",
                "| status | check | title | summary |", "|---|---|---|---|"]
        out += [f"| {r.status.symbol} {r.status.value} | {md(r.check_id)} | {md(r.title)} | {md(r.summary)} |"
                for r in passing]
        out += ["", "</details>", ""]
    out += _sections(report.sections)
    gpus = s.get("gpu_table") or []
    if gpus:
        out += ["### GPUs", "", "| # | name | CC | memory GiB (used) | MIG | ECC | NVLink active | PCI |",
                "|---:|---|---|---|---|---|---:|---|"]
        out += [f"| {g.get('index')} | {md(g.get('name'))} | {md(g.get('compute_capability'))} | "
                f"{g.get('memory_total_gib')} ({g.get('memory_used_gib')}) | {g.get('mig')} | {g.get('ecc')} | "
                f"{g.get('nvlink_active')} | {md(g.get('pci_bus_id'))} |" for g in gpus]
        out.append("")
    if report.facts is not None:
        out += ["<details><summary>Raw facts</summary>", "", fenced(json.dumps(report.facts, indent=1), "json"),
                "", "</details>", ""]
    return "\n".join(out).rstrip() + "\n"


def _problem(r: Result) -> list[str]:
    subject = f" [{md(r.subject)}]" if r.subject else ""
    lines = [f"**{r.status.symbol} {md(r.check_id)}**{subject} {md(r.title)} ({md(r.severity)}): {rich(r.summary)}"]
    lines += [f"- {rich(d)}" for d in r.details]
    if r.fix:
        lines += ["", "Fix:"] + [f"1. {rich(f)}" for f in r.fix]
    if r.remedy_ids:
        lines.append(f"\nSee `qwen-doctor remedies show {md(' '.join(r.remedy_ids))}`")
    return lines + [""]


def _sections(sections: dict[str, Any]) -> list[str]:
    out: list[str] = []
    plan = sections.get("plan")
    if plan:
        out += ["### Plan", "", "| | |", "|---|---|"]
        out += [f"| {md(k)} | {md(v)} |" for k, v in section_rows(plan, skip=PLAN_SKIP)]
        out += [f"- ✗ {md(p)}" for p in plan.get("problems") or []]
        out += [f"- fix: {md(x)}" for x in plan.get("suggestions") or []] + [""]
    deployment = sections.get("deployment")
    if deployment:
        out += ["### Deployment", "", "| | |", "|---|---|"]
        out += [f"| {md(k)} | {md(v)} |" for k, v in section_rows(deployment, skip=("log_excerpt", "argv"))]
        if deployment.get("log_excerpt"):
            out += ["", "<details><summary>Server log excerpt</summary>", "",
                    fenced("\n".join(deployment["log_excerpt"])), "", "</details>"]
        out.append("")
    exercises = sections.get("exercises") or []
    if exercises:
        out += ["### Exercises", "", "| status | exercise | seconds | summary |", "|---|---|---:|---|"]
        for ex in exercises:
            st = as_status(ex.get("status"))
            out.append(f"| {st.symbol} {st.value} | {md(ex.get('name'))} | {ex.get('seconds', '')} | "
                       f"{md(ex.get('summary', ''))}"
                       + ("".join(f" → {md(f)}" for f in ex.get("fix") or []) if st is not Status.OK else "") + " |")
        out.append("")
    metrics = sections.get("metrics") or {}
    server = sections.get("server") or {}
    if metrics or server:
        out += ["### Metrics", ""]
        rows = latency_table(sections)
        if rows:
            out += ["| latency (ms) | " + " | ".join(PERCENTILES) + " |", "|---|" + "---:|" * len(PERCENTILES)]
            out += [f"| {md(name)} | " + " | ".join(_num(row.get(p)) for p in PERCENTILES) + " |" for name, row in rows]
            out.append("")
        rest = section_rows(metrics, skip=("percentiles",))
        out += [f"- {md(k)}: {md(v)}" for k, v in rest] + [""]
        if server:
            out += [f"Server-side ({md(server.get('backend'))} /metrics):", ""]
            out += [f"- {md(k)}: {md(v)}" for k, v in section_rows(server, skip=("latency",))] + [""]
    remedies = sections.get("remedies") or []
    if remedies:
        out += ["### Matched log errors", ""]
        for m in remedies:
            where = m.get("first_line") or {}
            out.append(f"**{md(m.get('id'))}** {md(m.get('title'))} ({md(m.get('severity'))}, "
                       f"{m.get('count', 1)}x, first at {md(where.get('source', '?'))}:{where.get('line', '?')})")
            if m.get("why"):
                out.append(f"\n{md(m['why'])}")
            ctx = m.get("context") or {}
            lines = [*(ctx.get("before") or []), m.get("line", ""), *(ctx.get("after") or [])]
            out += ["", fenced("\n".join(lines))]
            out += ["", "Fix:"] + [f"1. {rich(fix_text(f))}" for f in m.get("fix") or []]
            out += [f"- source: {md(u)}" for u in m.get("source") or []] + [""]
    for name, section in sections.items():
        table = grid(name, section) if name not in SECTION_ORDER else None
        if table:
            title, header, rows = table
            out += [f"### {md(title)}", "", "| " + " | ".join(md(h) for h in header) + " |",
                    "|" + "---|" * len(header)] + ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
            out.append("")
    for log in sections.get("logs") or []:
        out += [f"<details><summary>Log {md(log.get('source', ''))}</summary>", "",
                fenced("\n".join(log.get("lines") or [])), "", "</details>", ""]
    return out


def _num(value: Any) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "-"
