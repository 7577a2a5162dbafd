"""Lint any file users paste, pointing every finding at the line of the original file.

    lint_file(Path("post.md")) -> list[Finding]

| kind (by name, then by content)             | what is linted                                                   |
|---------------------------------------------|------------------------------------------------------------------|
| `.py`                                       | Python (ast); a file that is not Python is read as a document    |
| `.sh` / `.bash`                             | every vllm serve / sglang.launch_server command                  |
| `.yaml` / `.yml` with `backend` + `flags`   | a qwen-doctor profile                                            |
| other YAML (compose, Kubernetes, Helm)      | container command / args / entrypoint, env                       |
| `Dockerfile`, `*.dockerfile`, `Containerfile` | RUN, CMD, ENTRYPOINT (shell and exec form), ENV                 |
| `.ipynb`                                    | code cells (Python; `!` / `%%bash` lines as shell), Markdown cells as documents |
| anything else (`.md`, `.txt`, chat, blogs)  | code found by doctor.lint.extract, and the document's claims     |

Besides the code, two rule kinds read the text itself: `text` rules (claims and invented error messages, in
documents) and `pin` rules (a backend pinned below the first release that runs Qwen3.5, in every kind).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Iterator

import yaml

from doctor.errors import DoctorError
from doctor.safeio import InputError, parse_json
from doctor.lint import (
    Finding,
    LintError,
    PythonScan,
    _dedupe,
    _finding,
    finish_python,
    lint_args,
    lint_shell,
    lint_yaml,
    parses,
    rules,
    scan_python,
)
from doctor.lint.extract import Snippet, is_prose, snippets_from_text

MAX_LINE = 8192
_DOCKER_NAME = re.compile(r"^(?:Dockerfile|Containerfile)(?:\..+)?$|\.(?:dockerfile|containerfile)$", re.I)
_DOCKER_INSTRUCTION = re.compile(r"^\s*(RUN|CMD|ENTRYPOINT|ENV)\s+(.*)$", re.I)
_PIN = re.compile(r"(?<![\w.-])(vllm|sglang)(?:\[[\w,-]{1,100}\])?[ \t]*==[ \t]*([0-9][0-9a-z.+]{0,30})", re.I)
# The engine images whose entrypoint is the server: their containers' args are that server's flags.
_IMAGE_LAUNCHERS = (("vllm-openai", "vllm serve"),)


def read_text(path: Path) -> str:
    """A file's text: a regular file within safeio's lint cap, UTF-8 (BOM allowed), not binary."""
    from doctor.safeio import LINT_MAX_BYTES, InputError, read_bytes

    try:
        raw = read_bytes(path, "file", LINT_MAX_BYTES)
    except InputError as exc:
        raise LintError(str(exc).replace(f"cannot read file {path}: ", "cannot read: ")) from None
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
    return _dedupe(findings + pin_findings(text))


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


# ---------------------------------------------------------------- documents


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
    return _dedupe(lint_snippets(snippets_from_text(text), version) + text_findings(text))


def text_findings(text: str, first_line: int = 1) -> list[Finding]:
    """The `text` rules (claims, invented messages) on every line of a document."""
    text_rules = [(rule, re.compile(rule.match["text"], re.I)) for rule in rules() if "text" in rule.match]
    findings = []
    for number, line in enumerate(text.splitlines(), first_line):
        for rule, pattern in text_rules:
            hit = pattern.search(line[:MAX_LINE])
            if hit:
                findings.append(_finding(rule, number, hit.group(0).strip()))
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
                finding = _finding(rule, number, hit.group(0))
                findings.append(Finding(
                    finding.rule_id, number, finding.found,
                    f"{package} {pinned} predates Qwen3.5 support: {package} {floor[0]} is the first release that "
                    f"serves it ({floor[1]}).", finding.fix.replace("{minimum}", str(floor[0])),
                    (f"{package}>={floor[0]}",), finding.severity, finding.title, finding.source))
    return findings


# ---------------------------------------------------------------- Dockerfiles


def _instructions(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, INSTRUCTION, argument) with backslash continuations joined and comments dropped."""
    buffer, start, keyword = "", 0, ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buffer:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = _DOCKER_INSTRUCTION.match(line)
            if not match:
                continue
            start, keyword, line = number, match.group(1).upper(), match.group(2)
        elif line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        yield start, keyword, buffer + line
        buffer = ""
    if buffer:
        yield start, keyword, buffer


def _exec_form(argument: str) -> str:
    """`["vllm", "serve", "m"]` -> `vllm serve m`; shell form unchanged."""
    stripped = argument.strip()
    if stripped.startswith("["):
        try:
            words = parse_json(stripped, "Dockerfile exec form")
        except (json.JSONDecodeError, InputError):
            return stripped
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            return shlex.join(words)
    return stripped


def lint_dockerfile(text: str, version: str | None = None) -> list[Finding]:
    """RUN / CMD / ENTRYPOINT commands (ENTRYPOINT + CMD joined, as Docker runs them)."""
    findings: list[Finding] = []
    entrypoint: tuple[int, str] | None = None
    for line, keyword, argument in _instructions(text):
        command = _exec_form(argument)
        if keyword == "ENTRYPOINT":
            entrypoint = (line, command)
            findings += [f.moved(line - 1) for f in lint_shell(command, version)]
        elif keyword == "CMD" and entrypoint and not lint_shell(command, version):
            findings += [f.moved(line - 1) for f in lint_shell(f"{entrypoint[1]} {command}", version)]
        elif keyword in ("RUN", "CMD"):
            findings += [f.moved(line - 1) for f in lint_shell(command, version)]
    return findings


# ---------------------------------------------------------------- YAML: profiles, compose, Kubernetes, Helm


def _safe_compose_all(text: str) -> list[yaml.Node]:
    """Every document's node tree, under safeyaml's alias / size / depth budget (composed, never constructed)."""
    from doctor.safeyaml import LOADER

    try:
        return [node for node in yaml.compose_all(text, Loader=LOADER) if node is not None]
    except yaml.YAMLError as exc:
        raise LintError(f"malformed YAML: {getattr(exc, 'problem', None) or exc}") from exc


def _scalar(node: yaml.Node) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _words(node: yaml.Node) -> list[str]:
    """A command given as a YAML list or as one string."""
    if isinstance(node, yaml.SequenceNode):
        return [str(item.value) for item in node.value if isinstance(item, yaml.ScalarNode)]
    if isinstance(node, yaml.ScalarNode):
        try:
            return shlex.split(str(node.value))
        except ValueError:
            return str(node.value).split()
    return []


def _containers(node: yaml.Node) -> Iterator[dict[str, yaml.Node]]:
    """Every mapping that carries a command, args, entrypoint or image: services, containers, Helm values."""
    if isinstance(node, yaml.MappingNode):
        fields = {_scalar(key): value for key, value in node.value if _scalar(key) is not None}
        if {"command", "args", "entrypoint", "extraArgs"} & set(fields):  # a container, a service, Helm values
            yield fields
        for _, value in node.value:
            yield from _containers(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _containers(item)


def lint_manifest(text: str, version: str | None = None) -> list[Finding]:
    """Compose services, Kubernetes containers and Helm values: entrypoint/command + args as one command line
    (an `sh -c SCRIPT` command is linted as its script; the vllm-openai image's args as `vllm serve` flags)."""
    findings: list[Finding] = []
    for document in _safe_compose_all(text):
        for fields in _containers(document):
            parts = [fields[k] for k in ("entrypoint", "command", "args", "extraArgs") if k in fields]
            words = [w for part in parts for w in _words(part)]
            command = _inline_script(words) or shlex.join(words)
            image = _image(fields.get("image"))
            if image and not _LAUNCH.search(command):
                command = next((f"{launcher} {command}" for marker, launcher in _IMAGE_LAUNCHERS if marker in image),
                               command)
            line = parts[0].start_mark.line + 1
            findings += [f.moved(line - 1) for f in lint_shell(command, version)]
    return findings


def _image(node: yaml.Node | None) -> str | None:
    """`image: vllm/vllm-openai:v0.26.0`, or Helm's `image: {repository: ..., tag: ...}`."""
    if isinstance(node, yaml.MappingNode):
        fields = {_scalar(k): v for k, v in node.value}
        node = fields.get("repository") or fields.get("name")
    return _scalar(node) if node is not None else None


_LAUNCH = re.compile(r"vllm\s+serve|sglang\.launch_server|vllm\.entrypoints")


def _inline_script(words: list[str]) -> str | None:
    """The SCRIPT of `sh -c SCRIPT` / `bash -lc SCRIPT` inside a command list."""
    for i, word in enumerate(words[:-1]):
        if word.endswith(("sh", "bash")) and words[i + 1] in ("-c", "-lc", "-ec", "-xc"):
            return words[i + 2] if i + 2 < len(words) else None
    return None


def lint_yaml_file(text: str, version: str | None = None) -> list[Finding]:
    """A qwen-doctor profile, else a compose / Kubernetes / Helm file."""
    documents = _safe_compose_all(text)
    first = documents[0] if documents else None
    if isinstance(first, yaml.MappingNode) and {"flags", "backend"} <= {_scalar(k) for k, _ in first.value}:
        return lint_yaml(text, version)
    return lint_manifest(text, version)


# ---------------------------------------------------------------- notebooks


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
