"""Residuals of the planner against real boot logs, and the error band printed with every plan.

An entry of tests/data/published_kv/*.yaml with `predict: true` names everything a full prediction needs
(model, GPUs, vLLM version, flags); its log lines give the logged weights, available KV memory and tokens.
`predict: overhead` entries are planned with their logged weights (the checkpoint is not one the registry
describes, e.g. a merged fine-tune): they test the overhead terms alone. `predict: weights` entries (a boot
that stopped after loading) test the weights alone.
The band a vLLM plan prints is its hardware class's (doctor/planner/bands.py, calibration.yaml `classes`, written
by bench/plan_accuracy.py and checked against the data by tests/test_planner_accuracy.py): each boot is
planned with coefficients fitted without it (doctor/planner/fit.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from doctor.deployment.table import option
from doctor.planner.coefficients import Coefficients, calibration, using
from doctor.planner.hardware import GIB
from doctor.planner.residual import WEIGHTS, Residual, first_match, residual
from doctor.planner.sglang_bootlog import KV_TOKENS, LOAD_BEGIN, LOAD_END, MAMBA_SLOTS, RUNNING


def residuals(entries: list[dict[str, Any]], leave_one_out: bool = False) -> list[Residual]:
    """Residuals of every `predict` entry; leave_one_out: each planned with coefficients fitted without it."""
    from doctor.planner import fit

    predicted = [e for e in entries if e.get("predict")]
    if not leave_one_out:
        return [residual(e) for e in predicted]
    held_out = fit.leave_one_out(entries)
    out = []
    for e in predicted:
        with using(held_out[e["id"]]):
            out.append(residual(e))
    return out


def partial_residuals(entries: list[dict[str, Any]],
                      per_entry: Mapping[str, Coefficients] | None = None) -> list[Residual]:
    """Out-of-sample residuals of the partly described boots (no `predict`) that name `plan_as`: the registry
    checkpoint they ran, or one of the same quantization kind as their own unregistered one. Each is planned
    with its logged weights ("overhead" mode) where the log names them (or the entry's `weights_gib` states
    them from the checkpoint's index), else end to end, with the coefficients in
    force, or `per_entry[id]` where given (the WSL2 boots fit.py fits its WSL2 term on: planned leave-one-out)."""
    out = []
    for e in entries:
        if e.get("predict") or not e.get("plan_as"):
            continue
        held = per_entry.get(e["id"]) if per_entry else None
        with using(held) if held is not None else nullcontext():
            out.append(residual({**e, "model": e["plan_as"],
                                 "predict": "overhead" if first_match(WEIGHTS, e["log"]) or "weights_gib" in e
                                 else True}))
    return out


def release(version: str) -> str:
    """The release a build belongs to: 0.22.1rc1.dev26+g4721bb3aa -> 0.22.1 (the calibrated region is per release)."""
    try:
        return Version(version).base_version
    except InvalidVersion:
        return version


# SGLang boots (tests/data/published_kv/sglang*.yaml): entries carry `sglang: VERSION` and `sglang_predict`
# ("plan": planned end to end from model, GPUs and flags; "pools": the pools recomputed from the logged free
# memory around the weights load, which tests the pool accounting alone), never `predict`, so the vLLM fit above
# never sees them.


@dataclass(frozen=True)
class SglangResidual:
    """Planned vs logged pools of one SGLang boot (relative errors: planned / logged - 1)."""

    id: str
    mode: str                       # "plan" or "pools"
    version: str
    logged_tokens: int
    planned_tokens: int
    logged_slots: int | None        # max_mamba_cache_size
    planned_slots: int
    logged_running: int | None      # max_running_requests
    planned_running: int
    logged_weights_gib: float | None
    planned_weights_gib: float | None

    @property
    def tokens_error(self) -> float:
        return self.planned_tokens / self.logged_tokens - 1

    @property
    def slots_error(self) -> float | None:
        return None if not self.logged_slots else self.planned_slots / self.logged_slots - 1

    @property
    def weights_error(self) -> float | None:
        if self.logged_weights_gib is None or self.planned_weights_gib is None:
            return None
        return self.planned_weights_gib / self.logged_weights_gib - 1


def _sglang_found(entry: dict[str, Any], pattern: re.Pattern[str], group: int = 1) -> str | None:
    return next((m.group(group) for line in entry["log"] if (m := pattern.search(line))), None)


def sglang_residual(entry: dict[str, Any], mode: str | None = None) -> SglangResidual:
    """Plan one `sglang_predict` entry in `mode` (default: its first) and compare with its log lines (the first
    "Load weight" lines: the target model's). Pools without a `geometry` take the registry model's."""
    from doctor.models import get_model
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.plan import plan
    from doctor.planner.sglang_kv import POST_LOAD_BYTES, sglang_geometry, sglang_pools

    modes = entry["sglang_predict"]
    mode = mode or (modes if isinstance(modes, str) else modes[0])
    tokens = _sglang_found(entry, KV_TOKENS)
    if tokens is None:
        raise ValueError(f"entry {entry['id']}: no 'KV Cache is allocated. #tokens' line")
    slots, running = _sglang_found(entry, MAMBA_SLOTS), _sglang_found(entry, RUNNING)
    weights = _sglang_found(entry, LOAD_END, 2)
    cfg = ServeConfig(backend="sglang", backend_version=str(entry["sglang"]), **entry["flags"])
    if mode == "plan":
        p = plan(get_model(entry["model"]), parse_gpus(entry["gpus"]), cfg)
        rank = min(p.ranks, key=lambda r: r.kv_tokens)
        # the first "Load weight end" line is the target's load: the MTP head / drafter loads on its own line
        target = rank.weights["total"] - rank.weights.get("mtp", 0) - rank.weights.get("drafter", 0)
        planned = (rank.kv_tokens, rank.mamba_slots, rank.max_running_requests, target / GIB)
    elif mode == "pools":
        end = _sglang_found(entry, LOAD_END)
        if end is None or weights is None or cfg.mem_fraction_static is None:
            raise ValueError(f"entry {entry['id']}: pools need the 'Load weight end' line and mem_fraction_static")
        # "mem usage" is the free memory before the load less after it (model_runner.py load_model)
        begin = float(_sglang_found(entry, LOAD_BEGIN) or float(end) + float(weights))
        cfg = cfg.with_(prefix_caching=cfg.prefix_caching is not False)      # the radix cache is on by default
        geometry = entry.get("geometry") or sglang_geometry(get_model(entry["model"]), cfg)
        rest = int((float(end) - begin * (1 - cfg.mem_fraction_static)
                    - geometry.get("mm_reservation_mib", 0) / 1024) * GIB) - POST_LOAD_BYTES
        pools = sglang_pools(rest, geometry["cell_bytes"], geometry["mamba_cache_per_req"], cfg,
                             cfg.max_model_len or geometry["context_len"])
        planned = (pools.max_total_num_tokens, pools.mamba_slots, pools.max_running_requests, None)
    else:
        raise ValueError(f"entry {entry['id']}: sglang_predict must be 'plan' or 'pools', not {mode!r}")
    return SglangResidual(entry["id"], mode, str(entry["sglang"]), int(tokens), planned[0],
                          int(slots) if slots else None, planned[1], int(running) if running else None,
                          planned[2], float(weights) if weights and mode == "plan" else None, planned[3])


def sglang_residuals(entries: list[dict[str, Any]]) -> list[SglangResidual]:
    """Residuals of every `sglang_predict` entry, one row per mode it names."""
    out = []
    for e in entries:
        modes = e.get("sglang_predict") or []
        for mode in [modes] if isinstance(modes, str) else modes:
            out.append(sglang_residual(e, mode))
    return out


def sglang_band(gpu_bytes: int, tp: int, version: str, quantization: str,
                default_fraction: bool = False, speculative: str = "none",
                gpu_class: str | None = None) -> tuple[float | None, str]:
    """(relative band, why) of an SGLang plan: the largest KV-token residual over the logged SGLang boots
    (calibration.yaml `sglang`) where the plan is inside the span of the boots planned end to end (GPU size and
    `gpu_class`, planner.hardware.hardware_class, among them), else None.
    A plan that leaves --mem-fraction-static to SGLang's default formula, or drafts with `speculative`
    (ServeConfig.speculative_kind), is inside only if a logged boot did."""
    cal = calibration().get("sglang") or {}
    region = cal.get("region") or {}
    if not region:
        return None, "no SGLang boot planned end to end in the calibration set"
    outside = []
    if gpu_bytes < region["min_gpu_gib"] * GIB:
        outside.append(f"GPUs under {region['min_gpu_gib']} GiB")
    if gpu_class is not None and gpu_class not in region.get("hardware_classes", [gpu_class]):
        outside.append(f"{gpu_class} GPUs")
    if tp > region["max_tp"]:
        outside.append(f"TP > {region['max_tp']}")
    if version not in region["versions"]:
        outside.append(f"SGLang {version}")
    if quantization not in region["quantization"]:
        outside.append(f"{quantization} checkpoints")
    if default_fraction and not region.get("default_fraction"):
        outside.append(f"{option('mem_fraction_static')} left to its default")
    if speculative not in region.get("speculative", ["none"]):
        outside.append(f"speculative decoding by {speculative}")
    if outside:
        return None, "outside the logged SGLang boots (" + ", ".join(outside) + ")"
    return float(cal["kv_tokens_max_abs_error"]), (f"largest residual over {cal['boots']} logged SGLang boots "
                                                  "(bench/plan_accuracy.py)")
