"""The routed experts' workspaces in vLLM's profile run, per fused-MoE backend and release (one rank).

Which backend runs a checkpoint's experts is vLLM's MoE oracle's choice (fused_moe/oracle, read in 0.26.0 and
0.32.0); each backend's buffers are read from its source, cited at its function. A workspace the modular kernel
takes from the WorkspaceManager (from 0.14) is kept after the call: MoeWorkspace.persistent.
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ASSUMED_VLLM_VERSION, ServeConfig
from doctor.planner.versions import vllm_rules


@dataclass(frozen=True)
class MoeWorkspace:
    """The fused-MoE buffers of one MoE layer on one rank: at its peak, and what stays allocated after it."""

    peak: int
    persistent: int


def triton_experts(spec: ModelSpec, cfg: ServeConfig, capability: tuple[int, int]) -> bool:
    """Whether vLLM runs this checkpoint's routed experts with its Triton fused-MoE kernels (fused_moe/oracle,
    0.26.0): unquantized on GPUs below compute capability 10 (Hopper moves the FlashInfer backends behind Triton,
    TRTLLM needs SM100, FlashInfer CUTLASS SM90/100/120: on Ampere and Ada Triton is the first that runs);
    block FP8 on Hopper with TP ("prefer Triton for TP and FI CUTLASS for EP", oracle/fp8.py)."""
    method = spec.quantization.method
    if method == "none":
        return capability[0] < 10
    return method == "fp8" and capability[0] == 9 and not (cfg.expert_parallel and cfg.ep_size > 1)


def vllm_cutlass_fp4(spec: ModelSpec, cfg: ServeConfig) -> bool:
    """Whether vLLM runs this checkpoint's routed experts with its own CUTLASS FP4 kernels (NVFP4 with
    --moe-backend cutlass: oracle/nvfp4.py map_nvfp4_backend "cutlass" -> VLLM_CUTLASS). Left to the oracle, an
    NVFP4 checkpoint on SM100 / SM120 takes FLASHINFER_CUTLASS, the first supported backend of its order
    (select_nvfp4_moe_backend, read in 0.32.0; the GB10 and RTX 5090 boots log "Using 'FLASHINFER_CUTLASS' NvFp4
    MoE backend")."""
    return spec.quantization.method == "nvfp4" and (cfg.moe_backend or "").lower() == "cutlass"


def cutlass_fp4_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> MoeWorkspace:
    """CutlassExpertsFp4 over `tokens` tokens (M) on one rank (fused_moe/experts/cutlass_moe.py, read in 0.32.0).

    workspace_shapes: (M x topk, max(2N, K)) + (M x topk, N) + the (M, K) output, N = I_rank, K = hidden size, in
    the activation dtype, taken from the modular kernel's workspace (kept, from 0.14: moe_workspace).
    run_cutlass_moe_fp4 allocates besides them, all alive when the call ends: the rows shuffled into expert order
    (`a = ops.shuffle_rows(a, a_map)`, M x topk x K), the second GEMM's output shuffled back
    (`c3 = ops.shuffle_rows(c3, c_map)`) and its top-k weighted product before the sum
    (`(c3.view(m, num_topk, k) * topk_weights...).sum(dim=1)`), each M x topk x K; the FP4 copies of the
    activations (K / 2 bytes + a scale per 16 values) are freed before that."""
    act = dtype_bytes(spec.dtype)
    h, topk = spec.hidden_size, spec.moe.experts_per_token
    inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
    workspace = int(tokens * topk * (max(2 * inter, h) + inter) * act + tokens * h * act)
    temporaries = 3 * tokens * topk * h * act
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    return MoeWorkspace(workspace + temporaries, workspace if rules.fused_moe_modular else 0)


def marlin_experts(spec: ModelSpec, cfg: ServeConfig, capability: tuple[int, int]) -> bool:
    """Whether vLLM runs the routed experts with its Marlin kernels: weight-only INT4 checkpoints (GPTQ, AWQ,
    AutoRound: oracle/int_wna16.py, MARLIN first), FP8 below compute capability 8.9 (no FP8 tensor cores: the
    Triton and CUTLASS FP8 backends do not run, oracle/fp8.py falls to MARLIN, W8A16) and --moe-backend marlin
    (read in 0.32.0)."""
    method = spec.quantization.method
    if (cfg.moe_backend or "").lower() == "marlin":
        return method != "none"
    return method == "int" or (method == "fp8" and capability < (8, 9))


def marlin_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> MoeWorkspace:
    """MarlinExperts.workspace_shapes over `tokens` tokens (M) on one rank (fused_moe/experts/marlin_moe.py, read in
    0.32.0): (M x topk, max(N, K)) + (M x topk x max(2N, K)) + the (M, K) output, N = I_rank, K = hidden size, in
    the activation dtype, from the modular kernel's workspace (kept from 0.14, moe_workspace)."""
    act = dtype_bytes(spec.dtype)
    h, topk = spec.hidden_size, spec.moe.experts_per_token
    inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
    workspace = int((tokens * topk * (max(inter, h) + max(2 * inter, h)) + tokens * h) * act)
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    return MoeWorkspace(workspace, workspace if rules.fused_moe_modular else 0)


# Bytes per activation element the CUTLASS MoE GEMMs read: NVFP4 packs two values a byte (+ one FP8 scale per 16),
# FP8 one; otherwise the model dtype.
QUANTIZED_INPUT_BYTES = {"nvfp4": 0.5 + 1 / 16, "fp8": 1.0}


def flashinfer_cutlass_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> MoeWorkspace:
    """FlashInferExperts over `tokens` tokens (M) on one rank, the routed experts' backend where neither Triton,
    Marlin nor vLLM's own CUTLASS FP4 runs them (the NVFP4 boots log "Using 'FLASHINFER_CUTLASS' NvFp4 MoE
    backend").

    vLLM's side (fused_moe/experts/flashinfer_cutlass_moe.py workspace_shapes, 0.20.1-0.32.0): workspace13 (M, K)
    and the output (M, K x 2 for NVFP4's packed K, else K) share one modular-kernel buffer, M x H elements, kept
    by the WorkspaceManager (modular_kernel.py _allocate_buffers); its input quantised beforehand (a1q).
    FlashInfer's side: flashinfer_cutlass_fused_moe allocates, for the call only, the TensorRT-LLM
    CutlassMoeFCRunner workspace (flashinfer-ai/flashinfer csrc/fused_moe/cutlass_backend/
    cutlass_fused_moe_kernels.cuh getWorkspaceDeviceBufferSizes): over k x M expanded rows, the GEMM inputs
    (permuted_data k M H in the input type, overlapped with fc2_result k M H in the output type and fc1_result
    k M I) + the GEMM outputs (glu_inter k M 2I in the output type for a gated activation, overlapped with
    fc2_result) + blocked_row_to_unpermuted_row (E_local x M int32) + the row maps (2 k M int32)."""
    act = dtype_bytes(spec.dtype)
    h, topk = spec.hidden_size, spec.moe.experts_per_token
    inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
    experts = spec.moe.num_experts // (cfg.ep_size if cfg.expert_parallel and cfg.ep_size > 1 else 1)
    quant = QUANTIZED_INPUT_BYTES.get(spec.quantization.method, act)
    rows = tokens * topk
    inputs = max(rows * h * quant, rows * h * act, rows * inter * quant)
    outputs = max(rows * 2 * inter * act, rows * h * act, rows * inter * quant)
    transient = int(inputs + outputs + experts * tokens * 4 + 2 * rows * 4 + tokens * h * quant)
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    persistent = int(tokens * h * act) if rules.fused_moe_modular else 0
    return MoeWorkspace(transient + persistent, persistent)


def moe_workspace(spec: ModelSpec, cfg: ServeConfig, tokens: int,
                  capability: tuple[int, int] = (9, 0)) -> MoeWorkspace:
    """The fused-MoE workspaces over `tokens` tokens (M), per vLLM version (versions.vllm_rules).

    Triton experts (triton_experts), I_rank = moe_intermediate_size / TP (the experts' weights are sharded, the
    hidden states are not), M chunked at fused_moe_chunk where the version chunks:
    - from 0.14: TritonExperts.workspace_shapes (fused_moe.py 0.14.1-0.20.2, experts/triton_moe.py 0.24.0-0.26.0)
      [M, topk, max(I_rank, H)] + [M, topk, max(2 I_rank, H)], taken at once by modular_kernel.py
      _allocate_buffers (+ the [M_full, H] output where M is chunked) from the WorkspaceManager, which keeps them:
      profile_run's sampler runs on top of them. With H >= 2 I_rank both are H wide whatever the TP.
    - up to 0.13: fused_experts_impl's [M, topk, max(2 I_rank, H)] + [M x topk, I_rank], freed after each call.
    vLLM's CUTLASS FP4 experts (--moe-backend cutlass on NVFP4): cutlass_fp4_bytes; Marlin (INT4, FP8 on Ampere,
    --moe-backend marlin): marlin_bytes; the others FlashInfer CUTLASS's (the oracle's first choice for NVFP4 on
    SM100 / SM120): flashinfer_cutlass_bytes; each read in the source."""
    if not spec.moe:
        return MoeWorkspace(0, 0)
    act = dtype_bytes(spec.dtype)
    h = spec.hidden_size
    inter = spec.moe.intermediate_size / (1 if cfg.expert_parallel else cfg.tp)
    topk = spec.moe.experts_per_token
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    chunk = rules.fused_moe_chunk
    m = min(tokens, chunk) if chunk else tokens
    if vllm_cutlass_fp4(spec, cfg):
        return cutlass_fp4_bytes(spec, cfg, tokens)
    if marlin_experts(spec, cfg, capability):
        return marlin_bytes(spec, cfg, tokens)
    if not triton_experts(spec, cfg, capability):
        return flashinfer_cutlass_bytes(spec, cfg, tokens)
    if not rules.fused_moe_modular:
        return MoeWorkspace(int(m * topk * (max(2 * inter, h) + inter) * act), 0)
    workspace = m * topk * (max(inter, h) + max(2 * inter, h)) * act + (tokens * h * act if m < tokens else 0)
    return MoeWorkspace(int(workspace), int(workspace))


__all__ = ["triton_experts", "vllm_cutlass_fp4", "cutlass_fp4_bytes", "marlin_experts", "marlin_bytes",
           "QUANTIZED_INPUT_BYTES", "flashinfer_cutlass_bytes", "MoeWorkspace", "moe_workspace"]
