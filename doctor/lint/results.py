"""Lint findings as check results, so `lint` reports, gates and exits like `check` and `explain`."""

from __future__ import annotations

from doctor.lint.findings import Finding
from doctor.results import Result, Status

STATUS = {"error": Status.FAIL, "warning": Status.WARN}
SEVERITY = {"error": "high", "warning": "medium"}


def to_result(finding: Finding, origin: str) -> Result:
    """One finding at `origin:line` -> one result: the rule's id, what is wrong, the real flag or API."""
    hint = f"Did you mean {' or '.join(finding.did_you_mean)}?" if finding.did_you_mean else ""
    return Result(
        check_id=finding.rule_id,
        title=finding.title or finding.rule_id,
        category="lint",
        severity=SEVERITY[finding.severity],
        status=STATUS[finding.severity],
        summary=f"{origin}:{finding.line}: {finding.found}",
        details=[finding.wrong],
        fix=[finding.fix] + ([hint] if hint else []),
        evidence={"file": origin, "line": finding.line, "found": finding.found, "source": finding.source},
        subject=f"{origin}:{finding.line}",
    )


def render_terminal(results: list[Result], color: bool = False) -> str:
    """`file:line: ✗ ID found`, then what is wrong and the fix, one finding after another (editor-clickable)."""
    lines = []
    for r in results:
        mark = click_style(r.status.symbol, r.status, color)
        lines.append(f"{r.summary.split(': ', 1)[0]}: {mark} {r.check_id} {r.evidence.get('found', '')}")
        lines += [f"    {d}" for d in r.details]
        lines += [f"    → {f}" for f in r.fix]
    return "".join(line + "\n" for line in lines)


def click_style(symbol: str, status: Status, color: bool) -> str:
    if not color:
        return symbol
    import click

    return click.style(symbol, fg={Status.FAIL: "red", Status.WARN: "yellow"}.get(status, None), bold=True)
