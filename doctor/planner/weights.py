"""Weight bytes held by one rank, by module class.

Sharding follows vLLM's parallel layers: column/row-parallel linears split 1/TP; the K/V
projection splits by KV head but never below one head per rank (vllm/model_executor/layers/
linear.py QKVParallelLinear: `num_kv_head_replicas = divide(tp_size, total_num_kv_heads)` when
tp_size >= total_num_kv_heads); routed experts split over the EP group (fused_moe/layer.py);
embeddings and lm_head are vocab-parallel with the vocabulary padded to a multiple of 64
(vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE); pipeline stages take decoder layers as
vllm/distributed/utils.py get_pp_indices does.

FP8 checkpoints on GPUs without FP8 tensor cores (compute capability below 8.9) run as Marlin W8A16 (fp8.py: the
linear layers' MarlinFP8ScaledMMLinearKernel, the experts' MARLIN backend, moe.marlin_experts), and the weights'
preparation after loading (layers/quantization/utils/marlin_utils_fp8.py prepare_fp8_layer_for_marlin /
prepare_fp8_moe_layer_for_marlin, the same in the 0.20.1, 0.22.0, 0.26.0, 0.29.0-0.31.0 and 0.34.0 wheels) keeps the FP8 values (packed into
int32) but turns block-wise scales into group-wise ones: (K / block_k, ceil(N / block_n)) float32 scales become
`repeat_interleave(block_n)` (K / block_k, N) scales in the model dtype (per-channel / per-tensor scales become
(1, N)), which "Model loading took" measures (marlin_fp8_bytes_per_param).
"""

from __future__ import annotations

import math
from collections import defaultdict

from doctor.models.params import EXPERT, KV, REPLICATED, TP, VOCAB, Tensor, mtp_tensors, text_tensors, vision_tensors
from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ServeConfig
from doctor.planner.marlin_padding import expert_padding
from doctor.recipe_rules import skips_vision_tower

VOCAB_PADDING = 64


def pp_partition(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """[start, end) decoder layers per pipeline stage (vllm/distributed/utils.py get_pp_indices)."""
    per = num_layers // pp
    parts = [per] * pp
    remaining = num_layers % pp
    for i in range(2, remaining + 2):
        parts[-i] += 1
    bounds, start = [], 0
    for n in parts:
        bounds.append((start, start + n))
        start += n
    return bounds


def fp8_runs_as_marlin(capability: tuple[int, int] | None) -> bool:
    """Whether vLLM runs FP8 weights through Marlin W8A16 on a GPU of this compute capability (None: unknown,
    taken as one with FP8 tensor cores)."""
    return capability is not None and capability < (8, 9)


def marlin_fp8_bytes_per_param(spec: ModelSpec, tensor: Tensor) -> float:
    """One FP8 parameter after Marlin's preparation: the FP8 value + its share of the group-wise scales in the model
    dtype (a group of block_k inputs per output channel; one scale per output channel without blocks)."""
    block = spec.quantization.weight_block_size
    group = block[1] if block else tensor.cols
    return 1 + dtype_bytes(spec.dtype) / group


def bytes_per_param(spec: ModelSpec, tensor: Tensor, capability: tuple[int, int] | None = None) -> float:
    """Storage cost of one parameter of `tensor`, scales and zero points included, as loaded on a GPU of
    `capability` (FP8 through Marlin below 8.9: marlin_fp8_bytes_per_param)."""
    q = spec.quantization
    if tensor.linear and tensor.group in q.fp8_modules:
        # modelopt MIXED_PRECISION FP8 layers: one float32 weight scale per tensor (ModelOptFp8Config)
        return 1 + 4 / (tensor.rows * tensor.cols)
    if not tensor.linear or q.method == "none" or tensor.group not in q.modules:
        return dtype_bytes(spec.dtype)
    if q.method == "fp8" and fp8_runs_as_marlin(capability):
        return marlin_fp8_bytes_per_param(spec, tensor)
    if q.method == "fp8":
        # one float32 scale per weight block (Fp8LinearMethod block-wise), per output channel, or per tensor
        bn, bk = q.weight_block_size or ((1, tensor.cols) if q.per_channel else (tensor.rows, tensor.cols))
        return 1 + 4 / (bn * bk)
    if q.method == "nvfp4":
        # packed 4-bit values + one FP8 (e4m3) scale per 16 (modelopt / compressed-tensors NVFP4)
        return 0.5 + 1 / q.group_size
    # int (GPTQ / AWQ / AutoRound / compressed-tensors): packed int weights + one fp16 scale per group and
    # column, plus a packed zero point when asymmetric (GPTQ checkpoints store qzeros either way)
    group = tensor.cols if q.group_size == -1 else q.group_size
    zeros = q.bits / 8 / group if (not q.symmetric or q.group_size != -1) else 0
    return q.bits / 8 + 2 / group + zeros


def _rank_numel(spec: ModelSpec, cfg: ServeConfig, tensor: Tensor, vision_tp: int) -> float:
    tp = cfg.tp
    if tensor.group == "vision":
        return tensor.numel / (vision_tp if tensor.shard == TP else 1)
    if tensor.shard == TP:
        return tensor.numel / tp
    if tensor.shard == KV:
        kv = spec.attention.num_kv_heads
        return tensor.numel / kv * max(1, kv // tp) if tp >= kv else tensor.numel / tp
    if tensor.shard == EXPERT:
        return tensor.numel / cfg.ep_size
    if tensor.shard == VOCAB:
        padded = math.ceil(spec.vocab_size / VOCAB_PADDING) * VOCAB_PADDING
        return math.ceil(padded / tp) * tensor.cols
    assert tensor.shard == REPLICATED
    return tensor.numel


def _label(tensor: Tensor) -> str:
    if tensor.group in ("embed", "lm_head"):
        return "embeddings"
    if tensor.group in ("experts",):
        return "experts"
    if tensor.group in ("attention",):
        return "attention"
    if tensor.group in ("linear_attention", "linear_attention_gates", "conv"):
        return "gated_deltanet"
    if tensor.group == "vision":
        return "vision"
    return "other"


def rank_weights(spec: ModelSpec, cfg: ServeConfig, pp_rank: int = 0,
                 capability: tuple[int, int] | None = None) -> dict[str, int]:
    """Bytes of weights on one rank of pipeline stage `pp_rank`, by module class, plus 'total', as loaded on a GPU
    of `capability` (None: one with FP8 tensor cores)."""
    start, end = pp_partition(spec.num_layers, cfg.pp)[pp_rank]
    last = pp_rank == cfg.pp - 1
    tensors: list[Tensor] = [t for t in text_tensors(spec)
               if (t.group == "embed" and pp_rank == 0)
               or (t.group != "embed" and t.layer is not None and start <= t.layer < end)]
    if cfg.uses_mtp_head and last:
        tensors += list(mtp_tensors(spec))
    if spec.vision and pp_rank == 0 and not (cfg.language_model_only
                                             and skips_vision_tower(cfg.backend, cfg.backend_version)):
        tensors += list(vision_tensors(spec))
    vision_tp = 1 if cfg.mm_encoder_tp_mode == "data" else cfg.tp
    out: dict[str, float] = defaultdict(float)
    mtp_names = {t.name for t in mtp_tensors(spec)} if cfg.uses_mtp_head and last else set()
    padding = expert_padding(spec, cfg, capability)   # Marlin's MoE thread-tile padding (marlin_padding.py)
    for t in tensors:
        unquantized_mtp = t.name in mtp_names and spec.quantization.mtp_unquantized
        per_param = dtype_bytes(spec.dtype) if unquantized_mtp else bytes_per_param(spec, t, capability)
        size = _rank_numel(spec, cfg, t, vision_tp) * per_param
        if t.shard == EXPERT and not unquantized_mtp:   # every quantised FusedMoE layer, the MTP head's included
            size *= padding
        out["mtp" if t.name in mtp_names else _label(t)] += size
    result = {k: int(v) for k, v in out.items()}
    result["total"] = sum(result.values())
    return result
