"""Terminal rendering in the style of `flutter doctor`: a line per check, the fix under every problem."""

from __future__ import annotations

from collections import Counter
from itertools import groupby
from typing import Any, Sequence

from doctor.report.model import Report
from doctor.report.sections import PERCENTILES, SECTION_ORDER, as_status, fix_text
from doctor.report.view import grid, plain, section_rows, unreported_exercises, verdict_result
from doctor.results import Result, Status, worst
from doctor.textsafe import one_line

PROBLEMS = (Status.WARN, Status.FAIL, Status.ERROR)
_COLOR = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.ERROR: "35", Status.SKIP: "90"}


def _paint(text: str, status: Status, color: bool) -> str:
    return f"\x1b[{_COLOR[status]}m{text}\x1b[0m" if color else text


def render_text(report: Report, verbose: bool = False, color: bool = False) -> str:
    """Grouped by category, the fix under every problem. By default a category shows its problems only, its
    passed and skipped checks counted on its own line (skips with their most common reason); `verbose` shows
    every check with its details."""
    report = report.redacted()
    s = report.facts_summary
    lines = []
    outcome = verdict_result(report.results)
    if outcome is not None:
        lines.append(_paint(f"Deploy {outcome.status.value}: {plain(outcome.summary)}", outcome.status, color))
    lines.append(one_line(f"qwen-doctor {report.tool_version} · {report.command} · host {s.get('hostname') or '?'} · "
                          f"{s.get('source', 'live')}"))
    if s:
        parts = [f"driver {s.get('driver_version') or '-'}", f"GPUs: {s.get('gpus')}"]
        parts += [f"{k} {v}" for k, v in (s.get("packages") or {}).items()]
        lines.append("  " + " · ".join(parts))
    for names, items in _category_groups(report.results, verbose):
        lines.extend(_category_lines(", ".join(names), items, verbose, color))
    body = len(lines)
    lines.extend(section_lines(report.sections, report.results))
    if verbose or len(lines) != body or report.sections.get("fleet"):   # a blank line before sections, table, summary
        lines.append("")
    if report.sections.get("fleet"):
        lines.append(render_table(report.sections["fleet"]))
    for name, section in report.sections.items():
        table = grid(name, section) if name not in (*SECTION_ORDER, "fleet") else None
        if table:
            lines += [table[0], *grid_lines(table[1], table[2]), ""]
    hidden = not verbose and any(r.status not in PROBLEMS for r in report.results)
    lines.append(summary_line(report) + (" · -v lists every check" if hidden else ""))
    return "\n".join(lines) + "\n"


def section_lines(sections: dict[str, Any], results: Sequence[Result] = ()) -> list[str]:
    """Plan verdict, exercises (those not listed as results already), latency percentiles and matched log
    errors, a few lines each."""
    out: list[str] = []
    plan = sections.get("plan")
    if plan:
        out += ["", f"[{'✓' if plan.get('fits') else '✗'}] plan: " + ("fits" if plan.get("fits") else "does not fit")
                + (f", {plan['kv_tokens']:,} KV tokens" if isinstance(plan.get("kv_tokens"), int) else "")]
        out += [f"    ✗ {p}" for p in plan.get("problems") or []]
        out += [f"        → {x}" for x in plan.get("suggestions") or []]
    exercises = unreported_exercises(sections, list(results))
    if exercises:
        out += ["", "[{}] exercises".format(worst_status(e.get("status") for e in exercises).symbol)]
        for ex in exercises:
            st = as_status(ex.get("status"))
            out.append(f"    {st.symbol} {ex.get('name')}: {ex.get('summary', '')}")
            if st.rank >= Status.WARN.rank:
                out += [f"        → {f}" for f in ex.get("fix") or []]
    client = (sections.get("metrics") or {}).get("percentiles") or {}
    server = sections.get("server") or {}
    own = server.get("latency") or {}
    pct: dict[str, Any] = {}
    for name in [*client, *(k for k in own if k not in client)]:  # each server row under its client row
        if name in client:
            pct[name] = client[name]
        if name in own:
            pct[f"{name} server"] = own[name]
    if pct:
        out += ["", "    latency (ms)     " + "  ".join(f"{p:>9}" for p in PERCENTILES)]
        for name, row in pct.items():
            out.append(f"    {name:<16} " + "  ".join(
                f"{row.get(p):>9,.1f}" if isinstance(row.get(p), (int, float)) else f"{'-':>9}" for p in PERCENTILES))
    if server:
        out.append(f"    server ({server.get('backend')}): " + "; ".join(
            f"{k} {v}" for k, v in section_rows(server, skip=("latency", "backend", "families"))))
    remedies = sections.get("remedies") or []
    if remedies:
        out += ["", "[✗] matched log errors"]
        for m in remedies:
            where = m.get("first_line") or {}
            out.append(f"    ✗ {m.get('id')} {m.get('title')} ({m.get('count', 1)}x, first at "
                       f"{where.get('source', '?')}:{where.get('line', '?')})")
            out += [f"        → {plain(fix_text(f))}" for f in m.get("fix") or []]
    return out


def grid_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A grid section (e.g. the concurrency sweep) as aligned columns."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def worst_status(values: Any) -> Status:
    return max((as_status(v) for v in values), key=lambda s: s.rank, default=Status.OK)


def _category_groups(results: Sequence[Result], verbose: bool) -> list[tuple[list[str], list[Result]]]:
    """The categories in order; without `verbose`, categories whose every check skipped for the same commonest
    reason share the first one's line ("gpu, memory, topology: 15 checks skipped (no NVIDIA driver ...)")."""
    out: list[tuple[list[str], list[Result]]] = []
    by_reason: dict[str, tuple[list[str], list[Result]]] = {}
    for category, group in groupby(results, key=lambda r: r.category):
        items = list(group)
        if verbose or any(r.status is not Status.SKIP for r in items):
            out.append(([category], items))
            continue
        reason = Counter(plain(r.summary) for r in items).most_common(1)[0][0]
        if reason in by_reason:
            by_reason[reason][0].append(category)
            by_reason[reason][1].extend(items)
        else:
            by_reason[reason] = ([category], items)
            out.append(by_reason[reason])
    return out


def _category_lines(category: str, items: list[Result], verbose: bool, color: bool) -> list[str]:
    """One category: a line per check with `verbose`; else its problems under one line that counts the rest."""
    status = worst(items)
    if verbose:
        return [_paint(f"[{status.symbol}] {category}", status, color),
                *(line for r in items for line in _result_lines(r, verbose, color))]
    problems = [r for r in items if r.status in PROBLEMS]
    quiet = [r for r in items if r.status not in PROBLEMS]
    head = f"[{status.symbol}] {category}"
    if not problems:
        return [_paint(f"{head}: {quiet_summary(quiet)}", status, color)]
    out = [_paint(f"{head} · {quiet_summary(quiet)}" if quiet else head, status, color)]
    return out + [line for r in problems for line in _result_lines(r, verbose, color)]


def quiet_summary(results: Sequence[Result]) -> str:
    """'1 ok, 3 skipped (no Ray address given)' / '11 checks skipped (no fleet facts; ...)': the checks a
    category passed or skipped, counted, with the most common reason for the skips."""
    passed = sum(r.status is Status.OK for r in results)
    skipped = [plain(r.summary) for r in results if r.status is Status.SKIP]
    if not skipped:
        return f"{passed} ok"
    reasons = Counter(skipped).most_common()
    why = reasons[0][0] + (f"; and {len(reasons) - 1} other reason{'s' if len(reasons) > 2 else ''}"
                           if len(reasons) > 1 else "")
    count = f"{len(skipped)} check{'s' if len(skipped) > 1 else ''} skipped" if not passed else \
        f"{passed} ok, {len(skipped)} skipped"
    return f"{count} ({why})"


def _result_lines(r: Result, verbose: bool, color: bool) -> list[str]:
    subject = f" [{r.subject}]" if r.subject else ""
    out = [f"    {_paint(r.status.symbol, r.status, color)} {r.check_id}{subject} {r.title}: {plain(r.summary)}"]
    problem = r.status in PROBLEMS
    if verbose:
        out += [f"        • {plain(d)}" for d in r.details]
    if problem:
        out += [f"        → {plain(f)}" for f in r.fix]
        if r.remedy_ids:
            out.append(f"        see: qwen-doctor remedies show {' '.join(r.remedy_ids)}")
    return out


def summary_line(report: Report) -> str:
    c = report.counts()
    problems = {r.category for r in report.results if r.status in PROBLEMS}
    verdict = "No issues found!" if not problems else f"Issues in {len(problems)} categor{'y' if len(problems) == 1 else 'ies'}."
    parts = [f"{c['ok']} ok", f"{c['warn']} warn", f"{c['fail']} fail"]
    if c["error"]:
        parts.append(f"{c['error']} error")
    parts.append(f"{c['skip']} skipped")
    return f"{verdict} ({', '.join(parts)})"


def render_table(table: dict[str, Any]) -> str:
    """Fixed-width text table, nodes as columns."""
    header = [f"{table['engine']} fleet ({table.get('target') or 'default'})", *table["columns"]]
    rows = [[r["name"], *r["values"]] for r in table["rows"]]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join(lines) + "\n"
