"""Launch a fleet runner in its own process group and kill it at the deadline, so no engine call can hang us."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from doctor.errors import DoctorError

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
RUNNERS = {"ray": ("ray", "doctor.fleet.ray_runner", "--address"),
           "spark": ("pyspark", "doctor.fleet.spark_runner", "--master")}
STARTUP_GRACE_S = 60.0


def require(engine: str) -> None:
    """A clear usage error when the engine's Python package is missing."""
    module = RUNNERS[engine][0]
    if importlib.util.find_spec(module) is None:
        raise DoctorError(f"--{engine} needs the {module} package: pip install 'qwen-doctor[{engine}]'")


def gather(engine: str, target: str | None, node_timeout_s: float, probe_timeout_s: float) -> dict[str, Any]:
    """The fleet section; whatever happens (no cluster, a hang, a crash) it returns within its deadline."""
    require(engine)
    _, module, flag = RUNNERS[engine]
    deadline = node_timeout_s + STARTUP_GRACE_S
    with tempfile.TemporaryDirectory(prefix="qd-fleet-") as tmp:
        out = Path(tmp) / "fleet.json"
        cmd = [sys.executable, "-m", module, "--node-timeout", str(node_timeout_s),
               "--probe-timeout", str(probe_timeout_s), "--out", str(out)]
        if target:
            cmd += [flag, target]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return _failed(engine, target, "timeout", f"{engine} did not answer within {deadline:g} s "
                                                      "(connecting to the cluster or scheduling the node tasks)")
        if out.exists():
            try:
                return json.loads(out.read_text(encoding="utf-8"))
            except ValueError:
                pass
        tail = [l for l in stderr.decode("utf-8", "replace").splitlines() if l.strip()][-1:]
        return _failed(engine, target, "error", f"{engine} runner exited with {proc.returncode}: "
                                                 f"{tail[0].strip() if tail else 'no output'}"[:300])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def _failed(engine: str, target: str | None, status: str, error: str) -> dict[str, Any]:
    return {"engine": engine, "target": target, "status": status, "error": error, "cluster": {}, "nodes": []}
