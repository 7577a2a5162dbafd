"""Topology checks for the tensor-parallel group: NVLink between every pair, links up, P2P available."""

from __future__ import annotations

from typing import Any

from doctor.context import CheckContext
from doctor.gpus import label, select
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

# What nvmlDeviceGetTopologyCommonAncestor's levels mean for a PCIe-only pair.
PCIE_LEVELS = {
    "INTERNAL": "same board",
    "SINGLE": "one PCIe switch",
    "MULTIPLE": "several PCIe switches",
    "HOSTBRIDGE": "the PCIe host bridge",
    "NODE": "host bridges within one NUMA node",
    "SYSTEM": "the CPU interconnect (SMP/UPI/xGMI) between sockets",
}


# One NVLink domain at most (GB200 NVL72): a larger tensor-parallel group means --tp was not given, and checking
# every pair of thousands of GPUs would take minutes for nothing.
MAX_PAIRWISE_GPUS = 72


def _used(ctx: CheckContext) -> tuple[list[dict[str, Any]], Outcome | None]:
    if not ctx.facts.nvml_available:
        return [], skip("no NVIDIA driver (see QD-DRV-001)")
    used = select(ctx).used
    if len(used) < 2:
        return [], skip("single-GPU deployment: no tensor-parallel traffic between GPUs")
    return used, None


def _group(ctx: CheckContext) -> tuple[list[list[dict[str, Any]]], Outcome | None]:
    """The tensor-parallel groups of the deployment (consecutive `tp` GPUs; all of them without --tp)."""
    used, reason = _used(ctx)
    if reason:
        return [], reason
    tp = int(ctx.option("tp") or ctx.option("tensor_parallel_size") or 0)
    size = tp if tp > 0 else len(used)
    groups = [g for g in (used[i:i + size] for i in range(0, len(used), size)) if len(g) > 1]
    if not groups:
        return [], skip("tensor-parallel size 1: no tensor-parallel traffic between GPUs")
    biggest = max(len(g) for g in groups)
    if biggest > MAX_PAIRWISE_GPUS:
        return [], skip(f"{biggest} GPUs in one tensor-parallel group: too many to check pairwise "
                        f"(limit {MAX_PAIRWISE_GPUS}, one NVLink domain); pass --tp")
    return groups, None


def _pair(ctx: CheckContext, a: int, b: int) -> dict[str, Any] | None:
    return ctx.facts.topology_pair(a, b)


def _pairs(groups: list[list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every pair of GPUs inside one tensor-parallel group (the pairs TP all-reduces cross)."""
    return [(x, y) for used in groups for i, x in enumerate(used) for y in used[i + 1:]]


@check("QD-TOPO-001", "Tensor-parallel GPUs connected by NVLink", category="topology", severity="medium")
def tp_on_nvlink(ctx: CheckContext) -> Outcome:
    """Every TP all-reduce crosses every pair: PCIe-only or cross-socket pairs cut decode throughput."""
    groups, reason = _group(ctx)
    if reason:
        return reason
    pairs = _pairs(groups)
    slow: list[str] = []
    unknown: list[str] = []
    for x, y in pairs:
        pair = _pair(ctx, x["index"], y["index"])
        if pair is None:
            unknown.append(f"{label(x)}-{label(y)}")
            continue
        if (pair.get("p2p") or {}).get("nvlink") == "ok":
            continue
        level = pair.get("common_ancestor") or "unknown"
        slow.append(f"GPU{x['index']}-GPU{y['index']}: PCIe only, through {PCIE_LEVELS.get(level, level)}")
    if unknown and not slow:
        more = f" and {len(unknown) - 4} more" if len(unknown) > 4 else ""
        return skip(f"topology not recorded for {', '.join(unknown[:4])}{more}")
    if slow:
        cross_socket = any("CPU interconnect" in s for s in slow)
        return warn(
            f"{len(slow)} of {len(pairs)} TP pairs have no NVLink" + (" (some cross CPU sockets)" if cross_socket else ""),
            details=slow + ["Each decode step all-reduces every layer's output across the TP group: PCIe Gen5 x16 "
                            "gives ~64 GB/s per direction against ~450 GB/s of NVLink 4; vLLM also disables its "
                            "custom all-reduce without P2P over NVLink."],
            fix=["Pick GPUs that share NVLink (`nvidia-smi topo -m`, NV# entries) with CUDA_VISIBLE_DEVICES.",
                 "Or use fewer TP ranks and data parallelism (-dp / --dp-size) instead."],
        )
    return ok(f"all {len(pairs)} TP pairs connected by NVLink")


@check("QD-TOPO-002", "NVLink links up on every TP GPU", category="topology", severity="high")
def nvlinks_up(ctx: CheckContext) -> Outcome:
    """A link down on one GPU while its peers have theirs up is a hardware or fabric fault, not a design choice."""
    used, reason = _used(ctx)
    if reason:
        return reason
    with_links = [g for g in used if any(l.get("state") in ("active", "inactive") for l in g.get("nvlink") or [])]
    if not with_links:
        return skip("no NVLink reported on the deployment GPUs")
    active = {g["index"]: sum(1 for l in g["nvlink"] if l.get("state") == "active") for g in with_links}
    expected = max(active.values())
    degraded = [g for g in with_links if active[g["index"]] < expected]
    if degraded:
        details = [f"{label(g)}: {active[g['index']]} of {expected} links active "
                   f"(down: {', '.join(str(l['link']) for l in g['nvlink'] if l.get('state') == 'inactive')})"
                   for g in degraded]
        return fail(f"{len(degraded)} GPU(s) have NVLink links down that their peers have up", details=details,
                    fix=["Check `nvidia-smi nvlink -s` and `nvidia-smi nvlink -e` for errors; on NVSwitch systems "
                         "check nvidia-fabricmanager (`systemctl status nvidia-fabricmanager`).",
                         "Reset the GPU or drain the node; exclude it with CUDA_VISIBLE_DEVICES meanwhile."])
    return ok(f"{expected} NVLink links active on each of {len(with_links)} GPUs")


@check("QD-TOPO-003", "Peer-to-peer access between TP GPUs", category="topology", severity="high")
def p2p_available(ctx: CheckContext) -> Outcome:
    """Without P2P, NCCL stages every transfer through host memory and vLLM's custom all-reduce is off."""
    groups, reason = _group(ctx)
    if reason:
        return reason
    pairs = _pairs(groups)
    blocked, unknown = [], 0
    for x, y in pairs:
        pair = _pair(ctx, x["index"], y["index"])
        status = ((pair or {}).get("p2p") or {}).get("read")
        if status is None:
            unknown += 1
        elif status != "ok":
            blocked.append(f"GPU{x['index']}-GPU{y['index']}: {status}")
    if blocked:
        return fail(f"P2P unavailable for {len(blocked)} TP pair(s)", details=blocked,
                    fix=["In VMs enable P2P / ACS passthrough; on bare metal disable PCIe ACS in the BIOS.",
                         "If it cannot be fixed: NCCL_P2P_DISABLE=1 makes NCCL skip P2P (slow but correct)."])
    if unknown:
        return skip(f"P2P status not recorded for {unknown} pair(s)")
    return ok(f"P2P available between all {len(pairs)} TP pairs")
