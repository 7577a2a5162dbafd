"""Jupyter notebooks: code cells as Python (`!cmd` and `%%bash` lines as shell), Markdown cells as documents."""

from __future__ import annotations

import json
import re
from typing import Any

from doctor.lint.claims import text_findings
from doctor.lint.extract import Snippet, snippets_from_text
from doctor.lint.findings import Finding, LintError
from doctor.lint.markdown import lint_snippets
from doctor.safeio import InputError, parse_json


def _cell_lines(raw_lines: list[str]) -> list[int]:
    """The file line (1-based) where each cell's `"source": [` opens, in cell order."""
    return [n for n, line in enumerate(raw_lines, 1) if re.match(r'\s*"source"\s*:', line)]


def lint_notebook(text: str, version: str | None = None) -> list[Finding]:
    """Jupyter: code cells as Python (`!cmd` and `%%bash` as shell), Markdown cells as documents."""
    try:
        notebook: Any = parse_json(text, "notebook")
    except json.JSONDecodeError as exc:
        raise LintError(f"not a notebook: invalid JSON (line {exc.lineno})") from exc
    except InputError as exc:
        raise LintError(str(exc)) from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise LintError("not a notebook: no 'cells' list")
    opens = _cell_lines(text.splitlines())
    snippets: list[Snippet] = []
    findings: list[Finding] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        body = "".join(source) if isinstance(source, list) else str(source)
        list_form = isinstance(source, list) and index < len(opens)
        first = opens[index] + (1 if list_form else 0) if index < len(opens) else 1
        if cell.get("cell_type") == "markdown":
            snippets += [Snippet(s.lang, s.text, s.first_line + first - 1, f"cell {index + 1}")
                         for s in snippets_from_text(body)]
            findings += text_findings(body, first)
        elif cell.get("cell_type") == "code":
            snippets += _code_cell(body, first, index)
    return lint_snippets(snippets, version) + findings


def _code_cell(body: str, first: int, index: int) -> list[Snippet]:
    lines = body.splitlines()
    if lines and lines[0].strip().startswith(("%%bash", "%%sh", "%%script bash")):
        return [Snippet("shell", "\n".join(lines[1:]), first + 1, f"cell {index + 1}")]
    python = []
    shell = []
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("!", "%pip", "%conda", "%sh")):
            shell.append(Snippet("shell", stripped.lstrip("!%"), first + number, f"cell {index + 1}"))
            python.append("")
        else:
            python.append(line)
    return [Snippet("python", "\n".join(python), first, f"cell {index + 1}")] + shell
