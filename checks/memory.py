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


# GPUs that share the host's memory (integrated / unified): their CUDA free memory is the host's.
UNIFIED_MEMORY_GPUS = ("GB10", "Thor", "Orin")


def _unified(ctx: CheckContext) -> list[dict]:
    return [g for g in ctx.facts.gpus if any(name in str(g.get("name") or "") for name in UNIFIED_MEMORY_GPUS)]


@check("QD-MEM-003", "Unified memory: free memory as the engine sees it", category="memory", severity="high")
def unified_memory(ctx: CheckContext) -> Outcome:
    """On GB10 (DGX Spark) and Jetson, GPU memory is host memory. torch.cuda.mem_get_info() there returns the
    kernel's MemFree, which counts the reclaimable page cache as used: vLLM's start-up check ('Free memory on
    device ... is less than desired GPU memory utilization') fails after a model's files were read, although
    MemAvailable would cover it (vllm-project/vllm#48140). SGLang reads MemAvailable on integrated GPUs
    (srt/utils get_available_gpu_memory); NVML reports no memory at all on GB10 (vllm-project/vllm#55828)."""
    gpus = _unified(ctx)
    if not gpus:
        return skip("no unified-memory GPU (GB10, Thor, Orin)")
    memory = ctx.facts.host.get("memory") or {}
    if not memory.get("total") or memory.get("free") is None:
        return skip(f"{gpus[0].get('name')}: host memory facts missing (collect with a newer qwen-doctor)")
    total, free, available = memory["total"], memory["free"], memory.get("available", memory["free"])
    cached = memory.get("cached") or 0
    fraction, flag = _fraction(ctx)
    want = fraction * total
    sees = available if ctx.backend == "sglang" else free
    details = [f"host memory {gib(total)}: MemFree {gib(free)}, MemAvailable {gib(available)}, page cache {gib(cached)}",
               f"{flag} {fraction} asks for {gib(want)}; {'SGLang' if ctx.backend == 'sglang' else 'vLLM'} "
               f"sees {gib(sees)} free"]
    evidence = {"total": total, "free": free, "available": available, "cached": cached, "fraction": fraction}
    drop = "sync; echo 3 | sudo tee /proc/sys/vm/drop_caches   (right before the start: reading weights refills it)"
    if sees >= want:
        return ok(f"{gib(sees)} free covers {flag} {fraction} ({gib(want)}) of the {gib(total)} shared memory",
                  details=details, evidence=evidence,
                  fix=[] if cached < total * 0.1 else [f"Page cache holds {gib(cached)}; after a model load, {drop}"])
    if available >= want:
        return fail(f"the page cache ({gib(cached)}) makes the engine see only {gib(sees)} free, below the "
                    f"{gib(want)} that {flag} {fraction} asks for", details=details, evidence=evidence,
                    remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
                    fix=[f"Drop the page cache: {drop}.",
                         "Keep host processes small (a desktop session, a large Ray object store: "
                         "ray start --object-store-memory=1000000000)."])
    can = max(0.05, available / total - 0.05)
    return fail(f"only {gib(available)} of {gib(total)} is available, below the {gib(want)} {flag} {fraction} asks for",
                details=details, evidence=evidence, remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
                fix=[f"Lower {flag} to <= {can:.2f}, or stop host processes that hold memory.", f"Then {drop}."])
