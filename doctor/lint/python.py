"""Python source, read with `ast` (never executed): keyword arguments, calls, imports, Spark configuration.

    lint_python(text) -> [Finding]
    scan_python(text, offset=N) per snippet, then finish_python(scans) for the rules that span a document's snippets
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from doctor.lint.backend_args import combination_findings
from doctor.lint.findings import SCHEMA_SOURCE, Finding, LintError, dedupe, finding_for, kwarg_findings, rules
from doctor.name_index import closest

# Calls whose keyword arguments are the backend's engine/server arguments (checked against its flag schema).
_ENGINE_CALLS = {"LLM": "vllm", "LLMEngine": "vllm", "AsyncLLMEngine": "vllm", "EngineArgs": "vllm",
                 "AsyncEngineArgs": "vllm", "Runtime": "sglang", "Engine": "sglang", "ServerArgs": "sglang"}

# Repairs for the shapes pasted code takes: `\  # comment` after a line continuation, and `f(a=1, ...)` where
# the author elided the other arguments (a positional Ellipsis after keywords is a SyntaxError).
_REPAIRS = ((re.compile(r"\\[ \t]+#[^\n]*"), "\\\\"), (re.compile(r",[ \t]*\.\.\.[ \t]*\)"), ")"))


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


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
        findings.append(finding_for(rule, spark_fraction[0],
                                    f"{spark_fraction[1]} with tensor_parallel_size={max_tp}"))
    return dedupe(findings)


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
            findings += combination_findings(_as_args(node), _ENGINE_CALLS[name], node.lineno)
        for kw in node.keywords:
            if kw.arg is None:
                continue
            value = _literal(kw.value)
            shown = f"{kw.arg}={ast.unparse(kw.value)}"
            findings += kwarg_findings(kw.arg, value, kw.value.lineno, shown)
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
                                    title="unknown engine argument", source=SCHEMA_SOURCE))
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
                                    title=f"engine argument: {issue.kind}", source=SCHEMA_SOURCE))
    return findings


def _as_args(node: ast.Call) -> list[str]:
    """An engine constructor's literal keyword arguments as the command line they stand for."""
    args: list[str] = []
    for kw in node.keywords:
        value = _literal(kw.value)
        if kw.arg is None or value is None or value is False:
            continue
        args.append("--" + kw.arg.replace("_", "-"))
        if value is not True:
            args.append(json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    return args


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
        out.append(finding_for(rule, line, shown))
    return out
