"""TCP reachability between fleet nodes: the address NCCL uses per node, the listener and connector bodies the
Ray tasks run, and QD-FLEET-011's verdicts on recorded probes."""

from __future__ import annotations

import copy
import socket
import threading
from typing import Any

from doctor.facts.model import Facts
from doctor.fleet.reach import connect, listen, nccl_address
from tests.conftest import fixture_data, run, status_of


def iface(name: str, ipv4: list[str], up: bool = True) -> dict[str, Any]:
    return {"name": name, "up": up, "mtu": 1500, "speed_mbps": None, "ipv4": ipv4, "ipv6": []}


NETIF = {"interfaces": [iface("lo", ["127.0.0.1/8"]), iface("docker0", ["172.17.0.1/16"]),
                        iface("eth0", ["10.0.0.5/24", "10.0.0.6/24"])], "rdma": [], "hostname_ips": ["10.0.0.5"]}


def test_the_probe_address_is_the_first_ipv4_of_the_interface_nccl_picks() -> None:
    assert nccl_address({"netif": NETIF, "env": {}}) == ("10.0.0.5", "")
    assert nccl_address({"netif": NETIF, "env": {"NCCL_SOCKET_IFNAME": "lo"}}) == ("127.0.0.1", "")
    address, why = nccl_address({"netif": NETIF, "env": {"NCCL_SOCKET_IFNAME": "ib"}})
    assert address is None and "matches no interface" in why
    assert nccl_address({"env": {}}) == (None, "the node reported no network interfaces")


def test_a_listener_hands_out_its_port_then_reports_who_connected() -> None:
    gen = listen("127.0.0.1", expected=2, window_s=10)
    port = next(gen)["port"]
    results: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: results.append(connect("127.0.0.1", port, 5))) for _ in range(2)]
    for t in threads:
        t.start()
    assert next(gen) == {"peers": ["127.0.0.1", "127.0.0.1"]}
    for t in threads:
        t.join()
    assert [r["ok"] for r in results] == [True, True] and all(r["ms"] is not None for r in results)


def test_a_refused_connection_is_reported_with_its_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: the connect is refused
        result = connect("127.0.0.1", port, 2)
    assert result["ok"] is False and "ConnectionRefusedError" in result["error"]


def test_a_listener_gives_up_after_its_window() -> None:
    gen = listen("127.0.0.1", expected=1, window_s=0.3)
    next(gen)
    assert next(gen) == {"peers": []}


def _facts(reachability: dict[str, Any] | None) -> Facts:
    data = copy.deepcopy(fixture_data("h200"))
    node = {"status": "ok", "error": None, "resources": {}, "facts": fixture_data("h200"), "ip": None}
    data["fleet"] = {"engine": "ray", "target": "10.0.0.1:6379", "status": "ok", "error": None, "cluster": {},
                     "nodes": [{**node, "node_id": "a" * 8, "hostname": "alpha"},
                               {**node, "node_id": "b" * 8, "hostname": "beta"}]}
    if reachability is not None:
        data["fleet"]["reachability"] = reachability
    return Facts(data)


def _pair(src: str, dst: str, ok: bool) -> dict[str, Any]:
    return {"from": src * 8, "to": dst * 8, "address": "10.0.0.9:41000", "ok": ok, "ms": 0.4 if ok else None,
            "error": None if ok else "TimeoutError: timed out"}


def test_every_pair_connecting_passes() -> None:
    results = run(_facts({"pairs": [_pair("a", "b", True), _pair("b", "a", True)], "skipped": {}}),
                  only=("QD-FLEET-011",))
    assert status_of(results, "QD-FLEET-011") == ["ok"]
    assert results["QD-FLEET-011"][0].evidence["pairs"] == 2


def test_an_unreachable_pair_fails_naming_both_nodes_and_the_address() -> None:
    results = run(_facts({"pairs": [_pair("a", "b", True), _pair("b", "a", False)], "skipped": {}}),
                  only=("QD-FLEET-011",))
    (r,) = results["QD-FLEET-011"]
    assert r.status.value == "fail" and r.subject == "beta -> alpha"
    assert "10.0.0.9:41000" in r.summary and "TimeoutError" in r.summary


def test_a_node_that_could_not_be_probed_warns_and_no_probe_skips() -> None:
    results = run(_facts({"pairs": [], "skipped": {"a" * 8: "the node reported no network interfaces"}}),
                  only=("QD-FLEET-011",))
    assert status_of(results, "QD-FLEET-011") == ["warn"] and results["QD-FLEET-011"][0].subject == "alpha"
    assert status_of(run(_facts(None), only=("QD-FLEET-011",)), "QD-FLEET-011") == ["skip"]
    assert status_of(run(Facts(fixture_data("h200")), only=("QD-FLEET-011",)), "QD-FLEET-011") == ["skip"]


def test_the_facts_schema_accepts_a_recorded_probe_and_rejects_a_malformed_pair() -> None:
    import pytest

    from doctor.errors import DoctorError
    from doctor.facts.schema import validate

    facts = _facts({"timeout_s": 5.0, "seconds": 0.4, "targets": {"a" * 8: "10.0.0.5:41000", "b" * 8: None},
                    "skipped": {"b" * 8: "its listener did not start within 10 s"}, "pairs": [_pair("a", "b", True)]})
    facts.data["fleet"]["nodes"][0]["head"] = True
    validate(facts.data, "bundle.json")
    facts.data["fleet"]["reachability"]["pairs"][0]["ok"] = "yes"
    with pytest.raises(DoctorError, match="ok"):
        validate(facts.data, "bundle.json")
