"""Article lint: catch the deployment article's invented or wrong configuration idioms and name the real ones.

    lint_path(Path("post.md")) -> list[Finding]   # any file: doctor.lint.documents picks the reader by kind
    lint_python(text) / lint_shell(text) / lint_profile(text) / lint_dockerfile(text) / lint_manifest(text) / ...

One module per input kind (python, shell, dockerfile, manifest, profile, notebook, markdown), over a shared
vocabulary (findings: rules, Finding) and one argv tokenizer (argv). Rules are data (rules.yaml). Shell and
YAML inputs also go through the backend flag schema (backend_args), so an unknown flag that no rule knows still
gets "unrecognized arguments ... did you mean".
"""

from __future__ import annotations

from pathlib import Path

from doctor.lint.findings import Finding, LintError, Rule, rules
from doctor.lint.python import lint_python
from doctor.lint.shell import lint_shell

__all__ = ["Finding", "LintError", "Rule", "lint_path", "lint_python", "lint_shell", "rules"]


def lint_path(path: Path, version: str | None = None) -> list[Finding]:
    """Lint one file of any kind users paste (see doctor.lint.documents)."""
    from doctor.lint.documents import lint_file

    return lint_file(path, version)
