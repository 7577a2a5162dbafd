"""Shell scripts: every `vllm serve` / `python -m sglang.launch_server` command."""

from __future__ import annotations

from doctor.lint.argv import backend_args, launch_commands
from doctor.lint.backend_args import lint_args
from doctor.lint.findings import Finding, dedupe


def lint_shell(text: str, version: str | None = None) -> list[Finding]:
    """Lint every `vllm serve` / `python -m sglang.launch_server` command in a shell script."""
    findings: list[Finding] = []
    for line, backend, command in launch_commands(text):
        findings += lint_args(backend_args(backend, command), backend, line, version)
    return dedupe(findings)
