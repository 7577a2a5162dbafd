"""Which network interface NCCL and Gloo will use on a node, computed as they compute it.

NCCL (src/misc/socket.cc, ncclFindInterfaces, NCCL 2.18-2.27): with NCCL_SOCKET_IFNAME, only the interfaces its
list names (prefix match; `^` excludes; `=` asks for exact names), and no fallback; without it, interfaces whose
name starts with `ib`, else (with NCCL_COMM_ID) the one in the same subnet as that address, else anything but
`docker*` and `lo*`, else `docker*`, else `lo*`. Only interfaces that are up and hold an address of the socket
family count (IPv4 first, unless NCCL_SOCKET_FAMILY=AF_INET6); IPv6 link-local addresses are skipped.

Gloo (torch.distributed, used by vLLM's and SGLang's CPU groups): GLOO_SOCKET_IFNAME names the interface;
without it Gloo binds the address the host's own name resolves to, so a hostname that maps to 127.0.x.x in
/etc/hosts (Debian/Ubuntu's `127.0.1.1 host`) makes every peer try to connect to itself.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Choice:
    """The interfaces chosen, and why (the rule of ncclFindInterfaces that picked them)."""

    names: tuple[str, ...]
    rule: str
    error: str | None = None


def _usable(iface: Mapping[str, Any], family: str) -> bool:
    if not iface.get("up"):
        return False
    addresses = iface.get("ipv6" if family == "AF_INET6" else "ipv4") or []
    if family == "AF_INET6":
        addresses = [a for a in addresses if not str(a).lower().startswith("fe80")]
    return bool(addresses)


def _matches(name: str, spec: str) -> bool:
    """NCCL's prefix list: `eth,ib` (prefixes), `^docker,lo` (exclusion), `=eth0` (exact names)."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    items = [item.split(":")[0] for item in body.split(",") if item]
    hit = any(name == item if exact else name.startswith(item) for item in items)
    return not hit if exclude else hit


def _family(env: Mapping[str, str]) -> str:
    return "AF_INET6" if env.get("NCCL_SOCKET_FAMILY", "").upper() in ("AF_INET6", "INET6") else "AF_INET"


def nccl_choice(interfaces: list[Mapping[str, Any]], env: Mapping[str, str]) -> Choice:
    """The interfaces NCCL's bootstrap and socket transport will use on this node."""
    family = _family(env)
    usable = [i for i in interfaces if _usable(i, family)]
    spec = env.get("NCCL_SOCKET_IFNAME")
    if spec:
        names = tuple(i["name"] for i in usable if _matches(i["name"], spec))
        error = None if names else (f"NCCL_SOCKET_IFNAME={spec} matches no interface that is up with an "
                                    f"{'IPv6' if family == 'AF_INET6' else 'IPv4'} address")
        return Choice(names, f"NCCL_SOCKET_IFNAME={spec}", error)
    for rule, spec in (("name starts with ib", "ib"), ("any but docker* and lo*", "^docker,lo"),
                       ("docker* (nothing else is up)", "docker"), ("loopback (nothing else is up)", "lo")):
        names = tuple(i["name"] for i in usable if _matches(i["name"], spec))
        if names:
            return Choice(names, rule)
    return Choice((), "none", "no interface is up with an address")


def addresses_of(interfaces: list[Mapping[str, Any]], names: tuple[str, ...]) -> list[str]:
    """The IPv4 addresses (CIDR) held by the named interfaces."""
    return [a for i in interfaces if i["name"] in names for a in i.get("ipv4") or []]


def share_a_subnet(a: list[str], b: list[str]) -> bool:
    """Whether two address lists (CIDR strings) hold a pair in one network."""
    for x in a:
        for y in b:
            try:
                if ipaddress.ip_address(y.split("/")[0]) in ipaddress.ip_interface(x).network:
                    return True
            except ValueError:
                continue
    return False


def gloo_problem(hostname_ips: list[str], env: Mapping[str, str], interfaces: list[Mapping[str, Any]]) -> str | None:
    """Why Gloo would bind an address other nodes cannot reach, or None."""
    name = env.get("GLOO_SOCKET_IFNAME")
    if name:
        if not any(i["name"] == name and _usable(i, "AF_INET") for i in interfaces):
            return f"GLOO_SOCKET_IFNAME={name} names no interface that is up with an IPv4 address"
        return None
    if hostname_ips and all(ip.startswith("127.") or ip == "::1" for ip in hostname_ips):
        return (f"the host name resolves to {', '.join(hostname_ips)} (loopback) and GLOO_SOCKET_IFNAME is unset: "
                "Gloo binds loopback and peers on other nodes cannot connect")
    return None


def roce_v2_gid_indexes(rdma: list[Mapping[str, Any]]) -> dict[str, list[int]]:
    """`device/port` -> indexes of its RoCE v2 GIDs that carry an IPv4-mapped address (what NCCL_IB_GID_INDEX names)."""
    out: dict[str, list[int]] = {}
    for device in rdma:
        for port in device.get("ports") or []:
            key = f"{device.get('name')}/{port.get('port')}"
            out[key] = [g["index"] for g in port.get("gids") or []
                        if str(g.get("type", "")).lower() == "roce v2" and str(g.get("gid", "")).lower()
                        .startswith("0000:0000:0000:0000:0000:ffff:")]
    return out
