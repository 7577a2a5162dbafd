"""Driver checks: an NVIDIA driver is loaded, and it is new enough for the CUDA runtime torch was built with."""

from __future__ import annotations

from doctor.context import CheckContext
from doctor.knowledge import DriverVersion, driver_table, parse_version
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn


@check("QD-DRV-001", "NVIDIA driver loaded", category="driver", severity="critical")
def driver_loaded(ctx: CheckContext) -> Outcome:
    """NVML answers, so an NVIDIA kernel driver is installed and loaded."""
    facts = ctx.facts
    timeout = facts.probe_error("nvml")
    if timeout:
        return fail(f"the NVML probe did not answer: {timeout}",
                    fix=["A hung NVML usually means a wedged driver: check `dmesg` for Xid errors and `nvidia-smi`."])
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
    return ok(f"driver {facts.nvml.get('driver_version')} (CUDA {facts.nvml.get('cuda_driver_version')}), {n} GPU(s)",
              evidence={"driver_version": facts.nvml.get("driver_version"), "gpus": n})


@check("QD-DRV-002", "Driver new enough for torch's CUDA build", category="driver", severity="critical")
def driver_supports_torch_cuda(ctx: CheckContext) -> Outcome:
    """The driver meets the minimum of the CUDA runtime that the installed torch wheel ships with."""
    facts = ctx.facts
    torch = facts.package("torch")
    if not facts.nvml_available:
        return skip("no NVIDIA driver to compare (see QD-DRV-001)")
    if torch is None:
        return skip("torch is not installed")
    cuda_text = torch.get("cuda")
    if not cuda_text:
        return skip(f"torch {torch['version']} is not a CUDA build (see QD-VER-005)")
    cuda = parse_version(cuda_text)
    driver_text = facts.nvml.get("driver_version")
    driver = DriverVersion(parse_version(driver_text), driver_text) if parse_version(driver_text) else None
    if cuda is None or driver is None:
        return skip(f"cannot compare driver {facts.nvml.get('driver_version')!r} with CUDA {cuda_text!r}")
    table = driver_table()
    floor = table.major_floor.get(cuda.major)
    needed = table.minimum_for(cuda)
    evidence = {"driver": facts.nvml.get("driver_version"), "torch_cuda": str(cuda), "minimum": str(needed) if needed else None,
                "major_floor": str(floor) if floor else None, "source": table.source}
    summary = f"driver {facts.nvml.get('driver_version')}, torch {torch['version']} built for CUDA {cuda_text}"
    if floor is not None and driver < floor:
        return fail(
            f"{summary}: CUDA {cuda.major}.x needs driver >= {floor}",
            remedy_ids=["QD-R-TORCH-DRIVER-TOO-OLD"],
            details=["torch will fail at CUDA init with 'The NVIDIA driver on your system is too old'."],
            fix=[f"Upgrade the driver to >= {needed or floor}.",
                 "Or install a torch build for an older CUDA (e.g. `pip install torch --index-url "
                 "https://download.pytorch.org/whl/cu128`) that matches the serving backend's pin."],
            evidence=evidence,
        )
    if needed is not None and driver < needed:
        return warn(
            f"{summary}: below CUDA {cuda}'s minimum {needed}, running on minor-version compatibility",
            details=["Kernels run, but anything that JIT-compiles newer PTX (Triton, FlashInfer JIT) can fail "
                     "with CUDA_ERROR_UNSUPPORTED_PTX_VERSION."],
            fix=[f"Upgrade the driver to >= {needed}."],
            evidence=evidence,
        )
    return ok(f"{summary} (needs >= {needed or floor})", evidence=evidence)
