"""Engine versions the planner knows, and the memory rules that changed between them.

Every rule cites the file of the published wheel it was read from (`pip download vllm==X`, the files
scripts/extract_flag_schema.py also reads). Versions are the ones with a flag schema in
doctor/flags/schemas/; `resolve_version` picks the installed one, else the newest known.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata, resources

from packaging.version import InvalidVersion, Version

from doctor.planner.errors import PlanInputError


@lru_cache(maxsize=2)
def known_versions(backend: str) -> tuple[str, ...]:
    """Versions with a shipped flag schema, oldest first."""
    names = [p.name for p in resources.files("doctor.flags").joinpath("schemas").iterdir()
             if p.name.startswith(f"{backend}-") and p.name.endswith(".json")]
    return tuple(sorted((n[len(backend) + 1:-5] for n in names), key=Version))


def installed_version(backend: str) -> str | None:
    """The version of the backend installed next to qwen-doctor, if any."""
    try:
        return metadata.version(backend)
    except metadata.PackageNotFoundError:
        return None


def resolve_version(backend: str, requested: str | None) -> str:
    """`--backend-version`, else the installed backend, else the newest version with a schema."""
    text = requested or installed_version(backend) or known_versions(backend)[-1]
    try:
        Version(text)
    except InvalidVersion:
        raise PlanInputError(f"--backend-version {text!r} is not a version number (e.g. 0.26.0)") from None
    return text


@dataclass(frozen=True)
class VllmRules:
    """What `determine_available_memory` and the KV-cache sizing of one vLLM version do by default."""

    version: str
    gpu_memory_utilization: float
    cudagraph_estimate_subtracted: bool
    tokens_from_concurrency: bool
    large_gpu_batch_defaults: bool
    extensible_kv_cache: bool
    hybrid_prefix_caching: bool


def vllm_rules(version: str) -> VllmRules:
    """The rules of vLLM `version`.

    - gpu_memory_utilization default: vllm/config/cache.py CacheConfig, `Field(default=0.9)` up to 0.19.1,
      `Field(default=0.92)` from 0.20.0 to 0.33.0; 0.34.0 makes it `None`, resolved to 1.0 with the
      extensible KV cache (its default on CUDA) and 0.92 otherwise (`resolved_gpu_memory_utilization`).
    - CUDA-graph estimate subtracted from the KV budget: vllm/v1/worker/gpu_worker.py
      determine_available_memory, `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` ("default since v0.21.0",
      logged by the same file).
    - logged "GPU KV cache size": vllm/v1/core/kv_cache_utils.py, `int(max_concurrency * max_model_len)`
      from 0.20.1; 0.20.0 and earlier logged num_blocks // groups x block size (vllm PR #38364).
    - batch defaults: vllm/engine/arg_utils.py get_batch_defaults gains a >= 160 GiB branch in 0.28.0.
    - prefix caching on hybrid (GDN) models: engine/arg_utils.py
      _set_default_chunked_prefill_and_prefix_caching_args keeps it opt-in ("not model_config.is_hybrid")
      in 0.26.0-0.27.1 only; on by default before and after (our H200 log: enable_prefix_caching=False).
    """
    v = Version(version)
    extensible = v >= Version("0.34.0")
    return VllmRules(
        version=version,
        gpu_memory_utilization=1.0 if extensible else (0.92 if v >= Version("0.20.0") else 0.9),
        cudagraph_estimate_subtracted=v >= Version("0.21.0"),
        tokens_from_concurrency=v >= Version("0.20.1"),
        large_gpu_batch_defaults=v >= Version("0.28.0"),
        extensible_kv_cache=extensible,
        hybrid_prefix_caching=not Version("0.26.0") <= v < Version("0.28.0"),
    )


@dataclass(frozen=True)
class SglangRules:
    """How one SGLang version sizes `--mem-fraction-static` by default."""

    version: str
    graph_reserve_in_formula: bool   # the reserve counts cuda_graph_max_bs x 2 MB
    formula_checked: bool            # False: the 0.5.9 formula is applied to a version not read


def sglang_rules(version: str) -> SglangRules:
    """python/sglang/srt/server_args.py `_handle_gpu_memory_settings`: read for 0.5.9, 0.5.14 and 0.5.18.

    0.5.9-0.5.18 keep 512 MB + max(chunked_prefill_size, 2048) x 1.5 + graph max bs x 2 + TP x PP / 8 GiB,
    floored at 10 GiB above 60 GiB; 0.5.18 moves the graph term into `reserve_for_graph_mb`.
    """
    v = Version(version)
    return SglangRules(version, True, Version("0.5.9") <= v <= Version("0.5.18"))
