"""YAML: qwen-doctor profiles, and compose / Kubernetes / Helm files (container entrypoint, command, args)."""

from __future__ import annotations

import re
import shlex
from typing import Iterator

import yaml

from doctor.lint.findings import Finding, LintError
from doctor.lint.profile import lint_profile
from doctor.lint.shell import lint_shell

# The engine images whose entrypoint is the server: their containers' args are that server's flags.
_IMAGE_LAUNCHERS = (("vllm-openai", "vllm serve"),)
_LAUNCH = re.compile(r"vllm\s+serve|sglang\.launch_server|vllm\.entrypoints")


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
        return lint_profile(text, version)
    return lint_manifest(text, version)
