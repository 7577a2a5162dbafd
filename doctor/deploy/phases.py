"""Start-up phase detection from log lines; the patterns are data (`phases.yaml`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from doctor.errors import DataError


@dataclass(frozen=True)
class PhaseTable:
    """Ordered phases of one backend and the regex of its KV-capacity line."""

    backend: str
    phases: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    kv_tokens: re.Pattern[str]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.phases]

    def phase_of(self, line: str) -> int | None:
        """Index of the latest phase whose pattern matches `line`, or None."""
        hit = None
        for i, (_, patterns) in enumerate(self.phases):
            if any(p.search(line) for p in patterns):
                hit = i
        return hit

    def kv_tokens_in(self, line: str) -> int | None:
        """The KV capacity in tokens when `line` is the backend's KV-cache line."""
        m = self.kv_tokens.search(line)
        return int(m.group("tokens").replace(",", "")) if m else None


@lru_cache(maxsize=None)
def phase_table(backend: str) -> PhaseTable:
    """The validated phase table of `backend` (vllm or sglang)."""
    text = resources.files("doctor.deploy").joinpath("phases.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    entry = data.get(backend) if isinstance(data, dict) else None
    if not isinstance(entry, dict):
        raise DataError(f"phases.yaml: no entry for backend {backend!r}")
    try:
        phases = tuple((p["name"], tuple(re.compile(x) for x in p["patterns"])) for p in entry["phases"])
        kv = re.compile(entry["kv_tokens"])
    except (KeyError, TypeError, re.error) as exc:
        raise DataError(f"phases.yaml: {backend}: {exc}") from exc
    if "tokens" not in kv.groupindex:
        raise DataError(f"phases.yaml: {backend}: kv_tokens needs a (?P<tokens>...) group")
    return PhaseTable(backend, phases, kv)
