"""The argv tokenizer: backend launch commands in shell text, their backend arguments, and flag / value pairs.

    launch_commands("vllm serve M \\\n  --tp 2") -> [(1, "vllm", "vllm serve M   --tp 2")]
    backend_args("vllm", command) -> ["M", "--tp", "2"]
    flag_values(["--tp", "2", "--x=y"]) -> [("--tp", "2"), ("--x", "y")]
"""

from __future__ import annotations

import re

from doctor.lint.findings import LintError

LAUNCHERS = {"vllm": re.compile(r"(^|\s)(vllm\s+serve|vllm\.entrypoints\.openai\.api_server)(\s|$)"),
             "sglang": re.compile(r"(^|\s)sglang\.launch_server(\s|$)")}


def launch_commands(text: str) -> list[tuple[int, str, str]]:
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
        for backend, pattern in LAUNCHERS.items():
            if pattern.search(buffer) and not buffer.lstrip().startswith("#"):
                out.append((start, backend, buffer))
                break
        buffer = ""
    return out


def backend_args(backend: str, command: str) -> list[str]:
    """The words after `vllm serve` / `-m sglang.launch_server` / `-m vllm.entrypoints.openai.api_server`, read by
    the deployment's own foreign-command reader (doctor.deployment.launch_in)."""
    from doctor.deployment import DeploymentError, launch_in

    try:
        deployment = launch_in(command, backend)
    except DeploymentError as exc:
        raise LintError(f"cannot split shell command: {exc}") from exc
    return deployment.engine_args() if deployment is not None else []


def flag_values(args: list[str]) -> list[tuple[str, str]]:
    """Each `--flag` with its value: `--flag=V`, else the next word unless it is a flag, else ''."""
    out = []
    for i, token in enumerate(args):
        if not token.startswith("--"):
            continue
        name, _, inline = token.partition("=")
        out.append((name, inline or (args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else "")))
    return out
