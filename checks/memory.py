"""GPU memory checks: enough free memory for the requested utilization, no foreign processes."""

from __future__ import annotations

from typing import NamedTuple

from doctor.context import CheckContext
from doctor.gpus import gib, label, select
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn


class Share(NamedTuple):
    """The share of each GPU the backend claims, the flag that sets it, and where the value comes from."""

    fraction: float | None   # None: the engine decides it at startup (the rule says how)
    flag: str
    origin: str


def vllm_default_utilization(version: str | None) -> Share:
    """vLLM's own --gpu-memory-utilization default in `version` (the installed one; when unknown, the version the
    planner assumes), as its flag schema records it (doctor/flags/schemas, flag_default), else
    doctor/planner/versions.vllm_rules: 0.9 up to 0.19.1, 0.92 from 0.20.0, resolved at startup from 0.34.0."""
    from doctor.planner.config import ASSUMED_VLLM_VERSION
    from doctor.planner.engine_defaults import engine_default
    from doctor.planner.versions import vllm_rules

    flag = "--gpu-memory-utilization"
    known = version or ASSUMED_VLLM_VERSION
    who = f"vLLM {known}" if version else f"vLLM {known} (version not recorded; the planner assumes it too)"
    found = engine_default("vllm", known, "gpu_memory_utilization")
    if found is not None and found.resolved_at_runtime:
        return Share(None, flag, f"{who} resolves its default at startup: {_rule(found.rule)}")
    if found is not None and isinstance(found.value, (int, float)):
        return Share(float(found.value), flag, f"the default of {who}")
    return Share(vllm_rules(known).gpu_memory_utilization, flag, f"the default of {who}")


def sglang_default_fraction(version: str | None) -> Share:
    """SGLang's --mem-fraction-static default: every version with a flag schema computes it at startup from the
    GPU's memory and the serving flags (flag_default's rule), so no share is known before the engine runs."""
    from doctor.planner.engine_defaults import engine_default

    found = engine_default("sglang", version, "mem_fraction_static")
    who = f"SGLang {version}" if version else "SGLang"
    if found is not None and not found.resolved_at_runtime and isinstance(found.value, (int, float)):
        return Share(float(found.value), "--mem-fraction-static", f"the default of {who}")
    rule = _rule(found.rule) if found is not None else "from the GPU memory and the serving flags"
    return Share(None, "--mem-fraction-static", f"{who} computes its default at startup: {rule}")


def _rule(text: str | None) -> str:
    """A flag schema's default rule without its leading 'None: ' (the placeholder the parser hands over)."""
    return str(text or "").removeprefix("None: ")


def _engine_version(ctx: CheckContext, backend: str) -> str | None:
    from packaging.version import InvalidVersion, Version

    installed = ctx.facts.package_version(backend)
    try:
        return Version(installed).public if installed else None
    except InvalidVersion:
        return None


def _share(ctx: CheckContext) -> Share:
    """The share of each GPU the backend will claim: the flag given, else the engine version's default."""
    if ctx.option("mem_fraction_static") is not None:
        return Share(float(ctx.option("mem_fraction_static")), "--mem-fraction-static", "as given")
    if ctx.backend == "sglang":
        return sglang_default_fraction(_engine_version(ctx, "sglang"))
    if ctx.option("gpu_memory_utilization") is not None:
        return Share(float(ctx.option("gpu_memory_utilization")), "--gpu-memory-utilization", "as given")
    return vllm_default_utilization(_engine_version(ctx, "vllm"))


@check("QD-MEM-001", "Free GPU memory covers the requested share", category="memory", severity="critical")
def free_memory(ctx: CheckContext) -> Outcome:
    """vLLM refuses to start when free memory is below gpu-memory-utilization x total; SGLang likewise."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    used_gpus = [g for g in select(ctx).used if g.get("memory")]
    if not used_gpus:
        return skip("no GPU memory facts")
    share = _share(ctx)
    if share.fraction is None:
        return skip(f"{share.origin}; pass {share.flag} to check free memory against a share")
    fraction, flag = share.fraction, share.flag
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
            details=details + [f"{flag} {fraction}: {share.origin}.",
                               "vLLM: 'Free memory on device ... is less than desired GPU memory utilization'."],
            fix=["Stop the processes holding GPU memory (see QD-MEM-002).",
                 f"Or lower {flag} to <= {max(0.05, can - 0.02):.2f}."],
            evidence={"fraction": fraction}, remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
        )
    return ok(f"free memory covers {flag} {fraction} on {len(used_gpus)} GPU(s)",
              details=details + [f"{flag} {fraction}: {share.origin}."])


@check("QD-MEM-002", "No foreign processes on the deployment GPUs", category="memory", severity="medium")
def foreign_processes(ctx: CheckContext) -> Outcome:
    """Other processes holding GPU memory shrink the KV cache or make the backend's memory profiling wrong."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    if not ctx.facts.knows("gpus") or not ctx.facts.knows("gpu.processes"):
        return skip("not recorded (the processes on the GPUs come from NVML only)")
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
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def _unified(ctx: CheckContext) -> list[dict]:
    return [g for g in ctx.facts.gpus if any(name in str(g.get("name") or "") for name in UNIFIED_MEMORY_GPUS)]


class EngineReading(NamedTuple):
    """Which host figure an engine version takes as the free memory of a unified-memory GPU."""

    reads_available: bool   # MemAvailable (page cache counts as free), else MemFree
    version: str
    rule: str               # the version rule in words
    known: bool             # False: the version was assumed


def _reading(backend: str, version: str, capability: str | None, known: bool = True) -> EngineReading:
    from doctor.planner.versions import UMA_AVAILABLE_SINCE, UMA_CAPABILITIES, uma_reads_available

    name, (since, integrated) = ENGINE_NAMES[backend], UMA_AVAILABLE_SINCE[backend]
    if uma_reads_available(backend, version, capability):
        rule = f"{name} {version} takes MemAvailable as free memory on unified-memory GPUs (since {since})"
    elif uma_reads_available(backend, version):
        rule = (f"{name} {version} takes MemAvailable only on compute capability {', '.join(UMA_CAPABILITIES)} "
                f"(from {integrated}: every integrated GPU); on {capability} cudaMemGetInfo's MemFree")
    else:
        rule = f"{name} {version} takes cudaMemGetInfo's free memory, MemFree (MemAvailable from {since})"
    return EngineReading(uma_reads_available(backend, version, capability), version, rule, known)


def _engine_reading(ctx: CheckContext, backend: str, capability: str | None) -> EngineReading:
    """From the installed version in the facts, else the profile's range when every version in it reads alike,
    else the newest version with a schema (what the planner assumes), saying so."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    from doctor.planner.versions import UMA_AVAILABLE_SINCE, UMA_LAST_BEFORE, known_versions

    installed = ctx.facts.package_version(backend)
    try:
        if installed:
            return _reading(backend, Version(installed).public, capability)
    except InvalidVersion:
        pass
    profile = ctx.profile
    if getattr(profile, "backend", None) == backend and getattr(profile, "backend_version", None):
        try:
            spec = SpecifierSet(str(profile.backend_version))
        except InvalidSpecifier:
            spec = None
        # the versions with a schema, both sides of each rule change, and "0.0" for anything older
        probes = [*known_versions(backend), *UMA_AVAILABLE_SINCE[backend], *UMA_LAST_BEFORE[backend], "0.0"]
        inside = sorted((v for v in probes if spec is not None and spec.contains(v, prereleases=True)), key=Version)
        readings = [_reading(backend, v, capability) for v in inside]
        if readings and len({r.reads_available for r in readings}) == 1:
            first = readings[0]
            return first._replace(version=f"{spec}", rule=f"{first.rule}; so does every version in the profile's "
                                  f"range {spec}")
    newest = known_versions(backend)[-1]
    assumed = _reading(backend, newest, capability, known=False)
    return assumed._replace(rule=f"{ENGINE_NAMES[backend]} version unknown, assumed {newest}: {assumed.rule}")


@check("QD-MEM-003", "Unified memory: free memory as the engine sees it", category="memory", severity="high")
def unified_memory(ctx: CheckContext) -> Outcome:
    """On GB10 (DGX Spark) and Jetson, GPU memory is host memory and torch.cuda.mem_get_info() returns the
    kernel's MemFree, which counts the reclaimable page cache as used. The engine's start-up check ('Free
    memory on device ... is less than desired GPU memory utilization') compares MemFree up to vLLM 0.11.0 and
    SGLang 0.5.3, MemAvailable from vLLM 0.11.1 and SGLang 0.5.4 (doctor/planner/versions.py vllm_rules /
    sglang_rules, read in the wheels; vllm-project/vllm#48140 was retracted for that reason). NVML reports no
    memory at all on GB10 (vllm-project/vllm#55828)."""
    gpus = _unified(ctx)
    if not gpus:
        return skip("no unified-memory GPU (GB10, Thor, Orin)")
    from doctor.planner.versions import UMA_AVAILABLE_SINCE, uma_reads_available   # the planner: only where needed
    memory = ctx.facts.host.get("memory") or {}
    if not memory.get("total") or memory.get("free") is None:
        return skip(f"{gpus[0].get('name')}: host memory facts missing (collect with a newer qwen-doctor)")
    total, free, available = memory["total"], memory["free"], memory.get("available", memory["free"])
    cached = memory.get("cached") or 0
    share = _share(ctx)
    if share.fraction is None:
        return skip(f"{share.origin}; pass {share.flag} to check free memory against a share")
    fraction, flag = share.fraction, share.flag
    want = fraction * total
    backend = "sglang" if ctx.backend == "sglang" or flag == "--mem-fraction-static" else "vllm"
    capability = gpus[0].get("compute_capability")
    engine = _engine_reading(ctx, backend, str(capability) if capability else None)
    name = ENGINE_NAMES[backend]
    sees = available if engine.reads_available else free
    details = [f"host memory {gib(total)}: MemFree {gib(free)}, MemAvailable {gib(available)}, page cache {gib(cached)}",
               engine.rule, f"{flag} {fraction} asks for {gib(want)}; {name} sees {gib(sees)} free"]
    evidence = {"total": total, "free": free, "available": available, "cached": cached, "fraction": fraction,
                "reads": "MemAvailable" if engine.reads_available else "MemFree", "version": engine.version,
                "version_known": engine.known}
    drop = "sync; echo 3 | sudo tee /proc/sys/vm/drop_caches   (right before the start: reading weights refills it)"
    if sees >= want:
        if not engine.known and free < want:
            since = UMA_AVAILABLE_SINCE[backend][0]
            return warn(f"{gib(available)} available covers {flag} {fraction} ({gib(want)}) for {name} >= {since} "
                        f"(version not recorded, assumed {engine.version}); an older one reads MemFree, {gib(free)}",
                        details=details, evidence=evidence,
                        fix=[f"Collect the facts where {name} is installed so that its version is known, or {drop}."])
        return ok(f"{gib(sees)} free covers {flag} {fraction} ({gib(want)}) of the {gib(total)} shared memory",
                  details=details, evidence=evidence,
                  fix=[] if engine.reads_available or cached < total * 0.1
                  else [f"Page cache holds {gib(cached)}; after a model load, {drop}"])
    if available >= want:
        since, integrated = UMA_AVAILABLE_SINCE[backend]
        upgrade = since if uma_reads_available(backend, since, str(capability) if capability else None) else integrated
        return fail(f"{name} {engine.version} reads MemFree, not MemAvailable: the page cache ({gib(cached)}) leaves "
                    f"{gib(sees)} free, below the {gib(want)} that {flag} {fraction} asks for",
                    details=details, evidence=evidence, remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
                    fix=[f"Drop the page cache: {drop}.",
                         f"Or upgrade to {name} >= {upgrade}, which takes MemAvailable (page cache counts as free).",
                         "Keep host processes small (a desktop session, a large Ray object store: "
                         "ray start --object-store-memory=1000000000)."])
    can = max(0.05, available / total - 0.05)
    return fail(f"only {gib(available)} of {gib(total)} is available, below the {gib(want)} {flag} {fraction} asks for",
                details=details, evidence=evidence, remedy_ids=["QD-R-VLLM-FREE-MEMORY-LOW"],
                fix=[f"Lower {flag} to <= {can:.2f}, or stop host processes that hold memory.",
                     *([] if engine.reads_available else [f"Then {drop}."])])
