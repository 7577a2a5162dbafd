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


SHOWN_PER_RULE = 100


def render_terminal(results: list[Result], color: bool = False, per_rule: int = SHOWN_PER_RULE) -> str:
    """`file:line: ✗ ID found`, then what is wrong and the fix, one finding after another (editor-clickable).

    At most `per_rule` findings of one rule are shown; the rest are counted in one line per rule at the end
    (a file with 186k unknown flags is a screen of them, not 700k lines). JSON, SARIF and every -o file keep
    them all; the count on stderr and the exit code are the same either way."""
    lines = []
    seen: dict[str, int] = {}
    for r in results:
        seen[r.check_id] = seen.get(r.check_id, 0) + 1
        if seen[r.check_id] > per_rule:
            continue
        mark = click_style(r.status.symbol, r.status, color)
        lines.append(f"{r.summary.split(': ', 1)[0]}: {mark} {r.check_id} {r.evidence.get('found', '')}")
        lines += [f"    {d}" for d in r.details]
        lines += [f"    → {f}" for f in r.fix]
    lines += [f"… {count - per_rule} more {rule} finding(s) not shown ({count} in all; every one is in "
              f"--format json or an -o file)" for rule, count in seen.items() if count > per_rule]
    return "".join(line + "\n" for line in lines)


def click_style(symbol: str, status: Status, color: bool) -> str:
    if not color:
        return symbol
    import click

    return click.style(symbol, fg={Status.FAIL: "red", Status.WARN: "yellow"}.get(status, None), bold=True)
