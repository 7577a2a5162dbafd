"""Memory a rank needs besides weights and cache, term by term as the engines measure it.

vLLM (vllm/v1/worker/gpu_worker.py determine_available_memory, 0.21-0.33):
  available KV = torch total x gpu_memory_utilization - weights - torch peak increase of the profile run
                 - non-torch increase - CUDA-graph estimate (subtracted by default since 0.21).
  The profile run (v1/worker/gpu_model_runner.py profile_run) is a dummy forward over
  max_num_batched_tokens (after the vision encoder's dummy batch, unless --language-model-only), then
  `_dummy_sampler_run` over max_num_seqs rows of logits; the peak is the larger of the two.
  The CUDA-graph estimate (gpu_model_runner.py profile_cudagraph_memory) captures two graphs per mode and
  extrapolates to every capture size (config/vllm.py: sizes 1, 2, 4, 8..248 step 8, 256..max step 16,
  max = min(2 x max_num_seqs x (1 + speculative tokens), 512, max_num_batched_tokens)).
Calibration (our H200, vLLM 0.26.0, ../fixtures/h200-vllm-0.26/, Qwen3.5-35B-A3B, TP 1):
  peak activation 4.01 GiB for BF16 and FP8 alike at 8192 tokens / 1024 sequences: the sampler's peak
  (1024 x 248,320 logits x SAMPLER_BYTES_PER_LOGIT), not the forward; non-torch 0.24 / 0.25 GiB;
  CUDA-graph estimate 0.64 GiB (BF16) / 0.74 GiB (FP8) for 51 + 51 graphs.
SGLang takes activations and graphs out of (1 - mem_fraction_static); only the context and NCCL
buffers held when the pool is sized count here.
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, MIB, GPU
from doctor.planner.versions import vllm_rules

CONTEXT_BYTES = int(0.5 * GIB)        # SGLang: CUDA context + cuBLAS workspaces when the pool is sized
NCCL_BYTES = int(0.5 * GIB)           # SGLang: NCCL / custom all-reduce buffers when TP/PP > 1
# vLLM sampler dummy run: bytes per logit at its peak (bf16 logits, float32 copy, sort values and int64
# indices of top-k/top-p). 4.01 GiB / (1024 x 248,320) measured on the H200 (vLLM 0.26.0).
SAMPLER_BYTES_PER_LOGIT = 4.01 * GIB / (1024 * 248320)
# vLLM non-torch increase during profiling (cuBLAS/NCCL workspaces): 0.24 GiB (BF16) / 0.25 GiB (FP8) on
# the H200; expert parallelism adds all-to-all buffers (0.95 GiB logged by a GB200 TP4 EP rank).
NON_TORCH_BYTES = int(0.245 * GIB)
NON_TORCH_EP_BYTES = int(0.95 * GIB)
# CUDA-graph estimate per captured graph, TP 1: 0.64 GiB / 102 graphs (BF16), 0.74 GiB / 102 (FP8).
GRAPH_BYTES = {"none": 0.64 * GIB / 102, "quantized": 0.74 * GIB / 102}
MAX_CAPTURE_SIZE = 512
# Captured graphs take more than the estimate: 1.04 / 0.64 GiB (BF16) and 1.21 / 0.74 GiB (FP8) on the H200
# ("CUDA graph pool memory: ... (actual), ... (estimated)", gpu_worker.py 0.26.0). vLLM 0.34's extensible KV
# cache is sized from memory free after capture (v1/worker/gpu_worker.py, enable_extensible_kv_cache), so
# the actual figure is what it subtracts there.
GRAPH_ACTUAL_OVER_ESTIMATE = (1.04 / 0.64 + 1.21 / 0.74) / 2


def vllm_batch_defaults(gpu: GPU, version: str | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's API server picks (engine/arg_utils.py get_batch_defaults).

    >= 70 GiB and not an A100: 8192 / 1024; since 0.28.0, >= 160 GiB: 16384 / 1024; else 2048 / 256.
    """
    total = gpu.usable_bytes
    rules = vllm_rules(version or "0.26.0")
    if rules.large_gpu_batch_defaults and total >= 160 * GIB:
        return 16384, 1024
    if total >= 70 * GIB and "A100" not in gpu.name.upper():
        return 8192, 1024
    return 2048, 256


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int = 0) -> list[int]:
    """vLLM's default cudagraph_capture_sizes (config/vllm.py, 0.26.0)."""
    top = min(max_num_seqs * (1 + spec_tokens) * 2, MAX_CAPTURE_SIZE, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8))
    return sizes + list(range(256, top + 1, 16))


def activation_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """Peak activation of one dummy forward over `tokens` tokens on one rank (estimate, upper-leaning):
    residual stream and norms, fused-MoE workspaces [M, topk, max(2I, H)] + [M, topk, I]
    (fused_moe/modular_kernel.py) and the Gated DeltaNet projections."""
    act = dtype_bytes(spec.dtype)
    h = spec.hidden_size
    hidden = tokens * h * act * 12
    moe = 0.0
    if spec.moe:
        inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
        moe = tokens * spec.moe.experts_per_token * (max(2 * inter, h) + inter) * act
    gdn = 0.0
    if spec.linear_attention:
        gdn = tokens * spec.linear_attention.conv_dim / cfg.tp * act * 4
    return int(hidden + moe + gdn)


def encoder_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """The vision encoder's dummy batch (profile_run profiles the encoder unless --language-model-only):
    `tokens` merged image tokens = 4 x tokens patches through the ViT, plus the encoder cache it fills."""
    v = spec.vision
    if v is None or cfg.language_model_only:
        return 0
    patches = tokens * v.spatial_merge_size ** 2
    tp = 1 if cfg.mm_encoder_tp_mode == "data" else cfg.tp
    return int(patches * (v.hidden_size * 6 + v.intermediate_size / tp * 2) * dtype_bytes(spec.dtype)
               + tokens * spec.hidden_size * dtype_bytes(spec.dtype))


@dataclass(frozen=True)
class VllmOverhead:
    """The terms vLLM subtracts besides weights, in bytes, as its "Free memory on device" line names them."""

    peak_activation: int
    non_torch: int
    cudagraph_estimate: int
    max_num_batched_tokens: int
    max_num_seqs: int
    graphs: int

    @property
    def total(self) -> int:
        return self.peak_activation + self.non_torch + self.cudagraph_estimate


def vllm_overhead_terms(spec: ModelSpec, cfg: ServeConfig, gpu: GPU) -> VllmOverhead:
    """Each overhead term for one rank of this configuration on this GPU, under cfg.backend_version's rules."""
    rules = vllm_rules(cfg.backend_version or "0.26.0")
    tokens, seqs = vllm_batch_defaults(gpu, rules.version)
    tokens = cfg.max_num_batched_tokens or tokens
    seqs = cfg.max_num_seqs or seqs
    forward = activation_bytes(spec, cfg, tokens) + encoder_bytes(spec, cfg, tokens)
    # every rank samples over the full vocabulary (LogitsProcessor all-gathers the vocab-parallel logits)
    sampler = int(seqs * spec.vocab_size * SAMPLER_BYTES_PER_LOGIT)
    non_torch = NON_TORCH_BYTES + (NON_TORCH_EP_BYTES if cfg.expert_parallel and cfg.ep_size > 1 else 0)
    graphs = 0
    if not cfg.enforce_eager:
        graphs = 2 * len(capture_sizes(seqs, tokens, cfg.mtp_tokens))   # FULL_AND_PIECEWISE
    per_graph = GRAPH_BYTES["none" if spec.quantization.method == "none" else "quantized"]
    estimate = int(graphs * per_graph) if rules.cudagraph_estimate_subtracted else 0
    if rules.extensible_kv_cache:
        estimate = int(graphs * per_graph * GRAPH_ACTUAL_OVER_ESTIMATE)
    return VllmOverhead(max(forward, sampler), non_torch, estimate, tokens, seqs, graphs)


def vllm_overhead(spec: ModelSpec, cfg: ServeConfig, gpu: GPU) -> int:
    """Non-weight, non-KV bytes vLLM reserves on one GPU (`--overhead-gib` overrides)."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    return vllm_overhead_terms(spec, cfg, gpu).total


def sglang_overhead(cfg: ServeConfig) -> int:
    """Bytes in use besides weights when SGLang sizes its pools (context, NCCL)."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    return CONTEXT_BYTES + (NCCL_BYTES if cfg.tp * cfg.pp > 1 else 0)


__all__ = ["VllmOverhead", "vllm_overhead_terms", "vllm_overhead", "sglang_overhead", "vllm_batch_defaults",
           "capture_sizes", "activation_bytes", "encoder_bytes", "MIB"]
