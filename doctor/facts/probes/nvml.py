"""NVIDIA facts through NVML (nvidia-ml-py): driver, GPUs, memory, MIG, ECC, processes, NVLink, topology."""

from __future__ import annotations

import itertools
from typing import Any, Callable

TOPOLOGY_NAMES = {0: "INTERNAL", 10: "SINGLE", 20: "MULTIPLE", 30: "HOSTBRIDGE", 40: "NODE", 50: "SYSTEM"}
P2P_STATUS_NAMES = {
    0: "ok",
    1: "chipset_not_supported",
    2: "gpu_not_supported",
    3: "ioh_topology_not_supported",
    4: "disabled_by_regkey",
    5: "not_supported",
    6: "unknown",
}
MAX_NVLINKS = 18


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _err(exc: BaseException) -> str:
    return type(exc).__name__


def _call(errors: dict[str, str], key: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run one NVML call; a failure is recorded under `key` and yields None."""
    try:
        return fn(*args)
    except Exception as exc:  # NVMLError subclasses, or ctypes problems on odd drivers
        errors[key] = _err(exc)
        return None


def probe() -> dict[str, Any]:
    """Read every GPU through NVML. No driver or no library gives `available: false` with the reason."""
    try:
        import pynvml
    except ImportError:
        return {"available": False, "error": "nvidia-ml-py (pynvml) is not installed", "gpus": [], "topology": []}
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        reason = {
            "NVMLError_LibraryNotFound": "NVML library not found (no NVIDIA driver installed)",
            "NVMLError_DriverNotLoaded": "NVIDIA driver is not loaded",
            "NVMLError_NoPermission": "no permission to talk to the NVIDIA driver",
        }.get(_err(exc), f"NVML init failed: {_err(exc)}: {exc}")
        return {"available": False, "error": reason, "gpus": [], "topology": []}
    try:
        return _read_all(pynvml)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _read_all(nv: Any) -> dict[str, Any]:
    errors: dict[str, str] = {}
    driver = _call(errors, "driver_version", nv.nvmlSystemGetDriverVersion)
    cuda = _call(errors, "cuda_driver_version", nv.nvmlSystemGetCudaDriverVersion)
    nvml_version = _call(errors, "nvml_version", nv.nvmlSystemGetNVMLVersion)
    count = _call(errors, "device_count", nv.nvmlDeviceGetCount) or 0
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    gpus = [_read_gpu(nv, i, h) for i, h in enumerate(handles)]
    return {
        "available": True,
        "error": None,
        "driver_version": _text(driver) if driver is not None else None,
        "cuda_driver_version": f"{cuda // 1000}.{(cuda % 1000) // 10}" if cuda else None,
        "nvml_version": _text(nvml_version) if nvml_version is not None else None,
        "gpus": gpus,
        "topology": _read_pairs(nv, handles),
        "errors": errors,
    }


def _read_gpu(nv: Any, index: int, h: Any) -> dict[str, Any]:
    errors: dict[str, str] = {}
    cc = _call(errors, "compute_capability", nv.nvmlDeviceGetCudaComputeCapability, h)
    mem = _call(errors, "memory", nv.nvmlDeviceGetMemoryInfo, h)
    pci = _call(errors, "pci", nv.nvmlDeviceGetPciInfo, h)
    mig = _call(errors, "mig_mode", nv.nvmlDeviceGetMigMode, h)
    ecc = _call(errors, "ecc_mode", nv.nvmlDeviceGetEccMode, h)
    persistence = _call(errors, "persistence_mode", nv.nvmlDeviceGetPersistenceMode, h)
    name = _call(errors, "name", nv.nvmlDeviceGetName, h)
    uuid = _call(errors, "uuid", nv.nvmlDeviceGetUUID, h)
    ecc_dbe = _call(
        errors, "ecc_uncorrected_volatile", nv.nvmlDeviceGetTotalEccErrors, h,
        nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC,
    )
    remapped = _call(errors, "remapped_rows", nv.nvmlDeviceGetRemappedRows, h)
    gpu: dict[str, Any] = {
        "index": index,
        "name": _text(name) if name is not None else None,
        "uuid": _text(uuid) if uuid is not None else None,
        "pci_bus_id": _text(pci.busId) if pci is not None else None,
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory": {"total": mem.total, "free": mem.free, "used": mem.used} if mem is not None else None,
        "mig": {"current": bool(mig[0]), "pending": bool(mig[1])} if mig is not None else None,
        "ecc": {"current": bool(ecc[0]), "pending": bool(ecc[1])} if ecc is not None else None,
        "ecc_uncorrected_volatile": ecc_dbe,
        "remapped_rows": _remapped(remapped),
        "persistence_mode": bool(persistence) if persistence is not None else None,
        "processes": _processes(nv, h, errors),
        "nvlink": _nvlinks(nv, h),
    }
    if gpu["mig"] and gpu["mig"]["current"]:
        gpu["mig_devices"] = _mig_devices(nv, h)
    gpu["errors"] = errors
    return gpu


def _remapped(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    corr, unc, pending, failure = value
    return {"correctable": corr, "uncorrectable": unc, "pending": bool(pending), "failure": bool(failure)}


def _processes(nv: Any, h: Any, errors: dict[str, str]) -> list[dict[str, Any]]:
    procs = _call(errors, "processes", nv.nvmlDeviceGetComputeRunningProcesses, h) or []
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        out.append({"pid": p.pid, "used_memory": used if isinstance(used, int) and used < 2**63 else None,
                    "name": _process_name(p.pid)})
    return out


def _process_name(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _nvlinks(nv: Any, h: Any) -> list[dict[str, Any]]:
    """Every NVLink the GPU reports: its state and the PCI bus id of the peer at its far end."""
    links = []
    for link in range(MAX_NVLINKS):
        try:
            state = nv.nvmlDeviceGetNvLinkState(h, link)
        except Exception as exc:
            if link == 0:
                return [{"link": 0, "state": "unsupported", "error": _err(exc)}]
            break
        entry: dict[str, Any] = {"link": link, "state": "active" if state else "inactive", "remote_pci_bus_id": None}
        try:
            entry["remote_pci_bus_id"] = _text(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId)
        except Exception:
            pass
        links.append(entry)
    return links


def _mig_devices(nv: Any, h: Any) -> list[dict[str, Any]]:
    out = []
    try:
        count = nv.nvmlDeviceGetMaxMigDeviceCount(h)
    except Exception:
        return out
    for i in range(count):
        try:
            mh = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
        except Exception:
            continue
        mem = nv.nvmlDeviceGetMemoryInfo(mh)
        out.append({"uuid": _text(nv.nvmlDeviceGetUUID(mh)), "memory_total": mem.total})
    return out


def _read_pairs(nv: Any, handles: list[Any]) -> list[dict[str, Any]]:
    """Pairwise common ancestor and P2P capability (read, NVLink) for every GPU pair."""
    pairs = []
    for (a, ha), (b, hb) in itertools.combinations(enumerate(handles), 2):
        errors: dict[str, str] = {}
        level = _call(errors, "common_ancestor", nv.nvmlDeviceGetTopologyCommonAncestor, ha, hb)
        p2p = {}
        for cap, index in (("read", nv.NVML_P2P_CAPS_INDEX_READ), ("nvlink", nv.NVML_P2P_CAPS_INDEX_NVLINK)):
            status = _call(errors, f"p2p_{cap}", nv.nvmlDeviceGetP2PStatus, ha, hb, index)
            p2p[cap] = P2P_STATUS_NAMES.get(status, str(status)) if status is not None else None
        pairs.append({
            "a": a, "b": b,
            "common_ancestor": TOPOLOGY_NAMES.get(level, str(level)) if level is not None else None,
            "p2p": p2p, "errors": errors,
        })
    return pairs
