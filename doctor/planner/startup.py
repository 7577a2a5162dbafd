"""Memory other processes hold on a GPU when the engine starts, and what each engine does with it.

vLLM (v1/worker/utils.py request_memory, 0.19-0.32; gpu_worker.py init_device before it): the budget is
torch's total x --gpu-memory-utilization, and the worker refuses to start when the free memory of its first
snapshot is smaller ("Free memory on device (F/T GiB) on startup is less than desired GPU memory utilization
(U, R GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."). The KV cache is
the budget less what the profiler measures from that snapshot on (vllm/utils/mem_utils.py memory_profiling:
weights, the torch peak, the non-torch increase since the snapshot), so memory other processes already hold
at start-up is in the baseline and does not shrink the cache; what they allocate or free while vLLM profiles
does (it lands in the non-torch increase: gpu_worker.py "we assume that the other processes using the same GPU
did not change their memory usage during the profiling").
vLLM 0.34's extensible KV cache is sized from the memory free after warmup (extensible.py): other processes'
memory comes off it.
SGLang (model_executor/model_runner.py, 0.5.9-0.5.23): the pools are a share of the free memory before the
weights load ("Load weight begin. avail mem"), so every byte other processes hold comes off the pools. At TP > 1
that free memory is the smallest of the world group's ranks (get_available_gpu_memory(distributed=True): an
all-reduce MIN over the CPU group, taken after the TP group's custom all-reduce buffers and NCCL warm-up), and each
rank refuses to start when it is below 90% of its own ("The memory capacity is unbalanced. Some GPUs may be
occupied by other processes."), in every release 0.5.0-0.5.23 unless its environment relaxes the check to a
warning (sglang_balance reads which variable each release reads): sglang_unbalanced.

Facts give the other processes' memory as torch's total less NVML's free memory: on the H200 rehearsal machine
NVML reported 139.80 GiB free at rest (tests/fixtures/h200-rehearsal/facts.json, 150,109,880,320 B) and vLLM
0.26.0 logged "Free memory on device (139.29/139.8 GiB)" there: NVML's free memory at rest is torch's total, and
vLLM's own process holds 0.51 GiB (CUDA context, distributed init) before its snapshot. On a unified-memory GPU
vLLM takes the host's available memory as free (mem_utils.py MemorySnapshot.measure: psutil
virtual_memory().available), so the facts' host figure stands in there.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from doctor.deployment.table import option
from doctor.planner.extensible import STARTUP_USED_BYTES
from doctor.planner.hardware import GIB, GPU
from doctor.planner.sglang_balance import balance_rule, refuses
from doctor.planner.sglang_kv import context_bytes as sglang_context_bytes
from doctor.planner.versions import SGLANG_READ

if TYPE_CHECKING:
    from doctor.facts.model import Facts
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import Hardware

ENGINE_PROCESS = re.compile(r"vllm|sglang|enginecore|python|ray::", re.IGNORECASE)
# a figure this small is NVML rounding and the driver's own bookkeeping, not another process
NOISE_BYTES = 64 << 20


def other_process_bytes(gpu: GPU, nvml_free: int | None, host_available: int | None = None) -> int:
    """Bytes of `gpu` other processes hold, from NVML's free memory (the host's available memory on a
    unified-memory GPU, as vLLM reads it); 0 where the facts do not say."""
    free = host_available if gpu.unified else nvml_free
    if not free:
        return 0
    held = gpu.usable_bytes - int(free)
    return held if held > NOISE_BYTES else 0


def engine_process_bytes(processes: list[dict[str, Any]]) -> int:
    """Memory NVML lists for processes that may be the deployment itself (an engine already serving when the facts
    were taken: vLLM's "VLLM::EngineCore", SGLang's "sglang::scheduler", a Python process, or one whose name the
    collector could not read, as from inside a container): not counted as another tenant."""
    return sum(int(p.get("used_memory") or 0) for p in processes
               if p.get("name") is None or ENGINE_PROCESS.search(str(p.get("name"))))


def busiest_gpu_bytes(gpus: list[dict[str, Any]], gpu: GPU, host_available: int | None = None) -> int:
    """The most any of these facts GPUs (NVML records) has held by other processes, less what engine-like
    processes hold (held_by_others): the engine's ranks are alike, so its busiest GPU decides."""
    return max(held_by_others(gpus, gpu, host_available), default=0)


def held_by_others(gpus: list[dict[str, Any]], gpu: GPU, host_available: int | None = None) -> list[int]:
    """What other processes hold on each of these facts GPUs (NVML records), less what engine-like processes hold
    (engine_process_bytes), in their order."""
    return [max(0, other_process_bytes(gpu, (g.get("memory") or {}).get("free"), host_available)
                - engine_process_bytes(g.get("processes") or [])) for g in gpus]


def sglang_unbalanced(hardware: "Hardware", cfg: "ServeConfig") -> tuple[str, str, bool] | None:
    """(finding, fix, refused) where SGLang at TP > 1 finds the free memory of its GPUs before the load more than
    10% apart: refused where cfg.backend_version refuses under the environment the plan was given (every release
    0.5.0-0.5.23 by default; sglang_balance), else it warns and sizes every rank from the busiest GPU. None where
    the GPUs are balanced or the facts do not say. The engine takes the first TP x PP GPUs CUDA numbers; each
    holds the same context (sglang_kv.context_bytes)."""
    free = [f - sglang_context_bytes(cfg) for f in hardware.startup_free_each[:cfg.tp * cfg.pp]]
    if cfg.backend != "sglang" or cfg.tp <= 1 or len(free) < 2 or min(free) >= 0.9 * max(free):
        return None
    version = cfg.backend_version or SGLANG_READ[-1]
    rule, refused = balance_rule(version), refuses(version, dict(cfg.engine_env))
    low, high = free.index(min(free)), free.index(max(free))
    gap = (f"GPU {low} has {free[low] / GIB:.2f} GiB free before the load, GPU {high} {free[high] / GIB:.2f} GiB; "
           f"the least must be at least 90% of the most: {rule.site}")
    sized = f"every rank's pools are then sized from GPU {low}'s free memory"
    if not refused:
        return (f"The memory capacity is unbalanced: SGLang {version} only warns at TP {cfg.tp}, as its environment "
                f"sets ({gap}); {sized}"), "", False
    problem = (f"The memory capacity is unbalanced. Some GPUs may be occupied by other processes: SGLang {version} "
               f"refuses to start at TP {cfg.tp} with a {rule.exception} ({gap})")
    fix = (f"free GPU {low} (stop what else holds its memory, nvidia-smi) or leave it out of CUDA_VISIBLE_DEVICES; "
           f"{rule.relax} makes it a warning in SGLang {version}, and {sized}")
    return problem, fix, True


def vllm_startup_free(gpu: GPU, others: int) -> int:
    """The free memory of vLLM's first snapshot: torch's total less other processes and vLLM's own start-up."""
    return gpu.usable_bytes - others - STARTUP_USED_BYTES


class StartupFindings(NamedTuple):
    """What other processes' start-up memory gives a plan: problems, notes, and the fixes of the problems."""

    problems: list[str]
    notes: list[str]
    fixes: list[str]


def startup_findings(hardware: "Hardware", cfg: "ServeConfig") -> StartupFindings:
    """The findings the start-up memory of other processes gives a plan of `cfg` (resolved) on `hardware` (none
    when they hold nothing)."""
    others, gpu = hardware.other_process_bytes, hardware.gpu
    unbalanced = sglang_unbalanced(hardware, cfg)
    if unbalanced and unbalanced[2]:
        return StartupFindings([unbalanced[0]], [], [unbalanced[1]])
    if unbalanced:
        return StartupFindings([], [unbalanced[0]], [])
    if others <= 0:
        return StartupFindings([], [], [])
    held = (f"the host holds {others / GIB:.2f} GiB of the {gpu.name}'s unified memory at start-up" if gpu.unified
            else f"other processes hold {others / GIB:.2f} GiB of each {gpu.name} at start-up")
    if cfg.backend == "sglang":
        return StartupFindings([], [f"{held}: SGLang sizes its pools from the memory free before the load, so they "
                                    "are planned that much smaller"], [])
    if cfg.extensible_kv_on:
        return StartupFindings([], [f"{held}: vLLM's extensible KV cache is sized from the memory free after "
                                    "warmup, so it is planned that much smaller"], [])
    note = StartupFindings([], [f"{held}: outside vLLM's KV budget (its profiler starts from that state), but what "
                                "they allocate or free while vLLM starts moves the cache by as much"], [])
    if cfg.kv_cache_memory_gib is not None:
        return note
    free = vllm_startup_free(gpu, others)
    requested = math.ceil(gpu.usable_bytes * cfg.utilization)
    if free >= requested:
        return note
    most = math.floor(free / gpu.usable_bytes * 100) / 100
    return StartupFindings(
        [f"Free memory on device ({free / GIB:.2f}/{gpu.usable_bytes / GIB:.2f} GiB) on startup is less than desired "
         f"GPU memory utilization ({cfg.utilization}, {requested / GIB:.2f} GiB): vLLM refuses to start ({held})"],
        [], [f"lower {option('gpu_memory_utilization')} to {most:.2f} (the most that starts beside them), or free the GPU"])


def facts_hardware(facts: "Facts") -> "Hardware":
    """The GPUs a facts bundle records as CUDA numbers them (doctor/gpus.py visible_gpus), planned as the smallest
    of them (the catalogue entry of its NVML name, its WSL2 variant under a WSL2 kernel), with what other
    processes held on the busiest at collection time; PlanInputError where the bundle records no GPU memory."""
    from doctor.gpus import visible_gpus
    from doctor.planner.errors import PlanInputError
    from doctor.planner.hardware import Hardware, gpu_from_facts, is_wsl_kernel
    from doctor.planner.wsl import wsl_pins_memory

    wsl = is_wsl_kernel(facts.host.get("kernel"))
    known = [(g, gpu_from_facts(g.get("name"), int((g.get("memory") or {}).get("total") or 0),
                                g.get("compute_capability"), wsl=wsl)) for g in visible_gpus(facts)[0]]
    # a GPU NVML gives no memory for (GB10: unified memory) counts where the catalogue knows its name
    known = [(g, gpu) for g, gpu in known if gpu.usable_bytes > 0]
    if not known:
        raise PlanInputError("--facts: the bundle records no GPU with its memory (NVML was unavailable where it was "
                             "collected); pass --gpus")
    gpu = min((gpu for _, gpu in known), key=lambda g: g.usable_bytes)
    host = (facts.host.get("memory") or {}).get("available")
    held = [held_by_others([g], each, host)[0] for g, each in known]
    return Hardware(gpu, len(known), max(held, default=0),
                    pinned_memory=wsl_pins_memory(facts.env) if gpu.virtualised else None,
                    startup_free_each=tuple(each.usable_bytes - h for (_, each), h in zip(known, held)))
