"""vLLM (V1) KV-cache capacity: block size, KV-cache groups, blocks, tokens and max concurrency.

Mirrors vLLM 0.32:
- block size: platforms/interface.py `_align_hybrid_block_size` (hybrid models raise the attention
  block so one attention page >= one mamba page: `align * cdiv(mamba_page, align * attn_page_1_token)`,
  align = max(smallest kernel block, configured block size), then pad the mamba page to equal it).
  Default block size 16 on GPU (config/cache.py DEFAULT_BLOCK_SIZE), 128 on CPU (platforms/cpu.py).
- groups: v1/core/kv_cache_utils.py `_get_kv_cache_groups_uniform_page_size` (group size = the
  smaller layer count of the two types, or the larger one when max < 1.5 x min).
- blocks: `get_kv_cache_config_from_groups`: num_blocks = available // (page_bytes x group size).
- tokens: `get_kv_cache_capacity` = int(max_concurrency x max_model_len), with max_concurrency =
  num_blocks / blocks one request needs (`get_max_concurrency_for_kv_cache_config`): attention
  cdiv(max_model_len, block_size) per attention group; per mamba group 1 block (+ speculative
  blocks), 2 in prefix-caching "align" mode (kv_cache_interface.py MambaSpec.max_memory_usage_bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec
from doctor.planner.config import ServeConfig
from doctor.planner.state import gdn_state_bytes_per_layer, kv_bytes_per_token_per_layer

GPU_BLOCK_SIZE = 16      # CacheConfig.DEFAULT_BLOCK_SIZE; FlashAttention kernels take MultipleOf(16)
CPU_BLOCK_SIZE = 128     # platforms/cpu.py default when --block-size is not given


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class VllmKVLayout:
    """How vLLM lays out the cache of one rank."""

    block_size: int
    page_bytes: int            # one block of one layer (attention page == padded mamba page)
    group_size: int            # layers sharing one block id (tensors in the pool)
    attention_groups: int
    mamba_groups: int
    mamba_page_bytes: int      # unpadded recurrent + conv state of one sequence in one layer

    @property
    def bytes_per_block(self) -> int:
        return self.page_bytes * self.group_size

    def blocks_per_request(self, max_model_len: int, cfg: ServeConfig) -> int:
        mamba_blocks = (2 if cfg.prefix_caching_on else 1) + cfg.mtp_tokens
        return self.attention_groups * cdiv(max_model_len, self.block_size) + self.mamba_groups * mamba_blocks


def _group_size(counts: list[int]) -> int:
    lo, hi = min(counts), max(counts)
    return hi if hi < lo * 1.5 else lo


def vllm_layout(spec: ModelSpec, cfg: ServeConfig, full_layers: int, linear_layers: int,
                device: str = "cuda") -> VllmKVLayout:
    """The cache layout for a rank holding `full_layers` attention and `linear_layers` GDN layers."""
    default_block = CPU_BLOCK_SIZE if device == "cpu" else GPU_BLOCK_SIZE
    block = cfg.block_size or default_block
    attn_1tok = kv_bytes_per_token_per_layer(spec, cfg)
    mamba_page = gdn_state_bytes_per_layer(spec, cfg) if linear_layers else 0
    if linear_layers and full_layers:
        align = max(default_block if device == "cpu" else GPU_BLOCK_SIZE, block)
        block = max(block, align * cdiv(mamba_page, align * attn_1tok))
        counts = [full_layers, linear_layers]
        gsize = _group_size(counts)
        return VllmKVLayout(block, block * attn_1tok, gsize, cdiv(full_layers, gsize),
                            cdiv(linear_layers, gsize), mamba_page)
    if linear_layers:
        return VllmKVLayout(block, mamba_page, linear_layers, 0, 1, mamba_page)
    return VllmKVLayout(block, block * attn_1tok, full_layers, 1, 0, 0)


@dataclass(frozen=True)
class VllmCapacity:
    layout: VllmKVLayout
    num_blocks: int
    tokens: int                # int(max_concurrency x max_model_len): what vLLM >= 0.24 logs
    max_concurrency: float
    legacy_tokens: int         # num_blocks // groups x block size: what vLLM <= 0.20 logged


def vllm_capacity(layout: VllmKVLayout, available_bytes: int, max_model_len: int,
                  cfg: ServeConfig) -> VllmCapacity:
    """What vLLM logs as "<GPU|CPU> KV cache size: N tokens" and "Maximum concurrency ... Nx".

    The token figure changed for hybrid models between 0.20.1 and 0.24.0 (vllm#40691, PR #38364):
    before, `num_blocks // len(kv_cache_groups) * min_block_size`; after, max_concurrency x max_model_len.
    """
    num_blocks = max(0, available_bytes) // layout.bytes_per_block
    concurrency = num_blocks / layout.blocks_per_request(max_model_len, cfg)
    groups = layout.attention_groups + layout.mamba_groups
    return VllmCapacity(layout, num_blocks, int(concurrency * max_model_len), concurrency,
                        num_blocks // groups * layout.block_size)
