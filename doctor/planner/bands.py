"""The error band of a vLLM plan, per hardware class, as measured on the logged boots (calibration.yaml `classes`).

A boot's residual is its KV memory planned less logged (GiB): the error of the overhead terms, which does not
scale with the cache (a 0.3 GiB error is 0.5% of an H200's cache and 10% of an RTX 5090's). Each class's band
is the largest such residual over its boots, every one planned without having been fitted on it: leave-one-out
for the boots fit.py fits on, out of sample for the partly described and the held-out boots
(bench/plan_accuracy.py writes the figures). A plan's band is its class's, relative to its own cache; where its
class has no boot, or the class's boots never had one of the plan's features (TP > 1, speculative decoding, its
quantisation), the band says so and is at least the bound the terms' own uncertainty gives (term_bound); a plan
with TP > 1 or speculative decoding is held to its class's boots with that feature too (FEATURE_BANDS). A class
that misses issue 26's target (KV-token error mean <= 3%, max <= 6%) says so with the engine's own run-to-run spread
on it (calibration.yaml `meets_target`, `run_to_run_gib`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from doctor.planner.coefficients import calibration
from doctor.planner.hardware import GIB, hardware_class

if TYPE_CHECKING:
    from doctor.models.spec import ModelSpec
    from doctor.planner.config import ServeConfig
    from doctor.planner.plan import Plan

# a class's largest residual is its band once it has this many boots; fewer say little about the spread, so the
# terms' own uncertainty (term_bound) is the floor
MIN_CLASS_BOOTS = 3
# features whose boots have band rows of their own within a class (calibration.yaml `feature_bands`): a plan with
# one is held to its class's boots with it, the same MIN_CLASS_BOOTS rule applied to them (TP > 1 brings the NCCL
# and custom all-reduce buffers, speculative decoding the drafter's terms, neither of which a TP 1 boot without a
# drafter measures)
FEATURE_BANDS = ("TP > 1", "speculative decoding")


def features(spec: "ModelSpec", cfg: "ServeConfig") -> list[str]:
    """The plan's features a class must have seen: TP > 1, PP > 1, DP > 1, expert parallelism (its communication
    buffers and gathered activations are terms of their own), speculative decoding, vLLM's V2 model runner (its
    profile run, request state and speculator graphs: overhead.v1_model_runner), vLLM 0.34's extensible KV cache,
    the checkpoint's quantisation."""
    from doctor.planner.overhead import v1_model_runner

    out = [name for name, on in (("TP > 1", cfg.tp > 1), ("PP > 1", cfg.pp > 1), ("DP > 1", cfg.dp > 1),
                                 ("expert parallelism", cfg.expert_parallel and cfg.ep_size > 1)) if on]
    if cfg.mtp_tokens:
        out.append("speculative decoding")
    if cfg.backend == "vllm" and spec.is_hybrid and not v1_model_runner(cfg):
        out.append("the V2 model runner (vLLM 0.29+)")
    if cfg.extensible_kv_on:
        out.append("the extensible KV cache (vLLM 0.34+)")
    return out + [f"{spec.quantization.method} checkpoints"]


def boot_classes(entry: dict[str, Any]) -> tuple[str, list[str]]:
    """(hardware class, features) of a logged boot of tests/data/published_kv/, as a plan of it is classed."""
    from doctor.models import get_model
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.plan import resolve_config

    spec = get_model(entry.get("plan_as") or entry["model"])
    cfg = resolve_config(spec, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    return hardware_class(parse_gpus(entry["gpus"]).gpu), features(spec, cfg)


def term_bound(plan: "Plan") -> float:
    """Bytes of KV memory the terms' own uncertainty allows (calibration.yaml `terms`): the activation's largest
    relative residual x the planned activation + the non-torch and CUDA-graph terms' largest residuals (GiB) +
    the weights' largest relative residual x the planned weights."""
    terms = calibration().get("terms") or {}
    rank = min(plan.ranks, key=lambda r: r.cache_bytes)
    activation = rank.terms.peak_activation if rank.terms else rank.overhead_bytes
    return (activation * terms.get("activation_rel", 0.25) + terms.get("non_torch_gib", 0.25) * GIB
            + terms.get("graph_gib", 0.5) * GIB + rank.weights["total"] * terms.get("weights_rel", 0.01))


def feature_floor(cls: dict[str, Any], plan_features: list[str], gap: float, bound: float,
                  why: str) -> tuple[float, str]:
    """(band in bytes, why) once the class's rows of the plan's FEATURE_BANDS features are applied: at least each
    row's largest residual, and the terms' bound where a row has fewer than MIN_CLASS_BOOTS boots."""
    rows = cls.get("feature_bands") or {}
    few = []
    for feat in (f for f in plan_features if f in FEATURE_BANDS and f in rows):
        gap = max(gap, rows[feat]["gap_gib"] * GIB)
        if rows[feat]["boots"] < MIN_CLASS_BOOTS:
            gap = max(gap, bound)
            few.append(f"{feat} on {rows[feat]['boots']} boot{'s' if rows[feat]['boots'] > 1 else ''}")
    if few:
        why += f"; measured with {', '.join(few)} only, so at least the bound from the terms' uncertainty"
    return gap, why


def plan_band(plan: "Plan") -> tuple[float | None, str]:
    """(relative band of the plan's KV capacity or None where its cache is not positive, why)."""
    classes: dict[str, Any] = calibration().get("classes") or {}
    name = hardware_class(plan.hardware.gpu)
    cls = classes.get(name)
    cache = min(r.cache_bytes for r in plan.ranks)
    missing = features(plan.model, plan.config) if cls is None else \
        [f for f in features(plan.model, plan.config) if f not in cls["features"]]
    bound = term_bound(plan)
    if cls is None:
        gap, why = bound, (f"{name}: not measured (no logged boot); bound from the terms' uncertainty "
                           "(bench/plan_accuracy.py)")
    elif missing:
        gap = max(cls["gap_gib"] * GIB, bound)
        why = (f"{name}: not measured with {', '.join(missing)}; at least the largest residual of its "
               f"{cls['boots']} boots, and the bound from the terms' uncertainty")
    elif cls["boots"] < MIN_CLASS_BOOTS:
        gap = max(cls["gap_gib"] * GIB, bound)
        why = (f"{name}: measured on {cls['boots']} logged boot{'s' if cls['boots'] > 1 else ''} only; the larger "
               "of its residual and the bound from the terms' uncertainty (bench/plan_accuracy.py)")
    else:
        gap = cls["gap_gib"] * GIB
        why = (f"largest residual of the {cls['boots']} logged boots of {name}, each planned without being fitted "
               "on (bench/plan_accuracy.py)")
    if cls is not None and not missing:
        gap, why = feature_floor(cls, features(plan.model, plan.config), gap, bound, why)
    if cls is not None and cls.get("run_to_run_gib") is not None:
        # the engine's own spread between identical boots bounds the band from below, whatever the residuals
        gap = max(gap, cls["run_to_run_gib"] * GIB)
    if cls is not None and cls.get("meets_target") is False and cls.get("run_to_run_gib") is not None:
        why += (f"; {name} misses the 3% / 6% KV target: one configuration booted twice logged "
                f"{cls['run_to_run_gib']:.2f} GiB apart")
    if cache <= 0:
        return None, f"± {gap / GIB:.2f} GiB of KV memory ({why})"
    return gap / cache, f"± {gap / cache:.1%}, ± {gap / GIB:.2f} GiB of KV memory ({why})"
