"""Residuals of the planner against real boot logs, and the error band printed with every plan.

An entry of tests/data/published_kv/*.yaml with `predict: true` names everything a full prediction needs
(model, GPUs, vLLM version, flags); its log lines give the logged weights, available KV memory and tokens.
`predict: overhead` entries are planned with their logged weights (the checkpoint is not one the registry
describes, e.g. a merged fine-tune): they test the overhead terms alone. `predict: weights` entries (a boot
that stopped after loading) test the weights alone.
`band()` is the largest leave-one-out residual of KV capacity over those boots (calibration.yaml, written
by bench/plan_accuracy.py and checked against the data by tests/test_planner_accuracy.py): each boot is
planned with coefficients fitted without it (doctor/planner/fit.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version

from doctor.planner.hardware import GIB

_WEIGHTS = re.compile(r"(?:Model loading took|Actual usage is) ([\d.]+) GiB (?:memory|for weight)")
_AVAILABLE = re.compile(r"(?:Available KV cache memory:|Current kv cache memory in use is) ([\d.]+) GiB")
_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")


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
    def kv_error(self) -> float | None:
        """The KV-capacity residual: of tokens where the log names them, else of the KV memory (None in
        "weights" mode)."""
        if self.mode == "weights":
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


def _find(pattern: re.Pattern[str], lines: list[str]) -> str | None:
    return next((m.group(1) for line in lines if (m := pattern.search(line))), None)


def residual(entry: dict[str, Any]) -> Residual:
    """Plan one `predict` entry (with the coefficients in force) and compare with its log lines."""
    from doctor.models import get_model
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.plan import Measured, plan

    weights = _find(_WEIGHTS, entry["log"])
    mode = entry["predict"] if entry["predict"] in ("overhead", "weights") else "plan"
    if mode == "overhead" and weights is None:
        raise ValueError(f"entry {entry['id']}: predict: overhead needs a 'Model loading took' line")
    measured = Measured(weights_bytes=int(float(weights) * GIB)) if mode == "overhead" else None
    cfg = ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"])
    p = plan(get_model(entry["model"]), parse_gpus(entry["gpus"]), cfg, measured)
    rank = min(p.ranks, key=lambda r: r.kv_tokens)
    available = _find(_AVAILABLE, entry["log"])
    tokens = _find(_TOKENS, entry["log"])
    return Residual(entry["id"], mode, int(tokens.replace(",", "")) if tokens else None, p.kv_tokens,
                    float(weights) if weights else None, rank.weights["total"] / GIB,
                    float(available) if available else None, rank.cache_bytes / GIB)


def residuals(entries: list[dict[str, Any]], leave_one_out: bool = False) -> list[Residual]:
    """Residuals of every `predict` entry; leave_one_out: each planned with coefficients fitted without it."""
    from doctor.planner import fit
    from doctor.planner.coefficients import using

    predicted = [e for e in entries if e.get("predict")]
    if not leave_one_out:
        return [residual(e) for e in predicted]
    held_out = fit.leave_one_out(entries)
    out = []
    for e in predicted:
        with using(held_out[e["id"]]):
            out.append(residual(e))
    return out


def release(version: str) -> str:
    """The release a build belongs to: 0.22.1rc1.dev26+g4721bb3aa -> 0.22.1 (the calibrated region is per release)."""
    try:
        return Version(version).base_version
    except InvalidVersion:
        return version


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    """The shipped summary of the residuals (calibration.yaml)."""
    return yaml.safe_load(resources.files("doctor.planner").joinpath("calibration.yaml").read_text(encoding="utf-8"))


def band(gpu_bytes: int, tp: int, version: str, quantization: str) -> tuple[float | None, str]:
    """(relative band, why): the largest leave-one-out KV residual where the plan is inside the calibrated
    region (the span of the logged boots), None where it is not (then the error is unknown and the plan
    says so)."""
    cal = calibration()
    region = cal["region"]
    outside = []
    if gpu_bytes < region["min_gpu_gib"] * GIB:
        outside.append(f"GPUs under {region['min_gpu_gib']} GiB")
    if tp > region["max_tp"]:
        outside.append(f"TP > {region['max_tp']}")
    if release(version) not in region["versions"]:
        outside.append(f"vLLM {version}")
    if quantization not in region["quantization"]:
        outside.append(f"{quantization} checkpoints")
    why = f"largest leave-one-out residual over {cal['boots']} logged boots (bench/plan_accuracy.py)"
    if outside:
        return None, "outside the calibrated boots (" + ", ".join(outside) + "): error not measured"
    return float(cal["kv_tokens_max_abs_error"]), why
