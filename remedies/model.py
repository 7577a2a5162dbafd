"""The remedy entry: one documented error signature. The same shape is the YAML schema and the JSON output."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

COMPONENTS = ("vllm", "sglang", "ray", "nccl", "torch", "cuda", "hf", "spark")
SEVERITIES = ("error", "warning", "info")
ID_PATTERN = re.compile(r"^QD-R-(VLLM|SGLANG|RAY|NCCL|TORCH|CUDA|HF|SPARK)-[A-Z0-9]+(-[A-Z0-9]+)*$")
DEFAULT_RANK = 50
WRAPPER_RANK = 90


@dataclass(frozen=True)
class FixStep:
    """One ordered fix step; `applies` narrows it to a version range, e.g. ``sglang>=0.5.23``."""

    text: str
    applies: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "applies": self.applies}

    def render(self) -> str:
        return f"{self.text} [{self.applies}]" if self.applies else self.text


SIGNATURE_PACKAGES = ("vllm", "sglang", "huggingface_hub", "transformers", "ray", "torch")


@dataclass(frozen=True)
class Wording:
    """A source template this entry matches and the releases (PEP 440 specifier) that print it.

    Checked against the mined data in scripts/signatures/<package>.json by tests/test_remedies_signatures.py.
    """

    package: str
    releases: str
    template: str

    def to_dict(self) -> dict[str, str]:
        return {"package": self.package, "releases": self.releases, "template": self.template}


@dataclass(frozen=True)
class Remedy:
    """A documented error: how to recognise it in a log, why it happens and what to change."""

    id: str
    component: str
    severity: str
    title: str
    literal: str
    pattern: str
    why: str
    fix: tuple[FixStep, ...]
    source: tuple[str, ...]
    samples: tuple[str, ...]
    root_cause_rank: int = DEFAULT_RANK
    wrapper: bool = False
    article_claim: str | None = None
    versions: tuple[Wording, ...] = ()
    regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))
    origin: str = field(compare=False, default="")

    @property
    def rank(self) -> int:
        """Lower ranks are closer to the root cause; wrappers come last unless ranked explicitly."""
        return self.root_cause_rank

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (identical keys to the YAML entry)."""
        return {
            "id": self.id,
            "component": self.component,
            "severity": self.severity,
            "title": self.title,
            "literal": self.literal,
            "pattern": self.pattern,
            "why": self.why,
            "fix": [step.to_dict() for step in self.fix],
            "source": list(self.source),
            "samples": list(self.samples),
            "root_cause_rank": self.root_cause_rank,
            "wrapper": self.wrapper,
            "article_claim": self.article_claim,
            "versions": [w.to_dict() for w in self.versions],
        }
