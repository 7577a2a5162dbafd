"""Host facts: CPU, RAM, /dev/shm, open-file limit, disk where weights go, Python, container."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

SHM_PATH = Path("/dev/shm")


def probe() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory": _memory(),
        "shm": _disk(SHM_PATH),
        "nofile": _nofile(),
        "weights_dir": _weights_disk(),
        "cached_models": _cached_models(),
        "in_container": _in_container(),
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory() -> dict[str, int] | None:
    try:
        import psutil
    except ImportError:
        return None
    vm = psutil.virtual_memory()
    return {"total": vm.total, "available": vm.available, "free": vm.free, "cached": getattr(vm, "cached", 0)}


def _disk(path: Path) -> dict[str, Any] | None:
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return None
    return {"path": str(path), "total": usage.total, "free": usage.free}


def _nofile() -> dict[str, int] | None:
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"soft": soft, "hard": hard}


def hf_cache_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """Where huggingface_hub stores downloaded weights (HF_HUB_CACHE > HF_HOME/hub > ~/.cache/huggingface/hub)."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "huggingface" / "hub"


def _weights_disk() -> dict[str, Any] | None:
    """Free space where the weights will land: the first existing ancestor of the HF cache dir."""
    target = hf_cache_dir()
    probe_at = target
    while not probe_at.exists() and probe_at != probe_at.parent:
        probe_at = probe_at.parent
    disk = _disk(probe_at)
    if disk is not None:
        disk["cache_dir"] = str(target)
    return disk


def _cached_models(limit: int = 500) -> list[str]:
    """Names of the model repositories in the HF cache (`models--org--name`), without walking their files."""
    try:
        with os.scandir(hf_cache_dir()) as entries:
            names = sorted(e.name for e in entries if e.name.startswith("models--") and e.is_dir())
    except OSError:
        return []
    return names[:limit]


def _in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    try:
        text = Path("/proc/1/cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(word in text for word in ("docker", "kubepods", "containerd", "libpod"))
