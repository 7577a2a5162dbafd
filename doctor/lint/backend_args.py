"""Backend CLI arguments judged by the idiom rules first, then by the backend's own flag schema."""

from __future__ import annotations

from doctor.lint.argv import flag_values
from doctor.lint.findings import SCHEMA_SOURCE, Finding, finding_for, kwarg_findings, rules


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
    findings += combination_findings(args, backend, line)
    for issue in validate_args(args, load_schema(backend, version)):
        if issue.flag in ruled or issue.flag.replace("_", "-") in {r.replace("_", "-") for r in ruled}:
            continue
        hint = (issue.suggestion,) if issue.suggestion else ()
        findings.append(Finding(f"FLAG-{issue.kind}", line, issue.flag, issue.message.split(" (did you mean")[0] + ".",
                                f"check `{backend} --help` for this version", hint,
                                title=f"command-line flag: {issue.kind}", source=SCHEMA_SOURCE))
    return findings


def combination_findings(args: list[str], backend: str, line: int) -> list[Finding]:
    """Rules on what flags mean for Qwen3.5 together or for one engine (doctor.recipe_rules)."""
    from doctor.recipe_rules import language_model_only_issue, speculative_with_pp, tool_parser_issue

    flags = dict(flag_values(args))
    findings = []
    for key, judge in (("speculative_with_pp", speculative_with_pp), ("tool_parser", tool_parser_issue),
                       ("language_model_only", language_model_only_issue)):
        problem = judge(backend, flags)
        rule = next((r for r in rules() if r.match.get(key)), None)
        if problem and rule is not None:
            found = finding_for(rule, line, problem.split(":")[0].split(" reads")[0].split(" is ")[0])
            findings.append(Finding(found.rule_id, line, found.found, problem + ".", found.fix, found.did_you_mean,
                                    found.severity, found.title, found.source))
    return findings
