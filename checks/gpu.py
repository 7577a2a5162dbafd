"""GPU checks: enough visible GPUs, bf16 / FP8 capability, arch in the torch build, MIG, memory health."""

from __future__ import annotations

from doctor.context import CheckContext
from doctor.gpus import capability, label, select
from doctor.knowledge import torch_arch_lists
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

# What an environment dump leaves out, in words (Facts.knows).
UNRECORDED = {"gpu.mig": "the dump has no nvidia-smi -L list", "gpu.ecc": "ECC counters come from NVML only",
              "gpu.persistence_mode": "persistence mode comes from NVML only",
              "gpu.processes": "the processes on the GPUs come from NVML only"}
FP8_NATIVE = (8, 9)
FP8_MARLIN = (7, 5)
BF16 = (8, 0)


def _no_gpus(ctx: CheckContext, fact: str | None = None) -> Outcome | None:
    """Why a GPU check cannot judge: no driver, no GPU, or (a pasted dump) the GPUs or `fact` not recorded."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    if not ctx.facts.knows("gpus"):
        return skip("the GPUs are not recorded")
    if fact is not None and not ctx.facts.knows(fact):
        return skip(f"not recorded ({UNRECORDED.get(fact, fact)})")
    if not select(ctx).used:
        return skip("no visible GPU (see QD-GPU-001)")
    return None


def _unknown_capability(ctx: CheckContext) -> Outcome | None:
    """Skip when a deployment GPU's compute capability is unknown: a dump names the GPU only, and a name such as
    'NVIDIA vGPU-32GB' (vllm#15513) names no architecture; an unknown capability is not an old one."""
    unknown = [g for g in select(ctx).used if capability(g) is None]
    if not unknown:
        return None
    names = ", ".join(f"{label(g)} ({g.get('name') or 'unnamed'})" for g in unknown[:4])
    return skip(f"compute capability not recorded and not known from the name: {names}")


@check("QD-GPU-001", "Enough visible GPUs", category="gpu", severity="critical")
def enough_gpus(ctx: CheckContext) -> Outcome:
    """CUDA_VISIBLE_DEVICES leaves at least TP x PP GPUs visible."""
    if not ctx.facts.nvml_available:
        return skip("no NVIDIA driver (see QD-DRV-001)")
    if not ctx.facts.knows("gpus"):
        return skip("the GPUs are not recorded")
    sel = select(ctx)
    total = len(ctx.facts.gpus)
    mask = ctx.facts.env.get("CUDA_VISIBLE_DEVICES")
    where = f" of {total} (CUDA_VISIBLE_DEVICES={mask})" if mask is not None else ""
    if sel.problems:
        return fail("; ".join(sel.problems), fix=["Fix CUDA_VISIBLE_DEVICES: comma-separated indices or GPU UUIDs."])
    if not sel.visible:
        return fail(f"no GPU visible{where}", fix=["Unset or correct CUDA_VISIBLE_DEVICES."])
    if sel.world_size > len(sel.visible):
        return fail(f"the deployment needs {sel.world_size} GPUs (TP x PP x DP) but {len(sel.visible)} are visible{where}",
                    fix=["Lower --tensor-parallel-size / --tp-size, or expose more GPUs."],
                    evidence={"needed": sel.world_size, "visible": len(sel.visible)})
    return ok(f"{len(sel.visible)} GPU(s) visible{where}, deployment uses {len(sel.used)}")


@check("QD-GPU-002", "bf16 support (compute capability >= 8.0)", category="gpu", severity="critical")
def bf16_capable(ctx: CheckContext) -> Outcome:
    """Qwen3.5 ships in bfloat16; GPUs below compute capability 8.0 (V100, T4) cannot run it natively."""
    if (reason := _no_gpus(ctx)) is not None:
        return reason
    too_old = [g for g in select(ctx).used if capability(g) is not None and capability(g) < BF16]
    if not too_old and (reason := _unknown_capability(ctx)) is not None:
        return reason
    if too_old:
        names = ", ".join(f"{label(g)} cc {g.get('compute_capability')}" for g in too_old)
        return fail(f"bf16 needs compute capability >= 8.0: {names}",
                    remedy_ids=["QD-R-VLLM-BF16-CAPABILITY"],
                    details=["vLLM raises: Bfloat16 is only supported on GPUs with compute capability of at least 8.0."],
                    fix=["Use Ampere or newer GPUs (A100, L40S, H100, H200).",
                         "As a last resort `--dtype half` (fp16 numerics for Qwen3.5 are unverified)."])
    return ok(f"all {len(select(ctx).used)} deployment GPU(s) support bf16")


@check("QD-GPU-003", "FP8 compute (compute capability >= 8.9)", category="gpu", severity="medium")
def fp8_capable(ctx: CheckContext) -> Outcome:
    """FP8 tensor cores need compute capability 8.9 (Ada, Hopper, Blackwell); below, vLLM runs FP8 weight-only."""
    if (reason := _no_gpus(ctx) or _unknown_capability(ctx)) is not None:
        return reason
    used = select(ctx).used
    wants_fp8 = _wants_fp8(ctx)
    slow = [g for g in used if FP8_MARLIN <= (capability(g) or (0, 0)) < FP8_NATIVE]
    unable = [g for g in used if (capability(g) or (0, 0)) < FP8_MARLIN]
    marlin_note = ("vLLM logs: 'Your GPU does not have native support for FP8 computation but FP8 quantization is "
                   "being used. Weight-only FP8 compression will be used leveraging the Marlin kernel' (slower).")
    if wants_fp8 and unable:
        return fail(f"FP8 requested, but {', '.join(label(g) for g in unable)} is below compute capability 7.5",
                    fix=["Serve the BF16 checkpoint Qwen/Qwen3.5-35B-A3B instead."])
    if wants_fp8 and slow:
        return warn(f"FP8 requested on {', '.join(label(g) for g in slow)} without FP8 tensor cores",
                    remedy_ids=["QD-R-VLLM-FP8-MARLIN"],
                    details=[marlin_note, "SGLang has no Marlin fallback for every FP8 MoE path: prefer BF16 there."],
                    fix=["Expect lower throughput than BF16 on this GPU; FP8 here saves memory only.",
                         "Use BF16 (Qwen/Qwen3.5-35B-A3B, TP2 on 80 GB GPUs) if memory allows."])
    if slow:
        return ok(f"FP8 not requested; {label(slow[0])} would run FP8 checkpoints weight-only (Marlin), slower",
                  details=[marlin_note])
    return ok(("FP8 requested; " if wants_fp8 else "") + "all deployment GPUs have FP8 tensor cores (cc >= 8.9)")


FP4_NATIVE = (10, 0)
FP4_MARLIN = (7, 5)


def _wants_fp4(ctx: CheckContext) -> bool:
    quant = str(ctx.option("quantization") or "").lower()
    model = str(ctx.option("model") or "").lower()
    return "fp4" in quant or "nvfp4" in model or "-fp4" in model


@check("QD-GPU-008", "NVFP4 compute (compute capability >= 10.0)", category="gpu", severity="medium")
def fp4_capable(ctx: CheckContext) -> Outcome:
    """FP4 tensor cores need Blackwell (compute capability 10.0 / 12.x: vLLM's cutlass_fp4_supported); from 7.5
    the engines fall back to a weight-only Marlin kernel (vLLM and SGLang marlin_utils_fp4.is_fp4_marlin_supported:
    capability >= 75; older SGLang releases require Blackwell), below it NVFP4 checkpoints cannot run."""
    if (reason := _no_gpus(ctx) or _unknown_capability(ctx)) is not None:
        return reason
    used = select(ctx).used
    unable = [g for g in used if (capability(g) or (0, 0)) < FP4_MARLIN]
    slow = [g for g in used if FP4_MARLIN <= (capability(g) or (0, 0)) < FP4_NATIVE]
    if not _wants_fp4(ctx):
        native = not unable and not slow
        return ok("NVFP4 not requested" + ("; the deployment GPUs have FP4 tensor cores" if native else ""))
    if unable:
        return fail(f"NVFP4 requested, but {', '.join(label(g) for g in unable)} is below compute capability 7.5",
                    fix=["Serve the BF16 checkpoint (Qwen/Qwen3.5-35B-A3B) or the FP8 one on these GPUs."])
    if slow:
        return warn(f"NVFP4 requested on {', '.join(label(g) for g in slow)} without FP4 tensor cores",
                    details=["The engine runs the FP4 weights weight-only through its Marlin kernel (activations in "
                             "BF16): it fits the memory of an FP4 checkpoint, not its speed. SGLang releases without "
                             "the Marlin fallback refuse NVFP4 below Blackwell."],
                    fix=["Expect BF16-like compute; on Hopper the FP8 checkpoint is the faster choice."])
    return ok("NVFP4 requested; all deployment GPUs have FP4 tensor cores (cc >= 10.0)")


def _wants_fp8(ctx: CheckContext) -> bool:
    quant = str(ctx.option("quantization") or "").lower()
    model = str(ctx.option("model") or "").lower()
    return "fp8" in quant or model.endswith("-fp8") or "fp8" in model


@check("QD-GPU-004", "GPU architecture compiled into torch", category="gpu", severity="critical")
def arch_in_torch(ctx: CheckContext) -> Outcome:
    """torch must carry SASS for the GPU's architecture, else: 'no kernel image is available for execution'."""
    if (reason := _no_gpus(ctx)) is not None:
        return reason
    torch = ctx.facts.package("torch")
    if torch is None or not torch.get("cuda"):
        if not ctx.facts.knows("packages.torch") or not ctx.facts.knows("torch.cuda"):
            recorded = (ctx.facts.data.get("torch_runtime") or {}).get("arch_list")
            if not recorded:
                return skip("torch's CUDA build is not recorded")
        else:
            return skip("no CUDA build of torch installed")
    recorded = (ctx.facts.data.get("torch_runtime") or {}).get("arch_list")
    cuda = (torch or {}).get("cuda")
    arch = recorded or torch_arch_lists().get(str(cuda))
    if not arch:
        return skip(f"no known arch list for torch built with CUDA {cuda}")
    source = "as torch reports it" if recorded else f"default wheels for CUDA {cuda}"
    version = (torch or {}).get("version") or "(version not recorded)"
    missing = [g for g in select(ctx).used if capability(g) is not None and not _runs_on(capability(g), arch)]
    if not missing and (reason := _unknown_capability(ctx)) is not None:
        return reason
    if missing:
        names = ", ".join(f"{label(g)} sm_{str(g.get('compute_capability')).replace('.', '')}" for g in missing)
        return fail(f"torch {version} has no kernels for {names} (has {', '.join(arch)}; {source})",
                    remedy_ids=["QD-R-CUDA-NO-KERNEL-IMAGE"],
                    details=["CUDA fails with: no kernel image is available for execution on the device."],
                    fix=["Install a torch / backend build that includes this architecture (CUDA 12.8+ builds "
                         "for Blackwell; cu126 or older builds for Volta/Pascal)."],
                    evidence={"arch_list": list(arch)})
    return ok(f"torch {version} includes the deployment GPUs' architecture ({source})",
              evidence={"arch_list": list(arch)})


def _runs_on(cc: tuple[int, int] | None, arch: list[str] | tuple[str, ...]) -> bool:
    """SASS for sm_XY runs on the same major with an equal or higher minor (binary compatibility)."""
    if cc is None:
        return True
    for a in arch:
        digits = a.removeprefix("sm_").rstrip("af")
        if not digits.isdigit():
            continue
        major, minor = int(digits[:-1]), int(digits[-1])
        if major == cc[0] and minor <= cc[1]:
            return True
    return False


@check("QD-GPU-005", "MIG disabled on deployment GPUs", category="gpu", severity="high")
def mig_disabled(ctx: CheckContext) -> Outcome:
    """A MIG slice is a small, separate device: tensor parallelism cannot span MIG instances."""
    if (reason := _no_gpus(ctx, "gpu.mig")) is not None:
        return reason
    sel = select(ctx)
    mig = [g for g in sel.used if (g.get("mig") or {}).get("current")]
    pending = [g for g in sel.used if (g.get("mig") or {}).get("pending") != (g.get("mig") or {}).get("current")]
    fix = ["sudo nvidia-smi -i <index> -mig 0 (then reset the GPU or reboot)"]
    if mig and sel.world_size > 1:
        return fail(f"MIG is enabled on {', '.join(label(g) for g in mig)} and the deployment spans {sel.world_size} GPUs",
                    details=["NCCL cannot run tensor parallelism across MIG instances."], fix=fix)
    if mig:
        return warn(f"MIG is enabled on {label(mig[0])}: the model must fit in one slice",
                    details=["Qwen3.5-35B-A3B needs ~72 GB (BF16) or ~37 GB (FP8) for weights alone."], fix=fix)
    if pending:
        return warn(f"a MIG mode change is pending on {', '.join(label(g) for g in pending)}",
                    fix=["Reset the GPU (nvidia-smi -r) or reboot to apply it."])
    return ok("MIG is off on every deployment GPU")


@check("QD-GPU-006", "GPU memory health (ECC, row remapping)", category="gpu", severity="high")
def memory_health(ctx: CheckContext) -> Outcome:
    """Uncorrectable ECC errors or failed/pending row remapping mean the GPU needs a reset or service."""
    if (reason := _no_gpus(ctx, "gpu.ecc")) is not None:
        return reason
    bad, details = [], []
    for g in select(ctx).used:
        rows = g.get("remapped_rows") or {}
        dbe = g.get("ecc_uncorrected_volatile")
        if rows.get("failure"):
            bad.append(g)
            details.append(f"{label(g)}: row remapping failed (the GPU needs service)")
        elif rows.get("pending"):
            bad.append(g)
            details.append(f"{label(g)}: a row remap is pending (reset the GPU to apply it)")
        elif isinstance(dbe, int) and dbe > 0:
            bad.append(g)
            details.append(f"{label(g)}: {dbe} uncorrectable ECC error(s) since the last driver load")
    if bad:
        return fail(f"{len(bad)} GPU(s) report memory errors", details=details, remedy_ids=["QD-R-CUDA-ECC"],
                    fix=["Drain the node, run `nvidia-smi -r` on the GPU, then `dcgmi diag -r 2`; "
                         "replace the GPU if row remapping failed."])
    return ok("no uncorrectable ECC errors or pending row remaps")


@check("QD-GPU-007", "Persistence mode on", category="gpu", severity="low")
def persistence_mode(ctx: CheckContext) -> Outcome:
    """Without persistence mode the driver tears down state between processes: slow first CUDA init."""
    if (reason := _no_gpus(ctx, "gpu.persistence_mode")) is not None:
        return reason
    off = [g for g in select(ctx).used if g.get("persistence_mode") is False]
    if off:
        return warn(f"persistence mode is off on {', '.join(label(g) for g in off)}",
                    fix=["sudo nvidia-smi -pm 1  (or enable nvidia-persistenced)"])
    return ok("persistence mode is on (or not reported)")
