"""Fit vLLM's overhead coefficients on logged boots, and validate them leave-one-out.

A boot's "Free memory on device ... Actual usage is W GiB for weight, A GiB for peak activation, N GiB for
non-torch memory, and G GiB for CUDAGraph memory" line (vllm/v1/worker/gpu_worker.py, 0.26.0) and its
"Estimated CUDA graph memory" (gpu_model_runner.py profile_cudagraph_memory) give each term; the
configuration of the entry gives what the term scales with (overhead.overhead_inputs). Rules:

- the language-model phase of the peak is the logged peak less the encoder outputs and pixel values profile_run
  holds through it (overhead.peak_activation; the encoder's own peak stays under it on every logged boot);
- sampler bytes per logit: boots whose forward estimate is under half that phase and whose logits
  could hold it (at most twice the bytes per logit the sampler's tensors take): the peak is then the
  sampler's dummy run over max_num_seqs x vocabulary logits (gpu_model_runner.py _dummy_sampler_run) on top of
  the forward outputs profile_run holds through it (overhead.sampler_held_bytes) and, with speculative decoding,
  the rejection sampler's own tensors (overhead.rejection_sampler_bytes), which come off first. Boots with
  speculative decoding are left out of this figure and of the per-graph one: their sampler phase holds the
  rejection sampler's run, derived from the source rather than fitted, and their captures the drafter's graphs
  (capture.graph_count); they measure those terms out of sample. Boots of the V2 runner of 0.29-0.32, whose
  dummy sampler holds only the logits (overhead.sampler_logits_only), are left out of it too;
- forward scale: that phase / forward estimate on the boots whose sampler phase cannot reach the peak and
  whose forward estimate is at least half of it (or whose sampler is under half): a sampler estimate a little
  short of the peak with a forward at a third of it says which estimate is short, not that the forward made it;
- non-torch bytes: mean per TP class (vLLM takes its baseline after NCCL and custom all-reduce are set up, so
  their buffers are in neither class: overhead module docstring; a class with no boot takes the other's);
- first-capture bytes (profile_cudagraph_memory, 0.20.1-0.32.0: max over modes of the first capture +
  (graphs - 1) x increment per mode): the logged estimate of boots that capture one graph per mode, where the
  estimate IS the first capture. Their "Profiling CUDA graph memory: PIECEWISE=1 (largest=1), FULL=1 ..." and
  "Estimated CUDA graph memory" lines state the term whole, so they count even when the rest of their
  configuration is only partly known (tests/data/published_kv/vllm-partial.yaml); unified-memory GPUs are left
  out (there torch's free memory moves with the host: a GB10 boot logged -0.90 GiB);
- bytes per further captured graph: (estimate - first capture) / (graphs - capture modes), mean per
  checkpoint kind x TP class;
- actual over estimated graph memory: mean of logged actual / estimate.
- host bytes on unified memory (overhead.uma_host_bytes): on a unified-memory GPU vLLM's non-torch term takes
  in host memory growth, which no flag predicts. Per such boot: its plan with its logged weights and no host
  term, minus its logged KV memory; the mean over those boots (these boots log no "peak activation" line, so
  the figure also carries the error of the other terms on that platform).
- WSL2 bytes (overhead.wsl_host_bytes): the same gap on WSL2 GPUs (wsl_entries: boots that log their weights and KV
  memory, planned with their logged weights as the checkpoint `plan_as` names), mean over those boots;
  tests/data/published_kv/vllm-heldout.yaml's boots are never among them.
Each coefficient is a mean (or median) over boots, never tuned to one configuration; a class with no boot
falls back as coefficients.Coefficients documents.
"""

from __future__ import annotations

import re
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
FORWARD_BOUND = 0.95    # sampler prediction under 95% of the logged peak: the forward made it, if its own
                        # estimate reaches SAMPLER_BOUND of the peak or the sampler's does not (else neither
                        # estimate explains the peak, and the boot fits neither phase)


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


def graph_captures(entry: dict[str, Any]) -> tuple[int, ...] | None:
    """Graphs per mode of the entry's "Profiling CUDA graph memory: PIECEWISE=3 (largest=4), FULL=3 ..." line."""
    line = next((x for x in entry["log"] if "Profiling CUDA graph memory:" in x), None)
    return None if line is None else tuple(int(n) for n in re.findall(r"\b[A-Z_]+=(\d+) \(largest", line))


def first_capture_samples(entries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """entry id -> logged graph estimate (bytes) of the discrete-GPU boots that capture one graph per mode."""
    from doctor.planner.hardware import parse_gpus

    out: dict[str, float] = {}
    for e in entries:
        captures = graph_captures(e)
        estimate = parse_boot_log("\n".join(e["log"])).graph_estimate_gib
        if (captures and set(captures) == {1} and estimate and not parse_gpus(e["gpus"]).gpu.unified
                and not e.get("held_out")):
            out[e["id"]] = estimate * GIB
    return out


def fit(boots: list[LoggedBoot], uma: Sequence[dict[str, Any]] = (),
        first_captures: dict[str, float] | None = None, wsl: Sequence[dict[str, Any]] = ()) -> Coefficients:
    """Coefficients from these boots, unified-memory entries and first-capture samples (first_capture_samples;
    module docstring for the rules)."""
    first = mean(first_captures.values()) if first_captures else 0.0
    act = {b.id: b.boot.activation_gib * GIB - b.inputs.encoder_outputs - b.inputs.encoder_inputs for b in boots}
    sampled = {b.id: act[b.id] - b.inputs.sampler_held - b.inputs.rejection_sampler - b.inputs.sampler_buffer
               for b in boots}
    sampler_fits = [sampled[b.id] / b.inputs.logits for b in boots
                    if b.inputs.logits and not b.inputs.rejection_sampler and not b.inputs.logits_only_bytes
                    and b.inputs.forward_bytes < SAMPLER_BOUND * act[b.id]
                    and sampled[b.id] / b.inputs.logits <= SAMPLER_MAX_BYTES]
    per_logit = mean(sampler_fits) if sampler_fits else SAMPLER_BYTES_PER_LOGIT_PHYSICS
    sampler_run = {b.id: b.inputs.sampler_held + b.inputs.rejection_sampler + b.inputs.sampler_buffer
                   + b.inputs.logits * (b.inputs.logits_only_bytes or per_logit) for b in boots}
    forward_fits = [act[b.id] / b.inputs.forward_bytes for b in boots
                    if b.inputs.forward_bytes and sampler_run[b.id] < FORWARD_BOUND * act[b.id]
                    and (b.inputs.forward_bytes >= SAMPLER_BOUND * act[b.id]
                         or sampler_run[b.id] < SAMPLER_BOUND * act[b.id])]
    non_torch: dict[str, list[float]] = {}
    graphs: dict[str, list[float]] = {}
    for b in boots:
        if b.boot.non_torch_gib is not None:
            non_torch.setdefault(tp_key(b.tp), []).append(b.boot.non_torch_gib * GIB)
        further = b.inputs.graphs - b.inputs.graph_modes
        if b.boot.graph_estimate_gib is not None and further > 0 and not b.inputs.rejection_sampler:
            graphs.setdefault(graph_key(b.quantized, b.tp), []).append(
                max(0.0, b.boot.graph_estimate_gib * GIB - first) / further)
    ratios = [b.boot.graph_actual_gib / b.boot.graph_estimate_gib for b in boots
              if b.boot.graph_actual_gib and b.boot.graph_estimate_gib]
    fitted = Coefficients(
        sampler_bytes_per_logit=per_logit,
        forward_scale=median(forward_fits) if forward_fits else 1.0,
        non_torch_bytes={k: int(mean(v)) for k, v in sorted(non_torch.items())},
        graph_bytes_per_graph={k: mean(v) for k, v in sorted(graphs.items())},
        graph_actual_over_estimate=mean(ratios) if ratios else 1.0,
        graph_first_capture_bytes=int(first) if first_captures else None,
        boots=tuple(b.id for b in boots),
        first_capture_boots=tuple(sorted(first_captures or ())))
    if uma:
        host = [uma_host_gap(entry, fitted) for entry in uma]
        fitted = replace(fitted, uma_non_torch_bytes=max(0, int(mean(host))),
                         boots=fitted.boots + tuple(e["id"] for e in uma))
    if wsl:
        gaps = [wsl_gap(entry, fitted) for entry in wsl]
        fitted = replace(fitted, wsl_non_torch_bytes=max(0, int(mean(gaps))),
                         boots=fitted.boots + tuple(e["id"] for e in wsl))
    return fitted


def wsl_gap(entry: dict[str, Any], coefficients: Coefficients) -> float:
    """Bytes a WSL2 boot's plan (its logged weights, the checkpoint `plan_as` names, no WSL2 term) exceeds its
    logged KV memory by."""
    from doctor.planner.residual import residual
    from doctor.planner.coefficients import using

    with using(replace(coefficients, wsl_non_torch_bytes=None)):
        row = residual({**entry, "model": entry.get("plan_as") or entry["model"], "predict": "overhead"})
    return (row.planned_available_gib - row.logged_available_gib) * GIB


def wsl_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The boots on WSL2 GPUs that log their weights and KV memory, outside the held-out set."""
    from doctor.planner.hardware import parse_gpus

    return [e for e in entries if "vllm" in e and not e.get("held_out") and parse_gpus(e["gpus"]).gpu.virtualised
            and any("Model loading took" in line for line in e["log"])
            and any("Available KV cache memory" in line for line in e["log"])]


def uma_host_gap(entry: dict[str, Any], coefficients: Coefficients) -> float:
    """Bytes a unified-memory boot's plan (its logged weights, no host term) exceeds its logged KV memory by."""
    from doctor.planner.residual import residual
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
    partly known (tests/data/published_kv/vllm-partial.yaml), or one marked `held_out`, is kept as evidence,
    never fitted on."""
    return [b for e in entries if e.get("predict") and not e.get("held_out") and (b := logged_boot(e)) is not None]


def leave_one_out(entries: list[dict[str, Any]]) -> dict[str, Coefficients]:
    """For every entry id: coefficients fitted on the logged boots of all the other entries."""
    boots, uma, firsts = logged_boots(entries), uma_entries(entries), first_capture_samples(entries)
    wsl = wsl_entries(entries)
    return {e["id"]: fit([b for b in boots if b.id != e["id"]], [u for u in uma if u["id"] != e["id"]],
                         {k: v for k, v in firsts.items() if k != e["id"]}, [w for w in wsl if w["id"] != e["id"]])
            for e in entries}
