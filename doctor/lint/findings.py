"""The lint vocabulary: the rule catalogue (rules.yaml), findings, and the helpers every input kind shares.

    rules() -> (Rule, ...)      finding_for(rule, line, found) -> Finding      dedupe(findings)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from doctor.errors import DoctorError

RULES_FILE = Path(__file__).resolve().parent / "rules.yaml"
SCHEMA_SOURCE = "the backend's argument parser, extracted from its published wheels (doctor/flags/schemas)"
SEVERITIES = ("error", "warning")


class LintError(DoctorError):
    """The input cannot be linted (unreadable, binary, not parseable)."""


@dataclass(frozen=True)
class Rule:
    """One known-wrong idiom with its explanation and the real equivalent."""

    id: str
    idiom: str
    match: dict[str, Any]
    wrong: str
    fix: str
    did_you_mean: tuple[str, ...]
    source: str
    severity: str = "error"


@dataclass(frozen=True)
class Finding:
    """A rule (or the flag schema) firing at one line."""

    rule_id: str
    line: int
    found: str
    wrong: str
    fix: str
    did_you_mean: tuple[str, ...] = ()
    severity: str = "error"
    title: str = ""
    source: str = ""

    def moved(self, offset: int) -> "Finding":
        """The same finding, `offset` lines further down (a snippet's line 1 is the document's line offset+1)."""
        return replace(self, line=self.line + offset)

    def render(self, origin: str) -> str:
        """`file:line: ID found: wrong -> fix (did you mean ...?)`"""
        hint = f" (did you mean {' or '.join(self.did_you_mean)}?)" if self.did_you_mean else ""
        return f"{origin}:{self.line}: {self.rule_id} {self.found}: {self.wrong} Use instead: {self.fix}{hint}"


@lru_cache(maxsize=1)
def rules() -> tuple[Rule, ...]:
    """The rule catalogue, validated at load."""
    data = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
    out = []
    for entry in data:
        missing = {"id", "idiom", "match", "wrong", "fix", "source"} - set(entry)
        if missing:
            raise LintError(f"{RULES_FILE}: rule {entry.get('id', '?')} lacks {sorted(missing)}")
        severity = entry.get("severity", "error")
        if severity not in SEVERITIES:
            raise LintError(f"{RULES_FILE}: rule {entry['id']} has severity {severity!r} (choose from {SEVERITIES})")
        if "text" in entry["match"]:
            re.compile(entry["match"]["text"])
        out.append(Rule(entry["id"], entry["idiom"], entry["match"], entry["wrong"], entry["fix"],
                        tuple(entry.get("did_you_mean", ())), entry["source"], severity))
    return tuple(out)


def finding_for(rule: Rule, line: int, found: str) -> Finding:
    """`rule` firing at `line` on the text `found`."""
    return Finding(rule.id, line, found, rule.wrong, rule.fix, rule.did_you_mean, rule.severity, rule.idiom,
                   rule.source)


def kwarg_findings(name: str, value: Any, line: int, shown: str) -> list[Finding]:
    """The `kwarg` rules a keyword argument or flag (`--x-y`, `--x_y`, `x_y`) with this value fires."""
    key = name.lstrip("-").replace("-", "_")
    out = []
    for rule in rules():
        if rule.match.get("kwarg") != key:
            continue
        wanted = rule.match.get("value")
        if wanted is not None and str(value).strip("'\"").lower() != str(wanted).lower():
            continue
        out.append(finding_for(rule, line, shown))
    return out


def dedupe(findings: list[Finding]) -> list[Finding]:
    """Findings in line order, each (rule, line, text) once."""
    seen, out = set(), []
    for f in sorted(findings, key=lambda f: (f.line, f.rule_id)):
        if (f.rule_id, f.line, f.found) not in seen:
            seen.add((f.rule_id, f.line, f.found))
            out.append(f)
    return out
