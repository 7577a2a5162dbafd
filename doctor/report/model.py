"""The report model that every renderer reads and every exit code is derived from."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from doctor import __version__
from doctor.facts.model import Facts
from doctor.redact import redact_document
from doctor.report.sections import as_status
from doctor.results import Result, Status, counts, worst

REPORT_SCHEMA = "qwen-doctor.report"
REPORT_SCHEMA_VERSION = 1


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Report:
    """Everything one run found: facts summary, check results and optional sections (plan, deployment...).

    `sections` follows the shapes documented in `doctor.report.sections`; `argv` is the command line as typed.
    Renderers read a redacted copy (`redacted()`), so secrets never reach any output format.
    """

    command: str
    results: list[Result]
    facts_summary: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] | None = None
    created_at: str = field(default_factory=now)
    tool_version: str = __version__
    argv: list[str] = field(default_factory=list)
    finished_at: str | None = None
    redaction: dict[str, bool] | None = None

    @property
    def status(self) -> Status:
        return worst(self.results + section_results(self.sections))

    def counts(self) -> dict[str, int]:
        return counts(self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool_version": self.tool_version,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "command": self.command,
            "argv": list(self.argv),
            "status": self.status.value,
            "counts": self.counts(),
            "redaction": self.redaction,
            "facts_summary": self.facts_summary,
            "results": [r.to_dict() for r in self.results],
            "sections": self.sections,
            **({"facts": self.facts} if self.facts is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        """The inverse of `to_dict` (derived keys such as status and counts are recomputed)."""
        return cls(command=data["command"], results=[Result.from_dict(r) for r in data.get("results", [])],
                   facts_summary=data.get("facts_summary") or {}, sections=data.get("sections") or {},
                   facts=data.get("facts"), created_at=data["created_at"], tool_version=data["tool_version"],
                   argv=list(data.get("argv") or []), finished_at=data.get("finished_at"),
                   redaction=data.get("redaction"))

    def redacted(self, hosts: bool = False) -> "Report":
        """A copy with secrets (and with `hosts`, hostnames and IPs) replaced everywhere and control characters
        from logs shown as escapes (`doctor.textsafe`): the one redaction pass every output format reads."""
        if self.redaction is not None and (self.redaction.get("hosts") or not hosts):
            return self
        plain = json.loads(json.dumps(self.to_dict(), default=str))
        doc = redact_document(plain, hosts=hosts, visible=True)
        doc["redaction"] = {"secrets": True, "hosts": hosts}
        return Report.from_dict(doc)


def section_results(sections: dict[str, Any]) -> list[Result]:
    """Exercises are verdicts too: they count toward the report's overall status."""
    out = []
    for ex in sections.get("exercises") or []:
        if isinstance(ex, dict):
            out.append(Result(check_id=str(ex.get("name")), title=str(ex.get("name")), category="exercises",
                              severity="high", status=as_status(ex.get("status")),
                              summary=str(ex.get("summary") or "")))
    return out


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
        "gpus": ", ".join(f"{n} x {name}" for name, n in names.items())
        or ("none" if facts.knows("gpus") else "not recorded"),
        "packages": {k: v for k, v in pkgs.items() if v},
        "python": facts.host.get("python"),
        "gpu_table": [gpu_row(g) for g in gpus],
    }


def gpu_row(gpu: dict[str, Any]) -> dict[str, Any]:
    """One GPU as a report table row (memory in GiB)."""
    mem = gpu.get("memory") or {}
    links = [link for link in gpu.get("nvlink") or [] if isinstance(link, dict)]
    active = sum(1 for link in links if link.get("state") == "active")
    return {
        "index": gpu.get("index"),
        "name": gpu.get("name"),
        "compute_capability": gpu.get("compute_capability"),
        "memory_total_gib": _gib(mem.get("total")),
        "memory_used_gib": _gib(mem.get("used")),
        "mig": bool((gpu.get("mig") or {}).get("current")),
        "ecc": (gpu.get("ecc") or {}).get("current"),
        "persistence_mode": gpu.get("persistence_mode"),
        "nvlink_active": active,
        "pci_bus_id": gpu.get("pci_bus_id"),
    }


def _gib(value: Any) -> float | None:
    return round(value / 2**30, 1) if isinstance(value, (int, float)) else None


def exit_code(results: list[Result], fail_on: str = "fail") -> int:
    """0 when clean, 1 when a check failed or crashed (or warned, with fail_on='warn')."""
    threshold = Status.WARN if fail_on == "warn" else Status.FAIL
    return 1 if worst(results).rank >= threshold.rank else 0
