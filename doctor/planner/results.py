"""A plan as check results (QD-PLAN-001 divisibility, QD-PLAN-002 fit), so `plan` reports like `check` does."""

from __future__ import annotations

from doctor.deployment.table import option
from doctor.planner.plan import Plan
from doctor.results import Result, Status

CATEGORY = "plan"


def plan_results(p: Plan) -> list[Result]:
    """Divisibility (fail on a hard rule, warn on a soft one) and fit, with the smallest change first as fix."""
    hard = [r for r in p.rules if not r.ok and r.severity == "fail"]
    soft = [r for r in p.rules if not r.ok and r.severity != "fail"]
    split = p.config.tp
    if hard:
        divides = Result("QD-PLAN-001", "Parallel sizes divide the model", CATEGORY, "critical", Status.FAIL,
                         f"{p.model.name} cannot be split with TP={split}: {hard[0].message}",
                         details=[r.message for r in hard[1:]], fix=[r.fix for r in hard if r.fix])
    elif soft:
        divides = Result("QD-PLAN-001", "Parallel sizes divide the model", CATEGORY, "critical", Status.WARN,
                         soft[0].message, details=[r.message for r in soft[1:]], fix=[r.fix for r in soft if r.fix])
    else:
        divides = Result("QD-PLAN-001", "Parallel sizes divide the model", CATEGORY, "critical", Status.OK,
                         f"TP={split} divides the heads and experts of {p.model.name}")
    where = str(p.hardware)
    evidence = {"kv_tokens": p.kv_tokens, "max_model_len": p.max_model_len}
    if p.fits:
        fit = Result("QD-PLAN-002", "Weights and KV cache fit the GPUs", CATEGORY, "high", Status.OK,
                     f"fits on {where}: {p.kv_tokens:,} KV tokens per replica, {p.max_concurrency:.2f} requests "
                     f"at {p.max_model_len:,} tokens", evidence=evidence)
    else:
        fix = ([f"smallest change that makes it fit: {p.suggestions[0]}"]
               + [f"also fits: {s}" for s in p.suggestions[1:]]) if p.suggestions else \
            ["no single change makes it fit: add GPUs or combine several of: FP8 checkpoint, more TP, "
             f"lower {option('max_model_len')}"]
        fit = Result("QD-PLAN-002", "Weights and KV cache fit the GPUs", CATEGORY, "high", Status.FAIL,
                     f"does not fit on {where}: {p.problems[0]}", details=p.problems[1:], fix=fix,
                     evidence=evidence)
    return [divides, fit]
