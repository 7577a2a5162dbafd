"""What a plan cannot know before a boot on a WSL2 GPU, and the figure to read back after it.

Under WSL2 the GPU is paravirtualised (dxgkrnl) and shared with the Windows host: its desktop, browser and other
Windows processes allocate and free on the same memory, and cudaMemGetInfo inside WSL2 reports the adapter's
free memory across all of them (the driver reports NVML's whole total there, doctor/data/gpus.yaml RTX5090-WSL).
vLLM sizes the KV cache from cudaMemGetInfo deltas taken from its start-up snapshot to the end of the profile run
(vllm/utils/mem_utils.py memory_profiling: the non-torch increase, and from 0.2x the total consumed, are both
free-memory differences; v1/worker/gpu_worker.py determine_available_memory: "we assume that the other processes
using the same GPU did not change their memory usage during the profiling"), so whatever the host gains in those
minutes comes off the cache byte for byte, and whatever it frees aborts the start-up ("Error in memory profiling",
vllm-project/vllm#56830) or, where that check is relaxed, enlarges the cache (vllm-project/vllm#45534). SGLang
sizes its pools from the free memory before its weights load, so the host's share at that moment comes off them.
No flag decides that share: two boots of one configuration on one WSL2 machine, three minutes apart, logged
0.47 and 0.61 GiB of KV memory (calibration.yaml `run_to_run_gib`). The plan says so and points at the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doctor.planner.bands import hardware_class
from doctor.planner.coefficients import calibration

if TYPE_CHECKING:
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import GPU

# the engine's log line that states the cache the boot actually got
READ_BACK = {"vllm": "Available KV cache memory", "sglang": "KV Cache is allocated"}
READ_BACK_EXTENSIBLE = "Memory after warmup"     # vLLM 0.34's extensible KV cache (extensible.py)
# how each engine lets the host's share in (module docstring)
TAKES = {"vllm": "vLLM counts what the host allocates or frees on the GPU while it profiles as its own",
         "sglang": "SGLang sizes its pools from the GPU's free memory when its weights load, which the host's "
                   "share moves"}


def run_to_run_gib(gpu: "GPU") -> float | None:
    """The widest KV-memory spread logged between identical boots of this GPU's hardware class, GiB (None: no
    configuration of the class was booted twice)."""
    cls = (calibration().get("classes") or {}).get(hardware_class(gpu)) or {}
    return cls.get("run_to_run_gib")


def wsl_note(gpu: "GPU", config: "ServeConfig") -> str | None:
    """One line for a plan on a WSL2 GPU: the cache moves with the Windows host's use of the GPU during start-up,
    by how much identical boots differed, and the log line to re-plan from; None on any other GPU."""
    if not gpu.virtualised:
        return None
    spread = run_to_run_gib(gpu)
    measured = (f"two identical boots logged {spread:.2f} GiB of KV memory apart" if spread is not None
                else "no configuration has been booted twice on this class yet")
    line = READ_BACK_EXTENSIBLE if config.extensible_kv_on else READ_BACK[config.backend]
    return (f"{gpu.name} is shared with the Windows host under WSL2: {TAKES[config.backend]}, so that part of the "
            f"KV cache is not known before the boot ({measured}); after the first boot, re-plan from its log with "
            f"`qwen-doctor plan --from-log LOG` (the figure to read back: \"{line}\")")
