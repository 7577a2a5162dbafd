"""What vLLM's profile run holds at the peak of its dummy forward over max_num_batched_tokens, tensor by tensor.

Read in vLLM 0.19.1, 0.20.1, 0.22.0, 0.25.1, 0.26.0, 0.30.0 and 0.31.0 (the wheels) and 0.32.0 (the CPU build), the
same in each where not said:

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
- With speculative decoding, from 0.32.0 (absent from 0.26.0, 0.30.0 and 0.31.0; qwen_gdn_linear_attn.py:
  VLLM_GDN_DECODE_KERNEL "cuda" by default and enable_fused_gdn_spec_decode on a BF16 model with 128-wide heads,
  BF16 conv state and an FP32 / BF16 recurrent state on compute capability 8.0+), forward_cuda hands mixed_qkvz and
  ba to one op,
  vllm::qwen_gdn_attention_core_fused_norm_packed (a splitting op), and projects core_attn_out right after it:
  only core_attn_out goes on to the next piece (gdn_layer, fused).
- The V2 model runner (0.29+, v1/worker/gpu/model_runner.py profile_run, read in 0.32.0) runs the same dummy
  forward: `_dummy_run(max_num_tokens, skip_attn=True, is_profile=True)` builds no attention metadata, and
  `need_eager` only turns the CUDA graphs off, not torch.compile.
- The MoE block inside a piece (qwen3_next.py Qwen3NextSparseMoeBlock): the normed input and the new residual
  [T, H], the router logits [T, E] (ReplicatedLinear in the model dtype), top-k weights (float32) and ids (int32),
  the shared expert's output [T, H] beside the routed output [T, H], and the experts' workspaces
  (moe.moe_workspace: the modular kernel's persistent WorkspaceManager buffers from 0.14, held from the first MoE
  layer on, and each backend's own transient ones; one chunk of all the tokens in every release read:
  `_allocate_buffers(..., M_full, M_full, ...)`, no VLLM_FUSED_MOE_CHUNK_SIZE in modular_kernel.py); at TP > 1
  the all-reduce output [T, H].
- With --enforce-eager nothing is split: each layer's module frame holds its locals until it returns, the caller
  its normed input; RMSNormGated.forward_cuda (layernorm_guard rmsnorm_fn) reshapes the strided z into a
  contiguous copy [T, Vd / TP] besides its output, and the gated attention output takes sigmoid(gate) and the
  product beside the attention output.
- The last piece ends with the final norm's output [T, H], the forward's return, which profile_run holds through
  the sampler's run (overhead.sampler_held_bytes); it holds less than the pieces before it.
- The drafter's dummy run after the forward is a phase of its own (doctor/planner/drafter_run.py); the aux hidden
  states an EAGLE3 / DFlash drafter takes are made inside the forward and held by its later pieces
  (drafter_run.aux_hidden_bytes, added by overhead.forward_peak).
- Not modelled: activation quantisation beside the FP8 / NVFP4 GEMMs (under one byte per hidden element).
Each tensor is named with the source that keeps it (Tensor); widths are elements of the model dtype per token, and
the caller multiplies by tokens and dtype bytes (overhead.forward_peak).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from doctor.models.spec import ModelSpec

GDN = "linear_attention"
ATTENTION = "full_attention"
GDN_SOURCE = "mamba/gdn/qwen_gdn_linear_attn.py forward_cuda"
ATTENTION_SOURCE = "models/qwen3_next.py Qwen3NextAttention.forward"
DECODER_SOURCE = "models/qwen3_next.py Qwen3NextDecoderLayer.forward"
MOE_SOURCE = "models/qwen3_next.py Qwen3NextSparseMoeBlock.forward"


@dataclass(frozen=True)
class Tensor:
    """One tensor alive at the peak: its name, its width per token (elements of the model dtype), its source."""

    name: str
    width: int
    source: str


@dataclass(frozen=True)
class Moment:
    """A moment of the profile run on one rank and the tensors alive there, each as (name, bytes, source)."""

    moment: str
    tensors: tuple[tuple[str, int, str], ...]

    @property
    def total(self) -> int:
        return sum(size for _, size, _ in self.tensors)


@dataclass(frozen=True)
class Layer:
    """What one attention layer makes (alive when the piece ending at its attention op returns), hands on beyond
    that op to the next piece, and adds to its locals with --enforce-eager, on one rank."""

    made: tuple[Tensor, ...]
    handed: tuple[Tensor, ...]
    eager: tuple[Tensor, ...]


def width(tensors: Iterable[Tensor]) -> int:
    """Elements per token of these tensors together."""
    return sum(t.width for t in tensors)


def gdn_layer(spec: ModelSpec, tp: int, fused: bool = False) -> Layer:
    """A Gated DeltaNet layer; fused: the spec-decode op takes its projections, only core_attn_out goes on."""
    la = spec.linear_attention
    kd, vd = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    qkvz = Tensor("in_proj_qkvz output (mixed_qkv and z view it)", (2 * kd + 2 * vd) // tp, GDN_SOURCE)
    ba = Tensor("in_proj_ba output", 2 * la.num_value_heads // tp, GDN_SOURCE)
    b_a = Tensor("b.contiguous(), a.contiguous()", 2 * la.num_value_heads // tp, GDN_SOURCE)
    core = Tensor("core_attn_out (torch.zeros)", vd // tp, GDN_SOURCE)
    eager = (Tensor("z.reshape copy (layernorm_guard rmsnorm_fn)", vd // tp, "layers/layernorm.py RMSNormGated"),
             Tensor("RMSNormGated output", vd // tp, "layers/layernorm.py RMSNormGated"),
             Tensor("out_proj output", spec.hidden_size, GDN_SOURCE))
    return Layer(made=(qkvz, ba, b_a, core), handed=(core,) if fused else (qkvz, core), eager=eager)


def attention_layer(spec: ModelSpec, tp: int) -> Layer:
    """A softmax attention layer: qkv_proj's output, q and k after norm and RoPE, the gate copy, the output."""
    at = spec.attention
    q = at.num_heads * at.head_dim // tp
    kv = max(1, at.num_kv_heads // tp) * at.head_dim   # KV heads are replicated where TP exceeds them
    gate = q if at.output_gate else 0
    gated = (Tensor("gate (reshape copy / fused_qk_rmsnorm_rope_gate)", gate, ATTENTION_SOURCE),) if gate else ()
    made = (Tensor("qkv_proj output (v views it)", q + gate + 2 * kv, ATTENTION_SOURCE),
            Tensor("q after q_norm and RoPE", q, ATTENTION_SOURCE),
            Tensor("k after k_norm and RoPE", kv, ATTENTION_SOURCE),
            *gated, Tensor("attention output (torch.empty)", q, "layers/attention/attention.py Attention.forward"))
    eager = ((Tensor("sigmoid(gate)", gate, ATTENTION_SOURCE), Tensor("gated output", gate, ATTENTION_SOURCE))
             if gate else ()) + (Tensor("o_proj output", spec.hidden_size, ATTENTION_SOURCE),)
    return Layer(made=made, handed=(made[-1], *gated), eager=eager)


def layer(spec: ModelSpec, layer_type: str, tp: int, fused_gdn: bool = False) -> Layer:
    """A layer of this kind; fused_gdn: GDN layers take the fused spec-decode op."""
    if layer_type == GDN and spec.linear_attention:
        return gdn_layer(spec, tp, fused_gdn)
    return attention_layer(spec, tp)


def residual(name: str, spec: ModelSpec) -> Tensor:
    return Tensor(name, spec.hidden_size, DECODER_SOURCE)


def piece_tensors(spec: ModelSpec, tp: int, fused_gdn: bool = False) -> tuple[Tensor, ...]:
    """The largest piece's end under torch.compile: what the previous layer handed on + the residual handed in +
    the residual made + what the next layer's projections make, over the consecutive layer pairs of the model."""
    kinds = list(dict.fromkeys(spec.layer_types)) or [ATTENTION]
    pairs = set(zip(spec.layer_types, spec.layer_types[1:])) or {(kinds[0], kinds[0])}
    first = (residual("embedding output (the first residual)", spec), *layer(spec, kinds[0], tp).made)
    ends = [first] + [(*layer(spec, a, tp, fused_gdn).handed, residual("residual handed in", spec),
                       residual("residual made (fused add + RMSNorm)", spec), *layer(spec, b, tp, fused_gdn).made)
                      for a, b in sorted(pairs)]
    return max(ends, key=width)


def moe_tensors(spec: ModelSpec, tp: int, compiled: bool, fused_gdn: bool = False,
                kinds: tuple[str, ...] = ()) -> tuple[Tensor, ...]:
    """What sits beside the experts' workspaces while the MoE block runs: what the piece holds (compiled: the
    largest hand-on of any layer kind, of `kinds` where given (the MTP layer: attention only), + the residual
    handed in; eager: nothing beyond the stream), the residual
    and the normed input, the router logits [T, E], top-k weights and ids (8 bytes a choice = 4 elements), the
    shared expert's output and the routed output (a dense MLP instead: its gate_up [T, 2 I / TP] and the
    activation's output [T, I / TP])."""
    h = spec.hidden_size
    held: tuple[Tensor, ...] = ()
    if compiled:
        held_kinds = set(kinds or spec.layer_types) or {ATTENTION}
        held = (*max((layer(spec, k, tp, fused_gdn).handed for k in sorted(held_kinds)), key=width),
                residual("residual handed in", spec))
    stream = (residual("residual", spec), residual("post_attention_layernorm output", spec))
    if spec.moe:
        shared = ((Tensor("shared expert output", h, MOE_SOURCE),) if spec.moe.shared_expert_intermediate_size
                  else ())
        block = (Tensor("router logits", spec.moe.num_experts, MOE_SOURCE),
                 Tensor("top-k weights (float32) and ids (int32)", 4 * spec.moe.experts_per_token, MOE_SOURCE),
                 *shared, Tensor("routed experts' output", h, MOE_SOURCE))
    else:
        # the activation's output [T, I / TP] beside gate_up_proj's [T, 2 I / TP], or beside down_proj's [T, H]
        # once gate_up's is freed, whichever is wider
        inter = spec.dense_intermediate_size // tp
        block = (Tensor("gate_up_proj output (or down_proj's after it)", max(2 * inter, h),
                        "models/qwen2_moe.py Qwen2MoeMLP.forward"),
                 Tensor("SiluAndMul output", inter, "models/qwen2_moe.py Qwen2MoeMLP.forward"))
    return (*held, *stream, *block)


def eager_tensors(spec: ModelSpec, tp: int) -> tuple[Tensor, ...]:
    """The largest attention layer's locals with --enforce-eager, beside the residual and the normed input its
    caller holds."""
    kinds = set(spec.layer_types) or {ATTENTION}
    largest = max(((*layer(spec, k, tp).made, *layer(spec, k, tp).eager) for k in sorted(kinds)), key=width)
    return (residual("residual", spec), residual("input_layernorm output (the caller's argument)", spec), *largest)


__all__ = ["Tensor", "Moment", "Layer", "width", "gdn_layer", "attention_layer", "layer", "piece_tensors", "moe_tensors",
           "eager_tensors"]
