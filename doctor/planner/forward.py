"""What vLLM's profile run holds at the peak of its dummy forward over max_num_batched_tokens, tensor by tensor.

Read in vLLM 0.20.1, 0.22.0 and 0.26.0 (the wheels) and 0.32.0 (the CPU build), the same in each where not said:

- The dummy forward runs without attention metadata: `_dummy_run(max_num_tokens, is_profile=True)` builds it only
  `if force_attention or cudagraph_runtime_mode == CUDAGraphMode.FULL` (v1/worker/gpu_model_runner.py), and the
  Gated DeltaNet core returns at once without it (model_executor/layers/mamba/gdn_linear_attn.py 0.20.1,
  mamba/gdn/qwen_gdn_linear_attn.py 0.22.0-0.32.0 `_forward_core`: "V1 profile run", after
  `_warmup_prefill_kernels` on FLA_CHUNK_SIZE = 64 tokens), as does the softmax attention. So neither the causal
  conv1d nor the FLA chunk kernels' intermediates (chunk_* over all the tokens) are ever allocated in the profile
  run: only the projections around them are.
- Under torch.compile (the default; not with --enforce-eager) the model is split into piecewise graphs at the
  attention ops (config/compilation.py `_attention_ops`: vllm::qwen_gdn_attention_core,
  vllm::unified_attention_with_output, and `vllm::unified_kv_cache_update` appended when Inductor graph partition
  is off). Each piece is one Inductor graph, which frees its intermediates after their last use, but its inputs
  are held by the split module's caller frame until the piece returns. A piece therefore holds what the previous
  attention layer handed on (a GDN layer: its in_proj_qkvz output, which `z` views, and core_attn_out; an
  attention layer: its output and the gate) with the residual it received, while it runs that layer's output
  projection, the MoE block and the next layer's input projections, and ends holding the next layer's:
  - GDN (forward_cuda): mixed_qkvz [T, (2 Kd + 2 Vd) / TP] (in_proj_qkvz; mixed_qkv and z are views of it),
    ba [T, 2 Hv / TP] and its `b.contiguous()` / `a.contiguous()` copies, core_attn_out
    `torch.zeros(T, Hv / TP, Dv)`;
  - attention (qwen3_next.py Qwen3NextAttention, up to the kv-cache-update split): qkv_proj's output
    [T, (2 q + 2 kv) / TP] (q doubled by the output gate; v is a view of it), the normed and rotated q and k, the
    gate [T, q / TP] (`gate.reshape` of a strided chunk, or fused_qk_rmsnorm_rope_gate's output from 0.26), and
    the attention output, which Attention.forward allocates (`output = torch.empty(output_shape, ...)`,
    layers/attention/attention.py) before `unified_kv_cache_update` (split off: the FlashAttention and FlashInfer
    backends set forward_includes_kv_cache_update = False);
  - the residual stream: the residual handed in and the one the fused add-norm makes ([T, H] each).
- With speculative decoding, from 0.32.0 (qwen_gdn_linear_attn.py: VLLM_GDN_DECODE_KERNEL "cuda" by default and
  enable_fused_gdn_spec_decode on a BF16 model with 128-wide heads, BF16 conv state and an FP32 / BF16 recurrent
  state on compute capability 8.0+), forward_cuda hands mixed_qkvz and ba to one op,
  vllm::qwen_gdn_attention_core_fused_norm_packed (a splitting op), and projects core_attn_out right after it:
  only core_attn_out goes on to the next piece (fused_gdn_widths).
- The V2 model runner (0.29+, v1/worker/gpu/model_runner.py profile_run, read in 0.32.0) runs the same dummy
  forward: `_dummy_run(max_num_tokens, skip_attn=True, is_profile=True)` builds no attention metadata, and
  `need_eager` only turns the CUDA graphs off, not torch.compile.
- The MoE block inside a piece (qwen3_next.py Qwen3NextSparseMoeBlock): the normed input and the new residual
  [T, H], the router logits [T, E] (ReplicatedLinear in the model dtype), top-k weights (float32) and ids (int32),
  the shared expert's output [T, H] beside the routed output [T, H], and the experts' workspaces
  (overhead.moe_workspace: the modular kernel's persistent WorkspaceManager buffers from 0.14, held from the
  first MoE layer on, and each backend's own transient ones); at TP > 1 the all-reduce output [T, H].
- With --enforce-eager nothing is split: each layer's module frame holds its locals until it returns, the caller
  its normed input; RMSNormGated.forward_cuda (layernorm_guard rmsnorm_fn) reshapes the strided z into a
  contiguous copy [T, Vd / TP] besides its output, and the gated attention output takes sigmoid(gate) and the
  product beside the attention output.
- Not modelled: the MTP / EAGLE drafter's dummy run over the same tokens (one attention + MoE layer whose pieces
  hold less than the target's GDN pieces), activation quantisation beside the FP8 / NVFP4 GEMMs (under one byte
  per hidden element).
Widths are in elements of the model dtype per token; the caller multiplies by tokens and dtype bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec

GDN = "linear_attention"
ATTENTION = "full_attention"


@dataclass(frozen=True)
class LayerWidths:
    """Per-token widths (elements) of what one attention layer makes and hands on, on one rank."""

    made: int      # alive when the piece that ends at this layer's attention op returns (the projections)
    handed: int    # passed beyond the attention op to the next piece
    eager: int     # its forward's locals at their largest with --enforce-eager


def gdn_widths(spec: ModelSpec, tp: int) -> LayerWidths:
    """A Gated DeltaNet layer: mixed_qkvz, b and a (with ba while they are copied), core_attn_out."""
    la = spec.linear_attention
    kd, vd = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    qkvz, core, gates = (2 * kd + 2 * vd) // tp, vd // tp, 2 * la.num_value_heads // tp
    made = qkvz + 2 * gates + core
    # eager: + z's contiguous copy and RMSNormGated's output, then out_proj's [T, H]
    return LayerWidths(made=made, handed=qkvz + core, eager=made + 2 * core + spec.hidden_size)


def fused_gdn_widths(spec: ModelSpec, tp: int) -> LayerWidths:
    """A GDN layer through the fused spec-decode op: it makes the same projections, hands on core_attn_out only."""
    widths = gdn_widths(spec, tp)
    core = spec.linear_attention.num_value_heads * spec.linear_attention.value_head_dim // tp
    return LayerWidths(made=widths.made, handed=core, eager=widths.eager)


def attention_widths(spec: ModelSpec, tp: int) -> LayerWidths:
    """A softmax attention layer: qkv_proj's output, q and k after norm and RoPE, the gate copy, the output."""
    at = spec.attention
    q = at.num_heads * at.head_dim // tp
    kv = max(1, at.num_kv_heads // tp) * at.head_dim
    gate = q if at.output_gate else 0
    qkv = q + gate + 2 * kv
    made = qkv + q + kv + gate + q
    # eager: + sigmoid(gate) and the gated product, then o_proj's [T, H]
    return LayerWidths(made=made, handed=q + gate, eager=made + 2 * gate + spec.hidden_size)


def layer_widths(spec: ModelSpec, layer_type: str, tp: int, fused_gdn: bool = False) -> LayerWidths:
    """The widths of a layer of this kind; fused_gdn: GDN layers take the fused spec-decode op (fused_gdn_widths)."""
    if layer_type == GDN and spec.linear_attention:
        return fused_gdn_widths(spec, tp) if fused_gdn else gdn_widths(spec, tp)
    return attention_widths(spec, tp)


def piece_widths(spec: ModelSpec, tp: int, fused_gdn: bool = False) -> int:
    """The largest piece's end under torch.compile: what the previous layer handed on + the residual handed in +
    the residual made + what the next layer's projections make, over the consecutive layer pairs of the model."""
    kinds = list(dict.fromkeys(spec.layer_types)) or [ATTENTION]
    pairs = set(zip(spec.layer_types, spec.layer_types[1:])) or {(kinds[0], kinds[0])}
    first = layer_widths(spec, spec.layer_types[0] if spec.layer_types else ATTENTION, tp).made + spec.hidden_size
    return max([first] + [layer_widths(spec, a, tp, fused_gdn).handed + 2 * spec.hidden_size
                          + layer_widths(spec, b, tp, fused_gdn).made for a, b in pairs])


def moe_piece_widths(spec: ModelSpec, tp: int, compiled: bool, fused_gdn: bool = False) -> int:
    """What sits beside the experts' workspaces while the MoE block runs: what the piece holds (compiled: the
    largest hand-on of any layer kind + the residual handed in; eager: nothing beyond the stream), the residual
    and normed input [T, H] each, the router logits [T, E], top-k weights and ids (8 bytes a choice = 4
    elements), the shared expert's output and the routed output [T, H] each (a dense MLP instead: its
    gate_up [T, 2 I / TP] and output [T, H])."""
    h = spec.hidden_size
    held = (max(layer_widths(spec, k, tp, fused_gdn).handed for k in set(spec.layer_types) or {ATTENTION}) + h
            if compiled else 0)
    if spec.moe:
        shared = h if spec.moe.shared_expert_intermediate_size else 0
        block = spec.moe.num_experts + 4 * spec.moe.experts_per_token + shared + h
    else:
        block = 2 * spec.dense_intermediate_size // tp + h
    return held + 2 * h + block


def eager_widths(spec: ModelSpec, tp: int) -> int:
    """The largest attention layer's locals with --enforce-eager, beside the residual and the normed input its
    caller holds."""
    return 2 * spec.hidden_size + max(layer_widths(spec, k, tp).eager for k in set(spec.layer_types) or {ATTENTION})


__all__ = ["LayerWidths", "gdn_widths", "fused_gdn_widths", "attention_widths", "layer_widths", "piece_widths", "moe_piece_widths",
           "eager_widths"]
