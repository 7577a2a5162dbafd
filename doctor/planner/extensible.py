"""vLLM 0.34's extensible KV cache: sized after warmup and CUDA-graph capture from the memory actually free.

Read in the 0.34.0 wheel (`pip download vllm==0.34.0`):
- vllm/config/cache.py: enable_extensible_kv_cache defaults on for CUDA unless kv_cache_memory_bytes is set;
  gpu_memory_utilization None resolves to 1.0 with it, 0.92 without (resolved_gpu_memory_utilization).
- v1/worker/utils.py request_memory: requested = ceil(total x utilization).
- v1/worker/extensible_kv_cache.py measure_kv_cache_bytes:
    available = min(requested - non_kv_used, headroom - margin) - max(transient peak, torch reserve growth)
  with non_kv_used = memory used since start-up besides the KV cache (weights, CUDA graphs as captured,
  non-torch memory), headroom = free memory after warmup + what the cache already holds, and
  margin = max(KV_CACHE_MARGIN_FLOOR_BYTES = 1 GiB, KV_CACHE_MARGIN_FRACTION = 0.75 x the transient peak).
  With the default utilization 1.0 the headroom binds: the cache gets the device less what was used at start-up,
  the engine's own use, the peak and the margin. An explicit 0.7 < utilization < 1.0 that withholds 1 GiB or more
  makes vLLM warn "gpu_memory_utilization=U caps this instance at R GiB, keeping W GiB of free device memory out
  of the KV cache" (measure_kv_cache_blocks).
- The size lands in "Memory after warmup: F GiB free, ... N KV cache blocks (G GiB) fit within the requested
  R GiB" (measure_kv_cache_blocks); "Available KV cache memory" (gpu_worker.py determine_available_memory) is still
  logged, but is the profiling estimate the cache no longer takes.
"""

from __future__ import annotations

import math

from doctor.deployment.table import option
from doctor.planner.hardware import GIB, GPU
from doctor.planner.overhead import VllmOverhead

MARGIN_FLOOR_BYTES = 1 << 30      # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA
MARGIN_FRACTION = 0.75            # KV_CACHE_MARGIN_FRACTION
WARN_WITHHELD_BYTES = 1 << 30     # measure_kv_cache_blocks warns from 1 GiB withheld
# Device memory in use before vLLM's start-up snapshot (CUDA context, other processes of a clean GPU): our H200
# logs "Free memory on device (139.29/139.8 GiB)" (tests/data/published_kv/vllm.yaml, vLLM 0.26.0).
STARTUP_USED_BYTES = int((139.8 - 139.29) * GIB)


def margin_bytes(terms: VllmOverhead) -> int:
    return max(MARGIN_FLOOR_BYTES, int(terms.peak_activation * MARGIN_FRACTION))


def extensible_cache_bytes(gpu: GPU, utilization: float, weights: int, terms: VllmOverhead, others: int = 0) -> int:
    """KV cache bytes measure_kv_cache_bytes commits (terms.cudagraph_estimate holding the actual graph pool);
    `others`: what other processes hold, which the headroom (free memory after warmup) does not have."""
    total = gpu.usable_bytes
    requested = math.ceil(total * utilization)
    non_kv = weights + terms.non_torch + terms.cudagraph_estimate
    return min(requested, total - STARTUP_USED_BYTES - others - margin_bytes(terms)) - non_kv - terms.peak_activation


def withheld_bytes(gpu: GPU, utilization: float, terms: VllmOverhead) -> int:
    """Free memory an explicit utilization keeps out of the cache (what vLLM's warning names)."""
    total = gpu.usable_bytes
    return total - STARTUP_USED_BYTES - margin_bytes(terms) - math.ceil(total * utilization)


def utilization_note(version: str, gpu: GPU, utilization: float | None, terms: VllmOverhead) -> str:
    """One line for a 0.34+ plan: what --gpu-memory-utilization means now, and which log line to compare."""
    line = ("vLLM " + version + " sizes the KV cache after warmup and CUDA-graph capture (extensible KV cache): "
            "compare KV capacity with its 'Memory after warmup: ... N KV cache blocks (G GiB)' line, not 'Available "
            "KV cache memory'")
    if utilization is not None and 0.7 < utilization < 1.0:
        withheld = withheld_bytes(gpu, utilization, terms)
        if withheld >= WARN_WITHHELD_BYTES:
            line += (f"; {option('gpu_memory_utilization')} {utilization} now caps it at {utilization * gpu.usable_bytes / GIB:.2f}"
                     f" GiB and keeps {withheld / GIB:.2f} GiB out of the cache (leave it unset unless other processes "
                     "share the GPU)")
    return line
