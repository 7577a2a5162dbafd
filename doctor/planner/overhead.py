"""Memory a rank needs besides weights and cache, term by term as the engines measure it.

vLLM (vllm/v1/worker/gpu_worker.py determine_available_memory, 0.20-0.33):
  available KV = torch total x gpu_memory_utilization - weights - torch peak increase of the profile run
                 - non-torch increase - CUDA-graph estimate (subtracted by default since 0.20.0, versions.py).
  The profile run (v1/worker/gpu_model_runner.py profile_run, 0.20.1 / 0.24.0 / 0.26.0 / 0.32.0) first runs the
  vision encoder over its dummy batch (unless --language-model-only) and keeps only its outputs
  (`self.encoder_cache[f"tmp_{i}"] = output`), then a dummy forward over max_num_batched_tokens and
  `_dummy_sampler_run` over max_num_seqs rows of logits, and clears the encoder cache at the end. The peak is
  therefore pixel values + max(encoder peak, encoder outputs + max(forward, sampler phase)) -- the terms are maxed,
  not added; the dummy batch's pixel values stay for the whole run (encoder_input_bytes) and the sampler phase also
  holds the forward's hidden states (sampler_held_bytes).
  The encoder's dummy batch is sized by multimodal/encoder_budget.py MultiModalBudget and
  v1/core/encoder_cache_manager.py compute_mm_encoder_budget (same code in 0.20.1-0.32.0):
  budget = max(max_num_encoder_input_tokens (= max_num_batched_tokens, config/scheduler.py), tokens of the
  largest item); items = max(1, min(budget // item tokens, max_num_seqs x items per prompt)) -- one full-size
  image at 8192 batched tokens ("budget of 16384 tokens, and profiled with 1 image items",
  tests/fixtures/h200-rehearsal/vllm-bf16-vision.log), four at 65536 (the GB10 boots of vllm-partial.yaml).
  The batch is `items` copies of ONE processed dummy item (_get_mm_dummy_batch, 0.20.2: mm_counts={modality: 1},
  then group_and_batch_mm_kwargs([(modality, item)] * items, device=...)), so the device holds all items' pixel
  values, and the encoder all items' outputs, through the forward; the processed item itself stays on the host in
  the processor cache (mm_budget.cache): one item whatever the count, host memory that only a unified-memory GPU
  counts (as non-torch). --skip-mm-profiling skips the encoder; --limit-mm-per-prompt caps items per prompt.
  The CUDA-graph estimate (gpu_model_runner.py profile_cudagraph_memory, 0.20.1 / 0.24.0 / 0.26.0 / 0.32.0)
  captures the two largest graphs of each mode and returns max over modes of the first capture + per mode
  (graphs - 1) x the second capture's increment. Capture sizes (config/vllm.py: 1, 2, 4, 8..248 step 8,
  256..max step 16, max = min(2 x max_num_seqs x (1 + speculative tokens), 512, max_num_batched_tokens));
  PIECEWISE captures every size, FULL only the sizes a uniform decode batch of at most max_num_seqs requests
  fills (graph_count).
At TP > 1 (0.11.2-0.26.0 source, each rule at its function): every rank gathers the vocab-parallel logits and
samples over the full vocabulary, and the gather's buffers (logits_gather_bytes) stay under the sampler's; the
row-parallel all-reduce adds one output of the residual stream's size to the forward (allreduce_output_bytes); the
fused-MoE workspaces are as wide as the hidden size whatever the TP and, from 0.14, outlive the forward under the
sampler's run (moe_workspace). Non-torch memory has no TP term of its own from vLLM: gpu_worker.py init_device runs
init_worker_distributed_environment -- the NCCL communicators (pynccl.py, with a one-element warm-up all-reduce),
custom all-reduce's IPC buffers (custom_all_reduce.py create_shared_buffer, cudaMalloc outside torch, and its 8 MiB
torch rank_data) and torch symmetric memory (symm_mem.py) -- BEFORE the baseline MemorySnapshot ("This ensures NCCL
buffers are allocated before we measure available memory", 0.11.2-0.32.0), so neither the non-torch increase nor the
requested memory holds them; they only lower the free memory the start-up check compares. NCCL itself connects
lazily: from 2.22.3 (src/init.cc, NCCL_RUNTIME_CONNECT=1 where cuMem is supported) an algorithm's channels and
buffers are set up at its first collective (src/enqueue.cc initAlgoChannels), so an algorithm the warm-up did not
use (Ring Simple, NVLS on NVSwitch) allocates during the profile run and does land in the non-torch increase. Its
size follows the topology, not the flags: vLLM 0.11.0 on H100 logged 0.54-0.55 GiB at TP 2 against 0.13-0.14 at TP 1
(llm-d/llm-d-benchmark, docs: "vLLM Empirical Memory Profiling Results"), the TP-4 boot of vllm#50722 (custom
all-reduce off) 0.13 GiB. Without a fully described TP > 1 boot the TP-1 figure stands in (coefficients.non_torch)
and the band says the error is not measured. CUDA graphs at TP > 1: profile_cudagraph_memory measures device free
memory (cudaMemGetInfo), so its figure also takes in what NCCL allocates while collectives are captured (custom
all-reduce off: NCCL src/enqueue.cc uploadWork, persistent work buffers from the communicator's memory pool) -- not
derivable from the flags; the per-graph figure is fitted per TP class (coefficients.graph_key).
On unified-memory GPUs (GB10) the non-torch term also holds the host memory gained during init
(vllm/utils/mem_utils.py MemorySnapshot.measure counts system memory there; uma_host_bytes). The CUDA-graph
estimate there is raw cudaMemGetInfo free memory before and after each capture (profile_cudagraph_memory,
0.20.2), which on those GPUs moves with the host: three GB10 boots with an MTP drafter logged -0.87 / -0.90 GiB.
0.20.1's gpu_worker.py determine_available_memory subtracts the estimate unclamped (available = requested -
non-KV - estimate, the estimate only gated by VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS), so a negative one enlarges
the pool by its size; nothing in the source makes it negative on a discrete GPU (a graph only allocates). The
negative estimates held are all GB10 boots of 0.20.x with MTP and PIECEWISE graphs only (fp8 KV under FlashInfer),
while GB10 boots of 0.22 with the same drafter and mode logged +0.18 / +0.19 GiB: host memory released during the
capture window (not a term the flags decide). The plan keeps a positive estimate. Those boots' 2.1-2.3 GiB
shortfall was the old forward heuristic's (hidden x 12 + conv x 4 per token, 9.5 GiB at 65,536 tokens against the
7.7 GiB the source's tensors sum to: activation_bytes); with the source's figure they plan within -1.0 / +1.1%.
Coefficients (bytes per sampler logit, scale of the forward estimate, non-torch bytes, first-capture bytes,
bytes per further captured graph, actual over estimated graph memory, host bytes on unified memory) are fitted
on the logged boots of tests/data/published_kv/ and validated leave-one-out (doctor/planner/fit.py,
bench/plan_accuracy.py); doctor/planner/coefficients.py holds the set in force.
SGLang takes activations and graphs out of (1 - mem_fraction_static); only the context and NCCL
buffers held when the pool is sized count here.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.coefficients import Coefficients, current
from doctor.planner.config import ASSUMED_VLLM_VERSION, ServeConfig
from doctor.planner.engine_defaults import vllm_batch_defaults_of
from doctor.planner.drafter_run import aux_hidden_bytes, drafter_run
from doctor.planner.drafters import drafter_of
from doctor.planner.forward import Moment, Tensor, eager_tensors, moe_tensors, piece_tensors
from doctor.planner.capture import (capture_plan, capture_sizes, graph_count, graph_modes, speculator_graphs,
                                    speculator_logit_rows)
from doctor.planner.hardware import GIB, MIB, GPU, pins_memory
from doctor.planner.methods import MTP_METHODS
from doctor.planner.moe import moe_workspace
from doctor.planner.versions import vllm_rules
from doctor.planner.wsl import device_state_bytes

# Expert parallelism adds all-to-all buffers to the non-torch memory: 0.95 GiB logged by a GB200 TP4 EP rank.
NON_TORCH_EP_BYTES = int(0.95 * GIB)
# Qwen3.5 / Qwen3.6 preprocessor_config.json "size": {"longest_edge": 16777216} pixels per image (the files
# doctor/rehearse/checkpoint.py copies); vLLM's Qwen-VL processor sizes its largest dummy image from it.
IMAGE_MAX_PIXELS = 16777216
# --limit-mm-per-prompt of a modality left unset (vllm/config/multimodal.py get_limit_per_prompt, 0.20.2)
MM_LIMIT_DEFAULT = 999


def vllm_batch_defaults(gpu: GPU, version: str | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's API server picks (engine/arg_utils.py get_batch_defaults).

    >= 70 GiB and not an A100: 8192 / 1024; since 0.28.0, >= 160 GiB: 16384 / 1024; else 2048 / 256.
    The size is NVML's (platforms/cuda.py get_device_total_memory, nvmlDeviceGetMemoryInfo): a unified-memory GPU
    (GB10) has no NVML memory, the lookup fails and get_batch_defaults falls back to 0 bytes, hence 2048 / 256
    (the GB10 boots of tests/data/published_kv/vllm.yaml compile range (1, 2048) and capture FULL up to 256).
    The tiers the version's flag schema extracted from its wheel win (0.33 keeps GB10 on the small tier).
    """
    if gpu.unified:
        return 2048, 256
    total = gpu.usable_bytes
    extracted = vllm_batch_defaults_of(version or ASSUMED_VLLM_VERSION, total, gpu.name, gpu.capability)
    if extracted is not None:
        return extracted
    rules = vllm_rules(version or ASSUMED_VLLM_VERSION)
    if rules.large_gpu_batch_defaults and total >= 160 * GIB:
        return 16384, 1024
    if total >= 70 * GIB and "A100" not in gpu.name.upper():
        return 8192, 1024
    return 2048, 256


def spec_full_decode(cfg: ServeConfig, gpu: GPU) -> bool:
    """Whether FULL decode graphs survive speculative decoding (a uniform decode batch of 1 + k tokens per
    request): config/compilation.py set_cudagraph_mode (0.20.1-0.26.0) falls back to PIECEWISE when the
    attention backend supports less than AttentionCGSupport.UNIFORM_BATCH. The backend is inferred as vLLM picks
    it (platforms/cuda.py _get_backend_priorities): FlashInfer first on compute capability 10.x, where its TRT-LLM
    kernels give UNIFORM_BATCH (v1/attention/backends/flashinfer.py get_cudagraph_support); elsewhere
    FlashAttention (UNIFORM_BATCH or better), unless the KV cache is fp8, which FlashAttention serves only as
    FA3 on Hopper (flash_attn.py supports_kv_cache_dtype) -- FlashInfer then, without TRT-LLM kernels:
    UNIFORM_SINGLE_TOKEN_DECODE, PIECEWISE only ("CUDAGraphMode.FULL_AND_PIECEWISE is not supported with
    spec-decode for attention backend FlashInferBackend (support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE);
    setting cudagraph_mode=PIECEWISE", logged with fp8 KV and MTP on RTX 3090s: noonghunna/club-3090 issues #584,
    #747, pull #44). Without speculative decoding FULL decode graphs stay."""
    if cfg.mtp_tokens <= 0:
        return True
    major = gpu.capability[0]
    fp8_kv = str(cfg.kv_cache_dtype or "auto").lower().startswith("fp8")
    return major == 10 or not fp8_kv or major == 9


# --all2all-backend values that all-gather every DP rank's tokens before the experts (vllm/config/parallel.py
# All2AllBackend; "naive" and "pplx" fall back to allgather_reducescatter from 0.2x, ParallelConfig.__post_init__)
GATHERING_ALL2ALL = ("allgather_reducescatter", "naive", "pplx")
DEEPEP_ALIGNMENT = 128                 # LEGACY_NUM_BUFFER_ALIGNMENT_BYTES (DeepEP csrc/kernels/legacy/compiled.cuh)
BATCHED_DP_BACKENDS = ("deepep_low_latency", "nixl_ep")
BATCHED_DP_TOKENS = 256                # SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP


def dispatched_tokens(cfg: ServeConfig, tokens: int) -> int:
    """Tokens one rank's experts run over in the profile run.

    With DP > 1 and expert parallelism, the default all2all backend, allgather_reducescatter
    (distributed/device_communicators/all2all.py AgRsAll2AllManager, used by
    fused_moe/prepare_finalize/naive_dp_ep.py MoEPrepareAndFinalizeNaiveDPEP; read in 0.32.0), all-gathers every
    DP rank's hidden states, top-k weights and ids before the experts and reduce-scatters their output after:
    the experts' workspaces are sized for M = DP x tokens (every rank's dummy run holds max_num_batched_tokens,
    coordinate_batch_across_dp). The DeepEP / FlashInfer / Mori backends send each token only to its experts'
    ranks and keep M per rank."""
    backend = (cfg.all2all_backend or GATHERING_ALL2ALL[0]).lower()
    if cfg.expert_parallel and cfg.dp > 1 and backend in GATHERING_ALL2ALL:
        return tokens * cfg.dp
    return tokens


def gathered_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """What the all-gather of dispatched_tokens holds beside the workspaces: the gathered [M, H] hidden states and
    the [M, topk] float32 weights and int32 ids (0 where nothing is gathered)."""
    m = dispatched_tokens(cfg, tokens)
    if m == tokens or not spec.moe:
        return 0
    return m * spec.hidden_size * dtype_bytes(spec.dtype) + m * spec.moe.experts_per_token * 8


def batched_dp_moe(cfg: ServeConfig) -> bool:
    """Whether the experts' all-to-all is a batched DP one (config/parallel.py use_batched_dp_moe, 0.32.0): DeepEP
    low-latency or NIXL EP with expert parallelism over DP > 1. vLLM then defaults --max-num-batched-tokens to
    256 (engine/arg_utils.py, SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP, 0.22.1-0.34.0)."""
    backend = (cfg.all2all_backend or "").lower()
    return backend in BATCHED_DP_BACKENDS and cfg.expert_parallel and cfg.dp > 1


def deepep_low_latency_rdma_bytes(hidden: int, num_experts: int, tokens: int) -> int:
    """deep_ep.Buffer.get_low_latency_rdma_size_hint (deepseek-ai/DeepEP csrc/legacy/config.hpp LowLatencyLayout):
    two (odd / even) send, receive and signalling buffers; a dispatch message is an int4 header + the BF16 hidden
    state (or FP8 + one float scale per 128 channels, whichever is larger), a combine message the BF16 hidden state
    + a bf16x2 min / max per 128 channels; a receive buffer holds num_experts x tokens messages, so does the
    combine send buffer; rounded up to 128 bytes."""
    scales = hidden // 128
    dispatch_msg = 16 + max(hidden * 2, hidden + scales * 4)
    combine_msg = scales * 4 + hidden * 2
    send = max(tokens * dispatch_msg, num_experts * tokens * combine_msg)
    receive = max(num_experts * tokens * dispatch_msg, num_experts * tokens * combine_msg)
    signalling = -(-(num_experts * 4) // 128) * 128
    total = 2 * (send + receive + signalling)
    return (total + DEEPEP_ALIGNMENT) // DEEPEP_ALIGNMENT * DEEPEP_ALIGNMENT


def ep_group_spans_nodes(cfg: ServeConfig, gpus_per_node: int | None, pp_rank: int = 0) -> bool:
    """Whether the expert-parallel group of pipeline stage `pp_rank` holds ranks of more than one node
    (device_communicators/base_device_communicator.py: `internode = not all(in_the_same_node_as(cpu_group))`).
    distributed/parallel_state.py initialize_model_parallel lays the ranks out as (DP, PP, PCP, TP), TP innermost,
    and the EP group of a stage is its DP x TP ranks: rank = (d x PP + stage) x TP + t (read in 0.32.0); ranks fill
    the nodes in order, `gpus_per_node` each (None: one node)."""
    if not gpus_per_node or not (cfg.expert_parallel and cfg.ep_size > 1):
        return False
    nodes = {((d * cfg.pp + pp_rank) * cfg.tp + t) // gpus_per_node for d in range(cfg.dp) for t in range(cfg.tp)}
    return len(nodes) > 1


def all2all_buffer_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int, internode: bool = False) -> int:
    """Buffers an all2all backend allocates outside torch (cudaMalloc / NVSHMEM), counted as non-torch memory, per
    rank of an expert-parallel group of more than one rank (distributed/device_communicators/all2all.py, 0.32.0):
    - deepep_high_throughput: the NVLink buffer of VLLM_DEEPEP_BUFFER_SIZE_MB (cfg.deepep_buffer_mb;
      DeepEPHTAll2AllManager _make_all2all_kwargs), and where the group spans nodes (`internode`:
      ep_group_spans_nodes) an RDMA buffer of the same size (`num_rdma_bytes = VLLM_DEEPEP_BUFFER_SIZE_MB * 1024 *
      1024` unless VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE, cfg.deepep_force_intranode; the same in the 0.20.1,
      0.22.0, 0.26.0 and 0.34.0 wheels);
    - deepep_low_latency: the same NVLink buffer + the low-latency RDMA buffer for max_num_batched_tokens
      dispatched tokens per DP rank (DeepEPLLAll2AllManager: FusedMoEConfig.max_num_tokens, the hidden size,
      the checkpoint's routed experts; deepep_low_latency_rdma_bytes);
    - allgather_reducescatter (the default), naive and pplx gather activations instead (gathered_bytes).
    FlashInfer, Mori, NIXL and MoonEP workspaces are not derived here."""
    backend = (cfg.all2all_backend or "").lower()
    if not (cfg.expert_parallel and cfg.ep_size > 1) or spec.moe is None:
        return 0
    nvl = cfg.deepep_buffer_mb << 20
    if backend == "deepep_high_throughput":
        return nvl * (2 if internode and not cfg.deepep_force_intranode else 1)
    if backend == "deepep_low_latency":
        return nvl + deepep_low_latency_rdma_bytes(spec.hidden_size, spec.moe.num_experts, tokens)
    return 0


def allreduce_output_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """The all-reduce output a row-parallel layer allocates at TP > 1 while its input lives: every backend
    reduces out of place (distributed/device_communicators, 0.11.2-0.26.0: custom_all_reduce.py, symm_mem.py
    and pynccl.py `torch.empty_like(...)`, the torch fallback `input_.clone()`); at TP 1
    GroupCoordinator.all_reduce returns its input (parallel_state.py)."""
    return tokens * spec.hidden_size * dtype_bytes(spec.dtype) if cfg.tp > 1 else 0


# qwen_gdn_linear_attn.py _fused_gdn_decode_unsupported_reason (0.32.0): the fused kernel's head widths and the
# recurrent-state dtypes it takes (FUSED_GDN_STATE_DTYPES)
FUSED_GDN_HEAD_DIM = 128
FUSED_GDN_STATE_DTYPES = ("bfloat16", "float32")


def fused_gdn_spec_decode(spec: ModelSpec, cfg: ServeConfig, capability: tuple[int, int]) -> bool:
    """Whether the GDN layers run vLLM's fused spec-decode op (doctor/planner/forward.py): speculative decoding on
    a release that has it (versions.vllm_rules fused_gdn_spec_decode), a BF16 model with 128-wide non-interleaved
    heads (Qwen3.5 / 3.6, not Qwen3-Next), an FP32 or BF16 recurrent state (--mamba-ssm-cache-dtype) and compute
    capability 8.0+; VLLM_GDN_DECODE_KERNEL=triton (not read from the deployment here) would turn it off."""
    la = spec.linear_attention
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    state = cfg.mamba_ssm_cache_dtype if cfg.mamba_ssm_cache_dtype not in (None, "auto") else la.ssm_dtype if la else ""
    return bool(la and cfg.mtp_tokens > 0 and rules.fused_gdn_spec_decode and spec.dtype == "bfloat16"
                and la.key_head_dim == la.value_head_dim == FUSED_GDN_HEAD_DIM and "Next" not in spec.architecture
                and state in FUSED_GDN_STATE_DTYPES and capability >= (8, 0))


ForwardPeak = Moment   # the dummy forward's peak: the moment that sets it and the tensors alive there


def forward_peak(spec: ModelSpec, cfg: ServeConfig, tokens: int, capability: tuple[int, int] = (9, 0),
                 last_stage: bool = True) -> ForwardPeak:
    """Peak of profile_run's dummy forward over `tokens` tokens on one rank, from the tensors the source keeps
    alive (doctor/planner/forward.py): on the last stage, the aux hidden states an EAGLE3 / DFlash drafter takes
    (drafter_run.aux_hidden_bytes), the fused-MoE workspace the modular kernel keeps (moe_workspace, over the
    tokens the experts run over: dispatched_tokens) + the larger of the largest compiled piece's end (or, with
    --enforce-eager, the largest layer's locals) and the MoE block's own moment: what its piece holds, its
    tensors, the experts' transient workspaces, what an all-gather of DP ranks' tokens holds (gathered_bytes) and,
    at TP > 1, the all-reduce output (allreduce_output_bytes)."""
    act = dtype_bytes(spec.dtype)
    compiled = not cfg.enforce_eager
    fused = fused_gdn_spec_decode(spec, cfg, capability)
    workspace = moe_workspace(spec, cfg, dispatched_tokens(cfg, tokens), capability)

    def sized(tensors: tuple[Tensor, ...]) -> list[tuple[str, int, str]]:
        return [(t.name, int(t.width * tokens * act), t.source) for t in tensors if t.width]

    aux = aux_hidden_bytes(spec, drafter_of(cfg), tokens) if last_stage and cfg.mtp_tokens else 0
    kept = [("fused-MoE workspace the modular kernel keeps", workspace.persistent,
             "fused_moe/modular_kernel.py _allocate_buffers"),
            ("aux hidden states kept for the drafter", aux, "models/interfaces.py _maybe_add_hidden_state")]
    layers = sized(piece_tensors(spec, cfg.tp, fused) if compiled else eager_tensors(spec, cfg.tp))
    moe = sized(moe_tensors(spec, cfg.tp, compiled, fused)) + [
        ("the experts' own workspaces for the call", workspace.peak - workspace.persistent, "overhead.moe_workspace"),
        ("the DP ranks' gathered tokens", gathered_bytes(spec, cfg, tokens), "overhead.gathered_bytes"),
        ("the all-reduce output", allreduce_output_bytes(spec, cfg, tokens), "overhead.allreduce_output_bytes")]
    if sum(size for _, size, _ in moe) > sum(size for _, size, _ in layers):
        moment, chosen = "the MoE block", moe
    else:
        moment, chosen = ("a torch.compile piece's end" if compiled else "the largest layer's locals"), layers
    return ForwardPeak(moment, tuple(t for t in kept + chosen if t[1]))


def activation_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int, capability: tuple[int, int] = (9, 0),
                     last_stage: bool = True) -> int:
    """The dummy forward's peak over `tokens` tokens on one rank (forward_peak)."""
    return forward_peak(spec, cfg, tokens, capability, last_stage).total


def sampler_held_bytes(spec: ModelSpec, tokens: int, seqs: int) -> int:
    """What profile_run holds through _dummy_sampler_run: the dummy forward's hidden states [tokens, H] and the
    rows sampled from them [seqs, H] (gpu_model_runner.py profile_run, 0.11.2-0.32.0: `del hidden_states,
    output` only after the sampler's run)."""
    return (tokens + seqs) * spec.hidden_size * dtype_bytes(spec.dtype)


# Speculative methods each release's V2 model runner leaves to the V1 runner (config/vllm.py
# _get_v2_model_runner_unsupported_features): 0.29.0 supports eagle / eagle3 / mtp / dflash / dspark /
# extract_hidden_states only; the others are listed. 0.33 not read (taken as 0.32).
V1_ONLY_METHODS_029 = ("eagle", "eagle3", "mtp", "dflash", "dspark", "extract_hidden_states")   # the V2 ones
V1_ONLY_METHODS = {"0.30": ("ngram", "ngram_gpu", "draft_model", "suffix", "medusa", "mlp_speculator", "custom_class"),
                   "0.31": ("ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "custom_class"),
                   "0.32": ("suffix", "medusa", "mlp_speculator", "custom_class"),
                   "0.33": ("suffix", "custom_class")}


def v1_model_runner(cfg: ServeConfig) -> bool:
    """Whether vLLM runs this (hybrid) model with the V1 GPU model runner (v1/worker/gpu_model_runner.py), whose
    profile_run includes the dummy rejection sampler, rather than V2 (v1/worker/gpu/model_runner.py), whose
    _dummy_sampler_run only samples (read in 0.29.0, 0.30.0 and 0.34.0). config/vllm.py use_v2_model_runner:
    up to 0.28.0 `_is_default_v2_model_runner_model` returns False for a hybrid model unless its architecture is
    in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (Qwen3.5 / 3.6 are not); from 0.29.0 V2 is the CUDA default unless
    the configuration has a feature V2 lacks (V1_ONLY_METHODS; its other unsupported features, e.g. stock
    torch.compile, are not read); 0.34.0 has no V1 GPU runner left. VLLM_USE_V2_MODEL_RUNNER, where the deployment's
    or the facts' environment sets it (cfg.v2_model_runner, flags.env_kwargs), decides before any of that up to
    0.33 (use_v2_model_runner returns it first: read in 0.22.0, 0.26.0 and the 0.32.0 CPU build; 0.20.1 turns V2
    on only with it); 0.34.0's envs.py has no such variable."""
    v = Version(Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version)
    if v >= Version("0.34.0"):
        return False
    if cfg.v2_model_runner is not None:
        return not cfg.v2_model_runner
    if v < Version("0.29.0"):
        return True
    method = (cfg.speculative_method or "mtp").lower()
    method = "mtp" if method in MTP_METHODS else method
    if v < Version("0.30.0"):
        return method not in V1_ONLY_METHODS_029
    release = f"0.{min(max(v.minor, 30), 33)}"
    return method in V1_ONLY_METHODS[release]


def v2_speculator_method(cfg: ServeConfig) -> str | None:
    """The V2 model runner's speculator kind for this configuration ("dflash" or "mtp" for the autoregressive
    EAGLE / EAGLE3 / MTP speculators: capture.speculator_graphs), None without speculative decoding or on the V1
    runner, whose drafter graphs are captured inside the target's (drafters.py)."""
    if not cfg.mtp_tokens or cfg.backend != "vllm" or v1_model_runner(cfg):
        return None
    method = (cfg.speculative_method or "mtp").lower()
    if method == "dflash":
        return "dflash"
    return "mtp" if method in MTP_METHODS or method in ("eagle", "eagle3") else None


def sampler_logits_only(cfg: ServeConfig) -> bool:
    """Whether profile_run's dummy sampler holds nothing but the logits: the V2 runner of 0.29.0-0.32.x
    (v1/worker/gpu/model_runner.py _dummy_sampler_run: "the sampler may skip top_k, top_p, and logprobs" -- its
    dummy requests need no logits processing (sample/sampler.py needs_logits_processing all False), so
    apply_sampling_params returns the model-dtype logits and gumbel_sample keeps only num_tokens x blocks of
    argmax scratch). 0.33.0 adds a second pass with SamplingParams.for_sampler_warmup (temperature, top-k/p,
    min-p, penalties, logit bias, logprobs: the float32 pipeline), taken as the V1 sampler's run."""
    v = Version(Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version)
    return not v1_model_runner(cfg) and v < Version("0.33.0")


def rejection_sampler_bytes(spec: ModelSpec, cfg: ServeConfig, seqs: int) -> int:
    """What profile_run's dummy rejection-sampler run holds beside the sampler's own run over `seqs` rows, with
    any speculative decoding (0 without). gpu_model_runner.py _dummy_sampler_run (read in 0.26.0 and 0.32.0):
    after the plain sampler's run, `if self.speculative_config:` it makes one draft token per request
    (`draft_token_ids = [[0] for _ in range(num_reqs)]`, whatever num_speculative_tokens is) and new logits
    `torch.randn(num_tokens + num_reqs, V, dtype=logits.dtype)`: 2 x seqs rows in the model dtype. Then
    v1/sample/rejection_sampler.py forward runs the sampler over `bonus_logits = logits[bonus_logits_indices]`
    (seqs rows in the model dtype: the sampler's own input, as in the plain run, so inside the fitted bytes per
    logit) and keeps, beside the randn rows, the bonus sampler's output with max_num_logprobs=-1 and logprobs
    mode raw_logits (its float32 copy of the bonus logits, seqs x V x 4), the float32 target logits' `.clone()`
    for the processors (seqs x V x 4) and rejection_sample's sample_recovered_tokens draw
    `q = torch.empty((batch_size, vocab_size), float32)` (one row per request). In all: seqs x V x (2 x dtype +
    12) bytes on top of the sampler's run. vLLM 0.26.0 on one H200, 1,024 sequences, MTP with 1 token logged a
    7.8 GiB peak against 4.01 GiB without (tests/fixtures/h200-rehearsal/vllm-bf16-exercises.log,
    vllm-bf16-lm-only.log): 3.79 GiB = 1,024 x 248,320 x 16 bytes. --speculative-config draft_sample_method
    "probabilistic" (a further seqs x V float32 draft_probs) and use_fp64_gumbel (q in float64) are not
    modelled. The V2 model runner (v1_model_runner False) has no such run: 0."""
    if not cfg.mtp_tokens or not v1_model_runner(cfg):
        return 0
    return seqs * spec.vocab_size * (2 * dtype_bytes(spec.dtype) + 12)


TOPK_TOPP_TRITON_SINCE = Version("0.17.1")   # apply_top_k_top_p_triton (vllm#33538) from 8 rows
TOPK_TOPP_TRITON_MIN_ROWS = 8
UNCATALOGUED_SMS = 132                       # an H100 / H200's count, for a GPU the catalogue lacks


def topk_topp_buffer_bytes(spec: ModelSpec, cfg: ServeConfig, seqs: int, sms: int) -> int:
    """The per-program buffer of vLLM's Triton top-k / top-p kernel, which profile_run's dummy sampler run
    allocates and keeps (0 where it does not run). v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton
    (read in 0.26.0 and the 0.32.0 CPU build) caches per device, dtype and vocabulary a float32
    [min(next_power_of_2(min(SMs, rows)), SMs), V] tensor in _TRITON_BUFFER_CACHE, so it outlives the call and
    stays through the rejection sampler's run; topk_topp_sampler.py apply_top_k_top_p takes it from 8 rows.
    The dummy run reaches it through forward_native: gpu_model_runner.py _dummy_sampler_run samples with top-k
    and top-p set, and where the FlashInfer sampler is on (forward_cuda) it calls the sampler a second time with
    a generator ("Also warm forward_native", 0.26.0 / 0.32.0), which forward_cuda hands to forward_native.
    On one H100 (132 SMs) at 256 sequences this is 132 x 248,320 x 4 bytes = 0.12 GiB of a 1.52 GiB logged
    peak (tests/fixtures/h100-rehearsal/vllm-kv/h100-vllm-0.26-bf16-256-8192-u095.log). The V2 model runner's
    dummy sampler (sampler_logits_only) and releases before the kernel have none."""
    v = Version(Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version)
    if seqs < TOPK_TOPP_TRITON_MIN_ROWS or v < TOPK_TOPP_TRITON_SINCE or not v1_model_runner(cfg):
        return 0
    units = sms or UNCATALOGUED_SMS
    rows = min(1 << (min(units, seqs) - 1).bit_length(), units)
    return rows * spec.vocab_size * 4


def logits_gather_bytes(spec: ModelSpec, tp: int, seqs: int) -> int:
    """Peak of LogitsProcessor._gather_logits at TP > 1, over `seqs` rows of the vocabulary (0 at TP 1).

    Every rank gathers and samples: platforms/interface.py use_all_gather is True (0.11.2-0.26.0), so each
    rank all-gathers the vocab-parallel logits and runs _dummy_sampler_run over the full vocabulary. The
    all-gather (base_device_communicator.py / cuda_communicator.py all_gather, 0.11.2-0.26.0) holds the rank's
    [seqs, V / TP] logits, the [TP x seqs, V / TP] output it allocates, and the contiguous [seqs, V] copy that
    movedim + reshape make of it, in the logits' dtype: (2 + 1 / TP) x seqs x V elements at once. The gather's
    buffers are freed before the sampler runs on the [seqs, V] copy."""
    if tp == 1:
        return 0
    return int(seqs * spec.vocab_size * (2 + 1 / tp) * dtype_bytes(spec.dtype))


def image_item_tokens(spec: ModelSpec) -> int:
    """Merged tokens of the largest image the processor accepts (the encoder budget's item size)."""
    v = spec.vision
    return IMAGE_MAX_PIXELS // (v.patch_size ** 2 * v.spatial_merge_size ** 2) if v else 0


def encoder_profile_tokens(spec: ModelSpec, cfg: ServeConfig, max_num_batched_tokens: int,
                           max_num_seqs: int) -> int:
    """Merged image tokens of the encoder's dummy batch in profile_run (0 without a vision tower, with
    --language-model-only, or with --skip-mm-profiling: profile_run then skips the encoder, gpu_model_runner.py
    0.20.2): items x item tokens, as MultiModalBudget._get_max_items and compute_mm_encoder_budget size it
    (module docstring). Items per prompt: max(1, min(--limit-mm-per-prompt image count (999 unset),
    max_model_len // item tokens)); an image limit of 0 with video on profiles video, sized here as images."""
    if spec.vision is None or cfg.language_model_only or cfg.skip_mm_profiling:
        return 0
    item = image_item_tokens(spec)
    budget = max(max_num_batched_tokens, item)
    limit = cfg.mm_image_limit if cfg.mm_image_limit else MM_LIMIT_DEFAULT
    per_prompt = max(1, min(limit, (cfg.max_model_len or spec.max_position_embeddings) // item))
    return max(1, min(budget // item, max_num_seqs * per_prompt)) * item


def encoder_bytes(spec: ModelSpec, cfg: ServeConfig, tokens: int) -> int:
    """Peak of the vision encoder over `tokens` merged image tokens = merge^2 x tokens patches (P) through the ViT,
    run eagerly (no torch.compile of the encoder by default), beside its pixel values (encoder_input_bytes).
    Read in vLLM 0.26.0 (models/qwen3_vl.py Qwen3_VisionTransformer.forward, Qwen3_VisionBlock.forward,
    Qwen3_VisionMLP; models/qwen2_5_vl.py Qwen2_5_VisionAttention.forward), per patch, D = vision hidden size:
    held through every block: the position embeddings (encoder_metadata["pos_embeds"], [P, D]) and the residual
    stream x [P, D], with the block's normed input [P, D] its caller keeps while attn / mlp run; in attention, the
    locals alive at its output projection: qkv [P, 3D / TP], the contiguous q-k copy and its rotated copy [P, 2D /
    TP] each, the rearranged context [P, D / TP], and the projection's output [P, D]: 8 D / TP; in the MLP,
    linear_fc1's output and act_fn's [P, I / TP] each (the output [P, D] as in attention). Deepstack layers keep
    their merged features [P / merge^2, out hidden] to the end."""
    v = spec.vision
    if v is None or cfg.language_model_only or not tokens:
        return 0
    patches = tokens * v.spatial_merge_size ** 2
    tp = 1 if cfg.mm_encoder_tp_mode == "data" else cfg.tp
    d = v.hidden_size
    block = 4 * d + max(8 * d / tp, 2 * v.intermediate_size / tp)
    deepstack = v.deepstack_layers * tokens * v.out_hidden_size
    return int((patches * block + deepstack) * dtype_bytes(spec.dtype))


def encoder_input_bytes(spec: ModelSpec, tokens: int) -> int:
    """The dummy batch's pixel values over `tokens` merged image tokens: merge^2 x tokens patches of
    in_channels x temporal_patch_size x patch_size^2 values in the model dtype (multimodal/processing/context.py
    _postprocess_output casts floating outputs to it, 0.26.0). profile_run keeps them (`batched_dummy_mm_inputs`,
    a local of profile_run, gpu_model_runner.py 0.11.2-0.32.0) from before the encoder runs until it returns."""
    v = spec.vision
    if v is None or not tokens:
        return 0
    patch = v.in_channels * v.temporal_patch_size * v.patch_size ** 2
    return tokens * v.spatial_merge_size ** 2 * patch * dtype_bytes(spec.dtype)


def encoder_output_bytes(spec: ModelSpec, tokens: int) -> int:
    """The encoder outputs profile_run keeps in its encoder cache through the language-model forward."""
    return tokens * spec.hidden_size * dtype_bytes(spec.dtype)


@dataclass(frozen=True)
class VllmOverhead:
    """The terms vLLM subtracts besides weights, in bytes, as its "Free memory on device" line names them."""

    peak_activation: int
    non_torch: int
    cudagraph_estimate: int
    max_num_batched_tokens: int
    max_num_seqs: int
    graphs: int
    peak_phase: str = ""       # the profile-run phase that sets peak_activation (peak_phases)

    @property
    def total(self) -> int:
        return self.peak_activation + self.non_torch + self.cudagraph_estimate


@dataclass(frozen=True)
class OverheadInputs:
    """What the overhead terms scale with, before any fitted coefficient: the physics of one rank."""

    forward_bytes: int        # activation_bytes of the language model at max_num_batched_tokens
    logits: int               # max_num_seqs x vocabulary rows the sampler's dummy run holds
    graphs: int               # graphs captured (0: eager)
    max_num_batched_tokens: int
    max_num_seqs: int
    encoder_bytes: int = 0          # the vision encoder's own peak over its dummy batch
    encoder_outputs: int = 0        # its outputs, held through the language-model forward
    encoder_inputs: int = 0         # its dummy batch's pixel values, held from before it to the end
    graph_modes: int = 0            # capture modes with at least one graph (one first capture each)
    sampler_held: int = 0           # held through the sampler's run: forward outputs (sampler_held_bytes) and
                                    # the fused-MoE workspace that outlives the forward (moe_workspace)
    logits_gather: int = 0          # the vocab-parallel logits gather's peak at TP > 1 (logits_gather_bytes)
    rejection_sampler: int = 0      # speculative decoding: the dummy rejection sampler's tensors beside the
                                    # sampler's run (rejection_sampler_bytes)
    logits_only_bytes: float = 0.0  # bytes per logit of a sampler run that holds only the logits
                                    # (sampler_logits_only: the model dtype); 0: the fitted figure
    drafter_phase: int = 0          # speculative decoding: the drafter's dummy run after the forward, with what it
                                    # holds of the target's (drafter_run.drafter_run)
    speculator_logits: int = 0      # the V2 runner's speculator graphs: the draft logits its largest FULL graph
                                    # holds in the graph pool (capture.speculator_logit_rows)
    sampler_buffer: int = 0         # the Triton top-k / top-p kernel's cached buffer (topk_topp_buffer_bytes)


def overhead_inputs(spec: ModelSpec, cfg: ServeConfig, gpu: GPU, last_stage: bool = True) -> OverheadInputs:
    """The sizes vLLM's profile run and graph capture work on for this configuration. Only the last pipeline
    stage runs the dummy sampler (profile_run: `if get_pp_group().is_last_rank`, 0.11.2-0.32.0); every TP rank
    of it does."""
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    tokens, seqs = vllm_batch_defaults(gpu, rules.version)
    tokens = cfg.max_num_batched_tokens or (BATCHED_DP_TOKENS if batched_dp_moe(cfg) else tokens)
    seqs = cfg.max_num_seqs or seqs
    image_tokens = encoder_profile_tokens(spec, cfg, tokens, seqs)
    full_decode = spec_full_decode(cfg, gpu)
    captured = capture_plan(seqs, tokens, cfg.mtp_tokens, full_decode, rules.version, gpu.capability,
                            v1_model_runner(cfg))
    speculator = v2_speculator_method(cfg)
    drafted = (speculator_graphs(seqs, tokens, cfg.mtp_tokens, speculator, full_decode, rules.version, gpu.capability)
               if speculator and not cfg.enforce_eager else None)
    draft_rows = (speculator_logit_rows(seqs, tokens, cfg.mtp_tokens, speculator, full_decode, rules.version,
                                        gpu.capability) if drafted else 0)
    graphs = 0 if cfg.enforce_eager else captured.graphs + (drafted.graphs if drafted else 0)
    modes = 0 if cfg.enforce_eager else captured.modes
    # every rank of the last stage samples over the full vocabulary (LogitsProcessor all-gathers the logits)
    logits = seqs * spec.vocab_size if last_stage else 0
    workspace = moe_workspace(spec, cfg, dispatched_tokens(cfg, tokens), gpu.capability)
    held = sampler_held_bytes(spec, tokens, seqs) + workspace.persistent
    drafting = (drafter_run(spec, cfg, drafter_of(cfg), tokens, seqs, v1_model_runner(cfg), workspace)
                if last_stage else None)
    return OverheadInputs(activation_bytes(spec, cfg, tokens, gpu.capability, last_stage), logits, graphs,
                          tokens, seqs, encoder_bytes=encoder_bytes(spec, cfg, image_tokens),
                          encoder_outputs=encoder_output_bytes(spec, image_tokens),
                          encoder_inputs=encoder_input_bytes(spec, image_tokens), graph_modes=modes,
                          sampler_held=held,
                          logits_gather=logits_gather_bytes(spec, cfg.tp, seqs) if last_stage else 0,
                          rejection_sampler=rejection_sampler_bytes(spec, cfg, seqs) if last_stage else 0,
                          sampler_buffer=topk_topp_buffer_bytes(spec, cfg, seqs, gpu.sms) if last_stage else 0,
                          logits_only_bytes=float(dtype_bytes(spec.dtype)) if sampler_logits_only(cfg) else 0.0,
                          drafter_phase=drafting.total if drafting else 0,
                          speculator_logits=draft_rows * spec.vocab_size * dtype_bytes(spec.dtype))


def sampler_phase(inputs: OverheadInputs, coef: Coefficients) -> int:
    """The sampler phase of profile_run: the forward outputs it holds + max(logits gather, sampler's run), the
    sampler's run with speculative decoding being the rejection sampler's (its own tensors on top), and the
    top-k / top-p kernel's buffer kept from the run (topk_topp_buffer_bytes)."""
    per_logit = inputs.logits_only_bytes or coef.sampler_bytes_per_logit
    run = int(inputs.logits * per_logit) + inputs.rejection_sampler + inputs.sampler_buffer
    return inputs.sampler_held + max(inputs.logits_gather, run)


def peak_phases(inputs: OverheadInputs, coef: Coefficients) -> dict[str, int]:
    """profile_run's phases by name, each as the torch memory it holds at its own peak: the vision encoder's run,
    then, beside the encoder's outputs, the dummy forward, the drafter's dummy run and the sampler phase; the
    dummy batch's pixel values are held through all of them."""
    held = inputs.encoder_inputs + inputs.encoder_outputs
    own = {"the vision encoder": int(inputs.encoder_bytes * coef.forward_scale),
           "the dummy forward": int(inputs.forward_bytes * coef.forward_scale),
           "the drafter's dummy run": inputs.drafter_phase,
           "the sampler": sampler_phase(inputs, coef)}
    return {name: (inputs.encoder_inputs if name == "the vision encoder" else held) + size
            for name, size in own.items() if size or name == "the dummy forward"}


def peak_activation(inputs: OverheadInputs, coef: Coefficients) -> int:
    """profile_run's torch peak: the largest of its phases (peak_phases)."""
    return max(peak_phases(inputs, coef).values())


def cudagraph_estimate(inputs: OverheadInputs, coef: Coefficients, quantized: bool, tp: int) -> int:
    """profile_cudagraph_memory's figure: the first capture + (graphs - 1) increments per mode."""
    if not inputs.graphs:
        return 0
    further = inputs.graphs - inputs.graph_modes
    return int(coef.first_capture() + further * coef.per_graph(quantized, tp) + inputs.speculator_logits)


def uma_host_bytes(coef: Coefficients) -> int:
    """Host memory vLLM counts as device memory on a unified-memory GPU (GB10 / DGX Spark, Thor, Orin).

    vllm/utils/mem_utils.py MemorySnapshot.measure (0.20-0.33): on compute capability 8.7, 11.0 and 12.1 the free
    memory is psutil.virtual_memory().available, so "non-torch" memory = (total - available) - torch reserved, and
    its increase from the start of init_device to the end of the profile run takes in every byte the host gained
    meanwhile (the engine process, torch.compile workers, the API server). It is not predictable from the flags:
    its size is fitted on the unified-memory boots of tests/data/published_kv/ (fit.py), 0 when none is held.
    """
    return coef.uma_non_torch_bytes or 0


def wsl_host_bytes(coef: Coefficients) -> int:
    """Memory a vLLM profile run on a WSL2 GPU loses besides torch's, counted by determine_available_memory as
    non-torch memory (cudaMemGetInfo's used less torch's reserved, gpu_worker.py): under WSL2 the GPU is
    paravirtualised (dxgkrnl) and shared with the Windows host, whose own use moves during the run, and the
    driver's allocations go through WDDM. Not derivable from the flags: fitted on the WSL2 boots of
    tests/data/published_kv/ (fit.py), 0 when none is held. Native Linux RTX 5090 boots (club-3090) need none.
    Those boots are all one machine's (99sono's RTX 5090); with the forward pass taken from the source
    (activation_bytes) their gaps without the term are 1.17-1.36 GiB on 0.20.0 at 4,096-8,192 batched tokens, the
    eager boot included (so not the CUDA graphs), 1.65 GiB at 16,384, and 1.58-1.72 GiB on the held-out 0.19.2 boots
    at 8,192 and 32,768 alike: a release / run offset of the host's share, not a term of the batch (bench/
    plan_accuracy.py prints them; the old heuristic's 0.96-1.14 vs 0.7-0.8 GiB split was its own error). Another
    machine's figure agrees in size: an RTX 5090 Laptop under WSL2 starts at utilisation 0.944 but not 0.95, on two
    machines, its owner reading 0.3 GiB of overhead in nvidia-smi at rest and up to 1.31 GiB in use
    (noonghunna/club-3090#102). What one machine's desktop holds is its own: doctor/planner/wsl.py's note asks
    for the figure to be read back from the first boot (plan --from-log)."""
    return coef.wsl_non_torch_bytes or 0


def vllm_overhead_terms(spec: ModelSpec, cfg: ServeConfig, gpu: GPU, last_stage: bool = True,
                        pinned_memory: bool | None = None, internode: bool = False) -> VllmOverhead:
    """Each overhead term for one rank of this configuration on this GPU (of the last pipeline stage, else of
    an earlier one), under cfg.backend_version's rules and the coefficients in force (coefficients.current());
    pinned_memory: whether the engine gets pinned host memory (None: the platform's default, hardware.pins_memory);
    internode: whether the rank's expert-parallel group spans nodes (ep_group_spans_nodes)."""
    rules = vllm_rules(cfg.backend_version or ASSUMED_VLLM_VERSION)
    coef = current()
    inputs = overhead_inputs(spec, cfg, gpu, last_stage)
    non_torch = (coef.non_torch(cfg.tp) + (NON_TORCH_EP_BYTES if cfg.expert_parallel and cfg.ep_size > 1 else 0)
                 + all2all_buffer_bytes(spec, cfg, inputs.max_num_batched_tokens, internode))
    if gpu.unified:
        non_torch += uma_host_bytes(coef)
    if gpu.virtualised:
        non_torch += wsl_host_bytes(coef)
    non_torch += device_state_bytes(spec, cfg, pins_memory(gpu, pinned_memory), v1_model_runner(cfg),
                                    inputs.max_num_seqs, cfg.max_model_len or spec.max_position_embeddings)
    graph = cudagraph_estimate(inputs, coef, spec.quantization.method != "none", cfg.tp)
    estimate = graph if rules.cudagraph_estimate_subtracted else 0
    if rules.extensible_kv_cache:
        # vLLM 0.34's extensible KV cache is sized from memory free after capture (v1/worker/gpu_worker.py,
        # enable_extensible_kv_cache): the actual graph pool, not the estimate, is what it subtracts there.
        estimate = int(graph * coef.graph_actual_over_estimate)
    phases = peak_phases(inputs, coef)
    phase = max(phases, key=phases.__getitem__)
    return VllmOverhead(phases[phase], non_torch, estimate, inputs.max_num_batched_tokens,
                        inputs.max_num_seqs, inputs.graphs, phase)


def vllm_overhead(spec: ModelSpec, cfg: ServeConfig, gpu: GPU) -> int:
    """Non-weight, non-KV bytes vLLM reserves on one GPU (`--overhead-gib` overrides)."""
    if cfg.overhead_gib is not None:
        return int(cfg.overhead_gib * GIB)
    return vllm_overhead_terms(spec, cfg, gpu).total


__all__ = ["VllmOverhead", "OverheadInputs", "overhead_inputs", "vllm_overhead_terms", "uma_host_bytes",
           "wsl_host_bytes", "vllm_overhead", "vllm_batch_defaults", "capture_sizes", "graph_count", "graph_modes",
           "spec_full_decode", "activation_bytes", "forward_peak", "ForwardPeak", "fused_gdn_spec_decode",
           "encoder_bytes", "encoder_output_bytes", "encoder_input_bytes", "encoder_profile_tokens",
           "image_item_tokens", "peak_phases",
           "peak_activation", "cudagraph_estimate", "dispatched_tokens", "gathered_bytes",
           "all2all_buffer_bytes", "ep_group_spans_nodes", "batched_dp_moe", "deepep_low_latency_rdma_bytes",
           "allreduce_output_bytes", "sampler_held_bytes", "logits_gather_bytes", "rejection_sampler_bytes",
           "topk_topp_buffer_bytes",
           "v1_model_runner", "sampler_logits_only", "sampler_phase", "MIB"]
