"""The `fleet` section of a facts document, and typed access to it for the fleet checks.

Shape: {"engine": "ray"|"spark", "target", "status": "ok"|"error"|"timeout", "error", "seconds",
"cluster": {...engine facts...}, "nodes": [{"node_id", "hostname", "ip", "status": "ok"|"timeout"|"error"|"dead",
"error", "resources", "facts": <a facts document as `collect` writes it>}]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from doctor.facts.model import Facts

ENGINES = ("ray", "spark")
NODE_STATUSES = ("ok", "timeout", "error", "dead")


@dataclass(frozen=True)
class Node:
    """One node (Ray) or executor task (Spark) of the fleet, with its own facts when it answered."""

    label: str
    node_id: str
    hostname: str | None
    ip: str | None
    status: str
    error: str | None
    resources: dict[str, float]
    facts: Facts | None
    raw: dict[str, Any]

    @property
    def answered(self) -> bool:
        return self.status == "ok" and self.facts is not None


def fleet_of(facts: Facts) -> dict[str, Any] | None:
    """The fleet section, or None for a single-machine bundle."""
    fleet = facts.data.get("fleet")
    return fleet if isinstance(fleet, dict) else None


def nodes(fleet: dict[str, Any]) -> list[Node]:
    """Nodes with unique labels (hostname, or hostname/short id when several share a host)."""
    raw_nodes = [n for n in fleet.get("nodes") or [] if isinstance(n, dict)]
    hosts = [n.get("hostname") or n.get("ip") or "?" for n in raw_nodes]
    out = []
    for n, host in zip(raw_nodes, hosts):
        node_id = str(n.get("node_id") or "?")
        label = host if hosts.count(host) == 1 else f"{host}/{node_id[:8]}"
        data = n.get("facts")
        out.append(Node(label, node_id, n.get("hostname"), n.get("ip"), str(n.get("status")), n.get("error"),
                        dict(n.get("resources") or {}), Facts(data) if isinstance(data, dict) and data else None, n))
    return out

