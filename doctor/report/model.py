"""The report model that every renderer reads and every exit code is derived from."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from doctor import __version__
from doctor.facts.model import Facts
from doctor.results import Result, Status, counts, worst

REPORT_SCHEMA = "qwen-doctor.report"
REPORT_SCHEMA_VERSION = 1


@dataclass
class Report:
    """Everything one run found: facts summary, check results and optional sections (plan, deployment...)."""

    command: str
    results: list[Result]
    facts_summary: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] | None = None
    created_at: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    tool_version: str = __version__

    @property
    def status(self) -> Status:
        return worst(self.results)

    def counts(self) -> dict[str, int]:
        return counts(self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool_version": self.tool_version,
            "created_at": self.created_at,
            "command": self.command,
            "status": self.status.value,
            "counts": self.counts(),
            "facts_summary": self.facts_summary,
            "results": [r.to_dict() for r in self.results],
            "sections": self.sections,
            **({"facts": self.facts} if self.facts is not None else {}),
        }


def summarize(facts: Facts, source: str) -> dict[str, Any]:
    """The few facts a reader wants at the top of a report."""
    gpus = facts.gpus
    names: dict[str, int] = {}
    for g in gpus:
        names[g.get("name") or "unknown"] = names.get(g.get("name") or "unknown", 0) + 1
    pkgs = {k: facts.package_version(k) for k in ("torch", "vllm", "sglang", "transformers", "flashinfer", "ray")}
    return {
        "source": source,
        "hostname": facts.data.get("hostname"),
        "collected_at": facts.data.get("collected_at"),
        "driver_version": facts.nvml.get("driver_version"),
        "cuda_driver_version": facts.nvml.get("cuda_driver_version"),
        "nvml": None if facts.nvml_available else facts.nvml.get("error"),
        "gpus": ", ".join(f"{n} x {name}" for name, n in names.items()) or "none",
        "packages": {k: v for k, v in pkgs.items() if v},
        "python": facts.host.get("python"),
    }


def exit_code(results: list[Result], fail_on: str = "fail") -> int:
    """0 when clean, 1 when a check failed or crashed (or warned, with fail_on='warn')."""
    threshold = Status.WARN if fail_on == "warn" else Status.FAIL
    return 1 if worst(results).rank >= threshold.rank else 0
