"""plan(model, hardware, serve config) -> Plan: per-rank memory, KV capacity, fit, and fixes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from packaging.version import Version

from doctor.deployment.table import option
from doctor.models.spec import ModelSpec
from doctor.flags.values import AUTO_LENGTH
from doctor.planner.config import ASSUMED_VLLM_VERSION, ServeConfig
from doctor.planner.context_length import longer_finding
from doctor.planner.autofit import NO_TOKEN, auto_fit_note, fitted_length
from doctor.planner.drafters import DrafterSpec, drafter_capacity, drafter_of, sglang_drafter_cell_bytes
from doctor.planner.divisibility import RuleResult, check_divisibility, valid_tensor_parallel_sizes
from doctor.planner.hardware import GIB, Hardware
from doctor.planner.errors import PlanInputError
from doctor.planner.extensible import extensible_cache_bytes, utilization_note
from doctor.planner.overhead import VllmOverhead, ep_group_spans_nodes, v1_model_runner, vllm_overhead_terms
from doctor.planner.sglang_kv import LOAD_BUFFER_BYTES, rules_of, sglang_capacity, sglang_pools
from doctor.planner.sglang_kv import context_bytes as sglang_context_bytes
from doctor.planner.startup import startup_findings
from doctor.planner.state import gdn_state_bytes_per_layer, kv_bytes_per_token_per_layer, layers_in_stage
from doctor.planner.versions import SGLANG_READ, model_support_problem, nearest_covered, resolve_version, vllm_rules
from doctor.planner.wsl import device_state_note, uva_startup_problem, wsl_note
from doctor.planner.vllm_kv import vllm_capacity, vllm_layout
from doctor.planner.rope_cache import drafter_rope_cache_bytes, target_rope_cache_bytes
from doctor.planner.weights import pp_partition, rank_weights
from doctor.recipe_rules import mamba_concurrency, skips_vision_tower


@dataclass(frozen=True)
class Measured:
    """Figures a real boot logged, which replace the planner's estimates (plan --from-log)."""

    weights_bytes: int | None = None     # weights of one rank
    overhead_bytes: int | None = None    # peak activation + non-torch + CUDA-graph estimate of one rank


@dataclass(frozen=True)
class RankPlan:
    """One pipeline stage's rank (all TP/DP ranks of a stage are alike)."""

    pp_rank: int
    layers: tuple[int, int]
    full_layers: int
    linear_layers: int
    weights: dict[str, int]
    overhead_bytes: int
    budget_bytes: int          # total x gpu_memory_utilization (vLLM) or x mem_fraction_static (SGLang)
    cache_bytes: int           # what is left for the KV cache (and, for SGLang, the mamba pool)
    kv_tokens: int
    max_concurrency: float
    block_size: int = 0        # vLLM
    mamba_slots: int = 0       # SGLang mamba pool (max_mamba_cache_size)
    max_running_requests: int = 0
    terms: VllmOverhead | None = None   # vLLM: peak activation, non-torch, CUDA-graph estimate
    drafter_kv_bytes: int = 0  # SGLang: the draft worker's own KV pool (outside --mem-fraction-static)
    mamba_blocks: int = 0      # vLLM, hybrid model: the pool's blocks, one per running sequence (0: not known)


@dataclass
class Plan:
    model: ModelSpec
    hardware: Hardware
    config: ServeConfig
    max_model_len: int
    ranks: list[RankPlan]
    rules: list[RuleResult]
    kv_bytes_per_token: int          # per rank, all full-attention layers of the model
    gdn_state_bytes_per_seq: int     # per rank, all GDN layers of the model
    problems: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what the plan assumed in the user's stead (one line each)

    @property
    def fits(self) -> bool:
        return not self.problems

    @property
    def kv_tokens(self) -> int:
        return min((r.kv_tokens for r in self.ranks), default=0)

    @property
    def max_concurrency(self) -> float:
        return min((r.max_concurrency for r in self.ranks), default=0.0)


def _default_max_model_len(spec: ModelSpec, cfg: ServeConfig) -> int:
    return cfg.max_model_len or spec.max_position_embeddings


def _vllm_kv(spec: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec | None, full: int, linear: int, cache: int,
             max_len: int, batched_tokens: int) -> tuple[int, float, int, int]:
    """(KV tokens as the release logs them, max concurrency, block size, Mamba cache blocks) of a vLLM rank with
    `cache` bytes for the cache at `max_len` (`full` counts a drafter's layers of the target's KV spec). The blocks
    are 0 where not known: a model without GDN layers, or a drafter with a KV spec of its own."""
    layout = vllm_layout(spec, cfg, full, linear)
    cap = vllm_capacity(layout, cache, max_len, cfg)
    use_concurrency = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION).tokens_from_concurrency
    tokens, concurrency = (cap.tokens if use_concurrency else cap.legacy_tokens), cap.max_concurrency
    blocks = cap.num_blocks if linear else 0
    if drafter is not None and not drafter.same_kv_spec_as(spec, cfg.tp):
        draft = drafter_capacity(spec, cfg, drafter, layout, full, linear, cache, max_len, batched_tokens)
        tokens = draft.tokens if use_concurrency else draft.legacy_tokens
        concurrency, blocks = draft.max_concurrency, 0
    return tokens, concurrency, layout.block_size, blocks


def _auto_fit(plan: Plan) -> None:
    """vLLM's --max-model-len auto on an evaluated plan (at the derived length): the length every rank's cache
    holds one request of (autofit.py), the ranks' KV figures at it, and the note or the refusal vLLM logs."""
    spec, cfg, derived = plan.model, plan.config, plan.max_model_len
    drafter = drafter_of(cfg)
    fitted = min(fitted_length(lambda n, r=r: _vllm_kv(spec, cfg, drafter if r.pp_rank == cfg.pp - 1 else None,
                                                        r.full_layers, r.linear_layers, r.cache_bytes, n,
                                                        r.terms.max_num_batched_tokens if r.terms else 0)[1],
                               derived) if r.cache_bytes > 0 else 0 for r in plan.ranks)
    if fitted <= 0:   # vLLM's refusal replaces the one-request check it makes instead at a given length
        kept = [p for p in plan.problems if not p.startswith("To serve at least one request")]
        plan.problems = kept if any(r.cache_bytes <= 0 for r in plan.ranks) else [*kept, NO_TOKEN]
        return
    ranks = []
    for r in plan.ranks:
        tokens, concurrency, _, _ = _vllm_kv(spec, cfg, drafter if r.pp_rank == cfg.pp - 1 else None, r.full_layers,
                                             r.linear_layers, r.cache_bytes, fitted,
                                             r.terms.max_num_batched_tokens if r.terms else 0)
        ranks.append(replace(r, kv_tokens=tokens, max_concurrency=concurrency))
    plan.ranks, plan.max_model_len = ranks, fitted
    plan.problems = _problems(plan)
    plan.notes.append(auto_fit_note(cfg.backend_version or ASSUMED_VLLM_VERSION, derived, fitted))


def _rank(spec: ModelSpec, hw: Hardware, cfg: ServeConfig, pp_rank: int, max_len: int,
          measured: Measured | None = None) -> RankPlan:
    start, end = pp_partition(spec.num_layers, cfg.pp)[pp_rank]
    full, linear = layers_in_stage(spec, start, end)
    if cfg.uses_mtp_head and pp_rank == cfg.pp - 1:
        full += spec.mtp_layers          # the MTP drafter's attention layers share the KV pool
    # vLLM's FP8 Marlin path below compute capability 8.9 (weights.marlin_fp8_bytes_per_param); SGLang's FP8 MoE on
    # such GPUs is not read
    weights = rank_weights(spec, cfg, pp_rank, hw.gpu.capability if cfg.backend == "vllm" else None)
    if cfg.backend == "vllm" and full and (rope := target_rope_cache_bytes(spec, cfg)):
        weights = {**weights, "rotary cache": rope, "total": weights["total"] + rope}   # rope_cache.py
    drafter = drafter_of(cfg) if pp_rank == cfg.pp - 1 else None
    if drafter is not None:
        own = {k: v for k, v in weights.items() if k != "total"}
        drafter_bytes = drafter.weight_bytes(cfg.tp) + (drafter_rope_cache_bytes(drafter)
                                                        + drafter.fused_kv_copy_bytes(cfg.tp)
                                                        if cfg.backend == "vllm" else 0)
        weights = {**own, "drafter": drafter_bytes, "total": weights["total"] + drafter_bytes}
    if measured is not None and measured.weights_bytes is not None:
        weights = {"measured": measured.weights_bytes, "total": measured.weights_bytes}
    if cfg.backend == "vllm":
        total = hw.gpu.usable_bytes
        terms = vllm_overhead_terms(spec, cfg, hw.gpu, last_stage=pp_rank == cfg.pp - 1, pinned_memory=hw.pinned_memory,
                                    internode=ep_group_spans_nodes(cfg, hw.gpus_per_node, pp_rank))
        overhead = int(cfg.overhead_gib * GIB) if cfg.overhead_gib is not None else terms.total
        if measured is not None and measured.overhead_bytes is not None:
            overhead = measured.overhead_bytes
        budget = int(total * cfg.utilization)
        cache = budget - weights["total"] - overhead
        if cfg.extensible_kv_on and overhead == terms.total:
            cache = extensible_cache_bytes(hw.gpu, cfg.utilization, weights["total"], terms,
                                           hw.other_process_bytes)
        if cfg.kv_cache_memory_gib is not None:
            # --kv-cache-memory: vLLM takes the figure as given and skips the utilisation budget
            # (gpu_worker.py determine_available_memory); it must still fit beside weights and activations.
            budget = total
            given = int(cfg.kv_cache_memory_gib * GIB)
            cache = given if weights["total"] + overhead + given <= total else total - weights["total"] - overhead
        if drafter is not None and drafter.same_kv_spec_as(spec, cfg.tp):
            full += drafter.num_layers    # identical KV spec: the drafter's layers join the target's groups
        tokens, concurrency, block, blocks = _vllm_kv(spec, cfg, drafter, full, linear, cache, max_len,
                                                      terms.max_num_batched_tokens)
        return RankPlan(pp_rank, (start, end), full, linear, weights, overhead, budget, cache, tokens,
                        concurrency, block_size=block,
                        max_running_requests=cfg.max_num_seqs or terms.max_num_seqs, terms=terms,
                        mamba_blocks=blocks)
    # SGLang sizes its pools from the memory free before the load: other processes' memory comes off (startup.py)
    overhead = sglang_context_bytes(cfg) + hw.other_process_bytes
    if measured is not None and measured.overhead_bytes is not None:
        overhead = measured.overhead_bytes     # plan --from-log: the GPU is what was free before the load
    if measured is None or measured.weights_bytes is None:
        weights = {**weights, "load buffers": LOAD_BUFFER_BYTES, "total": weights["total"] + LOAD_BUFFER_BYTES}
    # The drafter's weights count in the pools' budget when it loads first (rules.draft_kv_in_cell, 0.5.14+),
    # else they come out of the memory outside --mem-fraction-static (drafters.py).
    rules = rules_of(cfg)
    loads_first = drafter is not None and rules.draft_kv_in_cell
    target_weights = weights if loads_first else {**weights, "total": weights["total"] - weights.get("drafter", 0)}
    cap = sglang_capacity(spec, cfg, hw.gpu, target_weights, overhead, (start, end),
                          pp_partition(spec.num_layers, cfg.pp), max_len)
    budget = int(cap.pre_model_load * cap.mem_fraction_static)
    tokens, running, draft_pool = cap.max_total_num_tokens, cap.max_running_requests, 0
    if drafter is not None:
        extra = sglang_drafter_cell_bytes(drafter, cfg.speculative_method or "", cap.cell_size,
                                          layers_in_stage(spec, start, end)[0], spec, cfg, rules)
        if extra:
            pools = sglang_pools(cap.rest, cap.cell_size + extra, cap.mamba_cache_per_req, cfg, max_len)
            tokens, running = pools.max_total_num_tokens, pools.max_running_requests
        else:
            draft_pool = tokens * drafter.num_layers * drafter.kv_bytes_per_token_per_layer(spec, cfg)
    elif cfg.uses_mtp_head and pp_rank == cfg.pp - 1:
        # the checkpoint's MTP head (NEXTN without a draft path): its KV is the draft worker's own pool of the
        # target's token count, outside the static fraction (sglang_kv.mtp_own_embed_head_bytes)
        draft_pool = tokens * spec.mtp_layers * kv_bytes_per_token_per_layer(spec, cfg)
    concurrency = tokens / max_len if max_len else 0.0
    return RankPlan(pp_rank, (start, end), full, linear, weights, overhead, budget, cap.rest,
                    tokens, concurrency, mamba_slots=cap.mamba_slots,
                    max_running_requests=running, drafter_kv_bytes=draft_pool)


def _evaluate(spec: ModelSpec, hw: Hardware, cfg: ServeConfig, measured: Measured | None = None) -> Plan:
    cfg.validate()
    if cfg.pp > spec.num_layers:
        raise PlanInputError(f"--pp {cfg.pp} exceeds the {spec.num_layers} decoder layers of {spec.name}")
    max_len = _default_max_model_len(spec, cfg)
    rules = check_divisibility(spec, cfg)
    kv_tok = kv_bytes_per_token_per_layer(spec, cfg) * len(spec.full_attention_layers)
    gdn = gdn_state_bytes_per_layer(spec, cfg) * len(spec.linear_attention_layers)
    ranks = [_rank(spec, hw, cfg, r, max_len, measured) for r in range(cfg.pp)]
    plan = Plan(spec, hw, cfg, max_len, ranks, rules, kv_tok, gdn)
    plan.problems = _problems(plan)
    return plan


def _problems(plan: Plan) -> list[str]:
    cfg, hw, out = plan.config, plan.hardware, []
    if cfg.world_size > hw.count:
        out.append(f"TP x PP x DP = {cfg.world_size} GPUs needed, {hw.count} available")
    out += [r.message for r in plan.rules if not r.ok and r.severity == "fail"]
    if plan.max_model_len > plan.model.max_position_embeddings:
        version = cfg.backend_version or (ASSUMED_VLLM_VERSION if cfg.backend == "vllm" else SGLANG_READ[-1])
        text, refused = longer_finding(cfg.backend, version, plan.max_model_len, plan.model.max_position_embeddings,
                                       dict(cfg.engine_env))
        if refused:
            out.append(text)
    for r in plan.ranks:
        if r.cache_bytes <= 0:
            if cfg.backend == "vllm":
                out.append("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                           f"(rank of stage {r.pp_rank}: weights {r.weights['total'] / GIB:.2f} GiB + "
                           f"overhead {r.overhead_bytes / GIB:.2f} GiB > budget {r.budget_bytes / GIB:.2f} GiB)")
            else:
                out.append(f"Not enough memory. Please try to increase {option('mem_fraction_static')}. "
                           f"(stage {r.pp_rank}: weights {r.weights['total'] / GIB:.2f} GiB, "
                           f"budget {r.budget_bytes / GIB:.2f} GiB)")
        elif r.kv_tokens <= 0 and cfg.backend == "sglang":
            out.append(f"Not enough memory. Please try to increase {option('mem_fraction_static')}.")
        elif r.drafter_kv_bytes and r.budget_bytes + r.weights.get("drafter", 0) + r.drafter_kv_bytes \
                > hw.gpu.usable_bytes - r.overhead_bytes:     # SGLang's budget is a share of the pre-load free memory
            out.append(f"The drafter's weights ({r.weights.get('drafter', 0) / GIB:.2f} GiB) and its KV pool "
                       f"({r.drafter_kv_bytes / GIB:.2f} GiB for {r.kv_tokens:,} tokens) do not fit beside the "
                       f"static pool (stage {r.pp_rank}); lower {option('mem_fraction_static')}")
        elif r.max_concurrency < 1:
            out.append(f"To serve at least one request with the model's max seq len ({plan.max_model_len}), "
                       f"the KV cache must hold it; it holds {r.kv_tokens} tokens "
                       f"(stage {r.pp_rank}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`")
        elif _mamba_blocks_refused(cfg, r):
            seqs = r.terms.max_num_seqs if r.terms else 0
            out.append(f"max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({r.mamba_blocks}). Each decode "
                       "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
                       f"max_num_seqs to at most {r.mamba_blocks} or increase gpu_memory_utilization.")
    return list(dict.fromkeys(out))


def _mamba_blocks_refused(cfg: ServeConfig, r: RankPlan) -> bool:
    """Whether vLLM refuses to capture FULL CUDA graphs because max_num_seqs exceeds the hybrid model's Mamba cache
    blocks. config/compilation.py resolve_cudagraph_mode_and_sizes (0.19.0+, vllm#38270; read in 0.26.0 and the
    0.32.0 CPU build) raises it after the KV cache is sized whenever the mode has FULL graphs, which the default
    FULL_AND_PIECEWISE has: vLLM 0.26.0 on one H100, no speculative decoding, 512 sequences against 335 blocks
    refused (tests/fixtures/h100-rehearsal/vllm-kv/h100-vllm-0.26-bf16-512-16384-u095.log). Eager mode captures
    nothing."""
    if cfg.backend != "vllm" or cfg.enforce_eager or not r.mamba_blocks or r.terms is None:
        return False
    release = Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version
    return mamba_concurrency(release, r.terms.max_num_seqs, r.mamba_blocks, full_graphs=True)[0] == "refuse"


def _largest_fitting_len(spec: ModelSpec, hw: Hardware, cfg: ServeConfig) -> int:
    lo, hi = 0, _default_max_model_len(spec, cfg)
    step = 1024
    while hi - lo > step:
        mid = max(lo + step, (lo + hi) // 2 // step * step)   # a multiple of step above lo: the search moves
        if mid >= hi:
            break
        if _evaluate(spec, hw, cfg.with_(max_model_len=mid)).fits:
            lo = mid
        else:
            hi = mid
    return lo


def _suggest(spec: ModelSpec, hw: Hardware, cfg: ServeConfig, plan: Plan) -> list[str]:
    """Single changes that turn a failing plan into a fitting one, least disruptive first."""
    if cfg.world_size > hw.count:
        return [f"use TP x PP x DP <= {hw.count} (e.g. {option('tp')} "
                f"{max(t for t in valid_tensor_parallel_sizes(spec, hw.count) if t <= hw.count)})"]
    candidates: list[tuple[str, ServeConfig, ModelSpec]] = []
    blocks = min((r.mamba_blocks for r in plan.ranks if _mamba_blocks_refused(cfg, r)), default=0)
    if blocks:
        candidates.append((f"lower {option('max_num_seqs')} to {blocks} (one Mamba cache block per sequence)",
                           cfg.with_(max_num_seqs=blocks), spec))
    if cfg.backend == "vllm" and cfg.kv_cache_memory_gib is None and cfg.utilization < 0.95:
        candidates.append((f"raise {option('gpu_memory_utilization')} to 0.95", cfg.with_(gpu_memory_utilization=0.95), spec))
    if cfg.backend == "sglang":
        current = plan.ranks[0].budget_bytes / hw.gpu.memory_bytes
        if current < 0.9:
            candidates.append((f"raise {option('mem_fraction_static')} to {min(0.9, round(current + 0.05, 2))}",
                               cfg.with_(mem_fraction_static=min(0.9, round(current + 0.05, 2))), spec))
    if spec.vision and not cfg.language_model_only and skips_vision_tower(cfg.backend, cfg.backend_version):
        flag = option("language_model_only", cfg.backend)
        candidates.append((f"add {flag} (skip the vision tower)", cfg.with_(language_model_only=True), spec))
    if cfg.kv_cache_dtype == "auto" and spec.dtype != "fp8":
        candidates.append((f"{option('kv_cache_dtype')} fp8 (halves the KV cache per token)", cfg.with_(kv_cache_dtype="fp8"), spec))
    if spec.quantization.method == "none" and spec.name == "Qwen/Qwen3.5-35B-A3B":
        from doctor.models.registry import get_model
        for variant in ("Qwen/Qwen3.5-35B-A3B-FP8", "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4"):
            candidates.append((f"use the {variant.split('-')[-1]} checkpoint {variant}", cfg, get_model(variant)))
    if spec.moe and not cfg.expert_parallel:
        candidates.append((f"add {option('expert_parallel', 'vllm')}", cfg.with_(expert_parallel=True), spec))
    valid = valid_tensor_parallel_sizes(spec, hw.count)
    for tp in valid:
        if tp > cfg.tp and tp * cfg.pp * cfg.dp <= hw.count:
            candidates.append((f"raise {option('tp')} to {tp}", cfg.with_(tp=tp), spec))
            break
    lower = [t for t in valid if t < cfg.tp]
    if lower and cfg.tp not in valid:
        tp = lower[-1]
        dp = cfg.dp * cfg.tp // tp
        candidates.append((f"use {option('tp')} {tp} with {option('dp')} {dp}",
                           cfg.with_(tp=tp, dp=dp), spec))
    out = [label for label, c, s in candidates if _evaluate(s, hw, c).fits]
    longest = _largest_fitting_len(spec, hw, cfg.with_(max_num_seqs=blocks) if blocks else cfg)
    if longest >= 1024 and longest < plan.max_model_len:
        out.append(f"lower {option('max_model_len')} to {longest}"
                   + (f" and {option('max_num_seqs')} to {blocks}" if blocks else ""))
    return out


def resolve_config(model: ModelSpec, config: ServeConfig) -> ServeConfig:
    """Fill what the user left to the engine: its version (the nearest covered release where the one asked for is
    outside the rules: versions.nearest_covered), and that version's prefix-caching default."""
    version, _ = nearest_covered(config.backend, resolve_version(config.backend, config.backend_version))
    config = config.with_(backend_version=version)
    drafter_of(config)   # an unknown drafter or speculative method fails here, before any sizing
    if config.prefix_caching is None:
        on = config.backend != "vllm" or not model.is_hybrid or vllm_rules(config.backend_version).hybrid_prefix_caching
        config = config.with_(prefix_caching=on)
    return config


def plan(model: ModelSpec, hardware: Hardware, config: ServeConfig, measured: Measured | None = None) -> Plan:
    """Plan memory for serving `model` on `hardware` with `config`; suggestions when it does not fit.

    `config.backend_version` None means the installed engine, else the newest version known.
    """
    asked = resolve_version(config.backend, config.backend_version)
    _, version_note = nearest_covered(config.backend, asked)
    unsupported = model_support_problem(config.backend, asked, model.architecture)
    config = resolve_config(model, config)
    auto = config.backend == "vllm" and config.max_model_len == AUTO_LENGTH
    if auto:   # planned at the derived length, as vLLM profiles it, then fitted (autofit.py)
        config = config.with_(max_model_len=None)
    result = _evaluate(model, hardware, config, measured)
    result.notes = [version_note] if version_note else []
    if auto and not any(problem.startswith("TP x PP x DP") for problem in result.problems):
        _auto_fit(result)
    startup = startup_findings(hardware, config)
    result.notes += startup.notes
    shared = wsl_note(hardware.gpu, config) if measured is None else None   # a re-plan already read the log
    v1_runner = v1_model_runner(config)
    state = device_state_note(model, config, hardware, v1_runner, result.ranks[-1].terms.max_num_seqs,
                              result.max_model_len) if result.ranks[-1].terms is not None else None
    result.notes += [line for line in (shared, state) if line]
    refused = uva_startup_problem(model, config, hardware, v1_runner)
    if config.extensible_kv_on and result.ranks[-1].terms is not None:
        result.notes.append(utilization_note(config.backend_version or "", hardware.gpu, config.gpu_memory_utilization,
                                             result.ranks[-1].terms))
    if not result.fits and measured is None:
        result.suggestions = _suggest(model, hardware, config, result)
    if startup.problems:   # a refused start comes first: the other fixes assume the engine starts
        result.problems += startup.problems
        result.suggestions = startup.fixes
    if refused:
        result.problems.append(refused[0])
        result.suggestions = [refused[1], *result.suggestions]
    if unsupported:   # the engine does not load the model at all: first of all
        result.problems.insert(0, unsupported[0])
        result.suggestions = [unsupported[1]]
    return result
