"""The network the engines use between nodes: the interface NCCL and Gloo pick, MTU, InfiniBand / RoCE GID
indexes and GPUDirect RDMA, per node and across the fleet; and the socket variables of this machine.

The interface rules are NCCL's and Gloo's own (doctor/net/nccl_if.py cites them). Facts come from the `netif`
probe of each node (doctor/facts/probes/netif.py); bundles recorded before that probe existed skip.
"""

from __future__ import annotations

from typing import Any, Iterator

from checks.fleet import _answered_nodes
from doctor.context import CheckContext
from doctor.facts.model import Facts
from doctor.fleet.model import Node
from doctor.net.nccl_if import addresses_of, gloo_problem, nccl_choice, roce_v2_gid_indexes, share_a_subnet
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

NO_NETIF = "no network-interface facts (bundle recorded before qwen-doctor collected them)"
SOCKET_FIX = ("Name the interface that links the nodes on every node: NCCL_SOCKET_IFNAME=<if> and "
              "GLOO_SOCKET_IFNAME=<if> in the environment of `ray start` (or the engine's launch) on each node; "
              "`ip -br addr` lists the interfaces.")


def _netif(facts: Facts) -> dict[str, Any] | None:
    section = facts.data.get("netif")
    return section if isinstance(section, dict) and isinstance(section.get("interfaces"), list) else None


def _fleet_nodes(ctx: CheckContext) -> list[Node] | Outcome:
    """The answering nodes that reported their interfaces, or the skip that says why there are none."""
    answered = _answered_nodes(ctx)
    if isinstance(answered, Outcome):
        return answered
    with_netif = [n for n in answered if _netif(n.facts) is not None]
    return with_netif or skip("no node reported its network interfaces (see QD-FLEET-001)")


@check("QD-NET-004", "NCCL / Gloo socket variables name real interfaces", category="network", severity="high")
def socket_variables(ctx: CheckContext) -> Outcome:
    """NCCL_SOCKET_IFNAME with no matching interface aborts NCCL's bootstrap ('no socket interface found');
    a loopback-resolving host name without GLOO_SOCKET_IFNAME breaks Gloo across nodes."""
    netif = _netif(ctx.facts)
    if netif is None:
        return skip(NO_NETIF)
    env = ctx.facts.env
    choice = nccl_choice(netif["interfaces"], env)
    evidence = {"nccl": list(choice.names), "rule": choice.rule}
    if choice.error:
        return fail(choice.error, evidence=evidence,
                    fix=[SOCKET_FIX, "NCCL_SOCKET_IFNAME takes prefixes (eth), exact names (=eth0) or exclusions "
                                     "(^docker,lo)."])
    gloo = gloo_problem(netif.get("hostname_ips") or [], env, netif["interfaces"])
    if gloo and "GLOO_SOCKET_IFNAME" in env:
        return fail(gloo, evidence=evidence, fix=[SOCKET_FIX])
    summary = f"NCCL uses {', '.join(choice.names)} ({choice.rule})"
    details = [f"Across nodes this would break: {gloo} (QD-FLEET-007 checks every node of a fleet)."] if gloo else []
    return ok(summary, details=details, evidence=evidence)


@check("QD-FLEET-007", "NCCL and Gloo pick reachable interfaces on every node", category="fleet", severity="high")
def fleet_interfaces(ctx: CheckContext) -> Iterator[Outcome]:
    """Per node: the interfaces NCCL will use (not loopback or docker when there are several nodes), Gloo's
    address, and whether the nodes' NCCL addresses share a network with the first node's."""
    answered = _fleet_nodes(ctx)
    if isinstance(answered, Outcome):
        yield answered
        return
    several = len(answered) > 1
    first: tuple[str, list[str]] | None = None
    for node in answered:
        netif = _netif(node.facts)
        env = node.facts.env
        choice = nccl_choice(netif["interfaces"], env)
        addresses = addresses_of(netif["interfaces"], choice.names)
        evidence = {"nccl": list(choice.names), "rule": choice.rule, "addresses": addresses}
        if choice.error:
            yield fail(choice.error, subject=node.label, evidence=evidence, fix=[SOCKET_FIX])
            continue
        if several and choice.rule.startswith(("docker", "loopback")):
            yield fail(f"NCCL would use {', '.join(choice.names)} ({choice.rule}): other nodes cannot reach it",
                       subject=node.label, evidence=evidence, fix=[SOCKET_FIX])
            continue
        gloo = gloo_problem(netif.get("hostname_ips") or [], env, netif["interfaces"])
        if gloo and several:
            yield fail(f"Gloo: {gloo}", subject=node.label, evidence=evidence,
                       fix=[SOCKET_FIX, "Or map the host name to the node's real address in /etc/hosts."])
            continue
        if first is None:
            first = (node.label, addresses)
        elif addresses and first[1] and not share_a_subnet(first[1], addresses):
            yield warn(f"NCCL uses {', '.join(choice.names)} {', '.join(addresses)}, not in the network of "
                       f"{first[0]}'s {', '.join(first[1])}: traffic is routed, or the wrong NIC was picked",
                       subject=node.label, evidence=evidence, fix=[SOCKET_FIX])
            continue
        yield ok(f"NCCL uses {', '.join(choice.names)} {', '.join(addresses)} ({choice.rule})",
                 subject=node.label, evidence=evidence)


@check("QD-FLEET-008", "MTU equal on the interfaces NCCL uses", category="fleet", severity="medium")
def fleet_mtu(ctx: CheckContext) -> Outcome:
    """Different MTUs on the two ends (9000 jumbo frames on one node, 1500 on another) stall large NCCL transfers."""
    answered = _fleet_nodes(ctx)
    if isinstance(answered, Outcome):
        return answered
    mtus: dict[str, list[int]] = {}
    for node in answered:
        netif = _netif(node.facts)
        names = nccl_choice(netif["interfaces"], node.facts.env).names
        mtus[node.label] = sorted({i["mtu"] for i in netif["interfaces"] if i["name"] in names and i.get("mtu")})
    distinct = {m for values in mtus.values() for m in values}
    evidence = {"mtu": mtus}
    if len(distinct) > 1:
        return warn("MTU differs: " + ", ".join(f"{label} {'/'.join(map(str, v)) or '?'}" for label, v in mtus.items()),
                    evidence=evidence, fix=["Set one MTU on every node's NCCL interface and on the switch ports "
                                            "(`ip link set dev IF mtu 9000` everywhere, or 1500 everywhere)."])
    return ok(f"MTU {distinct.pop() if distinct else '?'} on every node", evidence=evidence)


def _active_rdma(netif: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": d.get("name"), "ports": [p for p in d.get("ports") or [] if "ACTIVE" in str(p.get("state"))]}
            for d in netif.get("rdma") or [] if any("ACTIVE" in str(p.get("state")) for p in d.get("ports") or [])]


@check("QD-FLEET-009", "InfiniBand / RoCE devices and GID index consistent", category="fleet", severity="medium")
def fleet_rdma(ctx: CheckContext) -> Iterator[Outcome]:
    """Every node or none with an active RDMA port (else NCCL mixes IB and sockets); for RoCE, the GID index
    NCCL_IB_GID_INDEX names must be a RoCE v2 IPv4 GID on every node."""
    answered = _fleet_nodes(ctx)
    if isinstance(answered, Outcome):
        yield answered
        return
    active = {n.label: _active_rdma(_netif(n.facts)) for n in answered}
    with_rdma = [label for label, devices in active.items() if devices]
    if not with_rdma:
        yield skip("no node has an active InfiniBand / RoCE port: NCCL uses TCP sockets")
        return
    if len(with_rdma) < len(active):
        without = [label for label in active if label not in with_rdma]
        yield warn(f"active RDMA ports on {', '.join(with_rdma)} but not on {', '.join(without)}",
                   evidence={"rdma": {k: [d['name'] for d in v] for k, v in active.items()}},
                   fix=["Bring the HCA up on every node (`ibstat`, `ibv_devinfo`), or set NCCL_IB_DISABLE=1 "
                        "everywhere to use sockets consistently."])
    for node in answered:
        devices = active[node.label]
        if not devices:
            continue
        roce = {k: v for k, v in roce_v2_gid_indexes(devices).items()
                if any(p.get("link_layer") == "Ethernet" for d in devices for p in d["ports"])}
        env_index = node.facts.env.get("NCCL_IB_GID_INDEX")
        evidence = {"devices": [d["name"] for d in devices], "roce_v2_ipv4_gids": roce, "NCCL_IB_GID_INDEX": env_index}
        if not roce:
            yield ok(f"InfiniBand {', '.join(d['name'] for d in devices)} active", subject=node.label, evidence=evidence)
            continue
        if env_index is not None:
            bad = [port for port, indexes in roce.items() if indexes and env_index.isdigit()
                   and int(env_index) not in indexes]
            if bad:
                yield fail(f"NCCL_IB_GID_INDEX={env_index} is not a RoCE v2 IPv4 GID on {', '.join(bad)} "
                           f"(those are {', '.join(f'{p}: {roce[p]}' for p in bad)})", subject=node.label,
                           evidence=evidence, fix=["Set NCCL_IB_GID_INDEX to the RoCE v2 IPv4 index of this node "
                                                   "(`show_gids`), or leave it unset on NCCL >= 2.21, which picks it."])
                continue
        yield ok(f"RoCE {', '.join(f'{p} v2 GIDs {v}' for p, v in roce.items())}", subject=node.label,
                 evidence=evidence)
    indexes = {label: sorted({i for v in roce_v2_gid_indexes(d).values() for i in v}) for label, d in active.items() if d}
    if len({tuple(v) for v in indexes.values()}) > 1 and not any(n.facts.env.get("NCCL_IB_GID_INDEX") for n in answered):
        yield warn("the RoCE v2 GID index differs between nodes: " + ", ".join(f"{k} {v}" for k, v in indexes.items()),
                   evidence={"indexes": indexes},
                   fix=["NCCL < 2.21 uses GID index 0 unless told: set NCCL_IB_GID_INDEX per node to its RoCE v2 "
                        "IPv4 index (or upgrade NCCL, which selects it)."])


@check("QD-FLEET-010", "GPUDirect RDMA available where InfiniBand is", category="fleet", severity="low")
def fleet_gdr(ctx: CheckContext) -> Iterator[Outcome]:
    """With an active HCA but without nvidia_peermem, NCCL stages every transfer through host memory."""
    answered = _fleet_nodes(ctx)
    if isinstance(answered, Outcome):
        yield answered
        return
    for node in answered:
        netif = _netif(node.facts)
        if not _active_rdma(netif):
            yield skip("no active RDMA port", subject=node.label)
            continue
        gdr = netif.get("gpudirect") or {}
        if gdr.get("nvidia_peermem") or gdr.get("nv_peer_mem"):
            yield ok("nvidia_peermem loaded: NCCL can use GPUDirect RDMA", subject=node.label, evidence=gdr)
        else:
            yield warn("nvidia_peermem is not loaded: NCCL copies through host memory (no GDRDMA in NCCL_DEBUG=INFO)",
                       subject=node.label, evidence=gdr,
                       fix=["`modprobe nvidia_peermem` (GPU Operator: enable it in the driver settings), or rely on "
                            "DMA-BUF (kernel >= 5.12, NCCL >= 2.19); NCCL_NET_GDR_LEVEL tunes when it is used."])
