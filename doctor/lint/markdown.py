"""Markdown, blog posts and chat text: the code snippets found in them (doctor.lint.extract) and their claims."""

from __future__ import annotations

import re

from doctor.errors import DoctorError
from doctor.lint.claims import text_findings
from doctor.lint.dockerfile import lint_dockerfile
from doctor.lint.extract import Snippet, snippets_from_text
from doctor.lint.findings import Finding, LintError, dedupe
from doctor.lint.manifest import lint_yaml_file
from doctor.lint.python import PythonScan, finish_python, scan_python
from doctor.lint.shell import lint_shell


def lint_snippets(snippets: list[Snippet], version: str | None) -> list[Finding]:
    """Lint extracted snippets as one document (rules spanning snippets see them all)."""
    scans: list[PythonScan] = []
    findings: list[Finding] = []
    for snippet in snippets:
        offset = snippet.first_line - 1
        lang = snippet.lang if snippet.lang != "auto" else _guess(snippet.text)
        try:
            if lang == "python":
                scans.append(scan_python(snippet.text, version, offset))
            elif lang == "shell":
                findings += [f.moved(offset) for f in lint_shell(snippet.text, version)]
            elif lang == "dockerfile":
                findings += [f.moved(offset) for f in lint_dockerfile(snippet.text, version)]
            elif lang == "yaml":
                findings += [f.moved(offset) for f in lint_yaml_file(snippet.text, version)]
        except DoctorError:  # a snippet that is not what it looked like (or over a YAML budget) is skipped
            continue
    return finish_python(scans) + findings


def _guess(code: str) -> str:
    if re.search(r"(^|\n)\s*(\$\s+)?(vllm\s+serve|python3?\s+-m\s+(sglang|vllm)\.|pip3?\s+install|export\s)", code):
        return "shell"
    if re.match(r"\s*FROM\s+\S", code):
        return "dockerfile"
    try:
        scan_python(code)
        return "python"
    except LintError:
        return "yaml" if re.match(r"\s*[\w.-]+:\s", code) else "shell"


def lint_document(text: str, version: str | None = None) -> list[Finding]:
    """A Markdown / prose document: its code snippets and its claims."""
    return dedupe(lint_snippets(snippets_from_text(text), version) + text_findings(text))
