"""Driver checks: an NVIDIA driver is loaded, it is new enough for the CUDA runtime torch was built with, and torch
initialises CUDA through it."""

from __future__ import annotations

from packaging.version import Version

from doctor.context import CheckContext
from doctor.knowledge import DriverVersion, driver_table, parse_version
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip


@check("QD-DRV-001", "NVIDIA driver loaded", category="driver", severity="critical")
def driver_loaded(ctx: CheckContext) -> Outcome:
    """NVML answers, so an NVIDIA kernel driver is installed and loaded."""
    facts = ctx.facts
    timeout = facts.probe_error("nvml")
    if timeout:
        return fail(f"the NVML probe did not answer: {timeout}",
                    fix=["A hung NVML usually means a wedged driver: check `dmesg` for Xid errors and `nvidia-smi`."])
    if not facts.nvml_available and not facts.knows("nvml"):
        return skip("the dump stops before its CUDA / driver / GPU lines (a cut paste): the driver is not recorded")
    if not facts.nvml_available:
        reason = facts.nvml.get("error") or "NVML unavailable"
        return fail(
            f"no usable NVIDIA driver: {reason}",
            remedy_ids=["QD-R-CUDA-NO-DRIVER"],
            fix=[
                "Install the NVIDIA data-center driver (>= 580.65.06 for CUDA 13.0 builds of torch).",
                "In a container, start it with `--gpus all` (NVIDIA Container Toolkit) so the driver is mounted.",
            ],
        )
    n = len(facts.gpus)
    driver = facts.nvml.get("driver_version") or "version not recorded"
    cuda = f" (CUDA {facts.nvml['cuda_driver_version']})" if facts.nvml.get("cuda_driver_version") else ""
    gpus = f", {n} GPU(s)" if facts.knows("gpus") else ""
    return ok(f"driver {driver}{cuda}{gpus}", evidence={"driver_version": facts.nvml.get("driver_version"), "gpus": n})


# Why a driver below the toolkit's minimum fails instead of running on minor-version compatibility: the engines
# load kernels compiled with the CUDA of the wheel, and an older driver refuses them with "CUDA error: the provided
# PTX was compiled with an unsupported toolchain" (vLLM's troubleshooting guide, docs/usage/troubleshooting.md,
# vllm PR #28305; vllm#31700: vLLM 0.11.2, torch 2.9.0+cu128 on an H100 with driver 550.144.03).
PTX_FAILURE = ("The serving engines load kernels built with the wheel's CUDA; an older driver refuses them with "
               "'CUDA error: the provided PTX was compiled with an unsupported toolchain' (vLLM troubleshooting guide, "
               "vllm PR #28305; vllm#31700).")


@check("QD-DRV-002", "Driver new enough for torch's CUDA build", category="driver", severity="critical")
def driver_supports_torch_cuda(ctx: CheckContext) -> Outcome:
    """The driver meets the minimum of the CUDA runtime that the installed torch wheel ships with."""
    facts = ctx.facts
    torch = facts.package("torch")
    if not facts.nvml_available:
        return skip("no NVIDIA driver to compare (see QD-DRV-001)")
    if torch is None:
        return skip("torch is not installed" if facts.knows("packages.torch") else "torch's version is not recorded")
    cuda_text = torch.get("cuda")
    if not cuda_text:
        if not facts.knows("torch.cuda"):
            return skip(f"the CUDA version torch {torch['version']} was built with is not recorded")
        return skip(f"torch {torch['version']} is not a CUDA build (see QD-VER-005)")
    cuda = parse_version(cuda_text)
    driver_text = facts.nvml.get("driver_version")
    driver = DriverVersion(parse_version(driver_text), driver_text) if parse_version(driver_text) else None
    if cuda is not None and driver is None and parse_version(facts.nvml.get("cuda_driver_version")):
        return _by_driver_cuda(torch, cuda, parse_version(facts.nvml["cuda_driver_version"]))
    if driver_text is None:
        return skip(f"the driver version is not recorded (torch {torch['version']} is built for CUDA {cuda_text})")
    if cuda is None or driver is None:
        return skip(f"cannot compare driver {driver_text!r} with CUDA {cuda_text!r}")
    table = driver_table()
    floor = table.major_floor.get(cuda.major)
    needed = table.minimum_for(cuda)
    evidence = {"driver": driver_text, "torch_cuda": str(cuda), "minimum": str(needed) if needed else None,
                "major_floor": str(floor) if floor else None, "source": table.source}
    summary = f"driver {driver_text}, torch {torch['version']} built for CUDA {cuda_text}"
    fix = [f"Upgrade the driver to >= {needed or floor}.",
           "Or install a torch build for an older CUDA (e.g. `pip install torch --index-url "
           "https://download.pytorch.org/whl/cu128`) that matches the serving backend's pin."]
    if floor is not None and driver < floor:
        return fail(
            f"{summary}: CUDA {cuda.major}.x needs driver >= {floor}",
            remedy_ids=["QD-R-TORCH-DRIVER-TOO-OLD"],
            details=["torch will fail at CUDA init with 'The NVIDIA driver on your system is too old'."],
            fix=fix, evidence=evidence,
        )
    if needed is not None and driver < needed:
        return fail(
            f"{summary}: below CUDA {cuda}'s minimum driver {needed}",
            details=["torch itself starts on CUDA minor-version compatibility, but serving does not.", PTX_FAILURE],
            fix=fix, evidence=evidence,
        )
    return ok(f"{summary} (needs >= {needed or floor})", evidence=evidence)


def _by_driver_cuda(torch: dict, cuda: Version, driver_cuda: Version) -> Outcome:
    """Without the driver's version: the CUDA version it supports (torch's 'found version 11040', NVML)."""
    summary = f"the driver supports CUDA {driver_cuda}, torch {torch['version']} is built for CUDA {cuda}"
    evidence = {"driver_cuda": str(driver_cuda), "torch_cuda": str(cuda)}
    if (driver_cuda.major, driver_cuda.minor) < (cuda.major, cuda.minor):
        needed = driver_table().minimum_for(cuda) or driver_table().major_floor.get(cuda.major)
        return fail(f"{summary}: the driver is too old", remedy_ids=["QD-R-TORCH-DRIVER-TOO-OLD"],
                    details=["torch fails at CUDA init with 'The NVIDIA driver on your system is too old'."
                             if driver_cuda.major < cuda.major else PTX_FAILURE],
                    fix=[f"Upgrade the driver to >= {needed}." if needed else "Upgrade the driver.",
                         f"Or install torch and the engine built for CUDA {driver_cuda.major}.x."],
                    evidence=evidence)
    return ok(summary, evidence=evidence)


@check("QD-DRV-003", "torch initialises CUDA", category="driver", severity="critical")
def torch_initialises_cuda(ctx: CheckContext) -> Outcome:
    """torch itself reaches the GPUs: `torch.cuda.is_available()` as `collect --deep` or a pasted environment dump
    recorded it. A driver that nvidia-smi answers can still refuse torch (a WSL2 or container passthrough fault,
    a driver older than torch's CUDA, Fabric Manager not running)."""
    facts = ctx.facts
    runtime = facts.data.get("torch_runtime") or {}
    available, error = runtime.get("cuda_available"), runtime.get("error")
    if not runtime:
        return skip("not recorded (`qwen-doctor collect --deep` imports torch to record it)")
    if not facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    torch = facts.package("torch")
    if torch is not None and facts.knows("torch.cuda") and not torch.get("cuda") and not torch.get("cuda_build"):
        return skip(f"torch {torch['version']} is not a CUDA build (see QD-VER-005)")
    if available is True:
        return ok("torch.cuda.is_available() is True")
    cuda_error = str(error or "")
    if available is None and not cuda_error.startswith("CUDA initialization"):
        return skip(f"not recorded ({cuda_error})" if cuda_error else "not recorded")
    remedies = (["QD-R-TORCH-DRIVER-TOO-OLD"] if "driver on your system is too old" in cuda_error
                else ["QD-R-CUDA-SYSTEM-NOT-READY"] if "system not yet initialized" in cuda_error else [])
    return fail("torch cannot initialise CUDA although the driver is there" +
                (f": {cuda_error[:160]}" if cuda_error else " (torch.cuda.is_available() is False)"),
                details=[cuda_error] if len(cuda_error) > 160 else [], remedy_ids=remedies,
                fix=["Run `python -c 'import torch; torch.cuda.init()'` in the serving environment: it raises the "
                     "cause.",
                     "WSL2 / containers: use the Windows driver's CUDA passthrough (no Linux driver inside), start "
                     "containers with --gpus all; check that CUDA_VISIBLE_DEVICES names existing GPUs.",
                     "A driver older than torch's CUDA: see QD-DRV-002."])
