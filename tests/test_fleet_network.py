"""The interface NCCL and Gloo pick, MTU, RoCE GID indexes and GPUDirect across the nodes of a fleet."""

from __future__ import annotations

import copy
from typing import Any

from doctor.facts.model import Facts
from doctor.facts.probes import netif as netif_probe
from doctor.net.nccl_if import gloo_problem, nccl_choice
from tests.conftest import fixture_data, run, status_of


def iface(name: str, ipv4: list[str], up: bool = True, mtu: int = 1500) -> dict[str, Any]:
    return {"name": name, "up": up, "mtu": mtu, "speed_mbps": None, "ipv4": ipv4, "ipv6": []}


LO = iface("lo", ["127.0.0.1/8"], mtu=65536)
DOCKER = iface("docker0", ["172.17.0.1/16"])


def test_nccl_prefers_ib_then_anything_but_docker_and_lo() -> None:
    assert nccl_choice([LO, DOCKER, iface("eth0", ["10.0.0.5/24"]), iface("ib0", ["10.1.0.5/24"])], {}).names == ("ib0",)
    assert nccl_choice([LO, DOCKER, iface("eth0", ["10.0.0.5/24"])], {}).names == ("eth0",)
    assert nccl_choice([LO, DOCKER], {}).rule.startswith("docker")
    assert nccl_choice([LO, iface("eth0", ["10.0.0.5/24"], up=False)], {}).rule.startswith("loopback")


def test_nccl_socket_ifname_prefixes_exclusions_and_exact_names() -> None:
    ifs = [LO, iface("eth0", ["10.0.0.5/24"]), iface("eth10", ["10.2.0.5/24"]), iface("enp1s0f1np1", ["169.254.1.2/16"])]
    assert nccl_choice(ifs, {"NCCL_SOCKET_IFNAME": "eth"}).names == ("eth0", "eth10")
    assert nccl_choice(ifs, {"NCCL_SOCKET_IFNAME": "=eth0"}).names == ("eth0",)
    assert nccl_choice(ifs, {"NCCL_SOCKET_IFNAME": "^eth,lo"}).names == ("enp1s0f1np1",)
    missing = nccl_choice(ifs, {"NCCL_SOCKET_IFNAME": "ib0"})
    assert missing.names == () and "matches no interface" in missing.error


def test_gloo_on_a_loopback_hostname_without_gloo_socket_ifname() -> None:
    ifs = [LO, iface("eth0", ["10.0.0.5/24"])]
    assert "loopback" in gloo_problem(["127.0.1.1"], {}, ifs)
    assert gloo_problem(["127.0.1.1"], {"GLOO_SOCKET_IFNAME": "eth0"}, ifs) is None
    assert "names no interface" in gloo_problem(["10.0.0.5"], {"GLOO_SOCKET_IFNAME": "ib0"}, ifs)
    assert gloo_problem(["10.0.0.5"], {}, ifs) is None


def _node(name: str, interfaces: list[dict[str, Any]], env: dict[str, str] | None = None,
          hostname_ips: list[str] | None = None, rdma: list[dict[str, Any]] | None = None,
          peermem: bool = True) -> dict[str, Any]:
    facts = fixture_data("h200")
    facts["env"] = env or {}
    facts["netif"] = {"interfaces": interfaces, "rdma": rdma or [], "hostname_ips": hostname_ips or ["10.0.0.1"],
                      "gpudirect": {"nvidia_peermem": peermem, "nv_peer_mem": False}}
    return {"node_id": name * 4, "hostname": name, "ip": None, "status": "ok", "error": None,
            "resources": {"GPU": 8}, "facts": facts}


def _fleet(*node_list: dict[str, Any]) -> Facts:
    data = copy.deepcopy(fixture_data("h200"))
    data["fleet"] = {"engine": "ray", "target": "10.0.0.1:6379", "status": "ok", "error": None,
                     "cluster": {}, "nodes": list(node_list)}
    return Facts(data)


def test_nodes_on_one_network_pass_and_loopback_gloo_fails() -> None:
    good = _fleet(_node("a", [LO, iface("eth0", ["10.0.0.1/24"])]), _node("b", [LO, iface("eth0", ["10.0.0.2/24"])]))
    assert status_of(run(good, only=("QD-FLEET-007",)), "QD-FLEET-007") == ["ok", "ok"]
    gloo = _fleet(_node("a", [LO, iface("eth0", ["10.0.0.1/24"])]),
                  _node("b", [LO, iface("eth0", ["10.0.0.2/24"])], hostname_ips=["127.0.1.1"]))
    results = run(gloo, only=("QD-FLEET-007",))["QD-FLEET-007"]
    assert [r.status.value for r in results] == ["ok", "fail"] and "Gloo" in results[1].summary


def test_a_node_that_only_has_docker_or_a_wrong_ifname_fails_and_another_subnet_warns() -> None:
    fleet = _fleet(_node("a", [LO, iface("eth0", ["10.0.0.1/24"])]),
                   _node("b", [LO, DOCKER]),
                   _node("c", [LO, iface("eth0", ["10.0.0.3/24"])], env={"NCCL_SOCKET_IFNAME": "ib0"}),
                   _node("d", [LO, iface("eth1", ["192.168.5.4/24"])]))
    assert status_of(run(fleet, only=("QD-FLEET-007",)), "QD-FLEET-007") == ["ok", "fail", "fail", "warn"]


def test_mtu_mismatch_warns() -> None:
    fleet = _fleet(_node("a", [LO, iface("eth0", ["10.0.0.1/24"], mtu=9000)]),
                   _node("b", [LO, iface("eth0", ["10.0.0.2/24"], mtu=1500)]))
    (result,) = run(fleet, only=("QD-FLEET-008",))["QD-FLEET-008"]
    assert result.status.value == "warn" and "9000" in result.summary and "1500" in result.summary


def _roce(index: int, name: str = "mlx5_0") -> list[dict[str, Any]]:
    gids = [{"index": 0, "gid": "fe80:0000:0000:0000:0ec4:7aff:fe00:0001", "type": "IB/RoCE v1"},
            {"index": index, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0001", "type": "RoCE v2"}]
    return [{"name": name, "ports": [{"port": 1, "state": "4: ACTIVE", "link_layer": "Ethernet", "rate": "200 Gb/sec",
                                      "gids": gids}]}]


def test_roce_gid_index_must_be_a_roce_v2_ipv4_gid_on_every_node() -> None:
    eth = [LO, iface("eth0", ["10.0.0.1/24"])]
    pinned = _fleet(_node("a", eth, env={"NCCL_IB_GID_INDEX": "3"}, rdma=_roce(3)),
                    _node("b", eth, env={"NCCL_IB_GID_INDEX": "3"}, rdma=_roce(5)))
    assert status_of(run(pinned, only=("QD-FLEET-009",)), "QD-FLEET-009") == ["ok", "fail"]
    unpinned = _fleet(_node("a", eth, rdma=_roce(3)), _node("b", eth, rdma=_roce(5)))
    assert status_of(run(unpinned, only=("QD-FLEET-009",)), "QD-FLEET-009") == ["ok", "ok", "warn"]
    mixed = _fleet(_node("a", eth, rdma=_roce(3)), _node("b", eth))
    assert "warn" in status_of(run(mixed, only=("QD-FLEET-009",)), "QD-FLEET-009")


def test_gpudirect_needs_nvidia_peermem_where_an_hca_is_active() -> None:
    eth = [LO, iface("eth0", ["10.0.0.1/24"])]
    fleet = _fleet(_node("a", eth, rdma=_roce(3)), _node("b", eth, rdma=_roce(3), peermem=False), _node("c", eth))
    assert status_of(run(fleet, only=("QD-FLEET-010",)), "QD-FLEET-010") == ["ok", "warn", "skip"]


def test_bundles_without_network_facts_skip() -> None:
    assert status_of(run(Facts(fixture_data("h200")), only=("QD-NET-004",)), "QD-NET-004") == ["skip"]


def test_single_machine_wrong_socket_ifname_fails() -> None:
    data = fixture_data("h200")
    data["env"] = {"NCCL_SOCKET_IFNAME": "bond0"}
    data["netif"] = {"interfaces": [LO, iface("eth0", ["10.0.0.1/24"])], "rdma": [], "hostname_ips": ["10.0.0.1"]}
    (result,) = run(Facts(data), only=("QD-NET-004",))["QD-NET-004"]
    assert result.status.value == "fail" and "bond0" in result.summary


def test_rdma_probe_reads_sysfs(tmp_path) -> None:
    port = tmp_path / "mlx5_0" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "link_layer").write_text("Ethernet\n")
    (port / "rate").write_text("200 Gb/sec (4X HDR)\n")
    (port / "gids" / "3").write_text("0000:0000:0000:0000:0000:ffff:0a00:0001\n")
    (port / "gid_attrs" / "types" / "3").write_text("RoCE v2\n")
    (port / "gids" / "4").write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
    (device,) = netif_probe.rdma_devices(tmp_path)
    assert device["name"] == "mlx5_0"
    (p,) = device["ports"]
    assert p["state"] == "4: ACTIVE" and p["gids"] == [{"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0001",
                                                        "type": "RoCE v2"}]


def test_the_live_probe_reports_interfaces_of_this_machine() -> None:
    data = netif_probe.probe()
    assert any(i["name"] == "lo" or i["name"].startswith("lo") for i in data["interfaces"])
    assert isinstance(data["rdma"], list) and isinstance(data["hostname_ips"], list)
