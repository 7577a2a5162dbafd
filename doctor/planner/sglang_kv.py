"""SGLang (0.5.9) memory pools: mem-fraction-static -> max_total_num_tokens and the mamba state pool.

Mirrors python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py (0.5.9):
- `profile_max_num_token`: rest = available_after_weights - total x (1 - mem_fraction_static);
  hybrid models count only full-attention layers in the per-token cell size.
- `handle_max_mamba_cache`: mamba pool = --max-mamba-cache-size, or --max-running-requests when the
  radix cache is off, else rest x ratio / (1 + ratio) (ratio = --mamba-full-memory-ratio, 0.9);
  one slot = `mamba_cache_per_req` (configs/mamba_utils.py: conv + temporal state x GDN layers).
- `init_memory_pool`: max_running_requests defaults to clamp(tokens / context_len x 512, 2048, 4096)
  and, for hybrid models, min(that, mamba slots // 3) with the radix cache on.
and server_args.py `_handle_gpu_memory_settings` (0.5.9-0.5.18; arg_groups/memory_hook.py from 0.5.19) for
the default --mem-fraction-static, per version (versions.sglang_rules).
MTP keeps D = tokens + 1 intermediate mamba states per running request (48 unless --max-running-requests):
0.5.9 takes them off the rest before the split, 0.5.14+ solves for them inside the mamba budget with 3 state
slots per request; the extra_buffer radix strategy's 2 more slots (0.5.18+, overlap scheduler) are not
modelled. With PP > 1 the planner counts each stage's own GDN layers; 0.5.9 computes `mamba_cache_per_req`
from the config's full `linear_layer_ids`, so its per-stage figure may differ (unverified).
This is the real meaning of the article's invented "radix table sizing" (`radix_size=`).
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, MIB
from doctor.planner.state import gdn_state_bytes_per_layer, kv_bytes_per_token_per_layer
from doctor.planner.versions import SGLANG_READ, sglang_rules

MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3
SPEC_MAX_RUNNING_REQUESTS = 48     # server_args.py (0.5.9) / arg_groups/speculative_hook.py (0.5.21) default


def prefill_capture_sizes(max_bs: int) -> list[int]:
    """generate_prefill_cuda_graph_batch_sizes (srt/arg_groups/cuda_graph_hook.py, 0.5.21; server_args.py
    0.5.18): the token counts prefill CUDA graphs are captured for, up to chunked_prefill_size."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def default_mem_fraction_static(total_bytes: int, cfg: ServeConfig, spec: ModelSpec) -> float:
    """SGLang's default --mem-fraction-static for this GPU size, TP and version (versions.sglang_rules)."""
    rules = sglang_rules(cfg.backend_version or SGLANG_READ[-1])
    gpu_mem = total_bytes / MIB
    if gpu_mem < 20 * 1024:
        chunk, graph_bs = 2048, 8
    elif gpu_mem < 35 * 1024:
        small_chunk, small_bs, large_tp_bs = rules.small_gpu_defaults
        chunk, graph_bs = small_chunk, (small_bs if cfg.tp < 4 else large_tp_bs)
    elif gpu_mem < 60 * 1024:
        chunk, graph_bs = 4096, (32 if cfg.tp < 4 else 160)
    elif gpu_mem < 160 * 1024:
        chunk, graph_bs = 8192, (256 if cfg.tp < 4 else 512)
    else:
        chunk, graph_bs = 16384, 512
    chunk = cfg.max_num_batched_tokens or chunk
    reserved = 512 + max(chunk, 2048) * 1.5 + cfg.tp * cfg.pp / 8 * 1024
    if not cfg.enforce_eager:
        reserved += graph_bs * 2
        if rules.prefill_graph_reserve:
            reserved += len(prefill_capture_sizes(chunk)) * 8
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if cfg.mtp_tokens and rules.speculative_reserve:
        reserved += 2 * 1024
    fraction = round((gpu_mem - reserved) / gpu_mem, 3)
    if spec.vision is not None and not cfg.language_model_only:
        # adjust_mem_fraction_for_vlm: Qwen3.5's vision config names its depth "depth", so the
        # getattr(vision_config, "num_hidden_layers", 24) default of 24 layers applies.
        ratio = 24 * spec.vision.hidden_size ** 2 / (24 * 1024 ** 2)
        factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
        fraction *= 0.95 * factor
    return fraction


@dataclass(frozen=True)
class SglangCapacity:
    mem_fraction_static: float
    cell_size: int              # KV bytes per token over this rank's full-attention layers
    mamba_cache_per_req: int    # GDN state bytes per sequence over this rank's GDN layers
    mamba_slots: int            # max_mamba_cache_size
    max_total_num_tokens: int
    max_running_requests: int


def sglang_capacity(spec: ModelSpec, cfg: ServeConfig, total_bytes: int, used_before_pool: int,
                    full_layers: int, linear_layers: int, context_len: int) -> SglangCapacity:
    """Pool sizes for one rank; `used_before_pool` = weights + CUDA context + NCCL buffers."""
    mfs = cfg.mem_fraction_static or default_mem_fraction_static(total_bytes, cfg, spec)
    available_gib = (total_bytes - used_before_pool) / GIB
    rest_gib = available_gib - total_bytes / GIB * (1 - mfs)
    cell = kv_bytes_per_token_per_layer(spec, cfg) * full_layers
    per_req = gdn_state_bytes_per_layer(spec, cfg) * linear_layers
    slots = 0
    draft = cfg.mtp_tokens + 1 if cfg.mtp_tokens else 0      # speculative_num_draft_tokens (topk 1)
    spec_running = cfg.max_num_seqs or SPEC_MAX_RUNNING_REQUESTS
    rules = sglang_rules(cfg.backend_version or SGLANG_READ[-1])
    if per_req:
        if draft and rules.spec_states_before_split:
            rest_gib -= per_req * spec_running * draft / GIB
        if cfg.max_mamba_cache_size is not None:
            slots = cfg.max_mamba_cache_size // cfg.dp
        elif draft and not rules.spec_states_before_split:
            # joint solve (kv_cache_configurator.py): (K + 1) x per_req + (K / ratio + 1) x D x per_req = budget
            ratio = MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
            budget = rest_gib * cfg.mamba_full_memory_ratio / (1 + cfg.mamba_full_memory_ratio) * GIB
            slots = max(int((budget - per_req * (1 + draft)) // (per_req * (1 + draft / ratio))), 0)
            rest_gib -= per_req * (min(spec_running, slots // ratio) + 1) * draft / GIB
        else:
            ratio = cfg.mamba_full_memory_ratio
            slots = int(rest_gib * ratio / (1 + ratio) * GIB // per_req)
        rest_gib -= slots * per_req / GIB
    tokens = int(rest_gib * GIB) // cell if cell else 0
    max_running = cfg.max_num_seqs or (SPEC_MAX_RUNNING_REQUESTS if draft else
                                       min(max(int(tokens / context_len * 512), 2048), 4096))
    if per_req:
        max_running = min(max_running, slots // MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)
    return SglangCapacity(mfs, cell, per_req, slots, max(tokens, 0), max_running)
