"""Planned vs logged for one vLLM boot of tests/data/published_kv/ (an entry with `predict`): the figures its
log lines name (weights, available KV memory, KV tokens) next to the plan of its configuration."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from doctor.planner.hardware import GIB

WEIGHTS = re.compile(r"(?:Model loading took|Actual usage is) ([\d.]+) GiB (?:memory|for weight)")
_AVAILABLE = re.compile(r"(?:Available KV cache memory:|Current kv cache memory in use is) (-?[\d.]+) GiB")
_COMMITTED = re.compile(r"Memory after warmup: .*? KV cache blocks \(([\d.]+) GiB\) fit within")   # vLLM 0.34+
_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
# club-3090's report script transcribes both figures as "KV pool 16.58 GiB / 3,292,687 tok" (BENCHMARKS.md).
_TRANSCRIBED = re.compile(r"KV pool ([\d.]+) GiB / \**([\d,]+) tok")


@dataclass(frozen=True)
class Residual:
    """Planned vs logged for one boot (relative errors: planned / logged - 1)."""

    id: str
    mode: str                       # "plan" (end to end), "overhead" (logged weights) or "weights" (only)
    logged_tokens: int | None
    planned_tokens: int
    logged_weights_gib: float | None
    planned_weights_gib: float
    logged_available_gib: float | None
    planned_available_gib: float

    @property
    def tokens_error(self) -> float | None:
        return None if self.logged_tokens is None else self.planned_tokens / self.logged_tokens - 1

    @property
    def available_error(self) -> float | None:
        if self.logged_available_gib is None:
            return None
        return self.planned_available_gib / self.logged_available_gib - 1

    @property
    def available_gap_gib(self) -> float | None:
        """Planned less logged KV memory (GiB): the error of the overhead terms themselves, defined also where the
        cache is small or did not fit (a negative "Available KV cache memory")."""
        if self.logged_available_gib is None or self.mode == "weights":
            return None
        return self.planned_available_gib - self.logged_available_gib

    @property
    def kv_error(self) -> float | None:
        """The KV-capacity residual: of tokens where the log names them, else of the KV memory (None in
        "weights" mode, and where the logged KV memory is not positive: see available_gap_gib)."""
        if self.mode == "weights":
            return None
        if self.logged_tokens is None and self.logged_available_gib is not None and self.logged_available_gib <= 0:
            return None
        error = self.tokens_error if self.tokens_error is not None else self.available_error
        if error is None:
            raise ValueError(f"entry {self.id}: neither 'GPU KV cache size' nor the KV memory is logged")
        return error

    @property
    def weights_error(self) -> float | None:
        if self.logged_weights_gib is None or self.mode == "overhead":
            return None
        return self.planned_weights_gib / self.logged_weights_gib - 1


def first_match(pattern: re.Pattern[str], lines: list[str]) -> str | None:
    return next((m.group(1) for line in lines if (m := pattern.search(line))), None)


def residual(entry: dict[str, Any]) -> Residual:
    """Plan one `predict` entry (with the coefficients in force) and compare with its log lines."""
    from doctor.models import get_model
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.plan import Measured, plan

    # a boot whose log does not quote its weights or pool may state them beside it (`weights_gib`: one rank's
    # share of the checkpoint's indexed bytes; `kv_tokens`: a pool the source transcribes outside engine lines)
    weights = first_match(WEIGHTS, entry["log"]) or (str(entry["weights_gib"]) if "weights_gib" in entry else None)
    mode = entry["predict"] if entry["predict"] in ("overhead", "weights") else "plan"
    if mode == "overhead" and weights is None:
        raise ValueError(f"entry {entry['id']}: predict: overhead needs a 'Model loading took' line")
    measured = Measured(weights_bytes=int(float(weights) * GIB)) if mode == "overhead" else None
    cfg = ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"])
    p = plan(get_model(entry["model"]), parse_gpus(entry["gpus"]), cfg, measured)
    rank = min(p.ranks, key=lambda r: r.kv_tokens)
    transcribed = next((m for line in entry["log"] if (m := _TRANSCRIBED.search(line))), None)
    available = (first_match(_COMMITTED, entry["log"]) or first_match(_AVAILABLE, entry["log"])
                 or (transcribed.group(1) if transcribed else None))
    tokens = (first_match(_TOKENS, entry["log"]) or (transcribed.group(2) if transcribed else None)
              or (str(entry["kv_tokens"]) if "kv_tokens" in entry else None))
    return Residual(entry["id"], mode, int(tokens.replace(",", "")) if tokens else None, p.kv_tokens,
                    float(weights) if weights else None, rank.weights["total"] / GIB,
                    float(available) if available else None, rank.cache_bytes / GIB)
