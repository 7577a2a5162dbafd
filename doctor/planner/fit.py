"""Fit vLLM's overhead coefficients on logged boots, and validate them leave-one-out.

A boot's "Free memory on device ... Actual usage is W GiB for weight, A GiB for peak activation, N GiB for
non-torch memory, and G GiB for CUDAGraph memory" line (vllm/v1/worker/gpu_worker.py, 0.26.0) and its
"Estimated CUDA graph memory" (gpu_model_runner.py profile_cudagraph_memory) give each term; the
configuration of the entry gives what the term scales with (overhead.overhead_inputs). Rules:

- sampler bytes per logit: boots whose forward estimate is under half their logged peak and whose logits
  could hold it (at most twice the bytes per logit the sampler's tensors take): the peak is then the
  sampler's dummy run over max_num_seqs x vocabulary logits (gpu_model_runner.py _dummy_sampler_run);
- forward scale: logged peak / forward estimate on the boots whose sampler cannot reach the peak;
- non-torch bytes: mean per TP class (one GPU; several, where NCCL buffers replace cuBLAS-only ones);
- bytes per captured graph: estimate / graphs, mean per checkpoint kind x TP class;
- actual over estimated graph memory: mean of logged actual / estimate.
- host bytes on unified memory (overhead.uma_host_bytes): on a unified-memory GPU vLLM's non-torch term takes
  in host memory growth, which no flag predicts. Per such boot: its plan with its logged weights and no host
  term, minus its logged KV memory; the mean over those boots (these boots log no "peak activation" line, so
  the figure also carries the error of the other terms on that platform).
Each coefficient is a mean (or median) over boots, never tuned to one configuration; a class with no boot
falls back as coefficients.Coefficients documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import mean, median
from typing import Any

from doctor.planner.bootlog import BootLog, parse_boot_log
from doctor.planner.coefficients import SAMPLER_BYTES_PER_LOGIT_PHYSICS, Coefficients, graph_key, tp_key
from doctor.planner.hardware import GIB
from doctor.planner.overhead import OverheadInputs, overhead_inputs

SAMPLER_BOUND = 0.5     # forward estimate under half the logged peak: the sampler made the peak ...
SAMPLER_MAX_BYTES = 2 * SAMPLER_BYTES_PER_LOGIT_PHYSICS   # ... if its logits can hold that much at all
FORWARD_BOUND = 0.95    # sampler prediction under 95% of the logged peak: the forward made it


@dataclass(frozen=True)
class LoggedBoot:
    """One boot's logged terms next to what they scale with."""

    id: str
    boot: BootLog
    inputs: OverheadInputs
    tp: int
    quantized: bool


def logged_boot(entry: dict[str, Any]) -> LoggedBoot | None:
    """The entry's logged terms, or None when it logs no peak activation (nothing to fit on)."""
    from doctor.models import get_model
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.plan import resolve_config

    boot = parse_boot_log("\n".join(entry["log"]))
    if boot.activation_gib is None:
        return None
    spec = get_model(entry["model"])
    cfg = resolve_config(spec, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    inputs = overhead_inputs(spec, cfg, parse_gpus(entry["gpus"]).gpu)
    return LoggedBoot(entry["id"], boot, inputs, cfg.tp, spec.quantization.method != "none")


def fit(boots: list[LoggedBoot], uma: Sequence[dict[str, Any]] = ()) -> Coefficients:
    """Coefficients from these boots and unified-memory entries (module docstring for the rules)."""
    act = {b.id: b.boot.activation_gib * GIB for b in boots}
    sampler_fits = [act[b.id] / b.inputs.logits for b in boots
                    if b.inputs.logits and b.inputs.forward_bytes < SAMPLER_BOUND * act[b.id]
                    and act[b.id] / b.inputs.logits <= SAMPLER_MAX_BYTES]
    per_logit = mean(sampler_fits) if sampler_fits else SAMPLER_BYTES_PER_LOGIT_PHYSICS
    forward_fits = [act[b.id] / b.inputs.forward_bytes for b in boots
                    if b.inputs.logits * per_logit < FORWARD_BOUND * act[b.id] and b.inputs.forward_bytes]
    non_torch: dict[str, list[float]] = {}
    graphs: dict[str, list[float]] = {}
    for b in boots:
        if b.boot.non_torch_gib is not None:
            non_torch.setdefault(tp_key(b.tp), []).append(b.boot.non_torch_gib * GIB)
        if b.boot.graph_estimate_gib is not None and b.inputs.graphs:
            graphs.setdefault(graph_key(b.quantized, b.tp), []).append(b.boot.graph_estimate_gib * GIB / b.inputs.graphs)
    ratios = [b.boot.graph_actual_gib / b.boot.graph_estimate_gib for b in boots
              if b.boot.graph_actual_gib and b.boot.graph_estimate_gib]
    fitted = Coefficients(
        sampler_bytes_per_logit=per_logit,
        forward_scale=median(forward_fits) if forward_fits else 1.0,
        non_torch_bytes={k: int(mean(v)) for k, v in sorted(non_torch.items())},
        graph_bytes_per_graph={k: mean(v) for k, v in sorted(graphs.items())},
        graph_actual_over_estimate=mean(ratios) if ratios else 1.0,
        boots=tuple(b.id for b in boots))
    if not uma:
        return fitted
    host = [uma_host_gap(entry, fitted) for entry in uma]
    return replace(fitted, uma_non_torch_bytes=max(0, int(mean(host))),
                   boots=fitted.boots + tuple(e["id"] for e in uma))


def uma_host_gap(entry: dict[str, Any], coefficients: Coefficients) -> float:
    """Bytes a unified-memory boot's plan (its logged weights, no host term) exceeds its logged KV memory by."""
    from doctor.planner.accuracy import residual
    from doctor.planner.coefficients import using

    with using(replace(coefficients, uma_non_torch_bytes=None)):
        row = residual({**entry, "predict": "overhead"})
    if row.logged_available_gib is None:
        raise ValueError(f"entry {entry['id']}: a unified-memory boot needs its 'Available KV cache memory' line")
    return (row.planned_available_gib - row.logged_available_gib) * GIB


def uma_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fully described boots on unified-memory GPUs whose log names the weights (fitted for the host term)."""
    from doctor.planner.hardware import parse_gpus

    return [e for e in entries if e.get("predict") is True and parse_gpus(e["gpus"]).gpu.unified
            and any("Model loading took" in line for line in e["log"])]


def logged_boots(entries: list[dict[str, Any]]) -> list[LoggedBoot]:
    """The logged terms of the fully described entries (`predict` set): a boot whose configuration is only
    partly known (tests/data/published_kv/vllm-partial.yaml) is kept as evidence, never fitted on."""
    return [b for e in entries if e.get("predict") and (b := logged_boot(e)) is not None]


def leave_one_out(entries: list[dict[str, Any]]) -> dict[str, Coefficients]:
    """For every entry id: coefficients fitted on the logged boots of all the other entries."""
    boots, uma = logged_boots(entries), uma_entries(entries)
    return {e["id"]: fit([b for b in boots if b.id != e["id"]], [u for u in uma if u["id"] != e["id"]])
            for e in entries}
