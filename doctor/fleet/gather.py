"""Launch a fleet runner in its own process group and kill it at the deadline, so no engine call can hang us."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from doctor.errors import BadBundle, DoctorError
from doctor.fleet import lifetime

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
RUNNERS = {"ray": ("ray", "doctor.fleet.ray_runner", "--address"),
           "spark": ("pyspark", "doctor.fleet.spark_runner", "--master")}
# The runner's own deadline ends this much before the parent's, so it can write what it has before being killed.
WRITE_RESERVE_S = 2.0
KILL_WAIT_S = 5.0


def require(engine: str) -> None:
    """A clear usage error when the engine's Python package is missing."""
    module = RUNNERS[engine][0]
    if importlib.util.find_spec(module) is None:
        raise DoctorError(f"--{engine} needs the {module} package: pip install 'qwen-doctor[{engine}]'")


def gather(engine: str, target: str | None, node_timeout_s: float, probe_timeout_s: float) -> dict[str, Any]:
    """The fleet section, returned within `node_timeout_s` whatever happens (no cluster, a hang, a crash).

    `node_timeout_s` bounds the whole fleet run: starting the runner, connecting, scheduling and every node's
    collection. The runner lives in its own process group, dies with this process (parent-death signal) and is
    killed with its group on any exit from here, including Ctrl-C and SIGTERM.
    """
    require(engine)
    _, module, flag = RUNNERS[engine]
    started = time.monotonic()
    runner_budget = max(0.5, node_timeout_s - min(WRITE_RESERVE_S, node_timeout_s / 4))
    with tempfile.TemporaryDirectory(prefix="qd-fleet-") as tmp:
        out = Path(tmp) / "fleet.json"
        cmd = [sys.executable, "-m", module, "--node-timeout", f"{runner_budget:.3f}",
               "--probe-timeout", str(probe_timeout_s), "--out", str(out)]
        if target:
            cmd += [flag, target]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}
        with _sigterm_raises():
            proc = lifetime.spawn(cmd, env=env, stderr=subprocess.PIPE)
            try:
                try:
                    _, stderr = proc.communicate(timeout=max(0.1, started + node_timeout_s - time.monotonic()))
                except subprocess.TimeoutExpired:
                    lifetime.kill_group(proc, KILL_WAIT_S)
                    fleet = _read(out, engine, target)
                    return fleet if fleet is not None else _failed(
                        engine, target, "timeout", f"{engine} did not answer within --node-timeout {node_timeout_s:g} s "
                                                   "(connecting to the cluster or scheduling the node tasks)")
            finally:
                lifetime.kill_group(proc, KILL_WAIT_S)
        fleet = _read(out, engine, target)
        if fleet is not None:
            return fleet
        tail = [l for l in stderr.decode("utf-8", "replace").splitlines() if l.strip()][-1:]
        return _failed(engine, target, "error", f"{engine} runner exited with {proc.returncode}: "
                                                 f"{tail[0].strip() if tail else 'no output'}"[:300])


def _read(out: Path, engine: str, target: str | None) -> dict[str, Any] | None:
    """The runner's fleet section with every node's facts validated; garbage is a clear fleet error."""
    from doctor.facts import schema
    from doctor.facts.document import checked_fleet

    try:
        text = out.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return checked_fleet(schema.parse_json(text, "fleet"), f"{engine} runner output", parsed=True)
    except BadBundle as exc:
        return _failed(engine, target, "error", f"the {engine} runner returned an unreadable fleet: {exc}"[:300])


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM becomes SystemExit(143) while the runner lives, so the cleanup above runs instead of a silent death."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failed(engine: str, target: str | None, status: str, error: str) -> dict[str, Any]:
    return {"engine": engine, "target": target, "status": status, "error": error, "cluster": {}, "nodes": []}
