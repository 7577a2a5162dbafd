"""A real 2-node Ray cluster on loopback (head + one worker node), started and stopped by PID, never `ray stop`."""

from __future__ import annotations

import ipaddress
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
# Ray rewrites 127.0.0.1 to the interface address (services.resolve_ip_for_localhost -> get_node_ip_address)
# unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which keeps every node, worker, agent and driver on loopback.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# With that variable at 0, `ray start --address` aborts ("Multi-node Ray clusters are not supported on Windows and
# OSX"). The worker node's `ray start` therefore sees ENABLE_RAY_CLUSTER=True through a copy of ray_constants given
# to ray.scripts.scripts alone; services (and every child process) still read 0 and stay on 127.0.0.1.
RAY_START_MULTINODE = (
    "import sys, types, ray._private.ray_constants as rc, ray.scripts.scripts as s; "
    "c = types.ModuleType(rc.__name__); c.__dict__.update(vars(rc)); c.ENABLE_RAY_CLUSTER = True; "
    "s.ray_constants = c; sys.argv[0] = 'ray'; s.main()"
)


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

    def inet_sockets(self) -> list[tuple[int, str, str, str]]:
        """(pid, name, local ip:port, remote ip:port or '') of every TCP/UDP socket of both nodes' process trees."""
        import psutil

        procs: list[psutil.Process] = []
        for node in (self.head, self.worker):
            try:
                root = psutil.Process(node.pid)
                procs += [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
        found = []
        for proc in procs:
            try:
                conns = (getattr(proc, "net_connections", None) or proc.connections)(kind="inet")
                name = proc.name()
            except psutil.Error:
                continue
            for c in conns:
                remote = f"{c.raddr.ip}:{c.raddr.port}" if c.raddr else ""
                found.append((proc.pid, name, f"{c.laddr.ip}:{c.laddr.port}", remote))
        return found


def is_loopback(endpoint: str) -> bool:
    """True for '127.x.x.x:port', '::1:port' and IPv4-mapped '::ffff:127.x.x.x:port'."""
    ip = ipaddress.ip_address(endpoint.rsplit(":", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def _node(args: list[str], temp_dir: str, log: Path, extra_env: dict[str, str] | None = None
          ) -> tuple[subprocess.Popen[bytes], int]:
    (gcs, nm, om, client, agent, agent_grpc, metrics, rt_env, low) = free_ports(9)
    ray = [RAY] if "--head" in args else [sys.executable, "-c", RAY_START_MULTINODE]
    cmd = [*ray, "start", "--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
           "--object-store-memory", str(80 * 1024**2), "--temp-dir", temp_dir,
           "--node-manager-port", str(nm), "--object-manager-port", str(om), "--dashboard-agent-listen-port", str(agent),
           "--dashboard-agent-grpc-port", str(agent_grpc), "--metrics-export-port", str(metrics),
           "--runtime-env-agent-port", str(rt_env), "--min-worker-port", str(low), "--max-worker-port", str(low + 40),
           *args]
    if "--head" in args:
        cmd += ["--port", str(gcs), "--ray-client-server-port", str(client), "--include-dashboard", "false"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **RAY_ENV, **(extra_env or {})}
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
def two_node_cluster(head_gpus: int = 1, worker_gpus: int = 2, start_timeout_s: float = 150,
                     env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """`env` is added to both nodes' environment (their tasks and workers inherit it)."""
    temp_dir = tempfile.mkdtemp(prefix="qdr", dir="/tmp")
    log = Path(temp_dir) / "nodes.log"
    head, port = _node(["--head", "--num-gpus", str(head_gpus)], temp_dir, log, env)
    address = f"127.0.0.1:{port}"
    worker = None
    try:
        _wait_nodes(address, 1, start_timeout_s)
        worker, _ = _node(["--address", address, "--num-gpus", str(worker_gpus)], temp_dir, log, env)
        _wait_nodes(address, 2, start_timeout_s)
        yield Cluster(address, head, worker, temp_dir)
    finally:
        if worker is not None:
            _kill(worker)
        _kill(head)
        shutil.rmtree(temp_dir, ignore_errors=True)

