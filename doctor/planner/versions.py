"""Engine versions the planner knows, and the memory rules that changed between them.

Every rule cites the file of the published wheel it was read from (`pip download vllm==X`, the files
scripts/extract_flag_schema.py also reads). Versions are the ones with a flag schema in
doctor/flags/schemas/; `resolve_version` picks the installed one, else the newest known.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from packaging.version import InvalidVersion, Version

from doctor.facts.installed import installed_version
from doctor.flags.schema import untagged_build
from doctor.planner.errors import PlanInputError


@lru_cache(maxsize=2)
def known_versions(backend: str) -> tuple[str, ...]:
    """Versions with a shipped flag schema, oldest first."""
    names = [p.name for p in resources.files("doctor.flags").joinpath("schemas").iterdir()
             if p.name.startswith(f"{backend}-") and p.name.endswith(".json")]
    return tuple(sorted((n[len(backend) + 1:-5] for n in names), key=Version))


def resolve_version(backend: str, requested: str | None) -> str:
    """`--backend-version`, else the installed backend, else the newest version with a schema."""
    text = requested or installed_version(backend) or known_versions(backend)[-1]
    try:
        Version(text)
    except InvalidVersion:
        raise PlanInputError(f"--backend-version {text!r} is not a version number (e.g. 0.26.0)") from None
    return text


# The oldest release a memory rule was read in (the unified-memory free-memory rule: vllm_rules 0.11.0,
# sglang_rules 0.5.3.post3; SGLang's pool formulas from 0.5.9 on, sglang_rules.formula_checked says so in the band);
# the newest covered is the newest with a flag schema (known_versions).
RULES_SINCE = {"vllm": "0.11.0", "sglang": "0.5.3"}
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def covered_range(backend: str) -> tuple[str, str]:
    """(oldest, newest) release the planner's rules cover for `backend`."""
    return RULES_SINCE[backend], max(known_versions(backend)[-1], RULES_SINCE[backend], key=Version)


def nearest_covered(backend: str, version: str) -> tuple[str, str | None]:
    """(the version to plan with, a one-line note or None): a version outside covered_range plans with the
    nearest covered release, and the note says so. A build of a covered release (0.22.1rc1.dev26+g4721bb3aa) is
    covered; SGLang's versionless source builds (0.0.0.devN) are older than any; a vLLM built without its release
    tags (untagged_build) plans with the newest covered release, and the note asks for the release it was built
    from."""
    oldest, newest = covered_range(backend)
    if untagged_build(backend, version):
        return newest, (f"vLLM {version} is a build without release tags (setuptools_scm's 0.1.devN), so its release "
                        f"is unknown: planned with {newest}'s rules; pass --backend-version with the release it was "
                        "built from")
    release = Version(Version(version).base_version)
    if Version(oldest) <= release <= Version(newest):
        return version, None
    near, side = (oldest, "older") if release < Version(oldest) else (newest, "newer")
    name = ENGINE_NAMES.get(backend, backend)
    return near, (f"{name} {version} is {side} than the releases the planner's rules cover ({oldest}-{newest}): "
                  f"planned with {near}'s")


# Architectures whose first release per engine is version_matrix.yaml's `qwen35_minimum` (the Qwen3.5 / 3.6 family)
QWEN35_ARCHITECTURES = ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration")


def model_support_problem(backend: str, version: str, architecture: str) -> tuple[str, str] | None:
    """(problem, fix) where `version` of `backend` is a release older than the first that loads `architecture`
    (doctor/data/version_matrix.yaml qwen35_minimum, each with its source: vLLM 0.17.0, SGLang 0.5.9), else None.
    A development or pre-release build of an older base version is not judged: nightlies carry the architecture
    before its release (the adadrag DGX Spark boot ran Qwen3.5 on a "0.16.0" nightly image)."""
    from doctor.knowledge import development_build, version_matrix

    if architecture not in QWEN35_ARCHITECTURES or backend not in ENGINE_NAMES:
        return None
    asked = Version(version)
    minimum, source = version_matrix().minimum[backend]
    if development_build(asked) or asked >= minimum:
        return None
    name = ENGINE_NAMES[backend]
    return (f"{name} {version} cannot load {architecture}: the first release with it is {minimum} ({source})",
            f"use {name} {minimum} or later (--backend-version {minimum})")


# Integrated GPUs, free memory: (first version reading MemAvailable, first keying on cudaDevAttrIntegrated
# instead of UMA_CAPABILITIES), and the last version before each; sources in vllm_rules / sglang_rules.
UMA_AVAILABLE_SINCE = {"vllm": ("0.11.1", "0.20.0"), "sglang": ("0.5.4", "0.5.9")}
UMA_LAST_BEFORE = {"vllm": ("0.11.0", "0.19.1"), "sglang": ("0.5.3.post3", "0.5.8.post1")}
UMA_CAPABILITIES = ("8.7", "11.0", "12.1")  # Orin, Thor, Spark (GB10)


@dataclass(frozen=True)
class VllmRules:
    """What `determine_available_memory` and the KV-cache sizing of one vLLM version do by default."""

    version: str
    gpu_memory_utilization: float
    cudagraph_estimate_subtracted: bool
    tokens_from_concurrency: bool
    large_gpu_batch_defaults: bool
    extensible_kv_cache: bool
    hybrid_prefix_caching: bool
    uma_free_is_available: bool = False  # integrated GPU: start-up free memory is MemAvailable, not MemFree
    uma_by_capability: bool = False      # ... but only on UMA_CAPABILITIES (before cudaDevAttrIntegrated)
    fused_moe_chunk: int | None = None   # tokens per fused-MoE chunk (None: one chunk of all the tokens)
    fused_moe_modular: bool = True       # Triton MoE through the modular kernel's persistent workspace
    estimate_gpu_memory_utilization: float = 0.92   # 0.34+: the default when the extensible KV cache is off
    fused_gdn_spec_decode: bool = False  # with speculative decoding, the GDN layer's one fused op (forward.py)


def vllm_rules(version: str) -> VllmRules:
    """The rules of vLLM `version`.

    - gpu_memory_utilization default: vllm/config/cache.py CacheConfig, `Field(default=0.9)` up to 0.19.1,
      `Field(default=0.92)` from 0.20.0 to 0.33.0; 0.34.0 makes it `None`, resolved to 1.0 with the
      extensible KV cache (its default on CUDA) and 0.92 otherwise (`resolved_gpu_memory_utilization`).
    - CUDA-graph estimate subtracted from the KV budget: vllm/v1/worker/gpu_worker.py
      determine_available_memory, `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`. The 0.20.0 wheel already has it on:
      its boots log "CUDA graph memory profiling is enabled (default since v0.21.0) ... --gpu-memory-utilization=0.9000
      is equivalent to ... 0.8886" (0.0114 x 31.84 GiB = the logged 0.36 GiB estimate), while 0.19.2rc1 logs "In
      v0.19, CUDA graph memory profiling will be enabled by default" and 0.18.1rc1 does not subtract either
      (tests/data/published_kv/vllm-partial.yaml, 99sono boots; vllm.yaml, guardkit boots).
    - logged "GPU KV cache size": vllm/v1/core/kv_cache_utils.py, `int(max_concurrency * max_model_len)`
      from 0.20.1; 0.20.0 and earlier logged num_blocks // groups x block size (vllm PR #38364).
    - batch defaults: vllm/engine/arg_utils.py get_batch_defaults gains a >= 160 GiB branch in 0.28.0.
    - prefix caching on hybrid (GDN) models: engine/arg_utils.py
      _set_default_chunked_prefill_and_prefix_caching_args keeps it opt-in ("not model_config.is_hybrid")
      in 0.26.0-0.27.1 only; on by default before and after (our H200 log: enable_prefix_caching=False).
    - free memory on an integrated (unified-memory) GPU, which the start-up check ('Free memory on device ...
      is less than desired GPU memory utilization', v1/worker/gpu_worker.py) compares: MemorySnapshot.measure
      takes torch.cuda.mem_get_info() (cudaMemGetInfo = the kernel's MemFree there, page cache counted as
      used) up to 0.11.0 (vllm/utils/__init__.py); from 0.11.1 (vllm/utils/mem_utils.py) it replaces it by
      `psutil.virtual_memory().available` (MemAvailable) when the compute capability is in
      `shared_sysmem_device_mem_sms = ((8, 7), (11, 0), (12, 1))  # Orin, Thor, Spark`; from 0.20.0 when
      `current_platform.is_integrated_gpu()` (platforms/cuda.py: torch's `is_integrated`, i.e.
      cudaDevAttrIntegrated; vllm PR #35356). Read in the 0.11.0, 0.11.1, 0.11.2, 0.12.0, 0.13.0, 0.15.0,
      0.17.0-0.19.1, 0.20.0 and 0.32.0 wheels. A GB10 on 0.24.0 reads MemAvailable (vllm issue #48140, the
      reporter's retraction: is_integrated True, the ValueError showed MemAvailable). 0.34.0 moves the rule into
      utils/mem_utils.py device_memory_info (integrated GPU, not under WSL), which also sizes the extensible KV
      cache from the memory free after warmup (v1/worker/extensible_kv_cache.py): MemAvailable there too.
    - unquantized fused MoE: model_executor/layers/fused_moe/unquantized_fused_moe_method.py calls
      fused_moe.py `fused_experts` (fused_experts_impl: caches allocated and freed per call) in the 0.11.2 and
      0.13.0 wheels, and a FusedMoEModularKernel over TritonExperts from the 0.14.1 wheel on (read in 0.14.1,
      0.15.1, 0.16.0, 0.17.1, 0.18.1, 0.20.2, 0.24.0, 0.26.0), whose workspaces live in a buffer that outlives
      the call (v1/worker/workspace.py WorkspaceManager from 0.13.0, locked after capture: "Max workspace sizes
      should have been captured during warmup/profiling").
    - fused-MoE chunking: envs.VLLM_FUSED_MOE_CHUNK_SIZE tokens at a time (fused_experts_impl `M = min(num_tokens,
      CHUNK_SIZE)`; modular_kernel.py `_chunk_info`): "32768" in the 0.11.2 wheel, 16 * 1024 in the 0.13.0-0.17.1
      wheels. The 0.18.1, 0.20.2, 0.24.0 and 0.26.0 wheels have neither the variable nor `_chunk_info`: the
      workspaces are sized for all M tokens (`_allocate_buffers(..., M_full, M_full, ...)`; 0.12.x and 0.18.0
      not read).
    """
    v = Version(version)
    extensible = v >= Version("0.34.0")
    return VllmRules(
        version=version,
        gpu_memory_utilization=1.0 if extensible else (0.92 if v >= Version("0.20.0") else 0.9),
        cudagraph_estimate_subtracted=v >= Version("0.20.0"),
        tokens_from_concurrency=v >= Version("0.20.1"),
        large_gpu_batch_defaults=v >= Version("0.28.0"),
        extensible_kv_cache=extensible,
        hybrid_prefix_caching=not Version("0.26.0") <= v < Version("0.28.0"),
        uma_free_is_available=v >= Version(UMA_AVAILABLE_SINCE["vllm"][0]),
        uma_by_capability=v < Version(UMA_AVAILABLE_SINCE["vllm"][1]),
        fused_moe_chunk=(32768 if v < Version("0.13.0") else 16384 if v < Version("0.18.0") else None),
        fused_moe_modular=v >= Version("0.14.0"),
        # qwen_gdn_linear_attn.py enable_fused_gdn_spec_decode: in the 0.32.0 build, not in 0.26.0, 0.30.0 or 0.31.0
        fused_gdn_spec_decode=v >= Version("0.32.0"),
    )


SGLANG_READ = ("0.5.9", "0.5.14", "0.5.15", "0.5.16", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.23")


@dataclass(frozen=True)
class SglangRules:
    """How one SGLang version sizes `--mem-fraction-static` by default and its pools for Qwen3.5 (hybrid GDN,
    multimodal)."""

    version: str
    small_gpu_defaults: tuple[int, int, int]   # 20-35 GiB: chunked_prefill_size, decode graph max bs (TP < 4, >= 4)
    prefill_graph_reserve: bool      # the reserve counts len(prefill capture sizes) x 8 MB
    prefill_graphs_to_context: bool  # prefill capture sizes stop at --context-length
    prefill_graphs_pp_cap: bool      # with PP > 1, breakable prefill graphs stop at 8192 tokens
    speculative_reserve: bool        # EAGLE / MTP add 2 GiB after the 10 GiB floor
    spec_states_before_split: bool   # MTP's intermediate mamba states come off the rest before the split
    draft_kv_in_cell: bool           # the drafter loads before the pools: its weights count, and its KV is
                                     # priced into the target's cell
    drafter_cell_methods: tuple[str, ...]  # algorithms whose separate drafter's KV the target's cell prices
    dflash_own_cell: bool            # DFLASH prices the drafter's own bytes per token, not the layer ratio
    mamba_extra_buffer: bool         # radix cache "auto" resolves to extra_buffer: 2 more slots per request
    extra_buffer_keys_on_overlap: bool  # extra_buffer adds 2 slots with the overlap scheduler, else 1 (0.5.9:
                                        # 1 with speculative decoding, else 2)
    decode_graph_capped_by_running: bool  # a default decode graph max bs stops at --max-running-requests
    spec_keeps_overlap: bool         # speculative decoding (EAGLE family, NEXTN) keeps the overlap scheduler
    dflash_keeps_overlap: bool       # ... DFLASH too
    running_capped_by_tokens: bool   # max_running_requests <= max_total_num_tokens // 2
    mamba_pp_stage_share: bool       # with PP, mamba_cache_per_req counts the largest stage's GDN layers
    mamba_padding_slot: bool         # the pool's padding slot (and one more request's MTP states) is priced
    mm_reservation_mib: int          # reserved off the rest for multimodal models (embedding cache)
    formula_checked: bool            # False: outside the versions read, the nearest read formula applies
    uma_free_is_available: bool = False  # integrated GPU: get_available_gpu_memory is MemAvailable
    uma_by_capability: bool = False      # ... but only on UMA_CAPABILITIES (before torch's is_integrated)


def sglang_rules(version: str) -> SglangRules:
    """The memory rules of SGLang `version`, read in the wheels of SGLANG_READ (`pip download sglang==X`);
    a version between two read ones follows the older.

    Default --mem-fraction-static (`_handle_gpu_memory_settings`, python/sglang/srt/server_args.py up to
    0.5.18, srt/arg_groups/memory_hook.py handle_gpu_memory_settings from 0.5.19), all versions:
    reserve = 512 + max(chunked_prefill_size, 2048) x 1.5 + decode graph max bs x 2 + TP x PP / 8 GiB
    (MB), floored at 10 GiB above 60 GiB; fraction = (gpu_mem - reserve) / gpu_mem, rounded to 3 places,
    then x 0.95 x the ViT factor for multimodal models unless --language-only (adjust_mem_fraction_for_vlm).
    gpu_mem is the driver's total in MiB (get_device_memory_capacity: nvidia-smi memory.total).
    - 0.5.9: speculative decoding other than NGRAM adds 2 GiB after the floor (6 GiB for STANDALONE);
      piecewise (prefill) CUDA graphs are opt-in (enable_piecewise_cuda_graph=False).
    - 0.5.14: the speculative term is gone; prefill graphs default to TC_PIECEWISE, but
      model_config.is_piecewise_cuda_graph_disabled_model disables them for multimodal archs outside
      multimodal_piecewise_cuda_graph_supported_model_archs (Qwen3_5Moe is not listed) and for Qwen3Next.
    - 0.5.15: prefill graphs default to BREAKABLE on CUDA (model_executor/cuda_graph_config.py
      default_prefill_backend), but server_args.py disables them for every multimodal model ("Breakable CUDA
      graph is incompatible with multimodal model"): no prefill reserve for Qwen3.5.
    - 0.5.16: Qwen3_5MoeForConditionalGeneration is in multimodal_breakable_cuda_graph_supported_model_archs
      (configs/model_config.py): the reserve counts len(generate_prefill_cuda_graph_batch_sizes(
      chunked_prefill_size)) x 8 MB (reserve_for_graph_mb); the sizes stop at --context-length (0.5.15-0.5.16
      only: server_args.py "Clamp to context_length if explicitly set", gone in 0.5.18).
    - 0.5.19: with PP > 1 the breakable prefill graphs stop at 8192 tokens (arg_groups/memory_hook.py
      _DEFAULT_PP_PREFILL_CUDA_GRAPH_MAX_TOKENS).
    - 0.5.20: 20-35 GiB GPUs (4090, 5090) default to chunked_prefill_size 4096 and decode max bs 48 / 160
      (was 2048 and 24 / 80).
    - 0.5.22: a decode graph max bs left to its default stops at --max-running-requests before the reserve is
      counted (arg_groups/memory_hook.py handle_gpu_memory_settings, `decode_max_bs_is_default`; not in 0.5.21).
    Flags that move the reserve (all versions read): --cuda-graph-max-bs (--cuda-graph-max-bs-decode from
    0.5.14, the only name from 0.5.20) replaces the decode max bs; prefill graphs counted only while their backend
    is on: --disable-prefill-cuda-graph / --disable-piecewise-cuda-graph / --cuda-graph-backend-prefill disabled
    turn the reserve off, --enable-piecewise-cuda-graph (0.5.9-0.5.13: `len(piecewise_cuda_graph_tokens) x 8`, the
    same sizes up to chunked_prefill_size) and --enforce-piecewise-cuda-graph / an explicit backend (locked against
    the multimodal auto-disable) turn it on.
    Pools (profile_max_num_token: model_executor/model_runner_kv_cache_mixin.py 0.5.9-0.5.14,
    mem_cache/kv_cache_configurator.py _profile_available_bytes from 0.5.16):
    rest = free memory after the weights load - free memory before it x (1 - mem_fraction_static).
    - 0.5.9: mamba radix cache "auto" -> no_buffer (server_args.py); MTP's intermediate mamba states
      (per_req x max_running_requests x D) come off the rest before the mamba / full split
      (handle_max_mamba_cache); the draft's KV is a separate pool sized later (not in the target's cell).
    - 0.5.10: _calculate_mamba_ratio (model_runner_kv_cache_mixin.py, read in 0.5.10-0.5.13) keys extra_buffer's
      ping-pong slots on the overlap scheduler: 3 + 2 with it, 3 + 1 with --disable-overlap-schedule or
      extra_buffer_lazy (0.5.13+); 0.5.9 adds 1 with speculative decoding, else 2. no_buffer: 3; radix off: 1.
      Speculative decoding turns the overlap scheduler off in 0.5.10 (SGLANG_ENABLE_SPEC_V2 False,
      server_args.py _handle_speculative_decoding) and keeps it from 0.5.11 (environ.py: True), except DFLASH
      ("Overlap scheduler is disabled when using DFLASH", 0.5.11-0.5.13) and NGRAM (always off).
    - 0.5.14: "auto" -> extra_buffer with the overlap scheduler or --page-size > 1, else no_buffer (which turns
      the overlap scheduler off) (_handle_mamba_radix_cache), so
      max_running_requests <= slots // (3 + 2); MTP: joint solve of slots and intermediate states inside the
      mamba budget; the drafter is loaded before the pools are sized (managers/scheduler.py init_memory_pools)
      and EAGLE/NEXTN scale the cell by (1 + draft layers / full layers) (model_executor/pool_configurator.py
      DefaultPoolConfigurator); max_running_requests <= tokens // 2.
    - 0.5.18: multimodal models reserve SGLANG_VLM_CACHE_SIZE_MB (100) off the rest
      (mm_runtime_reservation_gb; the 1 GiB feature pool only with --mm-feature-transport cuda_ipc / cuda_vmm,
      cpu by default on one node); with PP, mamba_cache_per_req counts the largest stage's GDN layers
      (_handle_max_mamba_cache), before it every GDN layer of the model; the pool's padding slot is priced:
      slots = (budget - per_req) // per_req, (slots + 1) x per_req come off the rest, MTP solves
      (budget - per_req x (1 + D)) // (per_req x (1 + D / ratio)) and prices (min(48, slots // ratio) + 1) x D
      intermediate states.
    Separate drafters (--speculative-draft-model-path; drafters.sglang_drafter_cell_bytes), read in the wheels of
    0.5.9-0.5.23 (managers/scheduler.py init_model_worker, model_executor/pool_configurator.py
    DefaultPoolConfigurator, speculative/dflash_utils.py scale_kv_cell_size_per_token_for_dflash):
    - 0.5.9-0.5.13: the target's ModelRunner sizes its pools in its constructor, before maybe_init_draft_worker
      loads the drafter; EAGLE / EAGLE3 / STANDALONE drafters then get a pool of the target's token count
      (draft_runner_cache_size; MemoryPoolConfig from 0.5.10) for their own layers, outside the fraction.
      SpeculativeAlgorithm has no DFLASH before 0.5.11; 0.5.11-0.5.13 price DFLASH's drafter into the target's
      cell: ceil(cell x (full + draft layers) / full).
    - 0.5.14: init_model_worker loads target and drafter, then init_memory_pools ("Loaded weights (target + draft)",
      model_runner_kv_cache_mixin.py _profile_available_bytes); EAGLE / EAGLE3 / STANDALONE scale the cell by
      (1 + draft layers / full layers) (draft layers: num_nextn_predict_layers, else the drafter's
      num_hidden_layers), DFLASH as 0.5.11; the drafter's pool gets the target's token count inside the budget.
    - 0.5.18: DFLASH prices the drafter's own geometry: target cell + draft kv heads per rank x (head_dim +
      v_head_dim) x draft layers x KV dtype (spec_aux_hidden_state.py _resolve_dflash_draft_cell_size;
      mem_cache/draft_kv_budget.py resolve_dflash_draft_cell_size in 0.5.23); 0.5.17 still scales by layers.
    """
    v = Version(version)
    read = [Version(r) for r in SGLANG_READ]
    return SglangRules(
        version=version,
        small_gpu_defaults=(4096, 48, 160) if v >= Version("0.5.20") else (2048, 24, 80),
        prefill_graph_reserve=v >= Version("0.5.16"),
        prefill_graphs_to_context=Version("0.5.15") <= v < Version("0.5.18"),
        prefill_graphs_pp_cap=v >= Version("0.5.19"),
        speculative_reserve=v < Version("0.5.14"),
        spec_states_before_split=v < Version("0.5.14"),
        draft_kv_in_cell=v >= Version("0.5.14"),
        drafter_cell_methods=(("eagle", "eagle3", "standalone", "dflash") if v >= Version("0.5.14")
                              else ("dflash",) if v >= Version("0.5.11") else ()),
        dflash_own_cell=v >= Version("0.5.18"),
        mamba_extra_buffer=v >= Version("0.5.14"),
        extra_buffer_keys_on_overlap=v >= Version("0.5.10"),
        decode_graph_capped_by_running=v >= Version("0.5.22"),
        spec_keeps_overlap=v >= Version("0.5.11"),
        dflash_keeps_overlap=v >= Version("0.5.14"),
        running_capped_by_tokens=v >= Version("0.5.14"),
        mamba_pp_stage_share=v >= Version("0.5.18"),
        mamba_padding_slot=v >= Version("0.5.18"),
        mm_reservation_mib=100 if v >= Version("0.5.18") else 0,
        formula_checked=read[0] <= v <= read[-1],
        uma_free_is_available=v >= Version(UMA_AVAILABLE_SINCE["sglang"][0]),
        uma_by_capability=v < Version(UMA_AVAILABLE_SINCE["sglang"][1]))


def uma_reads_available(backend: str, version: str, compute_capability: str | None = None) -> bool:
    """Whether `backend` `version` takes MemAvailable (else MemFree) as the free memory of an integrated GPU
    of `compute_capability` (None: one the engine recognises). See vllm_rules / sglang_rules."""
    rules = sglang_rules(version) if backend == "sglang" else vllm_rules(version)
    if not rules.uma_free_is_available:
        return False
    return not rules.uma_by_capability or compute_capability is None or compute_capability in UMA_CAPABILITIES
