"""`deploy --ray` on a real 2-node Ray cluster on loopback, the fake OpenAI server standing in for each engine:
SGLang starts one process per node (its --node-rank, the head's --dist-init-addr), vLLM starts on the head only;
every node's log reaches the deployment log, the head's API is exercised, and nothing is left on either node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from doctor.deploy.ports import free_port
from tests.conftest import need
from tests.ray_cluster import RAY_ENV, Cluster, two_node_cluster
from tests.support.deploy_helpers import python_shim

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
HAVE_RAY = find_spec("ray") is not None
# Every node shares this machine: NCCL and Gloo are told to use loopback, as an operator names the inter-node NIC.
SOCKETS = {"NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo"}

SGLANG_PROFILE = """\
name: sglang-fake-2n
description: SGLang over two nodes, the fake server standing in for sglang.launch_server.
backend: sglang
backend_version: ">=0.5.9"
sources: ["the fake server (tests/support/fake_server.py)"]
model: tiny-model
nodes: 2
hardware: {{gpu_count: 1, min_gpu_memory_gib: 0, min_compute_capability: "0.0", nvlink: "no"}}
host: 127.0.0.1
port: {port}
variables: {{head_address: HEAD_IP}}
env: {{FAKE_SERVER_MODE: {mode}, FAKE_SERVER_CHILD: "1", QD_TEST_RUN: "{run}"}}
flags:
  tp-size: 2
  nnodes: 2
  dist-init-addr: "{{head_address}}:{dist_port}"
  served-model-name: tiny
"""
VLLM_PROFILE = """\
name: vllm-fake-2n
description: vLLM over Ray on two nodes, the fake server standing in for the vLLM API server.
backend: vllm
backend_version: ">=0.17.0"
sources: ["the fake server (tests/support/fake_server.py)"]
model: tiny-model
launcher: vllm-api-server
nodes: 2
hardware: {{gpu_count: 1, min_gpu_memory_gib: 0, min_compute_capability: "0.0", nvlink: "no"}}
host: 127.0.0.1
port: {port}
variables: {{head_address: HEAD_IP}}
env: {{FAKE_SERVER_MODE: ok, FAKE_SERVER_CHILD: "1", QD_TEST_RUN: "{run}"}}
flags:
  tensor-parallel-size: 1
  pipeline-parallel-size: 2
  distributed-executor-backend: ray
  served-model-name: tiny
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    need(HAVE_RAY, "ray is not installed (pip install -e '.[ray]')")
    with two_node_cluster(head_gpus=1, worker_gpus=1, env=SOCKETS) as c:
        yield c


def leftovers(run: str, timeout: float = 15.0) -> list[psutil.Process]:
    """The processes this test's engines started (the fake server and its child, tagged with QD_TEST_RUN=run in
    their environment) still running after up to `timeout` s; every node shares this machine."""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for p in psutil.process_iter(["status"]):
            try:
                if p.info["status"] != psutil.STATUS_ZOMBIE and p.environ().get("QD_TEST_RUN") == run:
                    found.append(p)
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def deploy(tmp_path: Path, cluster: Cluster, profile_text: str, *extra: str,
           timeout: float = 150) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    profile = tmp_path / "profile.yaml"
    profile.write_text(profile_text)
    log, report = tmp_path / "server.log", tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV, **SOCKETS, "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "state")}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", str(profile), "--ray",
                           cluster.address, "--python", str(python_shim(tmp_path)), "--log", str(log),
                           "--timeout", "60", "--burst", "2", "--burst-tokens", "4", "-o", str(report), *extra],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else {}
    return done, data, log.read_text() if log.exists() else ""


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["check_id"]: r for r in report.get("results", [])}


def test_sglang_starts_one_process_per_node_with_its_rank_and_stops_them_all(tmp_path: Path, cluster: Cluster):
    run = uuid.uuid4().hex
    text = SGLANG_PROFILE.format(port=free_port(), dist_port=free_port(), mode="ok", run=run)
    done, report, log = deploy(tmp_path, cluster, text)
    results = by_id(report)
    assert done.returncode == 0, (done.stderr[-3000:], log[-3000:])
    assert results["QD-FLEET-001"]["status"] == "ok"
    reach = results["QD-FLEET-011"]  # each node listened on NCCL's address (lo here), the other connected
    assert reach["status"] == "ok" and reach["evidence"]["pairs"] == 2, reach
    for check_id in ("QD-DEPLOY-START", "QD-DEPLOY-CHAT", "QD-DEPLOY-STREAM", "QD-DEPLOY-FLEET-STOP"):
        assert results[check_id]["status"] == "ok", json.dumps(results[check_id], indent=1)
    deployment = report["sections"]["deployment"]
    assert deployment["head_address"] == "127.0.0.1" and deployment["nodes"].count("--node-rank") == 2
    assert json.loads((Path(deployment["fleet_run"]) / "fleet-plan.json").read_text())["address"] == cluster.address
    nodes = deployment["nodes_summary"]
    assert [n["rank"] for n in nodes] == [0, 1] and len({n["node_id"] for n in nodes}) == 2
    for node in nodes:
        argv = node["argv"]
        assert argv[argv.index("--node-rank") + 1] == str(node["rank"])
        assert argv[argv.index("--dist-init-addr") + 1].startswith("127.0.0.1:")
        assert node["how"] == "stopped by qwen-doctor" and node["survivors"] == []
    assert "(node 0 127.0.0.1) " in log and "(node 1 127.0.0.1) " in log and "fake rank 0: rank 1 joined" in log
    assert leftovers(run) == []


def test_a_node_that_dies_fails_the_start_with_its_log_and_leaves_nothing(tmp_path: Path, cluster: Cluster):
    run = uuid.uuid4().hex
    text = SGLANG_PROFILE.format(port=free_port(), dist_port=free_port(), mode="die", run=run)
    done, report, log = deploy(tmp_path, cluster, text)
    results = by_id(report)
    assert done.returncode == 1
    assert results["QD-DEPLOY-START"]["status"] == "fail"
    assert "fake node failed to join" in log
    assert results["QD-DEPLOY-FLEET-STOP"]["status"] == "ok"
    summary = json.loads((Path(report["sections"]["deployment"]["fleet_run"]) / "fleet-summary.json").read_text())
    assert summary["ended_by"].endswith("exited by itself")  # the launcher saw the node die and stopped the rest
    assert results["QD-DEPLOY-START"]["evidence"]["state"] == "died"
    assert leftovers(run) == []


def test_vllm_starts_on_the_head_only_with_the_ray_executor(tmp_path: Path, cluster: Cluster):
    run = uuid.uuid4().hex
    done, report, log = deploy(tmp_path, cluster, VLLM_PROFILE.format(port=free_port(), run=run))
    results = by_id(report)
    assert done.returncode == 0, (done.stderr[-3000:], log[-3000:])
    assert results["QD-DEPLOY-CHAT"]["status"] == "ok"
    (node,) = report["sections"]["deployment"]["nodes_summary"]
    assert node["rank"] == 0 and "--distributed-executor-backend" in node["argv"]
    assert node["argv"][node["argv"].index("--distributed-executor-backend") + 1] == "ray"
    assert leftovers(run) == []


def test_sigterm_during_the_start_stops_every_node(tmp_path: Path, cluster: Cluster):
    run = uuid.uuid4().hex
    text = SGLANG_PROFILE.format(port=free_port(), dist_port=free_port(), mode="hang", run=run)
    profile = tmp_path / "profile.yaml"
    profile.write_text(text)
    log = tmp_path / "server.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV, **SOCKETS, "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "state")}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "doctor", "deploy", "--profile", str(profile), "--ray",
                             cluster.address, "--python", str(python_shim(tmp_path)), "--log", str(log),
                             "--timeout", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(leftovers(run, timeout=0)) < 4:
        time.sleep(0.5)
    assert len(leftovers(run, timeout=0)) == 4  # a fake server and its child on each node
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 143, stderr[-2000:]
    assert leftovers(run) == []


def test_a_failing_fleet_check_refuses_before_any_node_starts(tmp_path: Path, cluster: Cluster):
    run = uuid.uuid4().hex
    text = SGLANG_PROFILE.format(port=free_port(), dist_port=free_port(), mode="ok", run=run)
    done, report, log = deploy(tmp_path, cluster, text.replace("tp-size: 2", "tp-size: 4"))
    results = by_id(report)
    assert done.returncode == 1 and results["QD-FLEET-003"]["status"] == "fail"  # TP 4 on 2 GPUs
    assert results["QD-DEPLOY-OUTCOME"]["summary"].startswith("refused to start: failing checks QD-FLEET-003")
    assert log == "" and leftovers(run, timeout=0) == []
