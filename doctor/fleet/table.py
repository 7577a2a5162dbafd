"""Per-node columns for the report: one row per fact, one column per node (rendered by doctor/report/text.py)."""

from __future__ import annotations

from typing import Any, Callable

from doctor.facts.model import Facts
from doctor.fleet.model import Node, fleet_of, nodes
from doctor.gpus import gib

ROWS: list[tuple[str, Callable[[Node], Any]]] = [
    ("status", lambda n: n.status if n.answered else f"{n.status}: {n.error or ''}"[:60]),
    ("ip", lambda n: n.ip),
    ("GPUs (NVML)", lambda n: len(n.facts.gpus) if n.facts else None),
    ("GPUs (scheduler)", lambda n: n.resources.get("GPU")),
    ("driver", lambda n: n.facts.nvml.get("driver_version") if n.facts else None),
    ("python", lambda n: n.facts.host.get("python") if n.facts else None),
    ("ray", lambda n: n.facts.package_version("ray") if n.facts else None),
    ("torch", lambda n: n.facts.package_version("torch") if n.facts else None),
    ("vllm", lambda n: n.facts.package_version("vllm") if n.facts else None),
    ("sglang", lambda n: n.facts.package_version("sglang") if n.facts else None),
    ("/dev/shm", lambda n: gib((n.facts.host.get("shm") or {}).get("total")) if n.facts and n.facts.host.get("shm") else None),
    ("HF_ENDPOINT", lambda n: n.facts.env.get("HF_ENDPOINT") if n.facts else None),
    ("HF_HUB_OFFLINE", lambda n: n.facts.env.get("HF_HUB_OFFLINE") if n.facts else None),
]


def node_table(facts: Facts) -> dict[str, Any] | None:
    """{'engine', 'columns': [node labels], 'rows': [{'name', 'values'}]}, or None without a fleet."""
    fleet = fleet_of(facts)
    if fleet is None:
        return None
    fleet_nodes = nodes(fleet)
    return {
        "engine": fleet["engine"], "target": fleet.get("target"), "status": fleet.get("status"),
        "columns": [n.label for n in fleet_nodes],
        "rows": [{"name": name, "values": [_text(get(n)) for n in fleet_nodes]} for name, get in ROWS],
    }


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)

