"""Lint any file users paste, choosing the reader by the file's name, then by its content.

    lint_file(Path("post.md")) -> list[Finding]

| kind (by name, then by content)             | module                  | what is linted                          |
|---------------------------------------------|-------------------------|-----------------------------------------|
| `.py`                                       | doctor.lint.python      | Python (ast); a file that is not Python is read as a document |
| `.sh` / `.bash`                             | doctor.lint.shell       | every vllm serve / sglang.launch_server command |
| `.yaml` / `.yml` with `backend` + `flags`   | doctor.lint.profile     | a qwen-doctor profile                   |
| other YAML (compose, Kubernetes, Helm)      | doctor.lint.manifest    | container command / args / entrypoint   |
| `Dockerfile`, `*.dockerfile`, `Containerfile` | doctor.lint.dockerfile | RUN, CMD, ENTRYPOINT (shell and exec form) |
| `.ipynb`                                    | doctor.lint.notebook    | code cells (Python; `!` / `%%bash` lines as shell), Markdown cells as documents |
| anything else (`.md`, `.txt`, chat, blogs)  | doctor.lint.markdown    | code found by doctor.lint.extract, and the document's claims |

Besides the code, two rule kinds read the text itself (doctor.lint.claims): `text` rules (claims and invented
error messages, in documents) and `pin` rules (a backend pinned below the first release that runs Qwen3.5, in
every kind).
"""

from __future__ import annotations

import re
from pathlib import Path

from doctor.lint.claims import pin_findings
from doctor.lint.dockerfile import lint_dockerfile
from doctor.lint.extract import is_prose
from doctor.lint.findings import Finding, LintError, dedupe
from doctor.lint.manifest import lint_yaml_file
from doctor.lint.markdown import lint_document
from doctor.lint.notebook import lint_notebook
from doctor.lint.python import finish_python, parses, scan_python
from doctor.lint.shell import lint_shell

_DOCKER_NAME = re.compile(r"^(?:Dockerfile|Containerfile)(?:\..+)?$|\.(?:dockerfile|containerfile)$", re.I)


def read_text(path: Path) -> str:
    """A file's text: a regular file within safeio's lint cap, UTF-8 (BOM allowed), not binary."""
    from doctor.compressed import refusal
    from doctor.safeio import LINT_MAX_BYTES, InputError, read_bytes

    try:
        raw = read_bytes(path, "file", LINT_MAX_BYTES)
    except InputError as exc:
        raise LintError(str(exc).replace(f"cannot read file {path}: ", "cannot read: ")) from None
    packed = refusal(raw[:512])
    if packed:
        raise LintError(packed)
    if b"\x00" in raw:
        raise LintError("binary file, not a document, script, profile or notebook")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LintError(f"not UTF-8 text (byte {exc.start})") from exc


def lint_file(path: Path, version: str | None = None) -> list[Finding]:
    """Lint one file, choosing the reader by its name and then its content."""
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".ipynb":
        findings = lint_notebook(text, version)
    elif _DOCKER_NAME.search(path.name):
        findings = lint_dockerfile(text, version)
    elif suffix == ".py":
        if not parses(text) and any(is_prose(line) for line in text.splitlines()):
            findings = lint_document(text, version)  # an article or chat message saved as .py
        else:
            findings = finish_python([scan_python(text, version)])
    elif suffix in (".sh", ".bash", ".zsh"):
        findings = lint_shell(text, version)
    elif suffix in (".yaml", ".yml"):
        findings = lint_yaml_file(text, version)
    else:
        findings = _lint_by_content(text, version)
    return dedupe(findings + pin_findings(text))


def _lint_by_content(text: str, version: str | None) -> list[Finding]:
    head = text.lstrip()[:2000]
    if re.match(r"(?i)(#[^\n]*\n\s*)*(ARG\s+\S+\s*\n\s*)*FROM\s+\S", head):
        return lint_dockerfile(text, version)
    if head.startswith("{") and '"cells"' in head:
        try:
            return lint_notebook(text, version)
        except LintError:
            pass
    return lint_document(text, version)
