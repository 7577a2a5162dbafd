"""SGLang (0.5.9-0.5.23) memory pools: mem-fraction-static -> max_total_num_tokens and the mamba state pool.

Mirrors profile_max_num_token (python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py 0.5.9-0.5.14,
mem_cache/kv_cache_configurator.py _profile_available_bytes from 0.5.16), per version (versions.sglang_rules):
- rest = free memory after the weights load - free memory before it x (1 - mem_fraction_static)
  ("Load weight end. avail mem" - "Load weight begin. avail mem" x (1 - fraction), in GiB), less
  SGLANG_VLM_CACHE_SIZE_MB for multimodal models from 0.5.18. The free memory before the load is torch's total
  less the context held then (context_bytes); "Load weight end. mem usage" is exactly before - after, so the
  begin figure follows from the end line alone. What the load takes = the checkpoint's tensors + LOAD_BUFFER_BYTES;
  POST_LOAD_BYTES more are in use when the pools are sized. From 0.5.14 a drafter (the MTP layer, EAGLE, DFLASH)
  is loaded before the pools are sized (managers/scheduler.py init_memory_pools), so its weights are counted
  ("Loaded weights (target + draft)"); in 0.5.9 it loads afterwards, out of the slack.
- `_handle_max_mamba_cache`: mamba slots = --max-mamba-cache-size, or --max-running-requests when the
  radix cache is off, else rest x ratio / (1 + ratio) // mamba_cache_per_req (ratio = --mamba-full-memory-ratio,
  0.9); one slot = conv + temporal state x GDN layers (configs/mamba_utils.py BaseLinearStateParams); the pool
  then takes slots x mamba_cache_per_req off the rest (MambaPool allocates one padding slot more, priced from
  0.5.18: slots = (budget - per_req) // per_req, (slots + 1) x per_req off the rest).
- tokens = int(rest x 2^30) // cell // page_size x page_size (--page-size: ServeConfig.block_size); the cell
  counts only full-attention layers, x (1 + draft layers / full layers) from 0.5.14 for an EAGLE / STANDALONE
  drafter given by --speculative-draft-model-path (pool_configurator.py; spec_aux_hidden_state.py reads the
  draft's layer count only from a draft path, or from 0.5.20 from the target config's num_nextn_predict_layers,
  which Qwen3.5's config does not have): NEXTN on the checkpoint's own MTP head keeps the target's cell and its
  draft worker allocates a KV pool of the same token count outside the fraction (H200 0.5.16 boots); DFLASH is priced into the cell from 0.5.11 (scale_kv_cell_size_per_token_for_dflash)
  and by the drafter's own geometry from 0.5.18 (drafters.py sglang_drafter_cell_bytes).
- max_running_requests = clamp(tokens / context_len x 512, 2048, 4096) (or --max-running-requests), <= tokens // 2
  from 0.5.14, and <= slots // mamba ratio (mamba_ratio): 3 per request (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)
  + the ping-pong slots of extra_buffer (2 with the overlap scheduler, 1 without it or lazy; "auto" resolves to it
  from 0.5.14), 1 with the radix cache off. --mamba-ssm-dtype sets the recurrent state's bytes (state.py).
- default --mem-fraction-static (default_mem_fraction_static): the decode graph limit is --cuda-graph-max-bs or the
  GPU size's default (from 0.5.22 at most --max-running-requests), the prefill graphs count while on (the version's
  default, or as --disable-prefill-cuda-graph / --enable-piecewise-cuda-graph set them).
MTP (NEXTN, run as EAGLE with topk 1: speculative_num_draft_tokens D = steps + 1, max_running_requests 48 unless
set) keeps D intermediate mamba states per running request: 0.5.9 takes per_req x 48 x D off the rest before the
split, 0.5.14+ solves slots x per_req x (1 + D / ratio) = mamba budget and takes the states of
min(48, slots // ratio) requests off the rest.
Verified against real boots in tests/data/published_kv/sglang*.yaml (bench/plan_accuracy.py): the H200 0.5.16
BF16 / FP8 boots (in-sample for the three measured constants) and a 2 x RTX 4090 boot of Qwen3.5-9B (pools, out of
sample), and two NEXTN (MTP) boots on the H200 (0.5.16: the MTP load holds its own embedding and lm_head while
the pools are sized, mtp_own_embed_head_bytes). Unverified: EAGLE / DFLASH drafter boots, the context on other GPUs and TP > 2, pages > 1 (0.5.16
picks page 64 with trtllm_mha on SM100 when extra_buffer is on: _qwen3_5_hybrid_overrides), DP attention
(attn_dp_size), PP (SGLang's stage split is taken as vLLM's).
TP > 1 (read in model_runner.py init_torch_distributed of 0.5.9 and 0.5.14, distributed/bootstrap.py of 0.5.23): the
free memory before the load is taken after init_distributed_environment and initialize_model_parallel, whose TP
group holds by then its PyNccl communicator (with its one-element warm-up all-reduce, which connects NCCL's ring
buffers) and, on P2P-capable GPUs, custom all-reduce's buffers (custom_all_reduce.py: meta + buffer by cudaMalloc
for IPC and a torch rank_data, _MAX_CAR_SIZE = 8 MiB each on CUDA); torch's own NCCL communicator is warmed there
only with --pre-warm-nccl (default on AMD), else it connects later, out of the memory outside the fraction. That
figure, and the free memory after the load, are the world group's minimum (get_available_gpu_memory
distributed=True: an all-reduce MIN over the CPU group), so the busiest GPU sizes every rank's pools
(startup.busiest_gpu_bytes), and a rank whose own is more than 10% above it refuses to start
(startup.sglang_unbalanced). DIST_BYTES[TP > 1] is the measured whole of it on two RTX 4090s (no P2P, so no custom
all-reduce); NCCL's own buffers follow the topology (channels x protocols), not the flags, and are not derived.
This is the real meaning of the article's invented "radix table sizing" (`radix_size=`).
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.methods import NO_MODEL_METHODS
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, GPU, MIB
from doctor.planner.state import gdn_state_bytes_per_layer, kv_bytes_per_token_per_layer, layers_in_stage
from doctor.planner.versions import SGLANG_READ, SglangRules, sglang_rules

# Measured on the H200 SGLang 0.5.16 boots (tests/data/published_kv/sglang.yaml), GiB as SGLang prints them:
# - in use before the load: torch's total 139.80 - "Load weight begin. avail mem=139.07" = 0.73 at TP 1, of which
#   "Init torch distributed ends. mem usage=0.09"; 0.19 at TP 2 (the RTX 4090 boot): CUDA context 0.64 + that;
# - the load takes 0.10 more than the checkpoint's tensors ("mem usage" 65.49 / 34.19 vs 65.39 / 34.09 planned;
#   origin unverified: rotary caches or the 100 MiB multimodal embedding cache);
# - 0.06 more is in use when the pools are sized than at "Load weight end" (the logged pools account for a rest
#   0.062 / 0.063 smaller than "avail mem" - "Load weight begin" x (1 - fraction); 0.04 on the RTX 4090 boot).
CONTEXT_BYTES = int(0.64 * GIB)
DIST_BYTES = (int(0.09 * GIB), int(0.19 * GIB))   # TP x PP = 1, > 1
LOAD_BUFFER_BYTES = int(0.10 * GIB)
POST_LOAD_BYTES = int(0.06 * GIB)
MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3
MAMBA_EXTRA_BUFFER_SLOTS = 2       # MAMBA_CACHE_V2_ADDITIONAL_RATIO_OVERLAP (ping-pong buffer, overlap scheduler)
SPEC_MAX_RUNNING_REQUESTS = 48     # server_args.py (0.5.9) / arg_groups/speculative_hook.py (0.5.21) default


def prefill_capture_sizes(max_bs: int) -> list[int]:
    """generate_prefill_cuda_graph_batch_sizes (srt/arg_groups/cuda_graph_hook.py, 0.5.21; server_args.py
    0.5.16-0.5.18): the token counts prefill CUDA graphs are captured for, up to chunked_prefill_size."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def context_bytes(cfg: ServeConfig) -> int:
    """Bytes in use before the weights load (CUDA context, workspaces, distributed init); --overhead-gib
    replaces it."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    return CONTEXT_BYTES + DIST_BYTES[cfg.tp * cfg.pp > 1]


def term_bound(cfg: ServeConfig, target_weights: int, weights_rel: float) -> int:
    """Bytes the pools may be off by where no logged boot covers the plan: each measured constant (the context
    before the load, the load's buffer, what the pool sizing finds in use after it) wholly unknown there, and the
    weights off by their largest relative residual (`weights_rel`). The default --mem-fraction-static itself is
    read per release (default_mem_fraction_static) and adds nothing; an error e in the memory before the load
    moves the pools by e x fraction <= e."""
    return context_bytes(cfg) + LOAD_BUFFER_BYTES + POST_LOAD_BYTES + int(target_weights * weights_rel)


def rules_of(cfg: ServeConfig) -> SglangRules:
    return sglang_rules(cfg.backend_version or SGLANG_READ[-1])


def gpu_size_defaults(total_bytes: int, tp: int, rules: SglangRules) -> tuple[int, int]:
    """SGLang's per-GPU-size defaults for a GPU of `total_bytes` (the driver's total): (--chunked-prefill-size,
    decode --cuda-graph-max-bs) at this TP (versions.sglang_rules)."""
    gpu_mem = total_bytes / MIB
    if gpu_mem < 20 * 1024:
        return 2048, 8
    if gpu_mem < 35 * 1024:
        small_chunk, small_bs, large_tp_bs = rules.small_gpu_defaults
        return small_chunk, (small_bs if tp < 4 else large_tp_bs)
    if gpu_mem < 60 * 1024:
        return 4096, (32 if tp < 4 else 160)
    if gpu_mem < 160 * 1024:
        return 8192, (256 if tp < 4 else 512)
    return 16384, 512


def decode_graph_max_bs(total_bytes: int, cfg: ServeConfig, rules: SglangRules) -> int:
    """The decode CUDA-graph batch limit the reserve counts: --cuda-graph-max-bs as given, else the default for
    the GPU size and TP, from 0.5.22 no larger than --max-running-requests (versions.sglang_rules)."""
    if cfg.cuda_graph_max_bs is not None:
        return cfg.cuda_graph_max_bs
    graph_bs = gpu_size_defaults(total_bytes, cfg.tp, rules)[1]
    if rules.decode_graph_capped_by_running and cfg.max_num_seqs is not None:
        graph_bs = min(graph_bs, cfg.max_num_seqs)
    return graph_bs


def default_mem_fraction_static(total_bytes: int, cfg: ServeConfig, spec: ModelSpec) -> float:
    """SGLang's default --mem-fraction-static for a GPU of `total_bytes` (the driver's total), TP and version
    (versions.sglang_rules)."""
    rules = rules_of(cfg)
    gpu_mem = total_bytes / MIB
    chunk = cfg.max_num_batched_tokens or gpu_size_defaults(total_bytes, cfg.tp, rules)[0]
    reserved = 512 + max(chunk, 2048) * 1.5 + cfg.tp * cfg.pp / 8 * 1024
    if not cfg.enforce_eager:
        reserved += decode_graph_max_bs(total_bytes, cfg, rules) * 2
        prefill_graphs = rules.prefill_graph_reserve if cfg.prefill_cuda_graph is None else cfg.prefill_cuda_graph
        if prefill_graphs:
            prefill_max = chunk
            if rules.prefill_graphs_to_context and cfg.max_model_len:
                prefill_max = min(prefill_max, cfg.max_model_len)
            if rules.prefill_graphs_pp_cap and cfg.pp > 1:
                prefill_max = min(prefill_max, 8192)
            reserved += len(prefill_capture_sizes(prefill_max)) * 8
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if cfg.mtp_tokens and rules.speculative_reserve and (cfg.speculative_method or "").lower() not in NO_MODEL_METHODS:
        reserved += 2 * 1024
    fraction = round((gpu_mem - reserved) / gpu_mem, 3)
    if spec.vision is not None and not cfg.language_model_only:
        # adjust_mem_fraction_for_vlm: Qwen3.5's vision config names its depth "depth", so the
        # getattr(vision_config, "num_hidden_layers", 24) default of 24 layers applies.
        ratio = 24 * spec.vision.hidden_size ** 2 / (24 * 1024 ** 2)
        factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
        fraction *= 0.95 * factor
    return fraction


def overlap_scheduler(cfg: ServeConfig, rules: SglangRules) -> bool:
    """Whether the overlap scheduler runs: off with --disable-overlap-schedule, with NGRAM, and with speculative
    decoding where the version turns it off (versions.sglang_rules)."""
    if not cfg.overlap_schedule:
        return False
    if not cfg.mtp_tokens:
        return True
    method = (cfg.speculative_method or "").lower()
    if method in NO_MODEL_METHODS:
        return False
    return rules.dflash_keeps_overlap if method == "dflash" else rules.spec_keeps_overlap


def mamba_ratio(cfg: ServeConfig, rules: SglangRules) -> int:
    """Mamba slots one running request may hold (_calculate_mamba_ratio / init_memory_pool): 1 with the radix cache
    off; else 3 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO) plus the extra_buffer ping-pong slots
    (MAMBA_CACHE_V2_ADDITIONAL_RATIO_*) of --mamba-radix-cache-strategy as the version resolves "auto"."""
    if not cfg.prefix_caching_on:
        return 1
    overlap = overlap_scheduler(cfg, rules)
    strategy = cfg.mamba_radix_strategy or "auto"
    if strategy == "auto":
        paged = (cfg.block_size or 1) > 1
        strategy = "extra_buffer" if rules.mamba_extra_buffer and (overlap or paged) else "no_buffer"
    if strategy == "no_buffer":
        return MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
    if not rules.extra_buffer_keys_on_overlap:
        return MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO + (1 if cfg.mtp_tokens else MAMBA_EXTRA_BUFFER_SLOTS)
    if strategy == "extra_buffer_lazy" or not overlap:
        return MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO + 1
    return MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO + MAMBA_EXTRA_BUFFER_SLOTS


@dataclass(frozen=True)
class SglangPools:
    """What profile_max_num_token and init_memory_pool make of one rank's rest."""

    mamba_slots: int            # max_mamba_cache_size ("Mamba Cache is allocated. max_mamba_cache_size")
    max_total_num_tokens: int   # "KV Cache is allocated. #tokens"
    max_running_requests: int
    kv_bytes: int               # bytes left for the KV pool


def sglang_pools(rest: int, cell: int, per_req: int, cfg: ServeConfig, context_len: int) -> SglangPools:
    """Split `rest` bytes (profile_max_num_token's rest_memory) between the mamba pool and the KV pool.

    `--dp-size` replicas each size their own pools; the per-replica division SGLang applies under
    --enable-dp-attention (attn_dp_size) is not modelled."""
    rules = rules_of(cfg)
    rest_gib = rest / GIB
    slots = 0
    draft = cfg.mtp_tokens + 1 if cfg.mtp_tokens else 0      # speculative_num_draft_tokens (topk 1)
    spec_running = cfg.max_num_seqs or SPEC_MAX_RUNNING_REQUESTS
    ratio = mamba_ratio(cfg, rules)
    pad = 1 if rules.mamba_padding_slot else 0
    if per_req:
        if draft and rules.spec_states_before_split:
            rest_gib -= per_req * spec_running * draft / GIB
        if cfg.max_mamba_cache_size is not None:
            slots = cfg.max_mamba_cache_size
            if draft and not rules.spec_states_before_split:
                rest_gib -= per_req * (min(spec_running, slots // ratio) + pad) * draft / GIB
        elif not cfg.prefix_caching_on and cfg.max_num_seqs is not None:
            slots = cfg.max_num_seqs
            if draft and not rules.spec_states_before_split:
                rest_gib -= per_req * (slots + pad) * draft / GIB
        elif draft and not rules.spec_states_before_split:
            # joint solve (kv_cache_configurator.py): K x per_req x (1 + D / ratio) = mamba budget
            budget = rest_gib * cfg.mamba_full_memory_ratio / (1 + cfg.mamba_full_memory_ratio) * GIB
            slots = int((budget - pad * per_req * (1 + draft)) // (per_req * (1 + draft / ratio)))
            rest_gib -= per_req * (min(spec_running, slots // ratio) + pad) * draft / GIB
        else:
            share = cfg.mamba_full_memory_ratio
            slots = int((rest_gib * share / (1 + share) * GIB - pad * per_req) // per_req)
        rest_gib -= (slots + pad) * per_req / GIB
    kv_bytes = int(rest_gib * GIB)
    page = cfg.block_size or 1
    tokens = max(kv_bytes // cell // page * page if cell else 0, 0)
    if cfg.max_num_seqs is not None:
        running = cfg.max_num_seqs
    elif draft:
        running = SPEC_MAX_RUNNING_REQUESTS
    else:
        running = min(max(int(tokens / context_len * 512), 2048), 4096) if context_len else 2048
    if rules.running_capped_by_tokens:
        running = min(running, tokens // 2)
    if per_req:
        running = min(running, slots // ratio)
    return SglangPools(max(slots, 0), tokens, max(running, 0), kv_bytes)


@dataclass(frozen=True)
class SglangCapacity:
    mem_fraction_static: float
    pre_model_load: int         # free bytes before the weights load ("Load weight begin. avail mem")
    rest: int                   # bytes for the mamba and KV pools (rest_memory)
    cell_size: int              # KV bytes per token over this rank's full-attention layers (+ draft layers)
    mamba_cache_per_req: int    # GDN state bytes per sequence (mamba_cache_per_req)
    mamba_slots: int            # max_mamba_cache_size
    max_total_num_tokens: int
    max_running_requests: int


def mamba_cache_per_req(spec: ModelSpec, cfg: ServeConfig, stages: list[tuple[int, int]]) -> int:
    """conv + temporal state of one sequence over the GDN layers a rank prices: every GDN layer of the model
    (the config's linear_layer_ids), from 0.5.18 with PP the largest stage's share."""
    per_layer = gdn_state_bytes_per_layer(spec, cfg)
    layers = len(spec.linear_attention_layers)
    if cfg.pp > 1 and rules_of(cfg).mamba_pp_stage_share:
        layers = max(layers_in_stage(spec, start, end)[1] for start, end in stages)
    return per_layer * layers


def mtp_own_embed_head_bytes(spec: ModelSpec, cfg: ServeConfig) -> int:
    """The embedding and lm_head the checkpoint's MTP head builds for itself (models/qwen3_5_mtp.py: a
    VocabParallelEmbedding and, untied, a ParallelLMHead, 1/TP each). They are loaded with the head and held while
    the target's pools are sized; set_embed_and_head swaps in the target's and frees them afterwards. Measured on
    the H200 0.5.16 NEXTN boots: the MTP load's "mem usage=3.46 GB" = the MTP layer 1.57 + these 1.89; reported on
    0.5.19 as "NEXTN/EAGLE: draft embed_tokens/lm_head copies are released after KV pool sizing, significantly
    shrinking max_total_num_tokens" (sgl-project/sglang#36452, open)."""
    copies = 1 if spec.tie_word_embeddings else 2
    return int(copies * spec.vocab_size * spec.hidden_size * dtype_bytes(spec.dtype) / cfg.tp)


def sglang_geometry(spec: ModelSpec, cfg: ServeConfig) -> dict[str, int]:
    """The KV cell, mamba_cache_per_req and multimodal reservation of a single-stage rank (what the pools of a
    logged boot are recomputed with, accuracy.sglang_residual)."""
    rules = rules_of(cfg)
    full = len(spec.full_attention_layers)
    cell = kv_bytes_per_token_per_layer(spec, cfg) * full
    return {"cell_bytes": cell, "mamba_cache_per_req": mamba_cache_per_req(spec, cfg, [(0, spec.num_layers)]),
            "mm_reservation_mib": rules.mm_reservation_mib if spec.vision is not None else 0,
            "context_len": spec.max_position_embeddings}


def sglang_capacity(spec: ModelSpec, cfg: ServeConfig, gpu: GPU, weights: dict[str, int], context_bytes: int,
                    stage: tuple[int, int], stages: list[tuple[int, int]], context_len: int) -> SglangCapacity:
    """Pool sizes for one rank of pipeline stage `stage` ([start, end) decoder layers); `weights` = what the load
    takes, by module class (weights.rank_weights + LOAD_BUFFER_BYTES; "mtp": the MTP drafter's own layer, which
    shares the target's
    embeddings and lm_head: models/qwen3_5_mtp.py set_embed_and_head), `context_bytes` = CUDA context and NCCL
    buffers held before the load. From 0.5.14 the drafter loads before the pools are sized
    (managers/scheduler.py init_memory_pools), in 0.5.9 after: its weights then come out of the slack."""
    rules = rules_of(cfg)
    mfs = cfg.mem_fraction_static or default_mem_fraction_static(gpu.memory_bytes, cfg, spec)
    pre = gpu.usable_bytes - context_bytes
    loaded = weights["total"] - (0 if rules.draft_kv_in_cell else weights.get("mtp", 0))
    if cfg.uses_mtp_head and rules.draft_kv_in_cell:
        loaded += mtp_own_embed_head_bytes(spec, cfg)
    rest_gib = (pre - loaded - POST_LOAD_BYTES) / GIB - pre / GIB * (1 - mfs)
    if spec.vision is not None:
        rest_gib -= rules.mm_reservation_mib / 1024
    full = layers_in_stage(spec, *stage)[0]
    cell = kv_bytes_per_token_per_layer(spec, cfg) * full
    per_req = mamba_cache_per_req(spec, cfg, stages) if layers_in_stage(spec, *stage)[1] else 0
    rest = int(rest_gib * GIB)
    pools = sglang_pools(rest, cell, per_req, cfg, context_len)
    return SglangCapacity(mfs, pre, rest, cell, per_req, pools.mamba_slots, pools.max_total_num_tokens,
                          pools.max_running_requests)
