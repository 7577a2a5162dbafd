"""Article lint: catch the deployment article's invented or wrong configuration idioms and name the real ones.

    lint_path(Path("deploy.py")) -> list[Finding]     # .py (ast, never executed), .yaml/.yml profile, shell
    lint_python(text) / lint_shell(text) / lint_yaml(text)

Rules are data (rules.yaml). Shell and YAML inputs also go through the backend flag schema, so an unknown
flag that no rule knows still gets "unrecognized arguments ... did you mean".
"""

from __future__ import annotations

import ast
import difflib
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from doctor.errors import DoctorError

RULES_FILE = Path(__file__).resolve().parent / "rules.yaml"
_LAUNCHERS = {"vllm": re.compile(r"(^|\s)(vllm\s+serve|vllm\.entrypoints\.openai\.api_server)(\s|$)"),
              "sglang": re.compile(r"(^|\s)sglang\.launch_server(\s|$)")}


# Calls whose keyword arguments are the backend's engine/server arguments (checked against its flag schema).
_ENGINE_CALLS = {"LLM": "vllm", "LLMEngine": "vllm", "AsyncLLMEngine": "vllm", "EngineArgs": "vllm",
                 "AsyncEngineArgs": "vllm", "Runtime": "sglang", "Engine": "sglang", "ServerArgs": "sglang"}


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


@dataclass(frozen=True)
class Finding:
    """A rule (or the flag schema) firing at one line."""

    rule_id: str
    line: int
    found: str
    wrong: str
    fix: str
    did_you_mean: tuple[str, ...] = ()

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
        out.append(Rule(entry["id"], entry["idiom"], entry["match"], entry["wrong"], entry["fix"],
                        tuple(entry.get("did_you_mean", ())), entry["source"]))
    return tuple(out)


def _finding(rule: Rule, line: int, found: str) -> Finding:
    return Finding(rule.id, line, found, rule.wrong, rule.fix, rule.did_you_mean)


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


def _parse_python(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError:
        pass
    repaired = re.sub(r"\\[ \t]+#[^\n]*", "\\\\", text)  # the article's `\  # comment` continuations
    try:
        return ast.parse(repaired)
    except SyntaxError as exc:
        raise LintError(f"not valid Python (line {exc.lineno}): {exc.msg}") from exc


def lint_python(text: str, version: str | None = None) -> list[Finding]:
    """Lint Python source with `ast` (never executed): keyword arguments, calls, imports, Spark config.

    Keyword arguments of engine constructors (LLM, EngineArgs, sglang Runtime/Engine...) are also checked
    against the backend's flag schema: unknown names get "did you mean", literal values get choice/type checks.
    """
    tree = _parse_python(text)
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
                spark_fraction = (node.lineno, f'{name}("{key}", "{value}")')
    if spark_fraction and max_tp > 1:
        rule = next(r for r in rules() if r.match.get("spark_fractional_gpu_with_tp"))
        findings.append(_finding(rule, spark_fraction[0], f"{spark_fraction[1]} with tensor_parallel_size={max_tp}"))
    return _dedupe(findings)


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
            close = difflib.get_close_matches(flag, schema.option_strings(), n=1, cutoff=0.6)
            findings.append(Finding("FLAG-unknown_kwarg", kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}",
                                    f"not a {backend} {schema.version} engine argument.",
                                    f"see `{backend} --help` for this version",
                                    (close[0][2:].replace("-", "_"),) if close else ()))
            continue
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
            continue
        for issue in validate_args([flag, str(value)], schema):
            if issue.kind == "deprecated":
                continue
            hint = (issue.suggestion,) if issue.suggestion else ()
            what = issue.message.replace(f"argument {flag}", f"{backend} {schema.version} argument {kw.arg}")
            findings.append(Finding(f"FLAG-{issue.kind}", kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}",
                                    what + ".", f"see `{backend} --help` (flag {flag})", hint))
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
                                f"check `{backend} --help` for this version", hint))
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
    """Lint one file, choosing the parser by suffix (.py, .yaml/.yml, anything else as shell)."""
    from doctor.safeio import LINT_MAX_BYTES, InputError, read_bytes

    try:
        raw = read_bytes(path, "file", LINT_MAX_BYTES)
    except InputError as exc:
        raise LintError(str(exc).replace(f"cannot read file {path}: ", "cannot read: ")) from None
    if b"\x00" in raw:
        raise LintError("binary file, not a profile, shell script or Python file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LintError(f"not UTF-8 text (byte {exc.start})") from exc
    if path.suffix == ".py":
        return lint_python(text, version)
    if path.suffix in (".yaml", ".yml"):
        return lint_yaml(text, version)
    return lint_shell(text, version)
