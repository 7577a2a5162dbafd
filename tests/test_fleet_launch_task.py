"""The body each node's Ray task runs under `deploy --ray`, run here without Ray: the engine's pid comes first,
then its log, then its exit code; closing the task (as a cancel does) stops the engine's whole process group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil

from doctor.fleet.launch_task import run_engine, sweep

PRINT_THEN_EXIT = "import sys; print('hello'); print('world'); sys.exit(3)"
SERVE_WITH_CHILD = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
                    "time.sleep(120)']); print('up', flush=True); time.sleep(120)")


def _gone(pids: list[int], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]:
            return True
        time.sleep(0.1)
    return False


def test_an_engine_that_exits_streams_its_lines_then_its_code() -> None:
    items = list(run_engine([sys.executable, "-c", PRINT_THEN_EXIT], {}, grace=2))
    started = items[0]["started"]
    assert started["pid"] == started["pgid"] and started["node_pid"] == os.getpid()
    assert [line for item in items for line in item.get("lines", [])] == ["hello", "world"]
    assert items[-1] == {"exit": 3, "how": "exited by itself", "left_behind": "already exited"}


def test_an_engine_whose_child_keeps_the_log_open_is_seen_to_exit_and_its_child_is_stopped() -> None:
    code = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
            "print('bye', flush=True); sys.exit(1)")
    t0 = time.monotonic()
    items = list(run_engine([sys.executable, "-c", code], {}, grace=2))
    assert time.monotonic() - t0 < 30
    assert items[-1]["exit"] == 1 and items[-1]["left_behind"] == "stopped by SIGTERM"
    assert [line for item in items for line in item.get("lines", [])] == ["bye"]


def test_closing_the_task_stops_the_engine_and_its_children() -> None:
    gen = run_engine([sys.executable, "-c", SERVE_WITH_CHILD], {"EXTRA": "1"}, grace=2)
    started = next(gen)["started"]
    assert next(gen) == {"lines": ["up"]}
    group = [started["pid"], *(c.pid for c in psutil.Process(started["pid"]).children(recursive=True))]
    assert len(group) == 2
    gen.close()  # what a graceful ray.cancel does to the generator: its finally stops the group
    assert _gone(group)
    assert _gone([started["guard_pid"]])  # the guard exits once the group is gone


def test_a_missing_binary_is_reported_not_raised() -> None:
    (item,) = list(run_engine(["/nonexistent/engine"], {}, grace=1))
    assert item["exit"] is None and "cannot start /nonexistent/engine" in item["error"]


def test_sweep_kills_what_is_left_of_a_group_and_names_it() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        assert sweep(proc.pid) == [proc.pid]
        assert proc.wait(timeout=10) == -9
        assert sweep(proc.pid) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_worker_killed_outright_takes_the_engine_group_with_it() -> None:
    """ray.cancel(force=True) kills the worker running the task: the parent-death signal and the guard stop the
    engine and the children it started."""
    worker_code = ("import json, sys, time; from doctor.fleet.launch_task import run_engine; "
                   f"g = run_engine([sys.executable, '-c', {SERVE_WITH_CHILD!r}], {{}}, grace=2); "
                   "print(json.dumps(next(g)['started']), flush=True); next(g); print('ready', flush=True); "
                   "time.sleep(120)")
    worker = subprocess.Popen([sys.executable, "-c", worker_code], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        started = json.loads(worker.stdout.readline())
        assert worker.stdout.readline().strip() == "ready"
        group = [started["pid"], *(c.pid for c in psutil.Process(started["pid"]).children(recursive=True))]
        assert len(group) == 2
        worker.kill()
        worker.wait(timeout=10)
        assert _gone(group, timeout=15)
    finally:
        if worker.poll() is None:
            worker.kill()


def test_the_sweep_lets_a_group_that_is_already_stopping_exit_and_names_nothing() -> None:
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1), sys.exit(0)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.killpg(proc.pid, signal.SIGTERM)
        assert sweep(proc.pid, settle=10) == []
        assert proc.wait(timeout=10) == 0  # it finished its own stop: the sweep did not kill it
    finally:
        if proc.poll() is None:
            proc.kill()


def test_an_engine_starts_with_no_signal_blocked_even_from_a_worker_that_blocks_sigint() -> None:
    """A Ray worker runs the node task with SIGINT blocked; the engine must not inherit that mask."""
    seen: dict[str, str] = {}

    def start() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        code = "print([l for l in open('/proc/self/status') if l.startswith('SigBlk')][0], flush=True)"
        for item in run_engine([sys.executable, "-c", code], {}, grace=1):
            for line in item.get("lines", ()):
                seen.setdefault("mask", line)

    worker = threading.Thread(target=start)
    worker.start()
    worker.join(timeout=30)
    assert int(seen["mask"].split()[-1], 16) == 0, seen
