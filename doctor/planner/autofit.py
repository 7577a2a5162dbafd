"""vLLM's `--max-model-len auto` / `-1`: the longest context the KV cache holds for one request.

Every release the flag schemas cover (read in 0.17.0, 0.20.1, 0.22.0, 0.26.0, 0.29.0-0.31.0, the 0.32.0 CPU build
and 0.34.0) reads --max-model-len with human_readable_int_or_auto (doctor/flags/values.py): "auto" or "-1" is -1.
config/model.py _get_and_verify_max_len then plans the model's derived length (max_position_embeddings and its
rope scaling), so the profile run and the CUDA graphs are sized at it, and v1/core/kv_cache_utils.py
(kv_cache_planning.py in 0.34.0) `_auto_fit_max_model_len` binary-searches, per worker, the largest length whose
one request fits the memory left for the cache (`_estimate_max_model_len_from_groups`: group size x page x the
blocks one request needs, `_max_memory_usage_bytes_from_groups`), takes the smallest over the workers and logs
"Auto-fit max_model_len: reduced from D to L to fit in available GPU memory (G GiB available for KV cache)", or
"full model context length D fits" when it does. None fitting even one token: "Cannot auto-fit max_model_len:
not enough GPU memory available to serve even a single token." 0.34.0's extensible KV cache fits the length
again after CUDA-graph capture and warmup, from the memory then free: the cache the plan sizes there already is.
"""

from __future__ import annotations

from collections.abc import Callable

from doctor.deployment.table import option

AUTO_FIT_SHORT = 8192   # kv_cache_planning.py AUTO_FIT_SHORT_MAX_MODEL_LEN (0.34.0): it warns below this length


def fitted_length(concurrency_at: Callable[[int], float], derived: int) -> int:
    """The largest length in 1..derived at which one request fits (concurrency_at(length) >= 1), as
    _estimate_max_model_len_from_groups searches it; 0 when one token does not fit."""
    if concurrency_at(1) < 1:
        return 0
    low, high, best = 1, derived, 1
    while low <= high:
        mid = (low + high) // 2
        if concurrency_at(mid) >= 1:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def auto_fit_note(version: str, derived: int, fitted: int) -> str:
    """What vLLM logs for the length it chose, as one line of the plan."""
    flag = option("max_model_len", "vllm")
    if fitted >= derived:
        return (f"{flag} auto: vLLM {version} keeps the model's full context length {derived:,} "
                "(it fits in the KV cache)")
    short = f"; below {AUTO_FIT_SHORT:,} tokens common requests may not fit" if fitted < AUTO_FIT_SHORT else ""
    return (f"{flag} auto: vLLM {version} reduces max_model_len from {derived:,} to {fitted:,}, the longest one "
            f"request's KV cache fits in (v1/core/kv_cache_utils.py _auto_fit_max_model_len){short}")


NO_TOKEN = ("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
            "Try increasing `gpu_memory_utilization`.")
