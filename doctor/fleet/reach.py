"""Bounded TCP reachability between the nodes of a Ray cluster, on the address NCCL will use on each node.

Each node listens briefly on an ephemeral port of the first IPv4 address of the interface NCCL picks there (the
rule of doctor/net/nccl_if.py, from the node's own `netif` facts and environment); every other node connects to it
with a timeout. Listener and connector are Ray tasks pinned to their nodes (hard node affinity); the listener is a
streaming generator so that it can hand its port out while it still listens. Every step has a deadline.

Section `fleet.reachability`: {"timeout_s", "seconds", "targets": {node_id: "ip:port" | null}, "skipped":
{node_id: why}, "pairs": [{"from", "to", "address", "ok", "error", "ms"}]}.
"""

from __future__ import annotations

import socket
import time
from typing import Any

LISTEN_GRACE_S = 5.0


def nccl_address(facts: dict[str, Any] | None) -> tuple[str | None, str]:
    """The IPv4 address NCCL would use on the node these facts describe, or None and why not."""
    from doctor.net.nccl_if import addresses_of, nccl_choice

    netif = (facts or {}).get("netif")
    if not isinstance(netif, dict) or not isinstance(netif.get("interfaces"), list):
        return None, "the node reported no network interfaces"
    env = (facts or {}).get("env") or {}
    choice = nccl_choice(netif["interfaces"], env if isinstance(env, dict) else {})
    if choice.error:
        return None, choice.error
    addresses = addresses_of(netif["interfaces"], choice.names)
    if not addresses:
        return None, f"NCCL's interface {', '.join(choice.names)} holds no IPv4 address"
    return str(addresses[0]).split("/")[0], ""


def listen(address: str, expected: int, window_s: float) -> Any:
    """Ray streaming-generator body: yield the port, accept up to `expected` connections within `window_s`,
    then yield the peers that connected."""
    with socket.create_server((address, 0)) as server:
        server.settimeout(0.2)
        yield {"port": server.getsockname()[1]}
        peers: list[str] = []
        deadline = time.monotonic() + window_s
        while len(peers) < expected and time.monotonic() < deadline:
            try:
                conn, peer = server.accept()
            except (socket.timeout, OSError):
                continue
            conn.close()
            peers.append(str(peer[0]))
        yield {"peers": peers}


def connect(address: str, port: int, timeout_s: float) -> dict[str, Any]:
    """Ray task body: one TCP connect with a timeout."""
    t0 = time.monotonic()
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            pass
    except OSError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:200], "ms": round((time.monotonic() - t0) * 1e3, 1)}
    return {"ok": True, "error": None, "ms": round((time.monotonic() - t0) * 1e3, 1)}


def probe(ray: Any, nodes: list[dict[str, Any]], timeout_s: float) -> dict[str, Any]:
    """Every answered node listens, every other answered node connects; bounded by about 3 x `timeout_s`."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    t0 = time.monotonic()
    out: dict[str, Any] = {"timeout_s": timeout_s, "targets": {}, "skipped": {}, "pairs": []}
    answered = [n for n in nodes if n.get("status") == "ok" and n.get("facts")]

    def pinned(fn: Any, node: dict[str, Any], **kw: Any) -> Any:
        strategy = NodeAffinitySchedulingStrategy(node_id=node["node_id"], soft=False)
        return ray.remote(num_cpus=0, max_retries=0)(fn).options(scheduling_strategy=strategy, **kw)

    listeners: dict[str, Any] = {}
    for node in answered:
        address, why = nccl_address(node["facts"])
        if address is None:
            out["skipped"][node["node_id"]] = why
            continue
        out["targets"][node["node_id"]] = address
        listeners[node["node_id"]] = pinned(listen, node, num_returns="streaming").remote(
            address, len(answered) - 1, 2 * timeout_s + LISTEN_GRACE_S)
    ports: dict[str, int] = {}
    for node_id, gen in listeners.items():
        ready, _ = ray.wait([gen], timeout=max(0.1, t0 + timeout_s + LISTEN_GRACE_S - time.monotonic()))
        if not ready:
            out["skipped"][node_id] = f"its listener did not start within {timeout_s + LISTEN_GRACE_S:g} s"
            out["targets"][node_id] = None
            continue
        try:
            ports[node_id] = ray.get(next(gen))["port"]
        except Exception as exc:
            out["skipped"][node_id] = f"its listener failed: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
        out["targets"][node_id] = f"{out['targets'][node_id]}:{ports[node_id]}" if node_id in ports else None
    refs: dict[Any, dict[str, Any]] = {}
    for src in answered:
        for dst_id, port in ports.items():
            if dst_id == src["node_id"]:
                continue
            address = str(out["targets"][dst_id]).rsplit(":", 1)[0]
            pair = {"from": src["node_id"], "to": dst_id, "address": f"{address}:{port}", "ok": False,
                    "error": f"the connect task did not finish within {2 * timeout_s:g} s", "ms": None}
            out["pairs"].append(pair)
            refs[pinned(connect, src).remote(address, port, timeout_s)] = pair
    pending, deadline = list(refs), time.monotonic() + 2 * timeout_s
    while pending and time.monotonic() < deadline:
        ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.05, deadline - time.monotonic()))
        for ref in ready:
            try:
                refs[ref].update(ray.get(ref, timeout=5))
            except Exception as exc:
                refs[ref].update(error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}")
    for node_id, gen in listeners.items():  # a listener ends once every peer connected
        if node_id in ports and ray.wait([gen], timeout=1.0)[0]:
            continue
        pending.append(gen)
    for ref in pending:
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out
