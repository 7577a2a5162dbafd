"""qwen-doctor profiles: their flags through the rules and the backend's flag schema."""

from __future__ import annotations

import re

from doctor.lint.argv import LAUNCHERS
from doctor.lint.backend_args import combination_findings, lint_args
from doctor.lint.findings import Finding, LintError, dedupe


def lint_profile(text: str, version: str | None = None) -> list[Finding]:
    """Lint a profile YAML: its flags through the rules and the backend's flag schema."""
    from profiles.model import render_flag

    from doctor.safeyaml import MalformedYAML, YAMLLimitError, load_yaml

    try:
        data = load_yaml(text, "profile")
    except (MalformedYAML, YAMLLimitError) as exc:
        raise LintError(str(exc).removeprefix("profile: ")) from None
    if not isinstance(data, dict) or not isinstance(data.get("flags", {}), dict):
        raise LintError("not a profile: expected a mapping with a 'flags' mapping")
    backend = data.get("backend", "vllm")
    if backend not in LAUNCHERS:
        raise LintError(f"field 'backend': unknown backend {backend!r}")
    lines = {m.group(1): n for n, raw in enumerate(text.splitlines(), 1) if (m := re.match(r"\s+([\w-]+):", raw))}
    findings: list[Finding] = []
    every: list[str] = []
    for flag, value in (data.get("flags") or {}).items():
        args = render_flag(str(flag), value)
        findings += lint_args(args, backend, lines.get(str(flag), 1), version)
        every += args
    first = min((lines.get(str(flag), 1) for flag in data.get("flags") or {}), default=1)
    findings += combination_findings(every, backend, first)
    return dedupe(findings)
