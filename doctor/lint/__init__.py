"""Article lint: catch the deployment article's invented or wrong configuration idioms and name the real ones.

    lint_path(Path("post.md")) -> list[Finding]   # any text: see doctor.lint.documents for the formats
    lint_python(text) / lint_shell(text) / lint_yaml(text)

Rules are data (rules.yaml). Shell and YAML inputs also go through the backend flag schema, so an unknown
flag that no rule knows still gets "unrecognized arguments ... did you mean".
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from doctor.errors import DoctorError
from doctor.suggest import closest

RULES_FILE = Path(__file__).resolve().parent / "rules.yaml"
_LAUNCHERS = {"vllm": re.compile(r"(^|\s)(vllm\s+serve|vllm\.entrypoints\.openai\.api_server)(\s|$)"),
              "sglang": re.compile(r"(^|\s)sglang\.launch_server(\s|$)")}


# Calls whose keyword arguments are the backend's engine/server arguments (checked against its flag schema).
_ENGINE_CALLS = {"LLM": "vllm", "LLMEngine": "vllm", "AsyncLLMEngine": "vllm", "EngineArgs": "vllm",
                 "AsyncEngineArgs": "vllm", "Runtime": "sglang", "Engine": "sglang", "ServerArgs": "sglang"}


_SCHEMA_SOURCE = "the backend's argument parser, extracted from its published wheels (doctor/flags/schemas)"


class LintError(DoctorError):
    """The input cannot be linted (unreadable, binary, not parseable)."""


SEVERITIES = ("error", "warning")


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


def _finding(rule: Rule, line: int, found: str) -> Finding:
    return Finding(rule.id, line, found, rule.wrong, rule.fix, rule.did_you_mean, rule.severity, rule.idiom,
                   rule.source)


def _kwarg_findings(name: str, value: Any, line: int, shown: str) -> list[Finding]:
    key = name.lstrip("-").replace("-", "_")
    out = []
    for rule in rules():
        if rule.match.get("kwarg") != key:
            continue
        wanted = rule.match.get("value")
        if wanted is not None and str(value).strip("'\"").lower() != str(wanted).lower():
            continue
        out.append(_finding(rule, line, shown))
    return out


# ---------------------------------------------------------------- Python


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


# Repairs for the shapes pasted code takes: `\  # comment` after a line continuation, and `f(a=1, ...)` where
# the author elided the other arguments (a positional Ellipsis after keywords is a SyntaxError).
_REPAIRS = ((re.compile(r"\\[ \t]+#[^\n]*"), "\\\\"), (re.compile(r",[ \t]*\.\.\.[ \t]*\)"), ")"))


def _repaired(text: str) -> str:
    for pattern, replacement in _REPAIRS:
        text = pattern.sub(replacement, text)
    return text


def _parse(text: str) -> ast.Module | None:
    for candidate in (text, _repaired(text)):
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
    return None


def parses(text: str) -> bool:
    """Whether the whole text is Python (after the pasted-code repairs)."""
    return _parse(text) is not None


def _statement_groups(lines: list[str]) -> list[tuple[int, str]]:
    """Top-level statements (with their continuation lines) as (first line index, text)."""
    groups: list[tuple[int, list[str]]] = []
    depth = 0
    for index, line in enumerate(lines):
        starts = depth == 0 and line[:1] not in ("", " ", "\t", ")", "]", "}") and not (
            groups and groups[-1][1][-1].rstrip().endswith("\\"))
        if starts or not groups:
            groups.append((index, []))
        groups[-1][1].append(line)
        depth = max(0, depth + line.count("(") + line.count("[") + line.count("{")
                    - line.count(")") - line.count("]") - line.count("}"))
    return [(start, "\n".join(body)) for start, body in groups]


def parse_python(text: str) -> list[tuple[ast.Module, int]]:
    """The parse trees of a Python text with the line offset of each: the whole text when it parses (after
    repairs), else every top-level statement that parses on its own (pasted code is often partly pseudo-code).

    Raises LintError when nothing parses."""
    whole = _parse(text)
    if whole is not None:
        return [(whole, 0)]
    parts = [(tree, start) for start, chunk in _statement_groups(text.splitlines())
             if chunk.strip() and (tree := _parse(chunk)) is not None]
    if not parts:
        try:
            ast.parse(_repaired(text))
        except SyntaxError as exc:
            raise LintError(f"not valid Python (line {exc.lineno}): {exc.msg}") from exc
        except ValueError as exc:
            raise LintError(f"not valid Python: {exc}") from exc
    return parts


@dataclass
class PythonScan:
    """What the Python rules saw, kept across the snippets of one document for the rules that span them."""

    findings: list[Finding]
    spark_fraction: tuple[int, str] | None = None
    max_tp: int = 0


def lint_python(text: str, version: str | None = None) -> list[Finding]:
    """Lint Python source with `ast` (never executed): keyword arguments, calls, imports, Spark config.

    Keyword arguments of engine constructors (LLM, EngineArgs, sglang Runtime/Engine...) are also checked
    against the backend's flag schema: unknown names get "did you mean", literal values get choice/type checks.
    """
    return finish_python([scan_python(text, version)])


def scan_python(text: str, version: str | None = None, offset: int = 0) -> PythonScan:
    """One Python text's findings (lines moved by `offset`) and the facts the cross-snippet rules need."""
    scan = PythonScan([])
    for tree, start in parse_python(text):
        part = _scan_tree(tree, version)
        scan.findings += [f.moved(start + offset) for f in part.findings]
        if part.spark_fraction and not scan.spark_fraction:
            scan.spark_fraction = (part.spark_fraction[0] + start + offset, part.spark_fraction[1])
        scan.max_tp = max(scan.max_tp, part.max_tp)
    return scan


def finish_python(scans: list[PythonScan]) -> list[Finding]:
    """The findings of several scans of one document, with the rules that need all of them applied."""
    findings = [f for scan in scans for f in scan.findings]
    spark_fraction = next((s.spark_fraction for s in scans if s.spark_fraction), None)
    max_tp = max((s.max_tp for s in scans), default=0)
    if spark_fraction and max_tp > 1:
        rule = next(r for r in rules() if r.match.get("spark_fractional_gpu_with_tp"))
        findings.append(_finding(rule, spark_fraction[0], f"{spark_fraction[1]} with tensor_parallel_size={max_tp}"))
    return _dedupe(findings)


def _scan_tree(tree: ast.Module, version: str | None) -> PythonScan:
    findings: list[Finding] = []
    spark_fraction: tuple[int, str] | None = None
    max_tp = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                findings += _call_rules(alias.name, node.lineno, f"from {node.module} import {alias.name}", set())
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        kwargs = {kw.arg for kw in node.keywords if kw.arg}
        findings += _call_rules(name, node.lineno, f"{name}(...)", kwargs)
        if name in _ENGINE_CALLS:
            findings += _engine_kwargs(node, _ENGINE_CALLS[name], version)
        for kw in node.keywords:
            if kw.arg is None:
                continue
            value = _literal(kw.value)
            shown = f"{kw.arg}={ast.unparse(kw.value)}"
            findings += _kwarg_findings(kw.arg, value, kw.value.lineno, shown)
            if kw.arg in ("tensor_parallel_size", "tp_size") and isinstance(value, int):
                max_tp = max(max_tp, value)
        if name in ("config", "set") and len(node.args) >= 2:
            key, value = _literal(node.args[0]), _literal(node.args[1])
            if key == "spark.task.resource.gpu.amount" and _fraction(value):
                spark_fraction = (node.args[0].lineno, f'{name}("{key}", "{value}")')
    return PythonScan(findings, spark_fraction, max_tp)


def _engine_kwargs(node: ast.Call, backend: str, version: str | None) -> list[Finding]:
    """Keyword arguments of an engine constructor judged as the equivalent CLI flags."""
    from doctor.flags import load_schema, validate_args

    schema = load_schema(backend, version)
    findings: list[Finding] = []
    for kw in node.keywords:
        if kw.arg is None or any(r.match.get("kwarg") == kw.arg for r in rules()):
            continue
        flag = "--" + kw.arg.replace("_", "-")
        value = _literal(kw.value)
        if schema.lookup(flag) is None:  # keyword arguments must match exactly: no argparse abbreviations
            close = [c for c in [closest(flag, schema.option_strings())] if c]
            findings.append(Finding("FLAG-unknown_kwarg", kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}",
                                    f"not a {backend} {schema.version} engine argument.",
                                    f"see `{backend} --help` for this version",
                                    (close[0][2:].replace("-", "_"),) if close else (),
                                    title="unknown engine argument", source=_SCHEMA_SOURCE))
            continue
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
            continue
        for issue in validate_args([flag, str(value)], schema):
            if issue.kind == "deprecated":
                continue
            hint = (issue.suggestion,) if issue.suggestion else ()
            what = issue.message.replace(f"argument {flag}", f"{backend} {schema.version} argument {kw.arg}")
            findings.append(Finding(f"FLAG-{issue.kind}", kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}",
                                    what + ".", f"see `{backend} --help` (flag {flag})", hint,
                                    title=f"engine argument: {issue.kind}", source=_SCHEMA_SOURCE))
    return findings


def _fraction(value: Any) -> bool:
    try:
        return 0 < float(value) < 1
    except (TypeError, ValueError):
        return False


def _call_rules(name: str, line: int, shown: str, kwargs: set[str]) -> list[Finding]:
    out = []
    for rule in rules():
        if rule.match.get("call") != name:
            continue
        if rule.match.get("with_any_kwarg") and not kwargs:
            continue
        out.append(_finding(rule, line, shown))
    return out


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in sorted(findings, key=lambda f: (f.line, f.rule_id)):
        if (f.rule_id, f.line, f.found) not in seen:
            seen.add((f.rule_id, f.line, f.found))
            out.append(f)
    return out


# ---------------------------------------------------------------- shell and YAML


def _launch_lines(text: str) -> list[tuple[int, str, str]]:
    """(first line number, backend, joined command) for each backend launch in a shell script."""
    out, buffer, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buffer:
            start = number
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        buffer += line
        for backend, pattern in _LAUNCHERS.items():
            if pattern.search(buffer) and not buffer.lstrip().startswith("#"):
                out.append((start, backend, buffer))
                break
        buffer = ""
    return out


def _backend_args(backend: str, command: str) -> list[str]:
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError as exc:
        raise LintError(f"cannot split shell command: {exc}") from exc
    for i, token in enumerate(tokens):
        if token in ("serve",) and i and tokens[i - 1].endswith("vllm"):
            return tokens[i + 1:]
        if token in ("sglang.launch_server", "vllm.entrypoints.openai.api_server"):
            return tokens[i + 1:]
    return []


def lint_args(args: list[str], backend: str, line: int, version: str | None = None) -> list[Finding]:
    """Lint backend CLI arguments: the idiom rules first, then the flag schema for everything else."""
    from doctor.flags import load_schema, validate_args

    findings: list[Finding] = []
    ruled: set[str] = set()
    for i, token in enumerate(args):
        if not token.startswith("--"):
            continue
        name, _, inline = token.partition("=")
        value = inline or (args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else "")
        hits = _kwarg_findings(name, value, line, f"{name} {value}".strip())
        if hits:
            ruled.add(name)
            findings += hits
    for issue in validate_args(args, load_schema(backend, version)):
        if issue.flag in ruled or issue.flag.replace("_", "-") in {r.replace("_", "-") for r in ruled}:
            continue
        hint = (issue.suggestion,) if issue.suggestion else ()
        findings.append(Finding(f"FLAG-{issue.kind}", line, issue.flag, issue.message.split(" (did you mean")[0] + ".",
                                f"check `{backend} --help` for this version", hint,
                                title=f"command-line flag: {issue.kind}", source=_SCHEMA_SOURCE))
    return findings


def lint_shell(text: str, version: str | None = None) -> list[Finding]:
    """Lint every `vllm serve` / `python -m sglang.launch_server` command in a shell script."""
    findings: list[Finding] = []
    for line, backend, command in _launch_lines(text):
        findings += lint_args(_backend_args(backend, command), backend, line, version)
    return _dedupe(findings)


def lint_yaml(text: str, version: str | None = None) -> list[Finding]:
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
    if backend not in _LAUNCHERS:
        raise LintError(f"field 'backend': unknown backend {backend!r}")
    lines = {m.group(1): n for n, raw in enumerate(text.splitlines(), 1) if (m := re.match(r"\s+([\w-]+):", raw))}
    findings: list[Finding] = []
    for flag, value in (data.get("flags") or {}).items():
        findings += lint_args(render_flag(str(flag), value), backend, lines.get(str(flag), 1), version)
    return _dedupe(findings)


def lint_path(path: Path, version: str | None = None) -> list[Finding]:
    """Lint one file of any kind users paste (see doctor.lint.documents)."""
    from doctor.lint.documents import lint_file

    return lint_file(path, version)
