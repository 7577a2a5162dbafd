"""The fitted coefficients of vLLM's overhead terms, and the set in force.

The shipped set is the `coefficients` section of calibration.yaml, fitted on every logged boot of
tests/data/published_kv/ by bench/plan_accuracy.py (doctor/planner/fit.py). `using()` puts another set in
force for a block: the benchmark's leave-one-out validation plans each boot with coefficients fitted
without it.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

import yaml

from doctor.planner.hardware import GIB

# Fallback when no sampler-bound boot is at hand: vLLM 0.26.0's dummy sampler run (v1/sample/sampler.py and
# ops/topk_topp_sampler.py, forward_native) holds the bf16 logits _dummy_sampler_run keeps (2 B), their float32
# copy (4 B), the softmax probs (4 B) and the exponential noise random_sample draws (4 B); top-k/top-p runs in
# place (apply_top_k_top_p_triton from 8 rows, since 0.17.1; its [SMs, V] float32 buffer is not per logit). Up to
# 0.16.0 top-k/top-p sorts the vocabulary (apply_top_k_top_p_pytorch: float32 values + int64 indices + torch's sort
# buffers), more bytes per logit than the 0.18-0.26 boots this is fitted on: those versions are outside the band.
SAMPLER_BYTES_PER_LOGIT_PHYSICS = 14.0


def graph_key(quantized: bool, tp: int) -> str:
    """The class of boots one per-graph figure is fitted on: checkpoint kind x single or multi-GPU."""
    return f"{'quantized' if quantized else 'none'}-{'tp1' if tp == 1 else 'tpn'}"


def tp_key(tp: int) -> str:
    return "tp1" if tp == 1 else "tpn"


@dataclass(frozen=True)
class Coefficients:
    """Per-term coefficients (bytes) of vllm/v1/worker/gpu_worker.py determine_available_memory's terms."""

    sampler_bytes_per_logit: float = SAMPLER_BYTES_PER_LOGIT_PHYSICS
    forward_scale: float = 1.0
    non_torch_bytes: dict[str, int] = field(default_factory=dict)        # tp_key -> bytes
    graph_bytes_per_graph: dict[str, float] = field(default_factory=dict)  # graph_key -> bytes per further graph
    graph_first_capture_bytes: int | None = None   # profile_cudagraph_memory's first capture of a mode
    graph_actual_over_estimate: float = 1.0
    uma_non_torch_bytes: int | None = None      # unified-memory GPUs: host memory vLLM counts as device memory
    wsl_non_torch_bytes: int | None = None      # WSL2 GPUs: memory the profile run loses besides torch's (fit.py)
    boots: tuple[str, ...] = ()
    first_capture_boots: tuple[str, ...] = ()   # boots whose graph lines alone gave graph_first_capture_bytes

    def non_torch(self, tp: int) -> int:
        """Non-torch bytes for this TP class, else the other class's, else 0.25 GiB."""
        own = self.non_torch_bytes.get(tp_key(tp))
        if own is not None:
            return own
        others = list(self.non_torch_bytes.values())
        return int(sum(others) / len(others)) if others else int(0.25 * GIB)

    def first_capture(self) -> int:
        """Bytes of a mode's first capture; 0 when no boot logged one (every graph then costs per_graph)."""
        return self.graph_first_capture_bytes or 0

    def per_graph(self, quantized: bool, tp: int) -> float:
        """Bytes per captured graph: own class, else same checkpoint kind, else same TP class, else any."""
        table = self.graph_bytes_per_graph
        for key in (graph_key(quantized, tp), graph_key(quantized, 1 if tp > 1 else 2),
                    graph_key(not quantized, tp)):
            if key in table:
                return table[key]
        return sum(table.values()) / len(table) if table else 0.0

    def to_yaml(self) -> dict[str, Any]:
        data = asdict(self)
        data["boots"] = list(self.boots)
        data["first_capture_boots"] = list(self.first_capture_boots)
        return data

    @classmethod
    def from_yaml(cls, data: dict[str, Any]) -> "Coefficients":
        return cls(sampler_bytes_per_logit=float(data["sampler_bytes_per_logit"]),
                   forward_scale=float(data["forward_scale"]),
                   non_torch_bytes={str(k): int(v) for k, v in data["non_torch_bytes"].items()},
                   graph_bytes_per_graph={str(k): float(v) for k, v in data["graph_bytes_per_graph"].items()},
                   graph_actual_over_estimate=float(data["graph_actual_over_estimate"]),
                   graph_first_capture_bytes=(None if data.get("graph_first_capture_bytes") is None
                                              else int(data["graph_first_capture_bytes"])),
                   uma_non_torch_bytes=(None if data.get("uma_non_torch_bytes") is None
                                        else int(data["uma_non_torch_bytes"])),
                   wsl_non_torch_bytes=(None if data.get("wsl_non_torch_bytes") is None
                                        else int(data["wsl_non_torch_bytes"])),
                   boots=tuple(data.get("boots") or ()),
                   first_capture_boots=tuple(data.get("first_capture_boots") or ()))


@lru_cache(maxsize=1)
def shipped() -> Coefficients:
    """The coefficients fitted on every logged boot (calibration.yaml)."""
    return Coefficients.from_yaml(calibration()["coefficients"])


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    """The shipped summary of the residuals (calibration.yaml)."""
    return yaml.safe_load(resources.files("doctor.planner").joinpath("calibration.yaml").read_text(encoding="utf-8"))


_CURRENT: ContextVar[Coefficients | None] = ContextVar("planner_coefficients", default=None)


def current() -> Coefficients:
    """The coefficients in force: those of an enclosing `using()`, else the shipped ones."""
    return _CURRENT.get() or shipped()


@contextmanager
def using(coefficients: Coefficients) -> Iterator[None]:
    """Plan with `coefficients` inside the block."""
    token = _CURRENT.set(coefficients)
    try:
        yield
    finally:
        _CURRENT.reset(token)
