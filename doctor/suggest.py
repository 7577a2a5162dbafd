"""Which profiles fit a machine, best first, and why each other one does not.

    machine_from_gpus("1xRTX5090") / machine_from_facts(facts) -> Machine
    suggest(machine, profiles) -> [Verdict]      # fitting ones first (ranked), then the rejected with reasons

A profile fits when the machine has its GPU count, per-GPU memory and compute capability (FP8 needs 8.9,
NVFP4 Blackwell), the installed engine (when known) lies in its version range, and qwen-doctor's plan of its
flags on these GPUs fits. Fitting profiles rank by: written for this GPU, verified on it by its recipe, engine
installed, then planned KV tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from doctor.facts.model import Facts
    from doctor.planner.hardware import GPU, Hardware
    from profiles import Profile

GIB = 1 << 30


@dataclass(frozen=True)
class Machine:
    """The facts suggest reads: one GPU model, how many, the installed engines' versions (None: absent or
    unknown), and what the plan of a profile reads beside them: the memory other processes hold on each GPU at
    start-up and whether the engine gets pinned host memory (doctor/planner/startup.py facts_hardware)."""

    gpu: "GPU"
    count: int
    engines: dict[str, str | None] = field(default_factory=dict)
    other_process_bytes: int = 0
    pinned_memory: bool | None = None

    def hardware(self, count: int) -> "Hardware":
        """`count` of this machine's GPUs as the planner takes them, with their start-up memory."""
        from doctor.planner import Hardware

        return Hardware(self.gpu, count, self.other_process_bytes, self.pinned_memory)

    def __str__(self) -> str:
        return f"{self.count}x{self.gpu.name}"


@dataclass
class Verdict:
    """One profile judged for the machine: fits or not, why not, and its planned KV tokens when it fits."""

    profile: "Profile"
    reasons: list[str]
    kv_tokens: int = 0
    rank: tuple = ()

    @property
    def fits(self) -> bool:
        return not self.reasons

    @property
    def strengths(self) -> list[str]:
        """Why a fitting profile ranks where it does, in words."""
        if not self.rank:
            return []
        exact, verified, installed = self.rank[:3]
        return [label for label, on in (("written for this GPU", exact), ("verified on it by its recipe", verified),
                                        ("engine installed and in range", installed)) if on]


def machine_from_gpus(text: str, engines: dict[str, str | None] | None = None) -> Machine:
    """`1xRTX5090`, `8xH100`, `1xMYGPU:96:9.0` (the planner's --gpus syntax)."""
    from doctor.planner import parse_gpus

    hardware = parse_gpus(text)
    return Machine(hardware.gpu, hardware.count, dict(engines or {}))


def machine_from_facts(facts: "Facts") -> Machine | None:
    """The machine a facts bundle describes, as `plan --facts` and deploy's KV prediction read it (the smallest
    visible GPU, what other processes hold at start-up, pinned memory: startup.facts_hardware), and its engine
    versions; where the bundle records no GPU memory, the first visible GPU by its catalogue name. None without
    a GPU."""
    from doctor.gpus import visible_gpus
    from doctor.planner.errors import PlanInputError
    from doctor.planner.hardware import gpu_from_facts
    from doctor.planner.startup import facts_hardware

    gpus, _ = visible_gpus(facts)
    if not gpus:
        return None
    engines = {b: facts.package_version(b) for b in ("vllm", "sglang")}
    try:
        found = facts_hardware(facts)
    except PlanInputError:
        first = gpus[0]
        gpu = gpu_from_facts(first.get("name"), int((first.get("memory") or {}).get("total") or 0),
                             first.get("compute_capability"))
        return Machine(gpu, len(gpus), engines)
    return Machine(found.gpu, found.count, engines, found.other_process_bytes, found.pinned_memory)


def precision_of(profile: "Profile") -> str:
    """bf16, fp8, int4 or nvfp4, from the checkpoint's name."""
    name = profile.model.upper()
    for marker, precision in (("NVFP4", "nvfp4"), ("FP4", "nvfp4"), ("FP8", "fp8"), ("INT4", "int4"),
                              ("GPTQ", "int4"), ("AWQ", "int4")):
        if marker in name:
            return precision
    return "fp8" if str(profile.quantization or "").startswith("fp8") else "bf16"


def _capability_reason(profile: "Profile", gpu: "GPU") -> str | None:
    need = profile.hardware.min_cc_tuple
    if gpu.capability >= need:
        return None
    have = gpu.compute_capability
    precision = precision_of(profile)
    if precision == "nvfp4":
        return (f"no NVFP4 support: {gpu.name} is compute capability {have}; NVFP4 kernels need Blackwell "
                f"(>= {profile.hardware.min_compute_capability})")
    if precision == "fp8":
        return (f"no native FP8: {gpu.name} is compute capability {have}; FP8 tensor cores need >= "
                f"{profile.hardware.min_compute_capability} (Ada / Hopper)")
    return f"compute capability {have} is below the profile's {profile.hardware.min_compute_capability}"


def judge(profile: "Profile", machine: Machine) -> Verdict:
    """Every reason `profile` does not fit `machine` (none: it fits), with its planned KV tokens."""
    from packaging.version import InvalidVersion, Version

    from doctor.errors import DoctorError
    from doctor.profile_plan import plan_profile

    hw = profile.hardware
    if hw.device == "cpu":
        return Verdict(profile, ["a CPU-only profile (vLLM CPU build), not for a GPU machine"])
    reasons = []
    needed = max(1, hw.gpu_count) * max(1, profile.nodes)
    if profile.nodes > 1:
        reasons.append(f"spans {profile.nodes} nodes ({hw.gpu_count} GPUs each); this is one machine")
    elif machine.count < needed:
        reasons.append(f"too few GPUs: needs {needed}, the machine has {machine.count}")
    memory = machine.gpu.memory_bytes / GIB
    if memory < hw.min_gpu_memory_gib:
        reasons.append(f"too little memory: needs {hw.min_gpu_memory_gib:g} GiB per GPU, {machine.gpu.name} has "
                       f"{memory:.1f} GiB ({precision_of(profile).upper()} weights)")
    capability = _capability_reason(profile, machine.gpu)
    if capability:
        reasons.append(capability)
    installed = machine.engines.get(profile.backend)
    if installed:
        try:
            inside = Version(installed) in profile.backend_version
        except InvalidVersion:
            inside = True
        if not inside:
            reasons.append(f"engine version out of range: {profile.backend} {installed} is installed, the profile "
                           f"needs {profile.backend}{profile.backend_version}")
    if reasons:
        return Verdict(profile, reasons)
    try:
        planned = plan_profile(profile, machine.hardware(needed), installed)
    except DoctorError as exc:
        return Verdict(profile, [f"cannot be planned: {exc}"])
    if not planned.fits:
        return Verdict(profile, [f"does not fit {needed}x{machine.gpu.name} by the plan: {planned.problems[0]}"])
    exact = (hw.gpu or "").upper() == machine.gpu.name.upper()
    verified = "(verified)" in profile.provenance.get("entry", "")
    rank = (exact, exact and verified, bool(installed), planned.kv_tokens)
    return Verdict(profile, [], planned.kv_tokens, rank)


def suggest(machine: Machine, profiles: list["Profile"], backend: str | None = None) -> list[Verdict]:
    """Every profile judged: the fitting ones best first, then the rejected ones in name order."""
    chosen = [p for p in profiles if backend is None or p.backend == backend]
    verdicts = [judge(p, machine) for p in chosen]
    fitting = sorted((v for v in verdicts if v.fits), key=lambda v: (v.rank, v.profile.name), reverse=True)
    rejected = sorted((v for v in verdicts if not v.fits), key=lambda v: v.profile.name)
    return fitting + rejected


def machine_of(gpus: str | None = None, bundle: str | None = None) -> Machine:
    """The machine to judge: `gpus` (NxGPU), else a facts bundle, else this machine's facts (collected now)."""
    from pathlib import Path

    from doctor.errors import DoctorError

    if gpus:
        return machine_from_gpus(gpus)
    if bundle:
        from doctor.facts.model import Facts

        facts = Facts.load(Path(bundle))
    else:
        from doctor.facts.collect import builtin_probes, collect

        facts = collect(builtin_probes(), timeout_s=10.0)
    machine = machine_from_facts(facts)
    if machine is None:
        raise DoctorError("no NVIDIA GPU found on this machine, so no profile can be picked for it (name a profile, "
                          "or judge other GPUs with `qwen-doctor profiles suggest --gpus 1xRTX5090`)")
    return machine


def auto_profile(bundle: str | None = None, backend: str | None = None) -> "Profile":
    """`--profile auto`: the best shipped profile for this machine (or the bundle's), told on stderr; a machine
    that no profile fits is one DoctorError naming the closest rejections."""
    import click

    from doctor.errors import DoctorError
    from profiles import list_profiles

    machine = machine_of(None, bundle)
    verdicts = suggest(machine, list_profiles(), backend)
    if not verdicts or not verdicts[0].fits:
        closest = "; ".join(f"{v.profile.name}: {v.reasons[0]}" for v in verdicts[:3])
        raise DoctorError(f"--profile auto: no profile fits {machine} ({closest})")
    best = verdicts[0]
    click.echo(f"--profile auto: {best.profile.name} (best of {sum(v.fits for v in verdicts)} fitting {machine}; "
               f"`qwen-doctor profiles suggest` lists them)", err=True)
    return best.profile
