"""GPU catalogue (gpus.yaml) and the `--gpus 8xA100-80G` notation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from doctor.planner.errors import PlanInputError

MIB = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class GPU:
    """One GPU model: total memory as the driver reports it, and its compute capability."""

    name: str
    memory_bytes: int
    compute_capability: str

    @property
    def capability(self) -> tuple[int, int]:
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def native_fp8(self) -> bool:
        return self.capability >= (8, 9)


@dataclass(frozen=True)
class Hardware:
    """`count` identical GPUs (on one node or spread over several)."""

    gpu: GPU
    count: int

    def __str__(self) -> str:
        return f"{self.count}x{self.gpu.name}"


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).upper()


def build_catalogue(text: str) -> dict[str, GPU]:
    """Parse gpus.yaml text into {normalised name or alias: GPU}."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("gpus"), dict):
        raise PlanInputError("GPU catalogue must have schema: 1 and a gpus mapping")
    out: dict[str, GPU] = {}
    for name, entry in data["gpus"].items():
        mem, cc = entry.get("memory_mib"), str(entry.get("compute_capability", ""))
        if not isinstance(mem, int) or mem <= 0 or not re.fullmatch(r"\d+\.\d+", cc):
            raise PlanInputError(f"GPU catalogue entry {name!r} needs memory_mib and compute_capability")
        gpu = GPU(name, mem * MIB, cc)
        for key in [name, *(str(a) for a in entry.get("aliases") or [])]:
            if _norm(key) in out:
                raise PlanInputError(f"GPU name or alias {key!r} is used twice")
            out[_norm(key)] = gpu
    return out


@lru_cache(maxsize=1)
def catalogue() -> dict[str, GPU]:
    """The shipped GPU catalogue (cached)."""
    return build_catalogue(resources.files("doctor.planner").joinpath("gpus.yaml").read_text(encoding="utf-8"))


def known_gpus() -> list[str]:
    return sorted({g.name for g in catalogue().values()})


def get_gpu(name: str) -> GPU:
    """Look a GPU up by name or alias, or accept a custom `NAME:MEMGiB[:CC]` such as `X:96:9.0`."""
    custom = re.fullmatch(r"([\w.\-]+):(\d+(?:\.\d+)?)(?::(\d+\.\d+))?", name.strip())
    if custom:
        return GPU(custom.group(1), int(float(custom.group(2)) * GIB), custom.group(3) or "9.0")
    gpu = catalogue().get(_norm(name))
    if gpu is None:
        raise PlanInputError(f"unknown GPU {name!r}; known: {', '.join(known_gpus())} "
                             "(or give NAME:MEMORY_GIB[:CC], e.g. MYGPU:96:9.0)")
    return gpu


def parse_gpus(text: str) -> Hardware:
    """Parse `8xA100-80G`, `2 x H200` or `H100` (one GPU)."""
    m = re.fullmatch(r"\s*(?:(\d+)\s*[xX*]\s*)?(.+?)\s*", text or "")
    if not m or not m.group(2):
        raise PlanInputError(f"cannot read --gpus {text!r}; expected COUNTxNAME such as 8xA100-80G")
    count = int(m.group(1) or 1)
    if count < 1:
        raise PlanInputError(f"--gpus {text!r}: the GPU count must be at least 1")
    return Hardware(get_gpu(m.group(2)), count)
