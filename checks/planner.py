"""Planner checks: the parallel sizes divide the model, and weights + KV cache fit the real GPUs in Facts."""

from __future__ import annotations

from typing import Any

from doctor.context import CheckContext
from doctor.gpus import label, select
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

DEFAULT_MODEL = "Qwen/Qwen3.5-35B-A3B"
_SERVE_OPTIONS = ("tp", "pp", "dp", "kv_cache_dtype", "max_model_len", "max_num_seqs", "gpu_memory_utilization",
                  "mem_fraction_static", "max_num_batched_tokens", "language_model_only", "mtp_tokens",
                  "expert_parallel", "enforce_eager")


def _model(ctx: CheckContext) -> Any:
    from doctor.models import get_model

    name = ctx.option("model")
    if not name:
        name = {"fp8": "Qwen/Qwen3.5-35B-A3B-FP8", "gptq": "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4"}.get(
            str(ctx.option("quantization") or "").lower(), DEFAULT_MODEL)
    return get_model(str(name))


def _serve_config(ctx: CheckContext) -> Any:
    """Every memory setting of the facts' environment, then of the deployment (the profile's, with the user's
    overrides under deploy), then explicit options, and the installed backend version."""
    from doctor.deployment.version import engine_version
    from doctor.planner import ServeConfig
    from doctor.planner.flags import deployment_kwargs, env_kwargs

    backend = ctx.backend or "vllm"
    values: dict[str, Any] = env_kwargs(ctx.facts.env, backend)
    deployment = ctx.deployment or (ctx.profile.deployment() if ctx.profile is not None else None)
    if deployment is not None:
        values.update(deployment_kwargs(deployment))
    values.update({k: v for k in _SERVE_OPTIONS if (v := ctx.options.get(k)) is not None})
    if "tp" not in values and ctx.option("tensor_parallel_size"):
        values["tp"] = ctx.option("tensor_parallel_size")
    version = engine_version(backend, ctx.facts)
    if version:
        values.setdefault("backend_version", version)
    return ServeConfig(backend=backend, **values)


@check("QD-PLAN-001", "Parallel sizes divide the model", category="plan", severity="critical")
def divisibility(ctx: CheckContext) -> Outcome:
    """Attention / KV / Gated DeltaNet heads vs TP, experts vs EP, FP8 128-blocks vs moe_intermediate_size / TP."""
    from doctor.models.errors import ModelConfigError
    from doctor.planner import check_divisibility, valid_tensor_parallel_sizes

    try:
        spec = _model(ctx)
    except ModelConfigError as exc:
        if "{" in str(ctx.option("model") or ""):
            return skip(f"the model is a profile variable ({ctx.option('model')}): pass --model to plan it")
        return fail(f"the model cannot be read: {exc}",
                    fix=["Point --model at a checkpoint directory that holds config.json (the same path the "
                         "engine gets), or give a registry name such as Qwen/Qwen3.5-35B-A3B-FP8."])
    from doctor.planner.errors import PlanInputError

    try:
        cfg = _serve_config(ctx)
    except PlanInputError as exc:   # a setting or engine variable that does not read (QD-PLAN-002 fails)
        return skip(f"the deployment cannot be read: {exc} (see QD-PLAN-002)")
    results = check_divisibility(spec, cfg)
    hard = [r for r in results if not r.ok and r.severity == "fail"]
    soft = [r for r in results if not r.ok and r.severity == "warn"]
    valid = ", ".join(map(str, valid_tensor_parallel_sizes(spec, 64)))
    if hard:
        return fail(f"{spec.name} cannot be split with TP={cfg.tp}: {hard[0].message}",
                    details=[f"the backend raises: {r.message}" for r in hard],
                    fix=[r.fix for r in hard] + [f"valid tensor-parallel sizes for {spec.name}: {valid}"],
                    evidence={"tp": cfg.tp, "rules": [r.rule for r in hard]})
    if soft:
        return warn(soft[0].message, details=[r.message for r in soft[1:]], fix=[r.fix for r in soft])
    return ok(f"TP={cfg.tp} divides the heads and experts of {spec.name}")


@check("QD-PLAN-002", "Weights and KV cache fit the GPUs", category="plan", severity="high")
def fits(ctx: CheckContext) -> Outcome:
    """Plan per-GPU memory on the deployment's real GPUs: weights, overhead, KV capacity at max-model-len."""
    from doctor.planner import Hardware, check_divisibility, plan

    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    used = [g for g in select(ctx).used if (g.get("memory") or {}).get("total")]
    if not used:
        return skip("no GPU memory facts")
    smallest = min(used, key=lambda g: g["memory"]["total"])
    from doctor.models.errors import ModelConfigError
    from doctor.planner.hardware import gpu_from_facts, is_wsl_kernel
    from doctor.planner.startup import busiest_gpu_bytes

    gpu = gpu_from_facts(smallest.get("name"), int(smallest["memory"]["total"]), smallest.get("compute_capability"),
                         wsl=is_wsl_kernel(ctx.facts.host.get("kernel")))
    others = busiest_gpu_bytes(used, gpu, (ctx.facts.host.get("memory") or {}).get("available"))
    from doctor.planner.wsl import wsl_pins_memory

    pinned = wsl_pins_memory(ctx.facts.env) if gpu.virtualised else None   # WSL2 withholds it unless enabled
    try:
        spec = _model(ctx)
    except ModelConfigError:
        return skip("the model cannot be read (see QD-PLAN-001)")
    from doctor.planner.errors import PlanInputError

    try:
        cfg = _serve_config(ctx)
    except PlanInputError as exc:   # the engine reads the value the same way and does not start
        return fail(f"the engine does not start: {exc}", fix=["Give the setting or variable a value the engine reads."])
    from doctor.planner.versions import model_support_problem

    if cfg.backend_version and model_support_problem(cfg.backend, cfg.backend_version, spec.architecture):
        return skip(f"{cfg.backend} {cfg.backend_version} cannot load {spec.name} (see QD-VER-001)")
    if any(not r.ok and r.severity == "fail" for r in check_divisibility(spec, cfg)):
        return skip(f"TP={cfg.tp} cannot split {spec.name} (see QD-PLAN-001)")
    if cfg.world_size > len(used):
        return skip(f"TP x PP x DP = {cfg.world_size} exceeds the {len(used)} GPU(s) in use (see QD-GPU-001)")
    try:
        result = plan(spec, Hardware(gpu, len(used), others, pinned), cfg)
    except PlanInputError as exc:   # e.g. a drafter the planner cannot size: say so, do not guess
        return skip(f"the planner cannot size this configuration: {exc}")
    rank = min(result.ranks, key=lambda r: r.kv_tokens)
    details = [f"planned on {label(smallest)}: {gpu.memory_bytes / 2**30:.1f} GiB, weights "
               f"{rank.weights['total'] / 2**30:.2f} GiB, overhead {rank.overhead_bytes / 2**30:.2f} GiB (estimate), "
               f"KV cache {rank.cache_bytes / 2**30:.2f} GiB",
               f"{result.kv_tokens:,} KV tokens, {result.max_concurrency:.2f} requests at {result.max_model_len:,} tokens"]
    evidence = {"kv_tokens": result.kv_tokens, "max_model_len": result.max_model_len,
                "weights_bytes": rank.weights["total"]}
    if not result.fits and others and plan(spec, Hardware(gpu, len(used), 0, pinned), cfg).fits:
        # only the start-up check refuses: NVML cannot always tell the deployment's own engine from another process
        return warn(result.problems[-1], details=details + ["if that memory is this deployment's own running engine, "
                                                            "this does not apply"],
                    fix=result.suggestions, evidence=evidence)
    if not result.fits:
        return fail(result.problems[0], details=details + result.problems[1:],
                    fix=result.suggestions or ["add GPUs or combine several of: FP8 checkpoint, more TP, "
                                               "lower --max-model-len"],
                    evidence=evidence)
    return ok(f"{spec.name} fits: {result.kv_tokens:,} KV tokens per replica "
              f"({result.max_concurrency:.2f} x {result.max_model_len:,})", details=details, evidence=evidence)
