"""Whether the nodes reach each other over TCP on the address NCCL uses on each of them (`fleet.reachability`,
measured by doctor/fleet/reach.py through Ray tasks: each node listens briefly, every other node connects).

NCCL's bootstrap and socket transport, and torch.distributed's TCPStore / Gloo, all open TCP connections between
the nodes on these addresses; a blocked port or a wrong interface ends in 'NCCL WARN socketProgress ... Connection
refused' or a hang at the first collective (NCCL src/misc/socket.cc; torch distributed/c10d TCPStore).
"""

from __future__ import annotations

from typing import Any, Iterator

from checks.fleet import NO_FLEET
from doctor.context import CheckContext
from doctor.fleet.model import fleet_of, nodes
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

FIX = ("Open TCP between the nodes on the inter-node network (firewall / security group: all ports between the "
       "nodes, or at least the NCCL, Gloo and dist-init ports), and point NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
       "at the interface that links them.")


def _section(fleet: dict[str, Any]) -> dict[str, Any] | None:
    section = fleet.get("reachability")
    return section if isinstance(section, dict) and isinstance(section.get("pairs"), list) else None


@check("QD-FLEET-011", "Nodes reach each other over TCP on NCCL's interface", category="fleet", severity="high")
def fleet_reachability(ctx: CheckContext) -> Iterator[Outcome]:
    """One result per unreachable pair (and per node that could not be probed); one ok when every pair connects."""
    fleet = fleet_of(ctx.facts)
    if fleet is None:
        yield skip(NO_FLEET)
        return
    section = _section(fleet)
    if section is None:
        yield skip("no reachability probe in these facts (a Spark fleet, one node, or an older bundle)")
        return
    labels = {n.node_id: n.label for n in nodes(fleet)}
    name = lambda node_id: labels.get(str(node_id), str(node_id)[:12])  # noqa: E731
    if section.get("error"):
        yield warn(f"the reachability probe failed: {section['error']}", evidence={"error": section["error"]})
    for node_id, why in sorted((section.get("skipped") or {}).items()):
        yield warn(f"not probed: {why}", subject=name(node_id), fix=[FIX])
    pairs = [p for p in section["pairs"] if isinstance(p, dict)]
    broken = [p for p in pairs if not p.get("ok")]
    for p in broken:
        yield fail(f"{name(p.get('from'))} cannot open a TCP connection to {p.get('address')}: {p.get('error')}",
                   subject=f"{name(p.get('from'))} -> {name(p.get('to'))}", evidence=p, fix=[FIX])
    if pairs and not broken:
        slowest = max((p.get("ms") or 0.0) for p in pairs)
        yield ok(f"{len(pairs)} node pair(s) connect on NCCL's addresses (slowest connect {slowest:g} ms)",
                 evidence={"targets": section.get("targets"), "pairs": len(pairs)})
    elif not pairs and not section.get("skipped") and not section.get("error"):
        yield skip("fewer than two nodes to probe")
