"""The tensor inventory of a checkpoint, grouped by how each tensor is quantized and sharded.

The layout follows the Hugging Face checkpoints and vLLM's model code:
vllm/model_executor/models/qwen3_next.py (GDN: in_proj_qkvz, in_proj_ba, conv1d, A_log, dt_bias,
norm, out_proj), qwen3_moe.py (router gate, experts, shared_expert + shared_expert_gate),
qwen3_vl.py (vision patch_embed, pos_embed, blocks, merger) and qwen3_next_mtp.py (fc, norms,
one decoder layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from doctor.models.spec import FULL, ModelSpec

# How a tensor is split across ranks.
TP = "tp"              # column- or row-parallel: 1/tp per rank
KV = "kv"              # K/V projections: 1/tp, but never below one KV head (replicated when tp > kv heads)
EXPERT = "expert"      # routed experts: 1/tp (TP-sharded) or 1/ep (expert parallel)
VOCAB = "vocab"        # vocab-parallel embedding / lm_head: 1/tp
REPLICATED = "replicated"


@dataclass(frozen=True)
class Tensor:
    """One weight (or a set of identical ones): numel = count * rows * cols."""

    name: str
    group: str          # attention, linear_attention, experts, shared_experts, dense_mlp, router,
                        # norm, embed, lm_head, vision, conv
    shard: str
    rows: int
    cols: int = 1
    count: int = 1
    layer: int | None = None   # decoder layer index, for pipeline-parallel placement
    linear: bool = False       # a GEMM weight that a quantization method may store compressed

    @property
    def numel(self) -> int:
        return self.count * self.rows * self.cols


def _attention(spec: ModelSpec, layer: int | None, prefix: str) -> list[Tensor]:
    a, h = spec.attention, spec.hidden_size
    q_out = a.num_heads * a.head_dim * (2 if a.output_gate else 1)
    kv_out = a.num_kv_heads * a.head_dim
    return [
        Tensor(f"{prefix}.q_proj", "attention", TP, q_out, h, layer=layer, linear=True),
        Tensor(f"{prefix}.kv_proj", "attention", KV, 2 * kv_out, h, layer=layer, linear=True),
        Tensor(f"{prefix}.o_proj", "attention", TP, h, a.num_heads * a.head_dim, layer=layer, linear=True),
        Tensor(f"{prefix}.qk_norm", "norm", REPLICATED, 2 * a.head_dim, layer=layer),
    ]


def _gated_delta_net(spec: ModelSpec, layer: int, prefix: str) -> list[Tensor]:
    g, h = spec.linear_attention, spec.hidden_size
    assert g is not None
    return [
        Tensor(f"{prefix}.in_proj_qkvz", "linear_attention", TP, 2 * g.key_dim + 2 * g.value_dim, h,
               layer=layer, linear=True),
        Tensor(f"{prefix}.in_proj_ba", "linear_attention_gates", TP, 2 * g.num_value_heads, h,
               layer=layer, linear=True),
        Tensor(f"{prefix}.conv1d", "conv", TP, g.conv_dim, g.conv_kernel, layer=layer),
        Tensor(f"{prefix}.A_log+dt_bias", "norm", TP, 2 * g.num_value_heads, layer=layer),
        Tensor(f"{prefix}.norm", "norm", REPLICATED, g.value_head_dim, layer=layer),
        Tensor(f"{prefix}.out_proj", "linear_attention", TP, h, g.value_dim, layer=layer, linear=True),
    ]


def _mlp(spec: ModelSpec, layer: int | None, prefix: str) -> list[Tensor]:
    h = spec.hidden_size
    if spec.moe is None:
        return [Tensor(f"{prefix}.mlp", "dense_mlp", TP, 3 * spec.dense_intermediate_size, h,
                       layer=layer, linear=True)]
    m = spec.moe
    out = [
        Tensor(f"{prefix}.router", "router", REPLICATED, m.num_experts, h, layer=layer),
        Tensor(f"{prefix}.experts", "experts", EXPERT, 3 * m.intermediate_size, h, count=m.num_experts,
               layer=layer, linear=True),
    ]
    if m.shared_expert_intermediate_size:
        out += [
            Tensor(f"{prefix}.shared_expert", "shared_experts", TP, 3 * m.shared_expert_intermediate_size, h,
                   layer=layer, linear=True),
            Tensor(f"{prefix}.shared_expert_gate", "router", REPLICATED, 1, h, layer=layer),
        ]
    return out


@lru_cache(maxsize=32)
def text_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """The language model: embeddings, decoder layers, final norm and lm_head."""
    h = spec.hidden_size
    out = [Tensor("embed_tokens", "embed", VOCAB, spec.vocab_size, h, layer=0)]
    for i, kind in enumerate(spec.layer_types):
        prefix = f"layers.{i}"
        mixer = _attention(spec, i, prefix) if kind == FULL else _gated_delta_net(spec, i, prefix)
        out += mixer + _mlp(spec, i, prefix)
        out.append(Tensor(f"{prefix}.layernorms", "norm", REPLICATED, 2 * h, layer=i))
    last = spec.num_layers - 1
    out.append(Tensor("norm", "norm", REPLICATED, h, layer=last))
    if not spec.tie_word_embeddings:
        out.append(Tensor("lm_head", "lm_head", VOCAB, spec.vocab_size, h, layer=last, linear=True))
    return tuple(out)


@lru_cache(maxsize=32)
def mtp_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """Multi-token-prediction head(s): loaded only when MTP speculative decoding is on."""
    h, out = spec.hidden_size, []
    last = spec.num_layers - 1
    for k in range(spec.mtp_layers):
        prefix = f"mtp.{k}"
        out.append(Tensor(f"{prefix}.fc", "mtp_fc", TP, h, 2 * h, layer=last))
        out.append(Tensor(f"{prefix}.norms", "norm", REPLICATED, 4 * h, layer=last))
        out += _attention(spec, last, prefix) + _mlp(spec, last, prefix)
    return tuple(out)


@lru_cache(maxsize=32)
def vision_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """The ViT tower (Qwen3-VL layout: LayerNorms with bias, biased linears, 2x2 patch merger)."""
    v = spec.vision
    if v is None:
        return ()
    d, f = v.hidden_size, v.intermediate_size
    merged = d * v.spatial_merge_size ** 2
    merger = merged * 2 + merged * merged + merged + merged * v.out_hidden_size + v.out_hidden_size
    block = (4 * d                      # norm1, norm2 (weight + bias)
             + d * 3 * d + 3 * d        # qkv
             + d * d + d                # proj
             + d * f + f + f * d + d)   # mlp fc1, fc2
    patch = v.in_channels * v.temporal_patch_size * v.patch_size ** 2 * d + d
    return (
        Tensor("visual.patch_embed", "vision", REPLICATED, patch),
        Tensor("visual.pos_embed", "vision", REPLICATED, v.num_position_embeddings, d),
        Tensor("visual.blocks", "vision", TP, block, count=v.depth),
        Tensor("visual.merger", "vision", TP, merger, count=1 + v.deepstack_layers),
    )


def count_parameters(spec: ModelSpec) -> dict[str, int]:
    """Parameter counts: text, mtp, vision and total."""
    text = sum(t.numel for t in text_tensors(spec))
    mtp = sum(t.numel for t in mtp_tensors(spec))
    vision = sum(t.numel for t in vision_tensors(spec))
    return {"text": text, "mtp": mtp, "vision": vision, "total": text + mtp + vision}


def active_parameters(spec: ModelSpec) -> int:
    """Parameters touched per token (routed experts counted at experts_per_token), text only."""
    total = 0
    for t in text_tensors(spec):
        if t.group == "experts" and spec.moe:
            total += t.numel * spec.moe.experts_per_token // spec.moe.num_experts
        elif t.group != "embed":
            total += t.numel
    return total


__all__ = ["Tensor", "TP", "KV", "EXPERT", "VOCAB", "REPLICATED", "text_tensors", "mtp_tensors",
           "vision_tensors", "count_parameters", "active_parameters"]
