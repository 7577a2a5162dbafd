"""Profile requirements vs the facts: GPU count, memory per GPU, compute capability, NVLink."""

from __future__ import annotations

from typing import Any

from doctor.context import CheckContext
from doctor.gpus import capability, label
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

GIB = 1024**3


def _nvlink_pairs(facts: Any, indices: set[int]) -> tuple[int, int]:
    """(pairs with NVLink, pairs) among the given GPUs, from the recorded topology."""
    pairs = [t for t in facts.topology if t.get("a") in indices and t.get("b") in indices and t.get("a") != t.get("b")]
    linked = [t for t in pairs if (t.get("p2p") or {}).get("nvlink") == "ok"]
    return len(linked), len(pairs)


def requirements(ctx: CheckContext) -> list[Outcome]:
    """Judge each hardware requirement of ctx.profile against ctx.facts (pure; no profile gives skip)."""
    profile = ctx.profile
    if profile is None or not hasattr(profile, "hardware"):
        return [skip("no profile selected")]
    hw = profile.hardware
    if hw.device == "cpu":
        return [ok(f"profile {profile.name} runs on CPU; no GPU needed")]
    if not ctx.facts.nvml_available:
        return [skip("no NVIDIA driver (see QD-DRV-001)")]
    if not ctx.facts.knows("gpus"):
        return [skip("the GPUs are not recorded")]
    gpus = ctx.facts.gpus
    out: list[Outcome] = []
    if len(gpus) < hw.gpu_count:
        out.append(fail(f"profile {profile.name} needs {hw.gpu_count} GPUs, this machine has {len(gpus)}",
                        fix=[f"Pick a profile for {len(gpus)} GPU(s) (qwen-doctor profiles list) or add GPUs."]))
    else:
        out.append(ok(f"{len(gpus)} GPU(s) for the {hw.gpu_count} the profile needs"))
    used = gpus[: max(hw.gpu_count, 1)]
    small = [g for g in used if (g.get("memory") or {}).get("total", 0) / GIB < hw.min_gpu_memory_gib]
    if not ctx.facts.knows("gpu.memory"):
        out.append(skip(f"GPU memory is not recorded ({profile.name} needs {hw.min_gpu_memory_gib:g} GiB per GPU)"))
    elif small:
        have = min((g.get("memory") or {}).get("total", 0) for g in small) / GIB
        out.append(fail(f"{label(small[0])} has {have:.1f} GiB; {profile.name} needs {hw.min_gpu_memory_gib:g} GiB per GPU",
                        fix=["Use the FP8 profile (vllm-fp8 / sglang-fp8) or more tensor parallelism."]))
    else:
        out.append(ok(f"every GPU has >= {hw.min_gpu_memory_gib:g} GiB"))
    low = [g for g in used if (capability(g) or (0, 0)) < hw.min_cc_tuple]
    if low:
        cc = capability(low[0])
        shown = f"{cc[0]}.{cc[1]}" if cc else "unknown"
        out.append(fail(f"{label(low[0])} has compute capability {shown}; {profile.name} needs >= {hw.min_compute_capability}",
                        fix=["FP8 compute needs cc >= 8.9 (L40S, H100, H200, B200); on A100 use a BF16 profile."]))
    else:
        out.append(ok(f"compute capability >= {hw.min_compute_capability}"))
    if hw.nvlink != "no" and hw.gpu_count > 1:
        linked, pairs = _nvlink_pairs(ctx.facts, {g.get("index") for g in used})
        if pairs == 0:
            out.append(skip("no GPU topology recorded"))
        elif linked < pairs:
            message = f"NVLink between {linked} of {pairs} GPU pairs; {profile.name} wants NVLink for tensor parallelism"
            fix = ["Check `nvidia-smi topo -m` and `nvidia-smi nvlink -s`; keep a TP group on NVLink-connected GPUs."]
            out.append(fail(message, fix=fix) if hw.nvlink == "required" else warn(message, fix=fix))
        else:
            out.append(ok(f"NVLink between all {pairs} GPU pairs"))
    return out


def backend_version(ctx: CheckContext) -> Outcome:
    """The installed backend version lies in the profile's range (skip when the backend is not installed here)."""
    profile = ctx.profile
    if profile is None or not hasattr(profile, "backend_version"):
        return skip("no profile selected")
    version = ctx.facts.package_version(profile.backend)
    if version is None:
        if not ctx.facts.knows(f"packages.{profile.backend}"):
            return skip(f"the {profile.backend} version is not recorded")
        return skip(f"{profile.backend} is not installed in this environment")
    try:
        inside = profile.backend_version.contains(version, prereleases=True)
    except ValueError:
        return warn(f"cannot compare {profile.backend} version {version!r} with {profile.backend_version}")
    if inside:
        return ok(f"{profile.backend} {version} is within {profile.backend_version}")
    return fail(f"{profile.backend} {version} is outside {profile.name}'s range {profile.backend_version}",
                fix=[f"pip install '{profile.backend}{profile.backend_version}' or pick a profile for {version}."])


@check("QD-PROF-002", "Backend version fits the profile", category="versions", severity="critical")
def profile_backend_version(ctx: CheckContext) -> Outcome:
    """The installed vLLM / SGLang version is inside the selected profile's backend_version range."""
    return backend_version(ctx)


@check("QD-PROF-001", "Hardware meets the profile", category="gpu", severity="critical")
def profile_hardware(ctx: CheckContext) -> list[Outcome]:
    """The selected profile's GPU count, memory per GPU, compute capability and NVLink are met."""
    return requirements(ctx)
