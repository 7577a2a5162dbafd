"""Re-plan other flags from a real boot log (vLLM or SGLang): its measured terms replace the planner's estimates.

The log's own figures are exact for the flags it ran with; for changed flags the planner adds only the
difference its model predicts between the two flag sets (e.g. --max-num-seqs moves the sampler peak,
--language-model-only drops the vision weights), so the change is planned on the measured base.
"""

from __future__ import annotations

from dataclasses import replace

from doctor.models.spec import ModelSpec
from doctor.planner.bootlog import BootLog
from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError
from doctor.planner.hardware import GIB, GPU, Hardware
from doctor.planner.overhead import ep_group_spans_nodes, vllm_overhead_terms
from doctor.planner.plan import Measured, Plan, plan, resolve_config
from doctor.planner.sglang_bootlog import SglangBootLog
from doctor.planner.startup import NOISE_BYTES, STARTUP_USED_BYTES
from doctor.planner.weights import rank_weights


def logged_config(boot: BootLog, base: ServeConfig) -> ServeConfig:
    """The flags the logged boot ran with (what the log names; `base` for the rest)."""
    changes: dict[str, object] = {"backend": "vllm"}
    for name, value in (("backend_version", boot.version), ("max_model_len", boot.max_model_len),
                        ("tp", boot.tp), ("pp", boot.pp), ("kv_cache_dtype", boot.kv_cache_dtype),
                        ("prefix_caching", boot.prefix_caching), ("gpu_memory_utilization", boot.utilization),
                        ("max_num_seqs", boot.max_num_seqs), ("max_num_batched_tokens", boot.max_num_batched_tokens),
                        ("language_model_only", boot.language_model_only)):
        if value is not None:
            changes[name] = value
    return base.with_(**changes)


def logged_gpu(boot: BootLog, name: str = "logged-GPU") -> GPU:
    """The GPU as vLLM saw it: torch's total from the "Free memory on device" line."""
    if boot.total_gib is None:
        raise PlanInputError("the log has no 'Free memory on device (free/total GiB)' line; pass --gpus")
    total = int(boot.total_gib * GIB)
    return GPU(name, total, "9.0", total)


def replan(spec: ModelSpec, boot: BootLog, logged: ServeConfig, wanted: ServeConfig, hardware: Hardware) -> Plan:
    """Plan `wanted` on `hardware` from the terms the boot of `logged` measured."""
    logged, wanted = resolve_config(spec, logged), resolve_config(spec, wanted)
    gpu = hardware.gpu
    if boot.total_gib is not None and boot.utilization is not None and boot.available_gib is not None:
        logged_overhead = boot.total_gib * boot.utilization * GIB - boot.weights_gib * GIB - boot.available_gib * GIB
    else:
        parts = (boot.activation_gib, boot.non_torch_gib)
        if any(p is None for p in parts):
            raise PlanInputError("the log names neither its budget nor its peak activation and non-torch memory")
        logged_overhead = sum(parts) * GIB + (boot.graph_estimate_gib or 0) * GIB
    if hardware.pinned_memory is None and boot.no_pinned_memory:
        hardware = replace(hardware, pinned_memory=False)   # as the logged engine ran (WSL2)
    pinned, per_node = hardware.pinned_memory, hardware.gpus_per_node
    model_delta = (vllm_overhead_terms(spec, wanted, gpu, pinned_memory=pinned,
                                       internode=ep_group_spans_nodes(wanted, per_node)).total
                   - vllm_overhead_terms(spec, logged, gpu, pinned_memory=pinned,
                                         internode=ep_group_spans_nodes(logged, per_node)).total)
    weights_delta = rank_weights(spec, wanted)["total"] - rank_weights(spec, logged)["total"]
    measured = Measured(weights_bytes=int(boot.weights_gib * GIB + weights_delta),
                        overhead_bytes=int(logged_overhead + model_delta))
    if (boot.startup_free_gib is not None and boot.total_gib is not None and not hardware.other_process_bytes
            and abs(hardware.gpu.usable_bytes / GIB - boot.total_gib) < 0.01):
        # what the logged GPU held besides vLLM at start-up (startup.py): re-planned on that GPU, it holds it again
        held = int((boot.total_gib - boot.startup_free_gib) * GIB) - STARTUP_USED_BYTES
        hardware = replace(hardware, other_process_bytes=held if held > NOISE_BYTES else 0)
    return plan(spec, hardware, wanted, measured)


_SGLANG_KV_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def sglang_logged_config(boot: SglangBootLog, base: ServeConfig) -> ServeConfig:
    """The flags the logged SGLang boot ran with, from its ServerArgs dump (`base` for the rest)."""
    changes: dict[str, object] = {"backend": "sglang"}
    dtype = _SGLANG_KV_DTYPES.get(boot.kv_cache_dtype or "", boot.kv_cache_dtype)
    for name, value in (("mem_fraction_static", boot.mem_fraction_static), ("max_model_len", boot.context_length),
                        ("tp", boot.tp), ("pp", boot.pp), ("kv_cache_dtype", dtype),
                        ("max_num_seqs", boot.max_running_requests),
                        ("max_num_batched_tokens", boot.chunked_prefill_size), ("prefix_caching", boot.radix_cache),
                        ("max_mamba_cache_size", boot.max_mamba_cache_size),
                        ("mamba_full_memory_ratio", boot.mamba_full_memory_ratio),
                        ("mamba_ssm_dtype", boot.mamba_ssm_dtype), ("mamba_radix_strategy", boot.mamba_radix_strategy),
                        ("overlap_schedule", boot.overlap_schedule), ("block_size", boot.page_size)):
        if value is not None:
            changes[name] = value
    return base.with_(**changes)


def sglang_logged_hardware(boot: SglangBootLog, cfg: ServeConfig) -> Hardware:
    """The GPUs as the boot saw them: what was free before the weights load is what SGLang sizes from."""
    free = int(boot.avail_before_gib * GIB)
    return Hardware(GPU("logged-GPU", free, "9.0", free), cfg.world_size)


def sglang_replan(spec: ModelSpec, boot: SglangBootLog, logged: ServeConfig, wanted: ServeConfig,
                  hardware: Hardware | None = None) -> Plan:
    """Plan `wanted` from what the SGLang boot of `logged` measured: the free memory before the load and the
    load's own usage are exact; a changed TP/PP/quantisation moves the weights by the planner's difference. On
    `hardware` other than the logged GPUs, the CUDA context is the planner's estimate again."""
    logged, wanted = resolve_config(spec, logged), resolve_config(spec, wanted)
    weights_delta = rank_weights(spec, wanted)["total"] - rank_weights(spec, logged)["total"]
    measured = Measured(weights_bytes=int(boot.weights_gib * GIB + weights_delta),
                        overhead_bytes=None if hardware is not None else 0)
    return plan(spec, hardware or sglang_logged_hardware(boot, wanted), wanted, measured)
