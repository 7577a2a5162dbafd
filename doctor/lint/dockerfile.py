"""Dockerfiles and Containerfiles: RUN, CMD and ENTRYPOINT in shell and exec form (ENTRYPOINT + CMD joined)."""

from __future__ import annotations

import json
import re
import shlex
from typing import Iterator

from doctor.lint.findings import Finding
from doctor.safeio import InputError, parse_json
from doctor.lint.shell import lint_shell

_INSTRUCTION = re.compile(r"^\s*(RUN|CMD|ENTRYPOINT|ENV)\s+(.*)$", re.I)


def _instructions(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, INSTRUCTION, argument) with backslash continuations joined and comments dropped."""
    buffer, start, keyword = "", 0, ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buffer:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = _INSTRUCTION.match(line)
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
