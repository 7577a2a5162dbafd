"""Network interfaces, RDMA devices and GPUDirect support of this machine: what NCCL and Gloo will see.

Read from psutil (addresses, MTU, up/down), /sys/class/infiniband (devices, port state, link layer, GIDs and
their RoCE type) and /sys/module (nvidia_peermem for GPUDirect RDMA). Nothing is configured or opened."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import psutil

SYS_IB = Path("/sys/class/infiniband")
SYS_MODULE = Path("/sys/module")
MAX_GIDS = 32
RESOLVE_TIMEOUT_S = 2.0


def probe() -> dict[str, Any]:
    hostname = socket.gethostname()
    return {"interfaces": interfaces(), "rdma": rdma_devices(), "hostname_ips": resolve(hostname),
            "gpudirect": {"nvidia_peermem": (SYS_MODULE / "nvidia_peermem").is_dir(),
                          "nv_peer_mem": (SYS_MODULE / "nv_peer_mem").is_dir()}}


def interfaces() -> list[dict[str, Any]]:
    stats = psutil.net_if_stats()
    addrs = psutil.net_if_addrs()
    out = []
    for name in sorted(set(stats) | set(addrs)):
        st = stats.get(name)
        ipv4 = [f"{a.address}/{_prefix(a.netmask)}" for a in addrs.get(name, []) if a.family == socket.AF_INET]
        ipv6 = [a.address.split("%")[0] for a in addrs.get(name, []) if a.family == socket.AF_INET6]
        out.append({"name": name, "up": bool(st and st.isup), "mtu": st.mtu if st else None,
                    "speed_mbps": st.speed if st and st.speed else None, "ipv4": ipv4, "ipv6": ipv6})
    return out


def _prefix(netmask: str | None) -> int:
    if not netmask:
        return 32
    try:
        return sum(bin(int(part)).count("1") for part in netmask.split("."))
    except ValueError:
        return 32


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def rdma_devices(root: Path = SYS_IB) -> list[dict[str, Any]]:
    """Every RDMA device with its ports: state, link layer (InfiniBand / Ethernet = RoCE), rate, RoCE GIDs."""
    if not root.is_dir():
        return []
    devices = []
    for device in sorted(root.iterdir())[:64]:
        ports = []
        for port in sorted((device / "ports").glob("*"))[:8]:
            gids = []
            for index in range(MAX_GIDS):
                gid = _read(port / "gids" / str(index))
                if not gid or gid == "0000:0000:0000:0000:0000:0000:0000:0000":
                    continue
                gids.append({"index": index, "gid": gid, "type": _read(port / "gid_attrs" / "types" / str(index))})
            ports.append({"port": int(port.name) if port.name.isdigit() else port.name,
                          "state": _read(port / "state"), "link_layer": _read(port / "link_layer"),
                          "rate": _read(port / "rate"), "gids": gids})
        devices.append({"name": device.name, "ports": ports})
    return devices


def resolve(hostname: str, timeout_s: float = RESOLVE_TIMEOUT_S) -> list[str]:
    """The addresses the host's own name resolves to, bounded by a timeout (a dead DNS server must not hang us)."""
    found: list[str] = []

    def lookup() -> None:
        try:
            found.extend(sorted({info[4][0] for info in socket.getaddrinfo(hostname, None)}))
        except OSError:
            pass

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return list(found)
