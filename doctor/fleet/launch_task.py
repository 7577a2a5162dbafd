"""What `deploy --ray` runs on each node: one engine process in its own process group, its log streamed back.

The body is a Ray streaming generator pinned to its node. It yields the process's pid and group first, then its
log in batches of lines, then its exit code. Whatever ends the task stops the whole group:
- a graceful `ray.cancel` raises in the generator, whose `finally` sends SIGTERM to the group, waits, then SIGKILL;
- `ray.cancel(force=True)`, or the driver dying (Ray then kills the job's workers), kills the worker outright: the
  engine's leader gets its parent-death signal (PR_SET_PDEATHSIG) and a guard process (`doctor.deploy.guard`)
  watching the worker stops the rest of the group.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

BATCH_S = 0.2
MAX_BATCH = 200
EXIT_DRAIN_S = 1.0
SWEEP_SETTLE_S = 3.0  # what a group already signalled gets to exit before the sweep kills it


def _read_lines(stream: Any, out: "queue.Queue[str | None]") -> None:
    for raw in iter(stream.readline, b""):
        out.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
    out.put(None)


def stop_group(pgid: int, grace: float) -> str:
    """SIGTERM to the group, up to `grace` seconds, then SIGKILL; how it ended."""
    from doctor.deploy.guard import _group_alive

    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return "already exited"
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return "stopped by SIGTERM"
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return "stopped by SIGTERM"
    return f"killed (SIGKILL after {grace:g} s)"


def _start_guard(pgid: int, grace: float) -> subprocess.Popen[bytes]:
    """`doctor.deploy.guard` watching this worker: it stops the group once the worker is gone."""
    return subprocess.Popen([sys.executable, "-m", "doctor.deploy.guard", str(os.getpid()), str(pgid), str(grace)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def run_engine(argv: list[str], env: dict[str, str], grace: float = 10.0) -> Iterator[dict[str, Any]]:
    """Start `argv` with `env` added, in its own session; yield {"started"}, then {"lines"}..., then {"exit"}."""
    from doctor.deploy.process import die_with_parent

    try:
        proc = subprocess.Popen(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent(os.getpid()))
    except OSError as exc:
        yield {"exit": None, "error": f"cannot start {argv[0]}: {exc.strerror or exc}"}
        return
    guard = _start_guard(proc.pid, grace)
    lines: "queue.Queue[str | None]" = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    how = ""
    try:
        yield {"started": {"pid": proc.pid, "pgid": proc.pid, "guard_pid": guard.pid, "node_pid": os.getpid()}}
        done, exited_at = False, None
        while not done:
            batch: list[str] = []
            deadline = time.monotonic() + BATCH_S
            while len(batch) < MAX_BATCH:
                try:
                    item = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    done = True
                    break
                batch.append(item)
            if batch:
                yield {"lines": batch}
            if proc.poll() is not None:  # a child that inherited stdout can keep the pipe open: stop reading soon
                exited_at = exited_at or time.monotonic()
                done = done or time.monotonic() - exited_at > EXIT_DRAIN_S
        how = "exited by itself"
        code = proc.wait()
        yield {"exit": code, "how": how, "left_behind": stop_group(proc.pid, grace)}
    finally:
        if not how:
            stop_group(proc.pid, grace)
            proc.wait()


def sweep(pgid: int, settle: float = SWEEP_SETTLE_S) -> list[int]:
    """Kill whatever is left of a process group on this node; the pids that were still there.

    A group whose processes are still exiting (signalled by the node's stop, or killed a moment ago) gets up to
    `settle` seconds to go on its own: only what outlives that is killed and named."""
    import psutil

    from doctor.deploy.guard import _group_alive

    deadline = time.monotonic() + settle
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                left.append(p.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    if left:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left
