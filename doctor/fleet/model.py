"""The `fleet` section of a facts document, and typed access to it for the fleet checks.

Shape: {"engine": "ray"|"spark", "target", "status": "ok"|"error"|"timeout", "error", "seconds",
"cluster": {...engine facts...}, "nodes": [{"node_id", "hostname", "ip", "status": "ok"|"timeout"|"error"|"dead",
"error", "resources", "facts": <a facts document as `collect` writes it>}]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from doctor.errors import BadBundle
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


def checked(fleet: Any, source: str, parsed: bool = False) -> dict[str, Any]:
    """The fleet section with every node's facts validated on its own.

    A section the checks could not read at all is a one-line BadBundle; a node whose facts do not validate (garbage
    from the node, another qwen-doctor's schema) becomes that node's `error`, so the other nodes are still checked.
    """
    from doctor.facts import schema

    schema.validate(fleet, source, part="fleet", root=("fleet",), parsed=parsed)
    out = dict(fleet)
    out["nodes"] = [_checked_node(n, parsed) for n in fleet.get("nodes") or []]
    return out


def _checked_node(node: dict[str, Any], parsed: bool) -> dict[str, Any]:
    data = node.get("facts")
    if not data:
        return node
    try:
        Facts.from_dict(data, source="facts", parsed=parsed)
    except BadBundle as exc:
        return {**node, "status": "error", "facts": None,
                "error": f"the node returned facts that do not validate: {exc}"[:300]}
    return node
