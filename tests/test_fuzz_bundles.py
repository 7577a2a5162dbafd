"""Fuzzing `check --from`: mutations of the real recorded and derived bundles, and of fleet bundles.

Every case runs the real CLI and must keep the contract of tests/support/fuzz.py: a bad bundle is exit 2 with one
line naming the field, anything the schema accepts is checked without a crashed check, in every output format.
Bounded and deterministic; QWEN_DOCTOR_FUZZ_EXAMPLES=N runs N cases per target.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.support.fuzz import FORMATS, SECRETS, assert_contract, dumps, fuzz_settings, invoke, mutate

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = {p.stem: json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))}


def _layer(ok: bool, error: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"ok": ok, "error": error, "seconds": 0.02, **extra}


# The `network` and `hf` sections as `collect --ray ADDRESS --hf` writes them (shapes of doctor/net/*.py).
NET_SECTIONS = {
    "network": {"ray_gcs": {"source": "--ray", "address": {"raw": "head:6379", "kind": "gcs", "host": "head",
                                                           "port": 6379, "error": None},
                            "tcp": {"host": "head", "port": 6379, **_layer(False, "TCP connect to head:6379 refused "
                                                                                    "(nothing listens there)")},
                            "resolved_from": None}},
    "hf": {"model": "Qwen/Qwen3.5-35B-A3B", "revision": "main", "offline": False, "token_set": True,
           "endpoint_env": "https://hf-mirror.example",
           "endpoints": [
               {"role": "mirror", "url": "https://hf-mirror.example", "host": "hf-mirror.example", "port": 443,
                "dns": _layer(True, addresses=["10.0.0.9"]), "tcp": _layer(True),
                "api": _layer(True, status=200, error_code=None, error_message=None),
                "file": _layer(True, status=302, error_code=None, error_message=None),
                "redirect": {"host": "cdn.example", "port": 443, "dns": _layer(True, addresses=["10.0.0.10"]),
                             "tcp": _layer(False, "TCP connect to cdn.example:443 timed out after 2 s")},
                "proxy": None, "seconds": 0.5},
               {"role": "default", "url": "https://huggingface.co", "host": "huggingface.co", "port": 443,
                "dns": _layer(False, "DNS failure: [Errno -2] Name or service not known", addresses=[]),
                "tcp": None, "api": None, "file": None, "redirect": None, "proxy": None, "seconds": 2.0}],
           "cache": {"cache_dir": "/data/hf/hub", "repo_dir": "/data/hf/hub/models--Qwen--Qwen3.5-35B-A3B",
                     "cached": True, "commit": "0123abcd", "snapshot": "/data/hf/hub/snapshots/0123abcd",
                     "incomplete_downloads": ["abc.incomplete"], "config": True,
                     "index": {"ok": True, "shard_count": 2},
                     "shards": [{"name": "model-00001-of-00002.safetensors", "present": True, "size": 100,
                                 "expected_size": 100, "complete": True, "error": None},
                                {"name": "model-00002-of-00002.safetensors", "present": True, "size": 50,
                                 "expected_size": 100, "complete": False, "error": "truncated"}]}},
}
# The `netif` section as doctor/facts/probes/netif.py writes it: interfaces, a RoCE device with GIDs, GPUDirect.
NETIF = {"interfaces": [{"name": "lo", "up": True, "mtu": 65536, "speed_mbps": None, "ipv4": ["127.0.0.1/8"],
                         "ipv6": ["::1"]},
                        {"name": "ens1f0np0", "up": True, "mtu": 9000, "speed_mbps": 200000,
                         "ipv4": ["10.0.0.1/24"], "ipv6": []}],
         "rdma": [{"name": "mlx5_0", "ports": [{"port": 1, "state": "4: ACTIVE", "link_layer": "Ethernet",
                                                "rate": "200 Gb/sec (4X HDR)",
                                                "gids": [{"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0001",
                                                          "type": "RoCE v2"}]}]}],
         "hostname_ips": ["10.0.0.1"], "gpudirect": {"nvidia_peermem": True, "nv_peer_mem": False}}
BUNDLES["h200-with-network-and-hf"] = {**copy.deepcopy(BUNDLES["h200"]), **copy.deepcopy(NET_SECTIONS),
                                       "netif": copy.deepcopy(NETIF)}


def fleet_bundle(engine: str) -> dict[str, Any]:
    """A two-node fleet as `collect --ray/--spark` writes it, nodes carrying real recorded facts."""
    base = copy.deepcopy(BUNDLES["a100-8x-nvlink"])
    nodes = []
    for i, name in enumerate(("h200", "pcie-4x-l40s-docker")):
        nodes.append({"node_id": f"node-{i}-0123456789", "hostname": f"node{i}", "ip": f"10.0.0.{i + 1}",
                      "status": "ok", "error": None, "seconds": 1.5, "resources": {"GPU": 8.0, "CPU": 64.0},
                      "facts": {**copy.deepcopy(BUNDLES[name]), "netif": copy.deepcopy(NETIF)}})
    nodes.append({"node_id": "node-2-dead", "hostname": "node2", "ip": "10.0.0.3", "status": "timeout",
                  "error": "no answer within 60 s", "resources": {}, "facts": None})
    cluster = ({"ray_version": "2.52.0", "driver_node_id": nodes[0]["node_id"], "resources": {"GPU": 16.0}}
               if engine == "ray" else
               {"spark_version": "4.0.1", "barrier_tasks": 3, "default_parallelism": 3,
                "conf": {"spark.master": "spark://head:7077", "spark.executor.resource.gpu.amount": "8",
                         "spark.task.resource.gpu.amount": "1"}})
    base["fleet"] = {"engine": engine, "target": "head:6379", "status": "ok", "error": None, "seconds": 3.0,
                     "cluster": cluster, "nodes": nodes}
    return base


def _check(tmp_path: Path, doc: Any, data: st.DataObject) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_text(dumps(doc), encoding="utf-8")
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    extra = data.draw(st.sampled_from([[], ["--tp", "8"], ["--tp", "2", "--pp", "2"], ["--backend", "sglang"],
                                       ["--profile", "vllm-a100-8x"], ["--model", "Qwen/Qwen3.5-35B-A3B-FP8"],
                                       ["--gpu-memory-utilization", "0.95"], ["-v"]]), label="options")
    outcome = invoke(["check", "--from", str(bundle), "--no-plugins", "--format", fmt, *extra])
    assert_contract(outcome)
    if outcome.code == 2:
        assert str(bundle) in outcome.stderr or "bundle" in outcome.stderr, outcome.stderr


@fuzz_settings(60)
@given(data=st.data())
def test_mutated_bundles_keep_the_contract(tmp_path_factory, data: st.DataObject):
    name = data.draw(st.sampled_from(sorted(BUNDLES)), label="fixture")
    doc = mutate(copy.deepcopy(BUNDLES[name]), data, data.draw(st.integers(1, 4), label="operations"))
    _check(tmp_path_factory.mktemp("b"), doc, data)


@fuzz_settings(30)
@given(data=st.data())
def test_mutated_fleet_bundles_keep_the_contract(tmp_path_factory, data: st.DataObject):
    doc = mutate(fleet_bundle(data.draw(st.sampled_from(["ray", "spark"]), label="engine")), data,
                 data.draw(st.integers(1, 4), label="operations"))
    _check(tmp_path_factory.mktemp("f"), doc, data)


@fuzz_settings(25)
@given(data=st.data())
def test_mutations_inside_node_facts_are_per_node_errors_never_crashes(tmp_path_factory, data: st.DataObject):
    doc = fleet_bundle(data.draw(st.sampled_from(["ray", "spark"]), label="engine"))
    node = doc["fleet"]["nodes"][data.draw(st.integers(0, 1), label="node")]
    mutate(node["facts"], data, data.draw(st.integers(1, 3), label="operations"))
    _check(tmp_path_factory.mktemp("n"), doc, data)


def test_a_few_cases_through_a_real_subprocess(tmp_path: Path):
    """The installed entry point, not just the in-process one: exit codes and stderr as a shell sees them."""
    cases = {"nan": dumps({**BUNDLES["h200"], "nvml": {**BUNDLES["h200"]["nvml"], "gpus": [{"index": float("nan")}]}}),
             "deep": json.dumps(BUNDLES["h200"])[:-1] + ', "derived": ' + "[" * 5000 + "]" * 5000 + "}",
             "secret": json.dumps({**BUNDLES["h200"], "hostname": 7, "collected_at": SECRETS[0]}),
             "fleet": json.dumps(fleet_bundle("ray"))}
    for name, text in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        done = subprocess.run([sys.executable, "-m", "doctor", "check", "--from", str(path), "--no-plugins",
                               "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert "Traceback" not in done.stderr and SECRETS[0] not in done.stdout + done.stderr, done.stderr
        if name == "fleet":
            assert done.returncode in (0, 1) and json.loads(done.stdout)["results"], done.stderr
        else:
            assert done.returncode == 2 and done.stderr.count("\n") == 1, (name, done.stderr)
