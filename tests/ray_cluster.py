"""A real 2-node Ray cluster on loopback (head + one worker node), started and stopped by PID, never `ray stop`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

RAY = str(Path(sys.executable).with_name("ray"))
ROOT = Path(__file__).resolve().parents[1]
# Token auth is on by default and reads a token shared by every Ray user of this machine (~/.ray/auth_token):
# the test cluster and its clients opt out so that another user's Ray cannot break them.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@dataclass
class Cluster:
    address: str
    head: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes]
    temp_dir: str

    def stop_worker(self) -> None:
        _kill(self.worker)


def _node(args: list[str], temp_dir: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    (gcs, nm, om, client, agent, agent_grpc, metrics, rt_env, low) = free_ports(9)
    cmd = [RAY, "start", "--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
           "--object-store-memory", str(80 * 1024**2), "--temp-dir", temp_dir,
           "--node-manager-port", str(nm), "--object-manager-port", str(om), "--dashboard-agent-listen-port", str(agent),
           "--dashboard-agent-grpc-port", str(agent_grpc), "--metrics-export-port", str(metrics),
           "--runtime-env-agent-port", str(rt_env), "--min-worker-port", str(low), "--max-worker-port", str(low + 40),
           *args]
    if "--head" in args:
        cmd += ["--port", str(gcs), "--ray-client-server-port", str(client), "--include-dashboard", "false"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV}
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    return proc, gcs


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the node's process group and every descendant (raylet, GCS, agents, workers): only what we started."""
    import psutil

    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in descendants:
        try:
            child.kill()
        except psutil.Error:
            pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass


def _wait_nodes(address: str, n: int, timeout_s: float) -> None:
    probe = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
             "print(sum(1 for x in ray.nodes() if x['Alive']))")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            done = subprocess.run([sys.executable, "-c", probe, address], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, **RAY_ENV})
            if done.stdout.strip().isdigit() and int(done.stdout.strip()) >= n:
                return
        except subprocess.TimeoutExpired:
            pass
        time.sleep(1)
    raise TimeoutError(f"Ray cluster at {address} did not reach {n} alive nodes in {timeout_s:g} s")


@contextmanager
def two_node_cluster(head_gpus: int = 1, worker_gpus: int = 2, start_timeout_s: float = 150) -> Iterator[Cluster]:
    temp_dir = tempfile.mkdtemp(prefix="qdr", dir="/tmp")
    log = Path(temp_dir) / "nodes.log"
    head, port = _node(["--head", "--num-gpus", str(head_gpus)], temp_dir, log)
    address = f"127.0.0.1:{port}"
    worker = None
    try:
        _wait_nodes(address, 1, start_timeout_s)
        worker, _ = _node(["--address", address, "--num-gpus", str(worker_gpus)], temp_dir, log)
        _wait_nodes(address, 2, start_timeout_s)
        yield Cluster(address, head, worker, temp_dir)
    finally:
        if worker is not None:
            _kill(worker)
        _kill(head)
        shutil.rmtree(temp_dir, ignore_errors=True)

