"""Ray connectivity without a cluster: address parsing and a bounded TCP reach of the GCS port (loopback only)."""

from __future__ import annotations

import copy
import socket
import time
from pathlib import Path

import pytest

from doctor.facts.model import Facts
from doctor.net import probes, ray_gcs
from doctor.net.ray_address import parse
from tests.conftest import fixture_data, run


@pytest.mark.parametrize("raw,kind,host,port", [
    ("auto", "auto", None, None),
    ("LOCAL", "local", None, None),
    ("10.0.0.5:6379", "gcs", "10.0.0.5", 6379),
    ("head-node", "gcs", "head-node", 6379),
    ("ray://head.example:10001", "client", "head.example", 10001),
    ("ray://head.example", "client", "head.example", 10001),
    ("[fd00::1]:6380", "gcs", "fd00::1", 6380),
    ("http://head:8265", "dashboard", "head", 8265),
])
def test_address_forms_ray_init_accepts(raw, kind, host, port):
    parsed = parse(raw)
    assert (parsed.kind, parsed.host, parsed.port) == (kind, host, port)


@pytest.mark.parametrize("raw,words", [
    ("", "no address given"),
    ("head:notaport", "is not a number"),
    ("head:70000", "between 1 and 65535"),
    ("grpc://head:6379", "unknown scheme"),
    ("fd00::1:6379", "IPv6"),
    ("bad_host!:6379", "not a valid host"),
])
def test_malformed_addresses_say_what_is_wrong(raw, words):
    parsed = parse(raw)
    assert parsed.kind == "invalid" and words in parsed.error


def test_the_dashboard_address_is_flagged_as_the_wrong_one_for_ray_init():
    assert "ray job submit" in parse("http://head:8265").error


def _listener() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _verdicts(gcs: dict) -> dict:
    data = copy.deepcopy(fixture_data("h200"))
    data["network"] = {"ray_gcs": gcs}
    return {cid: rs[0] for cid, rs in run(Facts(data), only=("QD-NET",)).items()}


def test_a_listening_gcs_port_passes():
    with _listener() as s:
        gcs = ray_gcs.probe(f"127.0.0.1:{s.getsockname()[1]}", "RAY_ADDRESS", timeout_s=1.0)
    v = _verdicts(gcs)
    assert v["QD-NET-001"].status.value == "ok" and v["QD-NET-002"].status.value == "ok"


def test_a_refused_gcs_port_lists_the_classic_causes():
    gcs = ray_gcs.probe(f"127.0.0.1:{_free_port()}", "--ray", timeout_s=1.0)
    r = _verdicts(gcs)["QD-NET-002"]
    assert r.status.value == "fail" and "refused" in r.summary
    assert "Failed to connect to GCS at address" in r.details[0]
    assert any("ray start --head" in d for d in r.details) and any("6379" in d for d in r.details)


def test_a_silent_gcs_port_times_out_within_the_bound(monkeypatch: pytest.MonkeyPatch):
    def blackhole(*args, **kwargs):
        time.sleep(5)

    monkeypatch.setattr(socket, "create_connection", blackhole)
    t0 = time.monotonic()
    result = probes.tcp("127.0.0.1", 6379, timeout_s=0.3)
    assert not result["ok"] and "timed out" in result["error"] and time.monotonic() - t0 < 1.5
    r = _verdicts({"source": "--ray", "address": parse("127.0.0.1:6379").to_dict(), "resolved_from": None,
                   "tcp": {"host": "127.0.0.1", "port": 6379, **result}})["QD-NET-002"]
    assert r.status.value == "fail" and any("firewall" in d for d in r.details)


def test_auto_without_a_cluster_started_here_fails_with_the_file_it_looked_for(tmp_path: Path):
    gcs = ray_gcs.probe("auto", "RAY_ADDRESS", current_cluster_file=tmp_path / "ray_current_cluster")
    r = _verdicts(gcs)["QD-NET-001"]
    assert r.status.value == "fail" and "ray_current_cluster" in r.summary


def test_auto_follows_the_recorded_cluster_address(tmp_path: Path):
    with _listener() as s:
        recorded = tmp_path / "ray_current_cluster"
        recorded.write_text(f"127.0.0.1:{s.getsockname()[1]}\n")
        gcs = ray_gcs.probe("auto", "RAY_ADDRESS", current_cluster_file=recorded)
    assert gcs["tcp"]["ok"] and gcs["resolved_from"] == str(recorded)


def test_an_invalid_ray_address_env_var_is_a_failed_check():
    gcs = ray_gcs.probe("head:99999", "RAY_ADDRESS")
    r = _verdicts(gcs)["QD-NET-001"]
    assert r.status.value == "fail" and "'head:99999' from RAY_ADDRESS" in r.summary


def test_no_ray_address_skips_both_checks():
    data = copy.deepcopy(fixture_data("h200"))
    results = run(Facts(data), only=("QD-NET-001", "QD-NET-002"))
    assert all(rs[0].status.value == "skip" for rs in results.values())


def test_bounded_gives_up_on_a_stuck_call():
    t0 = time.monotonic()
    with pytest.raises(probes.Deadline):
        probes.bounded(lambda: time.sleep(3), 0.2)
    assert time.monotonic() - t0 < 1.0
