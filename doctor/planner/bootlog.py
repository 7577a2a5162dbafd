"""A vLLM boot log's own memory figures, and re-planning other flags from them.

Lines read (vllm 0.24-0.33, v1/worker/gpu_worker.py, gpu_model_runner.py, v1/core/kv_cache_utils.py):
  "non-default args: {... 'language_model_only': True}" (api_utils.py)
  "Initializing a V1 LLM engine (v0.26.0) with config: ... max_seq_len=262144, ... tensor_parallel_size=1,
   ... kv_cache_dtype=auto, ... enable_prefix_caching=False"
  "Model loading took 64.61 GiB memory"
  "Estimated CUDA graph memory: 0.64 GiB total" / "CUDA graph pool memory: 1.34 GiB (actual), 1.32 GiB (estimated)"
  "Available KV cache memory: 59.11 GiB"
  "GPU KV cache size: 3,052,105 tokens" / "Maximum concurrency for 262,144 tokens per request: 11.64x"
  "Free memory on device (139.29/139.8 GiB) on startup. Desired GPU memory utilization is (0.92, 128.62 GiB).
   Actual usage is 64.61 GiB for weight, 4.01 GiB for peak activation, 0.24 GiB for non-torch memory,
   and 1.04 GiB for CUDAGraph memory" (its free figure: what other processes and vLLM's own start-up left)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from doctor.planner.errors import PlanInputError

MAX_LOG_BYTES = 64 << 20

_PATTERNS = {
    "version": re.compile(r"Initializing a V1 LLM engine \(v([\w.+\-]+)\)"),
    "max_seq_len": re.compile(r"max_seq_len=(\d+)"),
    "tp": re.compile(r"tensor_parallel_size=(\d+)"),
    "pp": re.compile(r"pipeline_parallel_size=(\d+)"),
    "kv_cache_dtype": re.compile(r"kv_cache_dtype=(\w+)"),
    "prefix_caching": re.compile(r"enable_prefix_caching=(True|False)"),
    "weights": re.compile(r"(?:Model loading took|Actual usage is) ([\d.]+) GiB (?:memory|for weight)"),
    "activation": re.compile(r"([\d.]+) GiB for peak activation"),
    # unified-memory GPUs log negative non-torch and graph figures (host memory freed meanwhile counts)
    "non_torch": re.compile(r"(-?[\d.]+) GiB for non-torch memory"),
    "graph_estimate": re.compile(r"Estimated CUDA graph memory: (-?[\d.]+) GiB"
                                r"|CUDA graph pool memory: [\d.]+ GiB \(actual\), (-?[\d.]+) GiB \(estimated\)"),
    "graph_actual": re.compile(r"([\d.]+) GiB for CUDAGraph memory"),
    "total": re.compile(r"Free memory on device(?: cuda:\d+)? \([\d.]+/([\d.]+) GiB\)"),
    # the free memory of the worker's first snapshot (other processes and its own start-up already in use):
    # gpu_worker.py's DEBUG / INFO summary, its refusal "... on startup is less than desired GPU memory utilization",
    # 0.32's DEBUG "Initial free memory: F GiB"
    "startup_free": re.compile(r"Free memory on device(?: cuda:\d+)? \((-?[\d.]+)/[\d.]+ GiB\) on startup"
                               r"|Initial free memory:? ([\d.]+) GiB"),
    "utilization": re.compile(r"Desired GPU memory utilization is \(([\d.]+), [\d.]+ GiB\)"),
    "available": re.compile(r"(?:Available KV cache memory:|Current kv cache memory in use is) (-?[\d.]+) GiB"),
    # vLLM 0.34's extensible KV cache commits its size after warmup (doctor/planner/extensible.py): that line wins
    "kv_committed": re.compile(r"Memory after warmup: .*? KV cache blocks \(([\d.]+) GiB\) fit within"),
    "tokens": re.compile(r"GPU KV cache size: ([\d,]+) tokens"),
    "concurrency": re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"),
    "language_model_only": re.compile(r"'language_model_only': (True|False)"),
    "max_num_seqs": re.compile(r"max_num_seqs[=:' ]+(\d+)"),
    "max_num_batched_tokens": re.compile(r"max_num_batched_tokens[=:' ]+(\d+)"),
    # the engine got no pinned host memory: WSL2 (platforms/interface.py, cuda.py is_pin_memory_available, up to
    # 0.2x), or the V2 runner's fallback to device buffers (v1/worker/gpu/buffer_utils.py NonUvaBuffer, 0.30+)
    "no_pinned_memory": re.compile(r"(Using 'pin_memory=False' as WSL is detected"
                                   r"|Pinned memory is not available on this platform)"),
}


@dataclass(frozen=True)
class BootLog:
    """What one vLLM boot logged (None: not in the log)."""

    version: str | None
    max_model_len: int | None
    tp: int | None
    pp: int | None
    kv_cache_dtype: str | None
    prefix_caching: bool | None
    weights_gib: float | None
    activation_gib: float | None
    non_torch_gib: float | None
    graph_estimate_gib: float | None
    total_gib: float | None
    utilization: float | None
    available_gib: float | None
    tokens: int | None
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    language_model_only: bool | None = None
    graph_actual_gib: float | None = None
    startup_free_gib: float | None = None
    no_pinned_memory: bool = False


def _first(name: str, text: str) -> str | None:
    m = _PATTERNS[name].search(text)
    return next((g for g in m.groups() if g is not None), None) if m else None


def parse_boot_log(text: str) -> BootLog:
    """Read the figures of the first engine boot in `text`."""
    def num(name: str, kind: type = float) -> object:
        value = _first(name, text)
        return kind(value.replace(",", "")) if value is not None else None

    pc = _first("prefix_caching", text)
    return BootLog(
        version=_first("version", text), max_model_len=num("max_seq_len", int), tp=num("tp", int),
        pp=num("pp", int), kv_cache_dtype=_first("kv_cache_dtype", text),
        prefix_caching=None if pc is None else pc == "True",
        weights_gib=num("weights"), activation_gib=num("activation"), non_torch_gib=num("non_torch"),
        graph_estimate_gib=num("graph_estimate"), total_gib=num("total"), utilization=num("utilization"),
        available_gib=(committed if (committed := num("kv_committed")) is not None else num("available")),
        tokens=num("tokens", int), max_num_seqs=num("max_num_seqs", int),
        max_num_batched_tokens=num("max_num_batched_tokens", int),
        language_model_only=(lmo := _first("language_model_only", text)) and lmo == "True",
        graph_actual_gib=num("graph_actual"), startup_free_gib=num("startup_free"),
        no_pinned_memory=_first("no_pinned_memory", text) is not None)


def read_log_text(source: str) -> str:
    """The first MAX_LOG_BYTES of a `--from-log` source, read once as `explain` reads logs: a file (plain or
    gzip), '-' for stdin, a pipe or FIFO (`<(zcat boot.log.gz)`; one without a writer is given up after a bounded
    wait); a directory, socket or mostly-binary file is a PlanInputError."""
    from remedies.errors import LogReadError
    from remedies.reader import check_readable, open_log

    try:
        check_readable(source)
        with open_log(source) as stream:
            raw = stream.read(MAX_LOG_BYTES)
    except LogReadError as exc:
        raise PlanInputError(f"--from-log {exc}") from None
    return raw.decode("utf-8", errors="replace")


def boot_log_from_text(text: str, path: str) -> BootLog:
    """The vLLM boot figures of `text` read from `path`; PlanInputError without the memory lines."""
    boot = parse_boot_log(text)
    if boot.available_gib is None or boot.weights_gib is None:
        raise PlanInputError(f"--from-log {path}: no vLLM 'Model loading took' / 'Available KV cache memory' "
                             "lines (a vLLM boot log that reached KV-cache sizing is needed)")
    return boot
