"""The sweep after a fleet stop: it names only what outlived the node's own stop."""

from __future__ import annotations

import subprocess
import sys
import time

from doctor.deploy.guard import POLL_S
from doctor.fleet.launch_runner import Launcher
from doctor.fleet.launch_task import SWEEP_SETTLE_S, sweep

PLAN = {"grace": 4.0, "nodes": [{"rank": 0, "node_id": "a", "argv": ["x"]}, {"rank": 1, "node_id": "b", "argv": ["x"]}]}


def test_a_force_cancelled_node_gets_its_guards_whole_grace_before_the_sweep_names_survivors() -> None:
    launcher = Launcher(PLAN)
    stopped, killed = launcher.nodes
    stopped.how, killed.how = "stopped by qwen-doctor", "killed (ray.cancel force=True)"
    assert launcher._settle(stopped) == SWEEP_SETTLE_S
    assert launcher._settle(killed) >= 4.0 + POLL_S + SWEEP_SETTLE_S


def _group_exiting_after(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], start_new_session=True)


def test_a_group_that_ends_within_the_settle_time_is_not_named_a_survivor() -> None:
    proc = _group_exiting_after(1.0)
    assert sweep(proc.pid, settle=5.0) == []
    proc.wait()


def test_a_group_that_outlives_the_settle_time_is_killed_and_named() -> None:
    proc = _group_exiting_after(60.0)
    started = time.monotonic()
    assert sweep(proc.pid, settle=0.5) == [proc.pid]
    assert proc.wait(timeout=10) != 0 and time.monotonic() - started < 10
