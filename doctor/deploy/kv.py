"""The KV capacity the server logged against what the planner predicts for the same command line."""

from __future__ import annotations

from dataclasses import dataclass, replace

from doctor.deploy.spec import LaunchSpec
from doctor.deployment.version import engine_version
from doctor.facts.model import Facts

TOLERANCE = 0.05
CPU_KV_ENV = "VLLM_CPU_KVCACHE_SPACE"


@dataclass(frozen=True)
class KVPrediction:
    """The planner's token capacity (None when it cannot predict) and how it got there."""

    tokens: int | None
    basis: str


def serve_config(spec: LaunchSpec, backend_version: str | None = None, facts: Facts | None = None):
    """The planner's ServeConfig for this deployment: every memory setting it has (its flags and environment over
    the environment the facts recorded, which the engine inherits), under the rules of the backend version that
    runs."""
    from doctor.deployment import from_argv
    from doctor.planner import ServeConfig
    from doctor.planner.flags import deployment_kwargs, env_kwargs

    deployment = spec.deployment or from_argv(spec.argv, spec.backend, spec.env)
    inherited = env_kwargs(facts.env, deployment.backend) if facts is not None else {}
    kwargs = {**inherited, **deployment_kwargs(deployment)}
    if backend_version is not None:
        kwargs["backend_version"] = backend_version
    return ServeConfig(backend=deployment.backend, **kwargs)


def check_options(spec: LaunchSpec) -> dict[str, object]:
    """The command line's serving options under the names checks read with `ctx.option(...)`."""
    cfg = serve_config(spec)
    names = ("tp", "pp", "dp", "max_model_len", "max_num_seqs", "kv_cache_dtype", "enforce_eager",
             "gpu_memory_utilization" if spec.backend == "vllm" else "mem_fraction_static")
    return {n: getattr(cfg, n) for n in names if getattr(cfg, n) is not None}


def predict(spec: LaunchSpec, model: str, facts: Facts | None) -> KVPrediction:
    """Predict the logged KV tokens: vLLM-CPU from VLLM_CPU_KVCACHE_SPACE, GPUs through `plan()`."""
    from doctor.models import get_model
    from doctor.planner import plan
    from doctor.planner.errors import PlanInputError
    from doctor.planner.hardware import GIB
    from doctor.planner.startup import facts_hardware
    from doctor.planner.state import layers_in_stage
    from doctor.flags.values import AUTO_LENGTH
    from doctor.planner.autofit import fitted_length
    from doctor.planner.vllm_kv import vllm_capacity, vllm_layout

    try:
        model_spec = get_model(model)
        cfg = serve_config(spec, engine_version(spec.backend, facts), facts)
    except Exception as exc:  # the planner refuses this model or flag set: no prediction, say why
        return KVPrediction(None, f"the planner cannot size {model!r}: {exc}")
    auto = cfg.max_model_len == AUTO_LENGTH       # vLLM's --max-model-len auto: fitted to the cache (autofit.py)
    max_len = model_spec.max_position_embeddings if auto or not cfg.max_model_len else cfg.max_model_len
    if spec.backend == "vllm" and CPU_KV_ENV in spec.env:
        gib = float(spec.env[CPU_KV_ENV])
        full, linear = layers_in_stage(model_spec, 0, model_spec.num_layers)
        layout = vllm_layout(model_spec, cfg, full, linear, device="cpu")
        if auto:
            max_len = fitted_length(lambda n: vllm_capacity(layout, int(gib * GIB), n, cfg).max_concurrency,
                                    max_len) or max_len
        cap = vllm_capacity(layout, int(gib * GIB), max_len, cfg)
        return KVPrediction(cap.tokens, f"vLLM CPU, {CPU_KV_ENV}={spec.env[CPU_KV_ENV]} GiB, max_model_len {max_len}")
    if facts is None or not facts.gpus:
        return KVPrediction(None, "no GPU facts to plan with")
    try:
        # the same GPUs and start-up memory of other processes as `plan --facts` (doctor/planner/startup.py)
        found = facts_hardware(facts)
    except PlanInputError as exc:
        return KVPrediction(None, str(exc))
    hardware = replace(found, count=cfg.world_size)
    try:
        p = plan(model_spec, hardware, cfg)
    except Exception as exc:
        return KVPrediction(None, f"the planner failed: {exc}")
    held = (f", {found.other_process_bytes / GIB:.2f} GiB held by other processes at start-up"
            if found.other_process_bytes else "")
    return KVPrediction(p.kv_tokens, f"plan for {hardware.count}x {hardware.gpu.name}{held}, max_model_len {p.max_model_len}")


def compare(logged: int | None, predicted: KVPrediction, tolerance: float = TOLERANCE) -> tuple[str, str]:
    """(status, summary): ok within `tolerance`, warn beyond, skip when either side is missing."""
    if logged is None:
        return "skip", "the server logged no KV cache size"
    if predicted.tokens is None:
        return "skip", f"server logged {logged:,} KV tokens; no prediction ({predicted.basis})"
    diff = (logged - predicted.tokens) / predicted.tokens if predicted.tokens else float("inf")
    text = f"server logged {logged:,} KV tokens, plan predicted {predicted.tokens:,} ({diff:+.1%}; {predicted.basis})"
    return ("ok" if abs(diff) <= tolerance else "warn"), text
