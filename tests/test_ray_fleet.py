"""`check --ray` on real Ray: a 2-node loopback cluster, a one-node `ray.init` local cluster, a dead GCS port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import need
from tests.ray_cluster import RAY_ENV, Cluster, free_ports, is_loopback, two_node_cluster

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
HAVE_RAY = find_spec("ray") is not None


def qd(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV, **(env or {})}
    full_env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=full_env,
                          cwd=ROOT, timeout=timeout)


def by_id(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in report["results"]:
        out.setdefault(r["check_id"], []).append(r)
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    need(HAVE_RAY, "ray is not installed (pip install -e '.[ray]')")
    with two_node_cluster(head_gpus=1, worker_gpus=2) as c:
        yield c


def test_check_ray_reports_both_nodes_with_per_node_columns_and_catches_driver_only_env(cluster: Cluster):
    done = qd("check", "--ray", cluster.address, "--only", "QD-FLEET", "--only", "QD-NET", "--tp", "2",
              "--format", "json", "--node-timeout", "60", env={"HF_ENDPOINT": "https://hf-mirror.example"})
    report = json.loads(done.stdout)
    results = by_id(report)
    answered = results["QD-FLEET-001"]
    assert [r["status"] for r in answered] == ["ok", "ok"], answered
    assert len({r["evidence"]["node_id"] for r in answered}) == 2
    assert results["QD-NET-002"][0]["status"] == "ok"
    placement = results["QD-FLEET-003"][0]
    assert placement["status"] == "ok" and placement["evidence"]["total_gpus"] == 3
    assert results["QD-FLEET-002"][0]["status"] == "ok"
    env = results["QD-FLEET-004"][0]  # set for the driver only: the nodes were started without it
    assert env["status"] == "fail" and env["summary"].startswith("HF_ENDPOINT")
    table = report["sections"]["fleet"]
    assert table["engine"] == "ray" and len(table["columns"]) == 2
    assert sorted(next(r for r in table["rows"] if r["name"] == "GPUs (scheduler)")["values"]) == ["1.0", "2.0"]


def test_every_socket_of_the_cluster_listens_and_connects_on_loopback_only(cluster: Cluster):
    """Ray turns 127.0.0.1 into the interface address unless told not to; test traffic must stay on loopback."""
    sockets = cluster.inet_sockets()
    gcs_port = cluster.address.rsplit(":", 1)[1]
    assert any(name == "gcs_server" and local.endswith(f":{gcs_port}") for _, name, local, _ in sockets), sockets
    assert len({pid for pid, name, _, _ in sockets if name == "raylet"}) == 2, sockets
    off_loopback = [s for s in sockets if not is_loopback(s[2]) or (s[3] and not is_loopback(s[3]))]
    assert off_loopback == []


def test_tp_x_pp_beyond_the_clusters_gpus_fails_like_vllms_placement_group(cluster: Cluster):
    done = qd("check", "--ray", cluster.address, "--only", "QD-FLEET-003", "--tp", "2", "--pp", "2",
              "--node-timeout", "60", "-v")   # the details (vLLM's own message) come with -v
    assert done.returncode == 1
    assert "needs 4 GPU(s), the fleet has 3 GPU(s) on 2 node(s)" in done.stdout
    assert "Cannot provide a placement group requiring 4 GPUs" in done.stdout


def test_collected_fleet_bundle_is_checked_offline_with_from(cluster: Cluster, tmp_path: Path):
    bundle = tmp_path / "fleet.json"
    done = qd("collect", "--ray", cluster.address, "-o", str(bundle), "--node-timeout", "60")
    assert done.returncode == 0, done.stderr
    assert [n["status"] for n in json.loads(bundle.read_text())["fleet"]["nodes"]] == ["ok", "ok"]
    checked = qd("check", "--from", str(bundle), "--only", "QD-FLEET-001", "--format", "json")
    assert [r["status"] for r in json.loads(checked.stdout)["results"]] == ["ok", "ok"]


def test_stopping_the_worker_mid_run_is_a_clear_per_node_failure_not_a_hang(cluster: Cluster):
    """Runs last on this cluster: it kills the worker node while the node tasks are sleeping."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV, "QWEN_DOCTOR_NODE_TASK_DELAY_S": "25"}
    env.pop("RAY_ADDRESS", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "doctor", "check", "--ray", cluster.address, "--only",
                             "QD-FLEET-001", "--format", "json", "--node-timeout", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    time.sleep(15)
    cluster.stop_worker()
    out, _ = proc.communicate(timeout=180)
    took = time.monotonic() - t0
    results = json.loads(out)["results"]
    statuses = sorted(r["status"] for r in results)
    assert statuses == ["fail", "ok"], results
    failed = next(r for r in results if r["status"] == "fail")
    assert failed["summary"], failed
    assert took < 50 + 10 + 15  # --node-timeout + --timeout + start-up and report
    assert proc.returncode == 1


def test_ray_init_local_runs_one_pinned_task():
    need(HAVE_RAY, "ray is not installed (pip install -e '.[ray]')")
    done = qd("check", "--ray", "local", "--only", "QD-FLEET-001", "--only", "QD-NET-001", "--format", "json",
              "--node-timeout", "60")
    results = by_id(json.loads(done.stdout))
    assert [r["status"] for r in results["QD-FLEET-001"]] == ["ok"]
    assert "a new local cluster" in results["QD-NET-001"][0]["summary"]


def test_a_dead_gcs_port_fails_fast_with_the_causes_spelled_out():
    need(HAVE_RAY, "ray is not installed (pip install -e '.[ray]')")
    [port] = free_ports(1)
    t0 = time.monotonic()
    done = qd("check", "--ray", f"127.0.0.1:{port}", "--only", "QD-NET", "--only", "QD-FLEET-001",
              "--format", "json")
    assert time.monotonic() - t0 < 30
    results = by_id(json.loads(done.stdout))
    gcs = results["QD-NET-002"][0]
    assert gcs["status"] == "fail" and "refused" in gcs["summary"]
    assert any("ray start --head" in d for d in gcs["details"])
    assert results["QD-FLEET-001"][0]["status"] == "fail"
    assert done.returncode == 1
