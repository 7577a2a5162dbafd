"""GPU memory checks: enough free memory for the requested utilization, no foreign processes."""

from __future__ import annotations

from doctor.context import CheckContext
from doctor.gpus import gib, label, select
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

VLLM_DEFAULT_UTILIZATION = 0.9


def _fraction(ctx: CheckContext) -> tuple[float, str]:
    """The share of each GPU the backend will claim, and the flag that sets it."""
    if ctx.backend == "sglang" or ctx.option("mem_fraction_static") is not None:
        value = ctx.option("mem_fraction_static")
        if value is not None:
            return float(value), "--mem-fraction-static"
    return float(ctx.option("gpu_memory_utilization", VLLM_DEFAULT_UTILIZATION)), "--gpu-memory-utilization"


@check("QD-MEM-001", "Free GPU memory covers the requested share", category="memory", severity="critical")
def free_memory(ctx: CheckContext) -> Outcome:
    """vLLM refuses to start when free memory is below gpu-memory-utilization x total; SGLang likewise."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    used_gpus = [g for g in select(ctx).used if g.get("memory")]
    if not used_gpus:
        return skip("no GPU memory facts")
    fraction, flag = _fraction(ctx)
    short, details = [], []
    for g in used_gpus:
        mem = g["memory"]
        want = fraction * mem["total"]
        details.append(f"{label(g)}: {gib(mem['free'])} free of {gib(mem['total'])}, {flag} {fraction} wants {gib(want)}")
        if mem["free"] < want:
            short.append(g)
    if short:
        worst = min(short, key=lambda g: g["memory"]["free"] / g["memory"]["total"])
        can = worst["memory"]["free"] / worst["memory"]["total"]
        return fail(
            f"{len(short)} GPU(s) have less free memory than {flag} {fraction} asks for",
            details=details + ["vLLM: 'Free memory on device ... is less than desired GPU memory utilization'."],
            fix=["Stop the processes holding GPU memory (see QD-MEM-002).",
                 f"Or lower {flag} to <= {max(0.05, can - 0.02):.2f}."],
            evidence={"fraction": fraction}, remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
        )
    return ok(f"free memory covers {flag} {fraction} on {len(used_gpus)} GPU(s)", details=details)


@check("QD-MEM-002", "No foreign processes on the deployment GPUs", category="memory", severity="medium")
def foreign_processes(ctx: CheckContext) -> Outcome:
    """Other processes holding GPU memory shrink the KV cache or make the backend's memory profiling wrong."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    lines = []
    for g in select(ctx).used:
        for p in g.get("processes") or []:
            lines.append(f"{label(g)}: pid {p.get('pid')} {p.get('name') or '?'} holds {gib(p.get('used_memory'))}")
    if lines:
        return warn(f"{len(lines)} process(es) already hold memory on the deployment GPUs", details=lines,
                    fix=["Stop them (`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`), "
                         "or choose other GPUs with CUDA_VISIBLE_DEVICES."])
    return ok("no other compute processes on the deployment GPUs")
