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

What the flags do decide under WSL2 is where vLLM's V2 model runner (the default for Qwen3.5 / 3.6 hybrids from
0.29.0, overhead.v1_model_runner) keeps its large, cold request state. Its UvaBuffer lives in pinned host memory
mapped into the GPU (v1/worker/gpu/buffer_utils.py), and under WSL2 vLLM reports no pinned memory unless
VLLM_WSL2_ENABLE_PIN_MEMORY=1 (platforms/cuda.py is_pin_memory_available, read in 0.32.0; vllm-project/vllm#41496):
- 0.29.0: UvaBuffer raises "UVA is not available" and the engine does not start (buffer_utils.py, read in 0.29.0;
  vllm-project/vllm#47387, #54652);
- 0.30.0-0.34.0: StagedWriteTensor keeps a tensor it would have put in UVA on the device instead ("Without UVA,
  large-but-cold tensors live on the GPU directly", buffer_utils.py, read in 0.30.0-0.34.0): the token ids of
  every request slot, max_num_seqs x max_model_len int32 (states.py RequestState.all_token_ids), and from 0.32.0
  the M-RoPE prefill positions, 3 x max_num_seqs x max_model_len int32 (mm/rope.py RopeState, read in the 0.32.0
  build; Qwen3.5 / 3.6 take M-RoPE, rope_parameters.mrope_section). They are allocated after the start-up snapshot,
  so the profiler's total consumed memory (gpu_worker.py determine_available_memory, 0.30.0-0.34.0) takes them off
  the KV cache. No public WSL2 boot of 0.29 or later is held to measure it against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from doctor.planner.coefficients import calibration
from doctor.planner.config import ASSUMED_VLLM_VERSION
from doctor.planner.hardware import hardware_class

if TYPE_CHECKING:
    from doctor.models.spec import ModelSpec
    from doctor.planner.config import ServeConfig
    from doctor.planner.hardware import GPU, Hardware

# V2 model runner without pinned memory (module docstring): the release that cannot start, the first with the
# device fallback, and the first whose M-RoPE prefill positions were read to take it
UVA_REQUIRED = Version("0.29.0")
DEVICE_FALLBACK_SINCE = Version("0.30.0")
MROPE_ON_DEVICE_SINCE = Version("0.32.0")
MROPE_DIMS = 3              # Qwen3.5 / 3.6 mrope_section [11, 11, 10] (doctor/models/registry.yaml)
TOKEN_ID_BYTES = 4          # int32
V1_RUNNER_UNTIL = Version("0.34.0")    # 0.34.0 has no V1 GPU model runner left (overhead.v1_model_runner)

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


def _v2_release(spec: "ModelSpec", config: "ServeConfig", v1_runner: bool) -> Version | None:
    """The vLLM release of a plan that runs this model with the V2 model runner (v1_runner: whether
    overhead.v1_model_runner picks V1 for it), else None."""
    if config.backend != "vllm" or not spec.is_hybrid or v1_runner:
        return None
    return Version(Version(config.backend_version or ASSUMED_VLLM_VERSION).base_version)


def wsl_pins_memory(env: dict[str, str]) -> bool:
    """Whether vLLM takes pinned memory under WSL2 with this environment (envs.py VLLM_WSL2_ENABLE_PIN_MEMORY:
    bool(int(value)), default 0, read in 0.32.0)."""
    try:
        return bool(int(env.get("VLLM_WSL2_ENABLE_PIN_MEMORY", "0")))
    except ValueError:
        return False


def pin_memory_fix(release: Version) -> str:
    """How to keep the V2 model runner's request state in host memory under WSL2 on this release."""
    fix = "set VLLM_WSL2_ENABLE_PIN_MEMORY=1 (the V2 model runner then keeps its request state in pinned host memory)"
    return fix + (", or VLLM_USE_V2_MODEL_RUNNER=0 (the V1 runner)" if release < V1_RUNNER_UNTIL else "")


def device_state_bytes(spec: "ModelSpec", config: "ServeConfig", pins: bool, v1_runner: bool,
                       max_num_seqs: int, max_model_len: int) -> int:
    """Bytes of the V2 model runner's request state a GPU holds where the engine gets no pinned memory (`pins`
    False: WSL2's default, module docstring); 0 where it does, and on other releases or runners."""
    release = None if pins else _v2_release(spec, config, v1_runner)
    if release is None or release < DEVICE_FALLBACK_SINCE:
        return 0
    rows = 1 + (MROPE_DIMS if release >= MROPE_ON_DEVICE_SINCE else 0)
    return rows * max_num_seqs * max_model_len * TOKEN_ID_BYTES


def uva_startup_problem(spec: "ModelSpec", config: "ServeConfig", hardware: "Hardware",
                        v1_runner: bool) -> tuple[str, str] | None:
    """(the start-up failure of vLLM 0.29's V2 model runner without pinned memory (WSL2's default; no fallback),
    its fix), else None."""
    release = None if hardware.pins_memory else _v2_release(spec, config, v1_runner)
    if release is None or not UVA_REQUIRED <= release < DEVICE_FALLBACK_SINCE:
        return None
    return (f"vLLM {release} runs {spec.name} with its V2 model runner, whose request state needs pinned host memory "
            f"(UVA), which WSL2 does not give by default: the engine stops at start-up with \"RuntimeError: UVA is not "
            "available\" (vllm-project/vllm#47387)"), pin_memory_fix(release)


def device_state_note(spec: "ModelSpec", config: "ServeConfig", hardware: "Hardware", v1_runner: bool,
                      max_num_seqs: int, max_model_len: int) -> str | None:
    """One line where the plan holds the V2 model runner's request state on a WSL2 GPU, with the way to move it
    back to host memory; None where it holds none."""
    held = device_state_bytes(spec, config, hardware.pins_memory, v1_runner, max_num_seqs, max_model_len)
    release = _v2_release(spec, config, v1_runner)
    if not held or release is None:
        return None
    return (f"without pinned memory (WSL2's default) vLLM's V2 model runner keeps {held / (1 << 30):.2f} GiB of request "
            f"state on the GPU ({max_num_seqs} sequences x {max_model_len:,} tokens), planned off the KV cache; to "
            f"keep it out: {pin_memory_fix(release)}")
