"""Backend CLI arguments judged by the idiom rules first, then by the backend's own flag schema."""

from __future__ import annotations

from doctor.lint.argv import flag_values
from doctor.lint.findings import SCHEMA_SOURCE, Finding, kwarg_findings


def lint_args(args: list[str], backend: str, line: int, version: str | None = None) -> list[Finding]:
    """Lint backend CLI arguments: the idiom rules first, then the flag schema for everything else."""
    from doctor.flags import load_schema, validate_args

    findings: list[Finding] = []
    ruled: set[str] = set()
    for name, value in flag_values(args):
        hits = kwarg_findings(name, value, line, f"{name} {value}".strip())
        if hits:
            ruled.add(name)
            findings += hits
    for issue in validate_args(args, load_schema(backend, version)):
        if issue.flag in ruled or issue.flag.replace("_", "-") in {r.replace("_", "-") for r in ruled}:
            continue
        hint = (issue.suggestion,) if issue.suggestion else ()
        findings.append(Finding(f"FLAG-{issue.kind}", line, issue.flag, issue.message.split(" (did you mean")[0] + ".",
                                f"check `{backend} --help` for this version", hint,
                                title=f"command-line flag: {issue.kind}", source=SCHEMA_SOURCE))
    return findings
