"""Memory a rank needs besides weights and cache: activations, CUDA graphs, CUDA/NCCL context.

This part is an estimate (the backends measure it with a profiling run); `--overhead-gib`
overrides it. The terms follow what the profiling run allocates:
- vLLM v1/worker/gpu_worker.py determine_available_memory: non_kv = weights + the profiling peak
  (the larger of a dummy forward over max_num_batched_tokens and the sampler's dummy run over
  max_num_seqs rows of float32 logits, which runs after the forward's activations are freed) +
  non-torch memory (context, NCCL) + the CUDA-graph estimate (counted by default since v0.21,
  vllm#50722).
- SGLang takes activations and graphs out of (1 - mem_fraction_static); only the context and NCCL
  buffers held when the pool is sized count here.
Default batch sizes: vllm/engine/arg_utils.py get_batch_defaults (API server: 8192 tokens / 1024
sequences on >= 70 GiB non-A100 GPUs, 16384 / 1024 on >= 160 GiB, else 2048 / 256).
"""

from __future__ import annotations

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, GPU

CONTEXT_BYTES = int(0.5 * GIB)        # CUDA context + cuBLAS workspaces
NCCL_BYTES = int(0.5 * GIB)           # NCCL / custom all-reduce buffers when TP/PP > 1
CUDA_GRAPH_BYTES = int(0.5 * GIB)     # captured decode graphs (FULL_AND_PIECEWISE, up to 512 sequences)


def vllm_batch_defaults(gpu: GPU) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's API server picks for this GPU."""
    if gpu.memory_bytes >= 160 * GIB:
        return 16384, 1024
    if gpu.memory_bytes >= 70 * GIB and "A100" not in gpu.name.upper():
        return 8192, 1024
    return 2048, 256


def activation_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """Peak activation of one forward over `tokens` tokens on one rank (rough, upper-leaning)."""
    act = dtype_bytes(spec.dtype)
    h = spec.hidden_size
    hidden = tokens * h * act * 12                     # residual, norms, attention in/out, MLP in/out
    moe = 0
    if spec.moe:
        inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
        # fused_moe workspaces: [M, topk, max(2I, H)] and [M, topk, I]
        moe = tokens * spec.moe.experts_per_token * (max(2 * inter, h) + inter) * act
    gdn = 0
    if spec.linear_attention:
        gdn = tokens * spec.linear_attention.conv_dim / cfg.tp * act * 4
    return int(hidden + moe + gdn)


def vllm_overhead(spec: ModelSpec, cfg: ServeConfig, gpu: GPU) -> int:
    """Non-weight, non-KV bytes vLLM reserves on one GPU."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    tokens, seqs = vllm_batch_defaults(gpu)
    tokens = cfg.max_num_batched_tokens or tokens
    seqs = cfg.max_num_seqs or seqs
    logits = seqs * spec.vocab_size / cfg.tp * 4 * 2    # float32 logits + one sampler temporary
    graphs = 0 if cfg.enforce_eager else CUDA_GRAPH_BYTES
    nccl = NCCL_BYTES if cfg.tp * cfg.pp > 1 else 0
    return int(CONTEXT_BYTES + nccl + graphs + max(activation_bytes(spec, cfg, tokens), logits))


def sglang_overhead(cfg: ServeConfig) -> int:
    """Bytes in use besides weights when SGLang sizes its pools (context, NCCL)."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    return CONTEXT_BYTES + (NCCL_BYTES if cfg.tp * cfg.pp > 1 else 0)
