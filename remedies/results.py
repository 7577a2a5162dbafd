"""Findings as check results, so `explain`, `check --log` and `deploy` report them like every other check."""

from __future__ import annotations

from doctor.results import Result, Status
from remedies.explain import Finding

STATUS = {"error": Status.FAIL, "warning": Status.WARN, "info": Status.OK}
SEVERITY = {"error": "high", "warning": "medium", "info": "info"}


def to_result(finding: Finding) -> Result:
    """One finding -> one result: status from the entry's severity, fix steps as the result's fix."""
    remedy = finding.remedy
    where = str(finding.first) if finding.count == 1 else f"{finding.first} … {finding.last}"
    return Result(
        check_id=remedy.id,
        title=remedy.title,
        category=remedy.component,
        severity=SEVERITY[remedy.severity],
        status=STATUS[remedy.severity],
        summary=f"{finding.count}× at {where}",
        details=[finding.why, f"first: {finding.line}"],
        fix=[step.render() for step in finding.steps],
        remedy_ids=[remedy.id],
        evidence=finding.to_dict(),
        subject=finding.first.source,
    )


def to_results(findings: list[Finding]) -> list[Result]:
    """Results in the findings' order (root cause first)."""
    return [to_result(f) for f in findings]
