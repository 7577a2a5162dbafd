"""The shape of a checkpoint: what the planner needs to know about a model, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field

FULL = "full_attention"
LINEAR = "linear_attention"

DTYPE_BYTES: dict[str, float] = {
    "float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1, "int4": 0.5,
}


def dtype_bytes(name: str) -> float:
    """Bytes per element of a dtype name as vLLM / SGLang spell it."""
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(sorted(DTYPE_BYTES))}") from None


@dataclass(frozen=True)
class Attention:
    """Full (softmax) attention: the only layers that keep a per-token KV cache."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    output_gate: bool = False


@dataclass(frozen=True)
class GatedDeltaNet:
    """Linear-attention layers: a fixed-size recurrent state per sequence instead of a KV cache."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    ssm_dtype: str = "float32"

    @property
    def key_dim(self) -> int:
        return self.num_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.num_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim


@dataclass(frozen=True)
class MoE:
    """Routed experts plus an optional always-on shared expert."""

    num_experts: int
    experts_per_token: int
    intermediate_size: int
    shared_expert_intermediate_size: int = 0


@dataclass(frozen=True)
class Vision:
    """The ViT tower of a vision-language checkpoint (Qwen3-VL style patch merger)."""

    depth: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    out_hidden_size: int
    patch_size: int = 16
    temporal_patch_size: int = 2
    in_channels: int = 3
    spatial_merge_size: int = 2
    num_position_embeddings: int = 0
    deepstack_layers: int = 0


@dataclass(frozen=True)
class Quantization:
    """How the checkpoint stores its weights.

    method: "none", "fp8" (weight_block_size blocks, per-channel, else per-tensor scales), "int" (GPTQ / AWQ /
    AutoRound / compressed-tensors int: bits, group_size, -1 = per channel) or "nvfp4" (4 bits, FP8 scale
    per group_size=16 elements).
    modules: which module classes are quantized (attention, linear_attention, experts,
    shared_experts, dense_mlp); everything else stays in the checkpoint dtype.
    """

    method: str = "none"
    bits: int = 16
    group_size: int = 0
    weight_block_size: tuple[int, int] | None = None
    modules: tuple[str, ...] = ()
    symmetric: bool = True
    per_channel: bool = False


@dataclass(frozen=True)
class ModelSpec:
    """Everything the planner needs about a checkpoint."""

    name: str
    architecture: str
    hidden_size: int
    vocab_size: int
    layer_types: tuple[str, ...]
    attention: Attention
    linear_attention: GatedDeltaNet | None = None
    moe: MoE | None = None
    dense_intermediate_size: int = 0
    tie_word_embeddings: bool = False
    mtp_layers: int = 0
    vision: Vision | None = None
    max_position_embeddings: int = 32768
    dtype: str = "bfloat16"
    quantization: Quantization = field(default_factory=Quantization)
    source: str = ""

    @property
    def num_layers(self) -> int:
        return len(self.layer_types)

    @property
    def full_attention_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == FULL)

    @property
    def linear_attention_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == LINEAR)

    @property
    def is_hybrid(self) -> bool:
        return bool(self.linear_attention_layers)

    @property
    def is_multimodal(self) -> bool:
        return self.vision is not None

    def validate(self) -> None:
        """Raise ValueError when the numbers cannot describe a real model."""
        problems = []
        for label, value in (("hidden_size", self.hidden_size), ("vocab_size", self.vocab_size),
                             ("num_heads", self.attention.num_heads),
                             ("num_kv_heads", self.attention.num_kv_heads),
                             ("head_dim", self.attention.head_dim)):
            if not isinstance(value, int) or value <= 0:
                problems.append(f"{label} must be a positive integer, got {value!r}")
        if not self.layer_types:
            problems.append("the model has no layers")
        unknown = sorted(set(self.layer_types) - {FULL, LINEAR})
        if unknown:
            problems.append(f"unknown layer types {unknown}")
        if self.linear_attention_layers and self.linear_attention is None:
            problems.append("linear_attention layers listed but no linear attention config")
        if self.attention.num_kv_heads and self.attention.num_heads % self.attention.num_kv_heads:
            problems.append("num_heads must be a multiple of num_kv_heads")
        if self.moe is None and self.dense_intermediate_size <= 0:
            problems.append("either moe or dense_intermediate_size is required")
        if self.moe and self.moe.experts_per_token > self.moe.num_experts:
            problems.append("experts_per_token exceeds num_experts")
        if self.quantization.method not in ("none", "fp8", "int", "nvfp4"):
            problems.append(f"unsupported quantization method {self.quantization.method!r}")
        dtype_bytes(self.dtype)
        if problems:
            raise ValueError(f"model {self.name}: " + "; ".join(problems))
