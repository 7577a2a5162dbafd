"""The GPU catalogue (doctor/data/gpus.yaml `gpus`) and the `--gpus 8xA100-80G` notation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from doctor.planner.errors import PlanInputError

MIB = 1 << 20
GIB = 1 << 30
# Share of NVML's total that torch reports as total memory when no vLLM log of that GPU was found:
# measured on the H200 (vLLM 0.26.0 "Free memory on device (139.29/139.8 GiB)", NVML 143,771 MiB).
TORCH_VISIBLE_FRACTION = 139.8 / (143771 / 1024)
MAX_GPU_GIB = 4096          # a GPU with more than 4 TiB is a typo
MAX_GPU_COUNT = 65536


@dataclass(frozen=True)
class GPU:
    """One GPU model: total memory as the driver (NVML) reports it, as torch reports it, and its compute capability.

    `memory_bytes` is NVML's total; `torch_bytes` what vLLM sizes from (0 = derive from NVML's total).
    """

    name: str
    memory_bytes: int
    compute_capability: str
    torch_bytes: int = 0
    unified: bool = False
    virtualised: bool = False    # a WSL2 paravirtualised GPU (dxgkrnl): the Windows host shares it
    sms: int = 0                 # streaming multiprocessors (0: not catalogued)

    @property
    def usable_bytes(self) -> int:
        """The total vLLM multiplies by --gpu-memory-utilization (torch's view)."""
        return self.torch_bytes or int(self.memory_bytes * TORCH_VISIBLE_FRACTION)

    @property
    def capability(self) -> tuple[int, int]:
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def native_fp8(self) -> bool:
        return self.capability >= (8, 9)


@dataclass(frozen=True)
class Hardware:
    """`count` identical GPUs (on one node or spread over several); `other_process_bytes`: what other processes
    hold on each at start-up, where facts or a log say (doctor/planner/startup.py)."""

    gpu: GPU
    count: int
    other_process_bytes: int = 0
    pinned_memory: bool | None = None   # pinned host memory for the engine; None: the platform's default (not
                                        # under WSL2 unless VLLM_WSL2_ENABLE_PIN_MEMORY=1: doctor/planner/wsl.py)
    gpus_per_node: int | None = None    # GPUs of each node, ranks filling nodes in order; None: all on one node
    startup_free_each: tuple[int, ...] = ()   # torch's total less other processes' memory on each GPU, in CUDA's
                                              # order, where facts give it (startup.facts_hardware); () otherwise

    @property
    def pins_memory(self) -> bool:
        """Whether vLLM gets pinned host memory here (UVA for its V2 model runner)."""
        return pins_memory(self.gpu, self.pinned_memory)

    def __str__(self) -> str:
        return f"{self.count}x{self.gpu.name}"


def pins_memory(gpu: GPU, pinned_memory: bool | None = None) -> bool:
    """Whether the engine gets pinned host memory beside this GPU: as stated, else the platform's default (not
    under WSL2, doctor/planner/wsl.py)."""
    return not gpu.virtualised if pinned_memory is None else pinned_memory


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).upper()


def build_catalogue(text: str) -> dict[str, GPU]:
    """Parse the catalogue text (doctor/data/gpus.yaml) into {normalised name or alias: GPU}."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("gpus"), dict):
        raise PlanInputError("GPU catalogue must have schema: 1 and a gpus mapping")
    out: dict[str, GPU] = {}
    for name, entry in data["gpus"].items():
        mem, cc = entry.get("memory_mib"), str(entry.get("compute_capability", ""))
        if not isinstance(mem, int) or mem <= 0 or not re.fullmatch(r"\d+\.\d+", cc):
            raise PlanInputError(f"GPU catalogue entry {name!r} needs memory_mib and compute_capability")
        torch_gib = entry.get("torch_total_gib")
        sms = entry.get("sms", 0)
        if not isinstance(sms, int) or sms < 0:
            raise PlanInputError(f"GPU catalogue entry {name!r}: sms must be a whole number")
        gpu = GPU(name, mem * MIB, cc, int(float(torch_gib) * GIB) if torch_gib else 0, bool(entry.get("unified")),
                  bool(entry.get("wsl")), sms)
        for key in [name, *(str(a) for a in entry.get("aliases") or [])]:
            if _norm(key) in out:
                raise PlanInputError(f"GPU name or alias {key!r} is used twice")
            out[_norm(key)] = gpu
    return out


@lru_cache(maxsize=1)
def catalogue() -> dict[str, GPU]:
    """The shipped GPU catalogue (cached)."""
    return build_catalogue(resources.files("doctor.data").joinpath("gpus.yaml").read_text(encoding="utf-8"))


def known_gpus() -> list[str]:
    return sorted({g.name for g in catalogue().values()})


def get_gpu(name: str) -> GPU:
    """Look a GPU up by name or alias, or accept a custom `NAME:MEMGiB[:CC]` such as `X:96:9.0`."""
    custom = re.fullmatch(r"([\w.\-]+):([^:]*)(?::(.*))?", name.strip())
    if custom:
        return _custom_gpu(custom.group(1), custom.group(2), custom.group(3))
    gpu = catalogue().get(_norm(name))
    if gpu is None:
        raise PlanInputError(f"unknown GPU {name!r}; known: {', '.join(known_gpus())} "
                             "(or give NAME:MEMORY_GIB[:CC], e.g. MYGPU:96:9.0)")
    return gpu


def _custom_gpu(name: str, gib_text: str, cc_text: str | None) -> GPU:
    """`NAME:GiB[:CC]`: the GiB is torch's total (what vLLM sees); a bad number is one clear error."""
    try:
        gib = float(gib_text)
    except ValueError:
        gib = math.nan
    if not math.isfinite(gib) or not 0 < gib <= MAX_GPU_GIB:
        raise PlanInputError(f"--gpus {name}:{gib_text}: the memory must be a number of GiB in (0, {MAX_GPU_GIB}]")
    cc = cc_text or "9.0"
    if not re.fullmatch(r"\d{1,2}\.\d{1,2}", cc):
        raise PlanInputError(f"--gpus {name}:{gib_text}:{cc}: the compute capability must look like 9.0")
    return GPU(name, int(gib * GIB), cc, int(gib * GIB))


def parse_gpus(text: str) -> Hardware:
    """Parse `8xA100-80G`, `2 x H200` or `H100` (one GPU)."""
    m = re.fullmatch(r"\s*(?:(\d+)\s*[xX*]\s*)?(.+?)\s*", text or "")
    if not m or not m.group(2):
        raise PlanInputError(f"cannot read --gpus {text!r}; expected COUNTxNAME such as 8xA100-80G")
    count = int(m.group(1) or 1)
    if not 1 <= count <= MAX_GPU_COUNT:
        raise PlanInputError(f"--gpus {text!r}: the GPU count must be between 1 and {MAX_GPU_COUNT}")
    return Hardware(get_gpu(m.group(2)), count)


def gpu_from_facts(name: str | None, nvml_total: int, compute_capability: str | None, wsl: bool = False) -> GPU:
    """The planner's GPU for one GPU of a facts bundle: the catalogue entry when NVML's name is known (it carries
    the total torch reports, which vLLM sizes from; under WSL2 the entry's WSL2 variant where the catalogue has
    one, since the driver reports another total there), else NVML's figures."""
    for candidate in (name or "", (name or "").removeprefix("NVIDIA ")):
        if wsl and candidate and _norm(candidate + " WSL") in catalogue():
            return catalogue()[_norm(candidate + " WSL")]
        if candidate and _norm(candidate) in catalogue():
            return catalogue()[_norm(candidate)]
    return GPU(name or "GPU", int(nvml_total), str(compute_capability or "0.0"))


# the compute capability's major number -> the family the engines' accounting is classed by (doctor/planner/bands.py)
FAMILIES = {8: "Ampere / Ada", 9: "Hopper", 10: "Blackwell data centre", 12: "consumer Blackwell"}


def hardware_class(gpu: GPU) -> str:
    """The GPU family the engine's accounting differs by: unified memory, WSL2, else the compute capability's
    family."""
    if gpu.unified:
        return "unified memory (GB10)"
    family = FAMILIES.get(gpu.capability[0], f"compute capability {gpu.compute_capability}")
    return f"{family} under WSL2" if gpu.virtualised else family


def is_wsl_kernel(kernel_release: str | None) -> bool:
    """Whether a Linux kernel release is WSL2's ("5.15.167.4-microsoft-standard-WSL2")."""
    return "microsoft" in (kernel_release or "").lower()
