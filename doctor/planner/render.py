"""Plan -> text table (one column per pipeline stage) and JSON-ready dict. No click here."""

from __future__ import annotations

from typing import Any

from doctor.deployment.table import option
from doctor.planner.hardware import GIB, MIB, hardware_class
from doctor.planner.plan import Plan, RankPlan


def _gib(n: float) -> str:
    return f"{n / GIB:,.2f} GiB"


def _weights_detail(w: dict[str, int]) -> str:
    parts = sorted(((k, v) for k, v in w.items() if k != "total" and v), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v / GIB:.2f}" for k, v in parts)


def _budget_base(p: Plan, r: RankPlan) -> int:
    """What the budget is a share of: torch's total (vLLM), the free memory before the weights load (SGLang:
    the GPU's torch total less the context held then, profile_max_num_token)."""
    return p.hardware.gpu.usable_bytes - (0 if p.config.backend == "vllm" else r.overhead_bytes)


def _phase(phase: str) -> str:
    """" (at the drafter's dummy run)": the profile-run phase that sets the activation, where it is not the
    forward."""
    return f" (at {phase})" if phase and phase != "the dummy forward" else ""


def band_text(p: Plan) -> str:
    """"± 0.2%, ± 0.12 GiB of KV memory (why)" (vLLM: bands.plan_band) or "error not measured (why)" for the
    plan's KV tokens."""
    from doctor.planner.bands import plan_band

    if p.config.backend != "vllm":
        from doctor.planner.accuracy import sglang_band
        from doctor.planner.versions import SGLANG_READ, sglang_rules

        version = p.config.backend_version or SGLANG_READ[-1]
        default = p.config.mem_fraction_static is None
        formula = ""
        if default:
            formula = (f"; {option('mem_fraction_static')} default of " + version + " as read in its wheel"
                       if sglang_rules(version).formula_checked
                       else f"; SGLang {version} not read: the default {option('mem_fraction_static')} of the nearest read "
                            "version applies")
        rel, why = sglang_band(p.hardware.gpu.usable_bytes, p.config.tp, version, p.model.quantization.method,
                               default_fraction=default, speculative=p.config.speculative_kind,
                               gpu_class=hardware_class(p.hardware.gpu))
        if rel is not None:
            return f"± {rel:.1%} ({why}{formula})"
        return _sglang_bound_text(p, why + formula)
    return plan_band(p)[1]


def _sglang_bound_text(p: Plan, why: str) -> str:
    """The band of an SGLang plan no logged boot covers: the bound the terms' own uncertainty gives
    (sglang_kv.term_bound), relative to the pools of its smallest rank."""
    from doctor.planner.coefficients import calibration
    from doctor.planner.sglang_kv import term_bound

    rank = min(p.ranks, key=lambda r: r.cache_bytes)
    target = rank.weights["total"] - rank.weights.get("mtp", 0) - rank.weights.get("drafter", 0)
    weights_rel = (calibration().get("sglang") or {}).get("weights_max_abs_error", 0.01)
    bound = term_bound(p.config, target, weights_rel)
    size = f"± {bound / GIB:.2f} GiB of KV memory"
    head = f"± {bound / rank.cache_bytes:.1%}, {size}" if rank.cache_bytes > 0 else size
    return (f"{head} (SGLang: error not measured, {why}; bound from the terms' uncertainty: the memory in use "
            "before and after the load, the weights)")


def render_layouts(plans: list[Plan]) -> str:
    """One line per layout, best first (the one asked for, layouts.asks_layout, before them)."""
    from doctor.planner.layouts import asks_layout

    head = "best first; the best is planned below"
    if asks_layout(plans[0].config):
        asked = plans[0]
        better = sum(1 for p in plans[1:] if p.fits and (not asked.fits or p.max_concurrency * p.config.dp
                                                         > asked.max_concurrency * asked.config.dp))
        head = (f"the one asked for first, then the others best first, {better} of them serving more requests; "
                "the first is planned below")
    lines = [f"layouts of {plans[0].hardware} ({head}):"]
    for i, p in enumerate(plans, 1):
        c = p.config
        name = f"TP {c.tp} x PP {c.pp} x DP {c.dp}" + (" + EP" if c.expert_parallel else "")
        verdict = (f"{p.kv_tokens:,} KV tokens/replica, {p.max_concurrency * c.dp:,.2f} requests at "
                   f"{p.max_model_len:,} tokens" if p.fits else "does not fit: " + p.problems[0][:90])
        lines.append(f"  {i:>2}. {name:<26} {verdict}")
    return "\n".join(lines)


def _speculation(p: Plan) -> list[str]:
    """One line naming the speculative decoding the plan includes."""
    from doctor.planner.drafters import drafter_of

    cfg = p.config
    if not cfg.mtp_tokens and cfg.drafter is None:
        return []
    drafter = drafter_of(cfg)
    if drafter is None:
        what = "the checkpoint's MTP layer" if cfg.uses_mtp_head else f"{cfg.speculative_method} (no drafter model)"
        return [f"  speculative decoding: {what}, {cfg.mtp_tokens} tokens per step"]
    kv = ("its layers join the target's KV groups" if drafter.same_kv_spec_as(p.model, cfg.tp)
          else "its layers form their own KV groups") if cfg.backend == "vllm" else \
        "its own KV pool of the same token count"
    return [f"  speculative decoding: {drafter.method} drafter {drafter.name} ({drafter.num_layers} layers, "
            f"{drafter.weight_bytes(cfg.tp) / GIB:.2f} GiB/GPU; {kv}), {cfg.mtp_tokens} tokens per step"]


def render_text(p: Plan) -> str:
    cfg, spec = p.config, p.model
    lines = [
        f"qwen-doctor plan: {spec.name} on {p.hardware} with {cfg.backend} {cfg.backend_version or ''} "
        f"(TP {cfg.tp}, PP {cfg.pp}, DP {cfg.dp}{', EP' if cfg.expert_parallel else ''})",
        f"  max model len {p.max_model_len:,} · KV cache {cfg.kv_cache_dtype}: "
        f"{p.kv_bytes_per_token / 1024:,.1f} KiB/token/GPU ({len(spec.full_attention_layers)} of "
        f"{spec.num_layers} layers keep one)"
        + (f" · GDN state {p.gdn_state_bytes_per_seq / MIB:,.1f} MiB/sequence/GPU" if p.gdn_state_bytes_per_seq else ""),
        *_speculation(p),
        *(f"  ! {note}" for note in p.notes),
        "",
    ]
    share = option("gpu_memory_utilization" if cfg.backend == "vllm" else "mem_fraction_static")[2:]
    rows: list[tuple[str, list[str]]] = [
        ("layers", [f"{r.layers[0]}-{r.layers[1] - 1} ({r.full_layers} attn, {r.linear_layers} GDN)" for r in p.ranks]),
        ("GPU memory (torch)" if cfg.backend == "vllm" else "GPU memory",
         [_gib(p.hardware.gpu.usable_bytes if cfg.backend == "vllm" else p.hardware.gpu.memory_bytes)] * len(p.ranks)),
        (f"budget ({share})", [f"{_gib(r.budget_bytes)} ({r.budget_bytes / _budget_base(p, r):.3f})" for r in p.ranks]),
        ("weights", [_gib(r.weights["total"]) for r in p.ranks]),
        ("  of which", [_weights_detail(r.weights) for r in p.ranks]),
        ("overhead (measured)" if all("measured" in r.weights for r in p.ranks) else "overhead (estimate)",
         [_gib(r.overhead_bytes) for r in p.ranks]),
        *([("  of which", [f"activation {r.terms.peak_activation / GIB:.2f}{_phase(r.terms.peak_phase)}, "
                            f"non-torch {r.terms.non_torch / GIB:.2f}, "
                            f"CUDA graphs {r.terms.cudagraph_estimate / GIB:.2f}" for r in p.ranks])]
          if cfg.backend == "vllm" and all(r.terms for r in p.ranks) and cfg.overhead_gib is None else []),
        ("KV cache" + (" + mamba pool" if cfg.backend == "sglang" and p.gdn_state_bytes_per_seq else ""),
         [_gib(r.cache_bytes) for r in p.ranks]),
        ("KV capacity", [f"{r.kv_tokens:,} tokens" for r in p.ranks]),
        ("  error band", [band_text(p)] * len(p.ranks)),
        ("max concurrency", [f"{r.max_concurrency:,.2f} x {p.max_model_len:,} tokens" for r in p.ranks]),
    ]
    if cfg.backend == "vllm":
        rows.append(("block size", [f"{r.block_size} tokens" for r in p.ranks]))
    elif p.gdn_state_bytes_per_seq:
        rows.append(("mamba slots", [f"{r.mamba_slots:,}" for r in p.ranks]))
        rows.append(("max running requests", [f"{r.max_running_requests:,}" for r in p.ranks]))
    header = [f"stage {r.pp_rank} (x{cfg.tp * cfg.dp} GPUs)" for r in p.ranks]
    width = max(len(name) for name, _ in rows) + 2
    cols = [max(len(h), *(len(v[i]) for _, v in rows)) for i, h in enumerate(header)]
    lines.append("  " + " " * width + "  ".join(h.ljust(c) for h, c in zip(header, cols)))
    for name, values in rows:
        lines.append("  " + name.ljust(width) + "  ".join(v.ljust(c) for v, c in zip(values, cols)))
    lines.append("")
    if p.hardware.gpu.unified:
        lines.append(f"  ! {unified_memory_note(p)}")
    for r in p.rules:
        if not r.ok:
            mark = "✗" if r.severity == "fail" else "!"
            lines.append(f"  {mark} {r.message}")
            if r.fix:
                lines.append(f"      fix: {r.fix}")
    if p.fits:
        lines.append(f"  ✓ fits: {p.kv_tokens:,} KV tokens per replica, {p.max_concurrency:.2f} requests "
                     f"at {p.max_model_len:,} tokens")
    else:
        lines.append("  ✗ does not fit:")
        lines += [f"      {problem}" for problem in p.problems if not any(problem == r.message for r in p.rules)]
        if p.suggestions:
            lines.append(f"    smallest change that makes it fit: {p.suggestions[0]}")
            lines += [f"    also fits: {s}" for s in p.suggestions[1:]]
        else:
            lines.append("    no single change makes it fit: add GPUs or combine the changes above")
    return "\n".join(line.rstrip() for line in lines)


def unified_memory_note(p: Plan) -> str:
    """What the engine version takes as free memory on a unified-memory GPU (versions.py uma_reads_available)."""
    from doctor.planner.versions import UMA_AVAILABLE_SINCE, known_versions, uma_reads_available

    cfg, gpu = p.config, p.hardware.gpu
    sglang = cfg.backend == "sglang"
    name, flag = ("SGLang", option("mem_fraction_static")) if sglang else ("vLLM", option("gpu_memory_utilization"))
    version = cfg.backend_version or known_versions(cfg.backend)[-1]
    assumed = "" if cfg.backend_version else " (assumed)"
    since = UMA_AVAILABLE_SINCE[cfg.backend][0]
    head = f"{gpu.name} shares one memory between CPU and GPU: {name} {version}{assumed} takes as free memory "
    if uma_reads_available(cfg.backend, version, gpu.compute_capability):
        return (head + f"the host's MemAvailable (since {since}): page cache counts as free, memory that host "
                f"processes hold does not; keep {flag} low enough for them")
    return (head + f"cudaMemGetInfo's MemFree, which page cache and host processes shrink (MemAvailable from {since} "
            f"on); drop caches (sync; echo 3 > /proc/sys/vm/drop_caches) right before starting and keep {flag} "
            "low enough for the host")


def plan_to_dict(p: Plan) -> dict[str, Any]:
    """A stable, JSON-serialisable view of the plan."""
    cfg = p.config
    return {
        "schema": 1,
        "model": p.model.name,
        "gpus": {"name": p.hardware.gpu.name, "count": p.hardware.count, "memory_bytes": p.hardware.gpu.memory_bytes,
                 "compute_capability": p.hardware.gpu.compute_capability, "per_node": p.hardware.gpus_per_node},
        "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
        "max_model_len": p.max_model_len,
        "kv_bytes_per_token": p.kv_bytes_per_token,
        "gdn_state_bytes_per_sequence": p.gdn_state_bytes_per_seq,
        "ranks": [{
            "pp_rank": r.pp_rank, "layers": list(r.layers), "full_attention_layers": r.full_layers,
            "gdn_layers": r.linear_layers, "weights_bytes": r.weights, "overhead_bytes": r.overhead_bytes,
            "budget_bytes": r.budget_bytes, "cache_bytes": r.cache_bytes, "kv_tokens": r.kv_tokens,
            "max_concurrency": round(r.max_concurrency, 4), "block_size": r.block_size,
            "mamba_slots": r.mamba_slots, "max_running_requests": r.max_running_requests,
        } for r in p.ranks],
        "rules": [{"rule": r.rule, "ok": r.ok, "severity": r.severity, "message": r.message, "fix": r.fix}
                  for r in p.rules],
        "fits": p.fits,
        "kv_tokens": p.kv_tokens,
        "problems": p.problems,
        "suggestions": p.suggestions,
        "notes": p.notes,
    }
