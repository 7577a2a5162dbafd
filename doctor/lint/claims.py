"""Rules that read the text itself: `text` rules (claims, invented error messages) and `pin` rules (a backend
pinned below the first release that serves Qwen3.5)."""

from __future__ import annotations

import re

from doctor.lint.findings import Finding, finding_for, rules

MAX_LINE = 8192
_PIN = re.compile(r"(?<![\w.-])(vllm|sglang)(?:\[[\w,-]{1,100}\])?[ \t]*==[ \t]*([0-9][0-9a-z.+]{0,30})", re.I)


def text_findings(text: str, first_line: int = 1) -> list[Finding]:
    """The `text` rules (claims, invented messages) on every line of a document."""
    text_rules = [(rule, re.compile(rule.match["text"], re.I)) for rule in rules() if "text" in rule.match]
    findings = []
    for number, line in enumerate(text.splitlines(), first_line):
        for rule, pattern in text_rules:
            hit = pattern.search(line[:MAX_LINE])
            if hit:
                findings.append(finding_for(rule, number, hit.group(0).strip()))
    return findings


def pin_findings(text: str, first_line: int = 1) -> list[Finding]:
    """A backend pinned (`vllm==0.3.2`) below the first release that serves Qwen3.5."""
    from packaging.version import InvalidVersion, Version

    from doctor.knowledge import version_matrix

    rule = next((r for r in rules() if "pin" in r.match), None)
    if rule is None:
        return []
    minimum = version_matrix().minimum
    findings = []
    for number, line in enumerate(text.splitlines(), first_line):
        for hit in _PIN.finditer(line[:MAX_LINE]):
            package = hit.group(1).lower()
            try:
                pinned = Version(hit.group(2).rstrip("."))
            except InvalidVersion:
                continue
            floor = minimum.get(package)
            if floor and pinned < floor[0]:
                finding = finding_for(rule, number, hit.group(0))
                findings.append(Finding(
                    finding.rule_id, number, finding.found,
                    f"{package} {pinned} predates Qwen3.5 support: {package} {floor[0]} is the first release that "
                    f"serves it ({floor[1]}).", finding.fix.replace("{minimum}", str(floor[0])),
                    (f"{package}>={floor[0]}",), finding.severity, finding.title, finding.source))
    return findings
