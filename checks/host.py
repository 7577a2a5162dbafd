"""Host checks: /dev/shm for NCCL, the open-file limit, disk space for the weights."""

from __future__ import annotations

from doctor.context import CheckContext
from doctor.gpus import GIB, gib, select
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

SHM_MIN = 1 * GIB
SHM_RECOMMENDED = 8 * GIB
NOFILE_RECOMMENDED = 65536
# Checkpoint sizes on disk (shared/reference/qwen35-facts.md, section A): BF16 71.9 GB computed from the
# config; FP8 ~37 GB (third-party FP8 builds: 36.8 GB); GPTQ-Int4 ~21 GB vram minimum (vllm recipes).
WEIGHT_BYTES = {"bf16": 72 * 10**9, "fp8": 37 * 10**9, "int4": 22 * 10**9}
HEADROOM = 1.1
NOT_IN_DUMP = "not recorded (host facts come from `qwen-doctor collect` only)"


@check("QD-HOST-001", "/dev/shm large enough for NCCL", category="host", severity="high")
def shm_size(ctx: CheckContext) -> Outcome:
    """Docker's default 64 MB /dev/shm breaks NCCL's shared-memory transport and vLLM's shm broadcast."""
    if not ctx.facts.knows("host"):
        return skip(NOT_IN_DUMP)
    shm = ctx.facts.host.get("shm")
    if not shm:
        return skip("/dev/shm not found")
    size = shm["total"]
    multi = select(ctx).world_size > 1
    fix = ["docker run --ipc=host ...  (or --shm-size=16g); in Kubernetes mount an emptyDir with medium: Memory "
           "at /dev/shm"]
    evidence = {"shm_bytes": size}
    if size < SHM_MIN:
        msg = f"/dev/shm is {gib(size)}" + (" (Docker's 64 MB default)" if size <= 64 * 1024**2 else "")
        details = ["NCCL fails with: NCCL WARN Error while creating shared memory segment ... (No space left on device)",
                   "vLLM fails with: Insufficient space in /dev/shm"]
        return (fail if multi else warn)(msg, details=details, fix=fix, evidence=evidence,
                                         remedy_ids=["QD-R-NCCL-SHM-NO-SPACE", "QD-R-VLLM-SHM-BROADCAST"])
    if size < SHM_RECOMMENDED:
        return warn(f"/dev/shm is {gib(size)}, below the {gib(SHM_RECOMMENDED)} recommended for multi-GPU serving",
                    fix=fix, evidence=evidence)
    return ok(f"/dev/shm is {gib(size)}", evidence=evidence)


@check("QD-HOST-002", "Open-file limit", category="host", severity="medium")
def open_files(ctx: CheckContext) -> Outcome:
    """Serving thousands of connections, Ray and NCCL all need file descriptors: 1024 runs out."""
    if not ctx.facts.knows("host"):
        return skip(NOT_IN_DUMP)
    nofile = ctx.facts.host.get("nofile")
    if not nofile:
        return skip("open-file limit not recorded")
    soft, hard = nofile["soft"], nofile["hard"]
    if soft < NOFILE_RECOMMENDED:
        return warn(f"ulimit -n is {soft} (hard {hard}), below {NOFILE_RECOMMENDED}",
                    details=["Symptom: 'OSError: [Errno 24] Too many open files' under load."],
                    fix=[f"ulimit -n {NOFILE_RECOMMENDED} before starting (raise the hard limit in "
                         "/etc/security/limits.conf or the container runtime's --ulimit nofile=65536:65536)."],
                    evidence=nofile)
    return ok(f"ulimit -n is {soft}", evidence=nofile)


def _checkpoint_kind(model: str) -> str:
    low = model.lower()
    if "fp8" in low:
        return "fp8"
    if "int4" in low or "gptq" in low or "awq" in low:
        return "int4"
    return "bf16"


@check("QD-HOST-003", "Disk space for the weights", category="host", severity="high")
def weights_disk(ctx: CheckContext) -> Outcome:
    """The checkpoint must fit where huggingface_hub downloads it (HF_HUB_CACHE / HF_HOME)."""
    if not ctx.facts.knows("host"):
        return skip(NOT_IN_DUMP)
    disk = ctx.facts.host.get("weights_dir")
    if not disk:
        return skip("weights directory not recorded")
    model = str(ctx.option("model") or "Qwen/Qwen3.5-35B-A3B")
    if "/" in model and ctx.facts.host.get("cached_models") and \
            f"models--{model.replace('/', '--')}" in ctx.facts.host["cached_models"]:
        return ok(f"{model} is already in the cache at {disk.get('cache_dir')}")
    need = int(WEIGHT_BYTES[_checkpoint_kind(model)] * HEADROOM)
    where = disk.get("cache_dir") or disk["path"]
    evidence = {"free": disk["free"], "needed": need, "model": model}
    if disk["free"] < need:
        return fail(f"{gib(disk['free'])} free at {where}, {model} needs about {gib(need)}", remedy_ids=["QD-R-HF-DISK-FULL"],
                    fix=["Free space, or point HF_HOME / HF_HUB_CACHE at a larger volume before downloading."],
                    evidence=evidence)
    return ok(f"{gib(disk['free'])} free at {where} (needs ~{gib(need)} for {model})", evidence=evidence)
