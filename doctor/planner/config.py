"""The serving configuration the planner sizes: the flags of `vllm serve` / `sglang.launch_server`."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from doctor.deployment.table import option
from doctor.flags.values import AUTO_LENGTH
from doctor.planner.engine_defaults import literal_default
from doctor.planner.errors import PlanInputError
from doctor.planner.methods import MTP_METHODS

BACKENDS = ("vllm", "sglang")
MAX_PARALLEL = 4096
MAX_TOKENS = 1 << 30
KV_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")
SSM_DTYPES = ("float32", "bfloat16", "float16")
MAMBA_RADIX_STRATEGIES = ("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy")
ASSUMED_VLLM_VERSION = "0.26.0"   # whose defaults apply when the vLLM version is not known (our H200 rehearsal's)


@dataclass(frozen=True)
class ServeConfig:
    """Serving flags that change memory. None means "the backend's default"."""

    backend: str = "vllm"
    tp: int = 1
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None          # vLLM --max-model-len / SGLang --context-length
    max_num_seqs: int | None = None           # vLLM --max-num-seqs / SGLang --max-running-requests
    gpu_memory_utilization: float | None = None  # vLLM; None: the default of backend_version
    mem_fraction_static: float | None = None  # SGLang
    max_num_batched_tokens: int | None = None  # vLLM --max-num-batched-tokens / SGLang --chunked-prefill-size
    language_model_only: bool = False          # vLLM --language-model-only / SGLang --language-only
    mm_encoder_tp_mode: str = "weights"        # vLLM --mm-encoder-tp-mode (data = replicated vision tower)
    mm_image_limit: int | None = None          # vLLM --limit-mm-per-prompt image count (None: vLLM's 999)
    skip_mm_profiling: bool = False            # vLLM --skip-mm-profiling (the tower loads, is not profiled)
    mtp_tokens: int = 0                        # speculative tokens (0 = off): the MTP head's, or the drafter's
    speculative_method: str | None = None      # vLLM --speculative-config method / SGLang --speculative-algorithm
                                               # (None or an MTP method: the checkpoint's own MTP layer)
    drafter: str | None = None                 # a separate drafter model (registry name or local directory)
    prefix_caching: bool | None = None         # vLLM --enable-prefix-caching (hybrid: mamba "align" mode);
                                               # None: the default of backend_version (versions.py)
    enforce_eager: bool = False                # vLLM --enforce-eager / SGLang --disable-cuda-graph
    moe_backend: str | None = None             # vLLM --moe-backend (None / "auto": the fused-MoE oracle's choice)
    all2all_backend: str | None = None         # vLLM --all2all-backend (None: allgather_reducescatter)
    extensible_kv_cache: bool | None = None    # vLLM 0.34 --(no-)enable-extensible-kv-cache (None: the version's default)
    block_size: int | None = None              # vLLM --block-size
    mamba_full_memory_ratio: float = 0.9       # SGLang --mamba-full-memory-ratio
    max_mamba_cache_size: int | None = None    # SGLang --max-mamba-cache-size
    mamba_ssm_dtype: str | None = None         # SGLang --mamba-ssm-dtype (None: the checkpoint's mamba_ssm_dtype)
    mamba_ssm_cache_dtype: str | None = None   # vLLM --mamba-ssm-cache-dtype (None / auto: the checkpoint's)
    mamba_radix_strategy: str | None = None    # SGLang --mamba-radix-cache-strategy (None: "auto")
    overlap_schedule: bool = True              # SGLang: False with --disable-overlap-schedule
    cuda_graph_max_bs: int | None = None       # SGLang --cuda-graph-max-bs(-decode) (None: per GPU size)
    prefill_cuda_graph: bool | None = None     # SGLang prefill (piecewise / breakable) CUDA graphs (None: the
                                               # default of backend_version)
    overhead_gib: float | None = None          # activations + CUDA graphs + non-torch memory per GPU
    kv_cache_memory_gib: float | None = None   # vLLM --kv-cache-memory (bytes there): skips the budget
    backend_version: str | None = None         # the engine version whose rules apply (None: newest known)
    deepep_buffer_mb: int = 1024               # vLLM VLLM_DEEPEP_BUFFER_SIZE_MB (envs.py default 1024)
    deepep_force_intranode: bool = False       # vLLM VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE
    v2_model_runner: bool | None = None        # vLLM VLLM_USE_V2_MODEL_RUNNER from the deployment's or facts'
                                               # environment (None: unset, the version's choice)
    engine_env: tuple[tuple[str, str], ...] = ()  # variables of the environment whose effect each release reads
                                               # differently (flags.RELEASE_ENV), as (name, value)

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ep_size(self) -> int:
        """Ranks the routed experts are spread over (vLLM: TP x DP with --enable-expert-parallel)."""
        return self.tp * self.dp if self.expert_parallel else self.tp

    @property
    def uses_mtp_head(self) -> bool:
        """Speculative decoding with the checkpoint's own MTP layer (not a separate drafter, not n-gram)."""
        return bool(self.mtp_tokens) and self.drafter is None and (self.speculative_method or "").lower() in MTP_METHODS

    @property
    def speculative_kind(self) -> str:
        """What drafts the tokens: "none", "mtp" (the checkpoint's own MTP head) or the drafter's method."""
        if not self.mtp_tokens:
            return "none"
        return "mtp" if self.uses_mtp_head else (self.speculative_method or "").lower()

    @property
    def prefix_caching_on(self) -> bool:
        """Prefix caching as set, or on (plan() resolves None to the version's default first)."""
        return self.prefix_caching is not False

    @property
    def utilization(self) -> float:
        """--gpu-memory-utilization, else the default of this vLLM version as its flag schema records it
        (vllm/config/cache.py), else, where the version resolves it at startup (0.34), versions.vllm_rules."""
        from doctor.planner.versions import vllm_rules

        if self.gpu_memory_utilization is not None:
            return self.gpu_memory_utilization
        version = self.backend_version or ASSUMED_VLLM_VERSION
        default = literal_default("vllm", version, "gpu_memory_utilization")
        if isinstance(default, (int, float)):
            return float(default)
        rules = vllm_rules(version)
        if rules.extensible_kv_cache and not self.extensible_kv_on:
            return rules.estimate_gpu_memory_utilization      # 0.34 resolves None to 0.92 without the extensible cache
        return rules.gpu_memory_utilization

    @property
    def extensible_kv_on(self) -> bool:
        """Whether vLLM sizes the KV cache after warmup and capture (0.34's extensible KV cache: on by default on
        CUDA unless --kv-cache-memory-bytes is set, vllm/config/cache.py enable_extensible_kv_cache)."""
        from doctor.planner.versions import vllm_rules

        rules = vllm_rules(self.backend_version or ASSUMED_VLLM_VERSION)
        return (self.backend == "vllm" and rules.extensible_kv_cache and self.extensible_kv_cache is not False
                and self.kv_cache_memory_gib is None)

    def with_(self, **changes: object) -> "ServeConfig":
        return replace(self, **changes)

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise PlanInputError(f"--{f.name.replace('_', '-')} must be a finite number, got {value}")
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1 << 40:
                raise PlanInputError(f"--{f.name.replace('_', '-')} {value} is out of range")
        if self.backend not in BACKENDS:
            raise PlanInputError(f"unknown backend {self.backend!r}; use one of {', '.join(BACKENDS)}")
        for name in ("tp", "pp", "dp"):
            if not 1 <= getattr(self, name) <= MAX_PARALLEL:
                raise PlanInputError(f"--{name} must be between 1 and {MAX_PARALLEL}")
        if self.kv_cache_dtype not in KV_DTYPES:
            raise PlanInputError(f"unknown {option('kv_cache_dtype')} {self.kv_cache_dtype!r}; use one of {', '.join(KV_DTYPES)}")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise PlanInputError(f"{option('gpu_memory_utilization')} must be in (0, 1]")
        if self.mem_fraction_static is not None and not 0 < self.mem_fraction_static < 1:
            raise PlanInputError(f"{option('mem_fraction_static')} must be in (0, 1)")
        if self.mamba_ssm_dtype is not None and self.mamba_ssm_dtype not in SSM_DTYPES:
            raise PlanInputError(f"unknown {option('mamba_ssm_dtype')} {self.mamba_ssm_dtype!r}; use one of "
                                 f"{', '.join(SSM_DTYPES)}")
        if self.mamba_ssm_cache_dtype is not None and self.mamba_ssm_cache_dtype not in ("auto", *SSM_DTYPES):
            raise PlanInputError(f"unknown {option('mamba_ssm_cache_dtype')} {self.mamba_ssm_cache_dtype!r}; use one of "
                                 f"auto, {', '.join(SSM_DTYPES)}")
        if self.mamba_radix_strategy is not None and self.mamba_radix_strategy not in MAMBA_RADIX_STRATEGIES:
            raise PlanInputError(f"unknown {option('mamba_radix_strategy')} {self.mamba_radix_strategy!r}; use one of "
                                 f"{', '.join(MAMBA_RADIX_STRATEGIES)}")
        for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "max_mamba_cache_size",
                     "cuda_graph_max_bs"):
            value = getattr(self, name)
            if name == "max_model_len" and value == AUTO_LENGTH and self.backend == "vllm":
                continue   # --max-model-len auto / -1: fitted to the KV cache (autofit.py)
            if value is not None and not 1 <= value <= MAX_TOKENS:
                raise PlanInputError(f"--{name.replace('_', '-')} must be between 1 and {MAX_TOKENS:,}")
        if not 0 <= self.mtp_tokens <= 64:
            raise PlanInputError("--mtp must be between 0 and 64")
        if not 0 < self.mamba_full_memory_ratio <= 100:
            raise PlanInputError(f"{option('mamba_full_memory_ratio')} must be in (0, 100]")
        for name, flag in (("overhead_gib", "--overhead-gib"), ("kv_cache_memory_gib", option("kv_cache_memory_gib"))):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 4096:
                raise PlanInputError(f"{flag} must be between 0 and 4096 GiB")

