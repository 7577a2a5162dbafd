"""Package checks over the whole installed inventory: one CUDA major among NVIDIA's wheels, flashinfer's
companion packages at flashinfer's version, and one copy of each distribution."""

from __future__ import annotations

import re
from collections import defaultdict

from packaging.version import InvalidVersion, Version

from doctor.context import CheckContext
from doctor.registry import check
from doctor.results import Outcome, ok, skip, warn, fail

NO_INVENTORY = "no package inventory recorded (a bundle from an older qwen-doctor)"

# NVIDIA's CUDA component wheels: `nvidia-<lib>-cu12` / `-cu13` name their CUDA major; from CUDA 13 the
# components are also published without the suffix, and only those whose own version follows the toolkit's name
# the CUDA major by their major (nvidia-cublas 13.1, nvidia-cuda-runtime 13.0, the cuda-toolkit meta-package).
# cuFFT, cuRAND, cuSOLVER, cuSPARSE and cuFile carry library versions of their own: the torch 2.11.0+cu130 set on
# the H200 rehearsal machine has nvidia-cufft 12.0.0.61, nvidia-curand 10.4.0.35, nvidia-cusolver 12.0.4.66,
# nvidia-cusparse 12.6.3.3 and nvidia-cufile 1.15.1.6, all CUDA 13 (tests/fixtures/h200-rehearsal/
# vllm-bf16-exercises.json), so their major says nothing; neither do cuDNN, NCCL, cuSPARSELt, NVSHMEM, cuDSS,
# which name it only in the suffix.
_SUFFIXED = re.compile(r"^nvidia-[a-z0-9-]+?-cu(?P<major>1[1-9])$")
_TRACKS_TOOLKIT = {"nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti",
                   "nvidia-nvjitlink", "nvidia-nvtx", "nvidia-cuda-nvcc", "nvidia-cuda-cccl", "cuda-toolkit"}

# flashinfer-python's optional companions, each refused at import when its version is not flashinfer's own:
# "RuntimeError: flashinfer-cubin version (X) does not match flashinfer version (Y)" (flashinfer/jit/env.py
# _get_cubin_dir; vllm-project/vllm#49804, NVIDIA-NeMo/Megatron-Bridge#3750; flashinfer-jit-cache carries a
# +cuXYZ local tag, flashinfer-ai/flashinfer#4337).
COMPANIONS = ("flashinfer-cubin", "flashinfer-jit-cache")


def _cuda_major(name: str, version: str) -> int | None:
    if found := _SUFFIXED.match(name):
        return int(found["major"])
    if name in _TRACKS_TOOLKIT:
        try:
            return Version(version).major
        except InvalidVersion:
            return None
    return None


@check("QD-PKG-001", "NVIDIA CUDA wheels of one CUDA major", category="packages", severity="high")
def one_cuda_major(ctx: CheckContext) -> Outcome:
    """nvidia-*-cu12 and nvidia-*-cu13 wheels side by side load two CUDA majors' libraries into one process: the
    classic cause of 'undefined symbol' and 'libcublasLt.so.12: cannot open shared object file' start-up crashes
    after an in-place upgrade (torch 2.11 moved PyPI's default wheel to CUDA 13)."""
    if not ctx.facts.inventory:
        return skip(NO_INVENTORY)
    by_major: dict[int, list[str]] = defaultdict(list)
    for dist in ctx.facts.inventory:
        major = _cuda_major(dist["name"], dist["version"])
        if major is not None:
            by_major[major].append(f"{dist['name']} {dist['version']}")
    if not by_major:
        return skip("no NVIDIA CUDA wheels installed (a system CUDA or a CPU-only environment)")
    if len(by_major) == 1:
        (major, names), = by_major.items()
        return ok(f"{len(names)} NVIDIA CUDA wheel{'s' if len(names) > 1 else ''}, all CUDA {major}")
    torch_cuda = (ctx.facts.package("torch") or {}).get("cuda")
    keep = int(str(torch_cuda).split(".")[0]) if torch_cuda else max(by_major)
    stale = sorted(name.split()[0] for major, names in by_major.items() if major != keep for name in names)
    why = f"torch is built for CUDA {torch_cuda}" if torch_cuda else f"CUDA {keep} is the newest here"
    return warn(
        f"NVIDIA CUDA wheels of {len(by_major)} CUDA majors: " + "; ".join(
            f"CUDA {major}: {', '.join(sorted(names))}" for major, names in sorted(by_major.items())),
        details=[f"Keep CUDA {keep} ({why}). Libraries of two majors in one process fail with 'undefined symbol' "
                 "or load the wrong libcublas; the other major's wheels are left over from an earlier install "
                 "unless another package still pins them (pip check names it)."],
        fix=[f"pip uninstall -y {' '.join(stale)}", "pip check"],
        evidence={"by_major": {str(k): v for k, v in by_major.items()}, "keep": keep})


@check("QD-PKG-002", "flashinfer companion packages match flashinfer-python", category="packages", severity="high")
def flashinfer_companions(ctx: CheckContext) -> list[Outcome]:
    """flashinfer-cubin and flashinfer-jit-cache must be flashinfer-python's own version: flashinfer refuses to
    import otherwise ('flashinfer-cubin version (X) does not match flashinfer version (Y)', vllm#49804), and
    upgrading flashinfer-python (or vLLM, which pins it) leaves the companions behind."""
    if not ctx.facts.inventory:
        return [skip(NO_INVENTORY)]
    listed = {d["name"]: d["version"] for d in ctx.facts.inventory}
    core = listed.get("flashinfer-python")
    present = [c for c in COMPANIONS if c in listed]
    if core is None:
        if present and ctx.facts.inventory_complete:
            return [warn(f"{', '.join(present)} installed without flashinfer-python",
                         fix=[f"pip uninstall -y {' '.join(present)}"])]
        return [skip("flashinfer-python is not installed" if ctx.facts.inventory_complete
                     else "flashinfer-python is not listed")]
    if not present:
        return [ok(f"flashinfer-python {core} without companion packages (kernels are compiled at run time)")]
    out = []
    for companion in present:
        version = listed[companion]
        if _public(version) == _public(core):
            out.append(ok(f"{companion} {version} matches flashinfer-python {core}", subject=companion))
            continue
        out.append(fail(
            f"{companion} {version} installed, flashinfer-python is {core}",
            details=[f"flashinfer refuses to import: 'RuntimeError: {companion} version ({_public(version)}) does not "
                     f"match flashinfer version ({_public(core)})' (vllm#49804). The companion is optional: without "
                     "it flashinfer compiles its kernels at run time (flashinfer-ai/flashinfer#4869)."],
            fix=[f"pip uninstall -y {companion}",
                 f"flashinfer install-{companion.removeprefix('flashinfer-')}-wheel   # or reinstall the matching "
                 f"{companion} {_public(core)}"],
            evidence={"flashinfer_python": core, companion: version}, subject=companion))
    return out


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


@check("QD-PKG-003", "One installed copy of each distribution", category="packages", severity="medium")
def one_copy_each(ctx: CheckContext) -> Outcome:
    """Two metadata directories of one distribution in one site-packages (left by an interrupted or concurrent
    upgrade) make pip and importlib.metadata report either version while the files on disk are a mix of both.
    A copy in another path entry (a user site under a virtual environment) is shadowing by sys.path order,
    not a broken install, and is not reported."""
    if not ctx.facts.inventory:
        return skip(NO_INVENTORY)
    if not ctx.facts.inventory_complete:
        return skip("a pasted dump lists each package once: duplicates show only in a collected inventory")
    copies: dict[tuple[str, str], list[str]] = defaultdict(list)
    for dist in ctx.facts.inventory:
        copies[(dist["name"], dist.get("location") or "?")].append(dist["version"])
    doubled = {key: versions for key, versions in copies.items() if len(versions) > 1}
    if not doubled:
        return ok(f"{len({name for name, _ in copies})} distributions, one copy each")
    lines = [f"{name} {' and '.join(versions)} in {where}" for (name, where), versions in sorted(doubled.items())]
    # Uninstalling removes one metadata directory per run (the one importlib finds first); the reinstall then
    # writes one consistent copy.
    fix = [f"pip uninstall -y {name} && pip uninstall -y {name} && pip install '{name}=={_newest(versions)}'"
           for (name, _), versions in sorted(doubled.items())]
    return warn(f"{len(doubled)} distribution{'s' if len(doubled) > 1 else ''} installed twice in one place: "
                + "; ".join(lines), fix=fix, evidence={"duplicates": lines})


def _newest(versions: list[str]) -> str:
    try:
        return str(max(Version(v) for v in versions))
    except InvalidVersion:
        return versions[0]
