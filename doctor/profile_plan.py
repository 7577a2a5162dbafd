"""A profile planned on the GPUs it was written for: the KV figure `profiles show` prints, the fit `profiles
import` and `profiles suggest` require.

    reference_gpu(profile) -> "RTX5090"        # hardware.gpu, else the smallest catalogue GPU meeting its needs
    plan_profile(profile, hardware=None) -> Plan
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from doctor.deployment import Deployment
    from doctor.planner import Hardware, Plan
    from profiles import Profile

GIB = 1 << 30


def reference_gpu(profile: "Profile") -> str | None:
    """The GPU the profile names (hardware.gpu), else the catalogue GPU with the least memory that meets its
    memory and compute-capability minimums; None for a CPU profile or when none does."""
    from doctor.planner.hardware import catalogue

    if profile.hardware.device == "cpu":
        return None
    if profile.hardware.gpu:
        return profile.hardware.gpu
    need_cc = profile.hardware.min_cc_tuple
    fitting = sorted({(g.memory_bytes, g.name) for g in catalogue().values()
                      if g.memory_bytes / GIB >= profile.hardware.min_gpu_memory_gib and g.capability >= need_cc
                      and not g.unified})
    return fitting[0][1] if fitting else None


def profile_gpus(profile: "Profile", gpu: str | None = None) -> str | None:
    """`NxGPU` for the whole deployment (GPUs per node x nodes) on `gpu` or the profile's reference GPU."""
    name = gpu or reference_gpu(profile)
    if name is None:
        return None
    return f"{max(1, profile.hardware.gpu_count) * max(1, profile.nodes)}x{name}"


def profile_gpus_per_node(profile: "Profile") -> int | None:
    """The GPUs of each node of a profile that spans nodes (its hardware.gpu_count), None for one node."""
    return max(1, profile.hardware.gpu_count) if profile.nodes > 1 else None


def profile_deployment(profile: "Profile") -> "Deployment":
    """The profile's Deployment, with a `<name>` placeholder for each required variable left unset."""
    return profile.deployment({key: f"<{key}>" for key, default in profile.variables.items() if default is None})


def plan_profile(profile: "Profile", hardware: "Hardware | None" = None, version: str | None = None) -> "Plan":
    """Plan the profile's own flags on `hardware` (default: its reference GPUs) for backend `version`.

    Raises PlanInputError (or ModelConfigError) when the profile cannot be planned."""
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus, plan
    from doctor.planner.errors import PlanInputError
    from doctor.planner.flags import deployment_kwargs

    if hardware is None:
        gpus = profile_gpus(profile)
        if gpus is None:
            raise PlanInputError(f"profile {profile.name}: no GPU to plan on (a CPU profile, or no catalogue GPU "
                                 f"has {profile.hardware.min_gpu_memory_gib:g} GiB)")
        hardware = replace(parse_gpus(gpus), gpus_per_node=profile_gpus_per_node(profile))
    kwargs = deployment_kwargs(profile_deployment(profile))
    if version:
        kwargs["backend_version"] = version
    spec = get_model(profile.model)
    if _long_context_allowed(profile) and (kwargs.get("max_model_len") or 0) > spec.max_position_embeddings:
        spec = replace(spec, max_position_embeddings=kwargs["max_model_len"])
    return plan(spec, hardware, ServeConfig(backend=profile.backend, **kwargs))


def _long_context_allowed(profile: "Profile") -> bool:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: vLLM takes a --max-model-len above the derived maximum with a warning
    instead of refusing it (vllm config/model.py _get_and_verify_max_len, 0.32.0; YaRN's factor is not applied
    to the derived maximum there, which is why the recipes' YaRN command sets it)."""
    return profile.backend == "vllm" and str(profile.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "")).lower() in (
        "1", "true")
