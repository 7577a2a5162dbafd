"""The Ray driver of `deploy --ray`: one engine process per planned node, each started by a Ray task pinned to
its node (hard node affinity), their logs interleaved on stdout, everything stopped on the way out.

`python -m doctor.fleet.launch_runner --plan plan.json --out summary.json`. deploy runs it like a server process
(its own process group, stdout into the deployment log, SIGTERM to stop), so the single-machine flow (health
wait, exercises, stop on every exit path) applies unchanged. Each log line reads `(node R IP) LINE`.

It stops (SIGTERM to it, or any node's engine exiting by itself) by cancelling every node task: first gracefully
(the task's `finally` stops its process group), then `ray.cancel(force=True)` for what is left, then a sweep task
per node that kills and reports whatever of the group survived. The summary records, per node, the engine's pid,
how it ended and the survivors.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from doctor.deploy.guard import POLL_S as GUARD_POLL_S
from doctor.fleet.launch_task import SWEEP_SETTLE_S
from doctor.fleet.ray_runner import PACKAGE_ROOT, _one_line

CANCEL_WAIT_S = 5.0
SWEEP_TIMEOUT_S = 20.0


class _Node:
    """One planned node: its task, what it told us, how it ended."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.rank = int(plan["rank"])
        self.prefix = f"(node {self.rank} {plan.get('ip') or '?'}) "
        self.gen: Any = None
        self.started: dict[str, Any] | None = None
        self.exit: int | None = None
        self.how = "not started"
        self.error: str | None = None
        self.survivors: list[int] = []
        self.done = threading.Event()

    def summary(self) -> dict[str, Any]:
        return {"rank": self.rank, "node_id": self.plan["node_id"], "ip": self.plan.get("ip"),
                "argv": self.plan["argv"], "started": self.started, "exit_code": self.exit, "how": self.how,
                "error": self.error, "survivors": self.survivors}


class Launcher:
    """Starts, follows and stops the node tasks."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.grace = float(plan.get("grace", 10.0))
        self.nodes = [_Node(n) for n in plan["nodes"]]
        self.stop = threading.Event()
        self.first_exit: _Node | None = None
        self._out = threading.Lock()

    def say(self, text: str) -> None:
        with self._out:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def start(self) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from doctor.fleet.launch_task import run_engine

        task = ray.remote(num_cpus=0, max_retries=0)(run_engine)
        for node in self.nodes:
            strategy = NodeAffinitySchedulingStrategy(node_id=node.plan["node_id"], soft=False)
            node.gen = task.options(scheduling_strategy=strategy, num_returns="streaming").remote(
                node.plan["argv"], node.plan.get("env") or {}, self.grace)
            node.how = "starting"
            self.say(f"{node.prefix}qwen-doctor: starting {' '.join(node.plan['argv'])}")
            threading.Thread(target=self._follow, args=(node,), daemon=True).start()

    def _follow(self, node: _Node) -> None:
        import ray

        try:
            for ref in node.gen:
                item = ray.get(ref)
                if "started" in item:
                    node.started = item["started"]
                    node.how = "running"
                for line in item.get("lines", ()):
                    self.say(node.prefix + line)
                if "exit" in item:
                    node.exit = item["exit"]
                    node.error = item.get("error")
                    node.how = item.get("how") or "could not start"
                    left = item.get("left_behind")
                    self.say(f"{node.prefix}qwen-doctor: the engine {node.how}"
                             f"{f' with code {node.exit}' if node.exit is not None else ''}"
                             f"{f': {node.error}' if node.error else ''}"
                             f"{f'; what it left behind was {left}' if left and left != 'already exited' else ''}")
        except Exception as exc:  # cancelled, the node died, the worker crashed
            if not self.stop.is_set():
                node.error = _one_line(exc)
                node.how = "task failed"
                self.say(f"{node.prefix}qwen-doctor: the node task failed: {node.error}")
        finally:
            node.done.set()
            if not self.stop.is_set() and self.first_exit is None:
                self.first_exit = node
                self.stop.set()

    def shutdown(self) -> None:
        """Cancel every task (gracefully, then by force) and sweep each node's process group."""
        import ray

        self.stop.set()
        running = [n for n in self.nodes if n.gen is not None and not n.done.is_set()]
        for node in running:
            _cancel(node.gen, force=False)
        deadline = time.monotonic() + self.grace + CANCEL_WAIT_S
        for node in running:
            node.done.wait(max(0.0, deadline - time.monotonic()))
            node.how = "stopped by qwen-doctor" if node.done.is_set() else "killed (ray.cancel force=True)"
            if not node.done.is_set():
                _cancel(node.gen, force=True)
        self._sweep(ray)

    def _sweep(self, ray: Any) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from doctor.fleet.launch_task import sweep

        task = ray.remote(num_cpus=0, max_retries=0)(sweep)
        refs = {}
        for node in self.nodes:
            if node.started:
                strategy = NodeAffinitySchedulingStrategy(node_id=node.plan["node_id"], soft=False)
                settle = self._settle(node)
                refs[task.options(scheduling_strategy=strategy).remote(node.started["pgid"], settle)] = (node, settle)
        for ref, (node, settle) in refs.items():
            try:
                node.survivors = ray.get(ref, timeout=settle + SWEEP_TIMEOUT_S)
            except Exception as exc:
                node.error = node.error or f"sweep failed: {_one_line(exc)}"
        for node, _ in refs.values():
            if node.survivors:
                self.say(f"{node.prefix}qwen-doctor: killed {len(node.survivors)} process(es) left behind: "
                         f"{node.survivors}")

    def _settle(self, node: _Node) -> float:
        """How long the sweep lets `node`'s group go on its own: a force-cancelled node's group is being stopped by
        its guard (SIGTERM once it sees the worker gone, SIGKILL `grace` seconds later), so it gets that long."""
        if node.how.startswith("killed"):
            return self.grace + 2 * GUARD_POLL_S + SWEEP_SETTLE_S
        return SWEEP_SETTLE_S


def _cancel(gen: Any, force: bool) -> None:
    import ray

    try:
        ray.cancel(gen, force=force)
    except Exception:
        pass


def run(plan: dict[str, Any], out: Path) -> int:
    """Launch, follow until SIGTERM/SIGINT or an engine exits, stop everything, write the summary."""
    import ray

    runtime_env = {"env_vars": {"PYTHONPATH": PACKAGE_ROOT + os.pathsep + "${PYTHONPATH}"}}
    launcher = Launcher(plan)

    def on_signal(*_: Any) -> None:
        launcher.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    summary: dict[str, Any] = {"address": plan["address"], "status": "ok", "error": None}
    code = 0
    try:
        ray.init(address=plan["address"], runtime_env=runtime_env, logging_level="ERROR", log_to_driver=False)
        for signum in (signal.SIGTERM, signal.SIGINT):  # ray.init installs its own (sys.exit) handlers
            signal.signal(signum, on_signal)
        launcher.start()
        while not launcher.stop.wait(0.2):
            pass
        if launcher.first_exit is not None:
            node = launcher.first_exit
            code = node.exit if node.exit not in (None, 0) else 1
            summary["ended_by"] = f"node {node.rank}: {node.how}"
        else:
            summary["ended_by"] = "stopped by qwen-doctor"
        launcher.shutdown()
    except Exception as exc:
        summary.update(status="error", error=_one_line(exc))
        launcher.say(f"qwen-doctor: the Ray launcher failed: {summary['error']}")
        code = 1
    summary["nodes"] = [n.summary() for n in launcher.nodes]
    out.write_text(json.dumps(summary, default=str), encoding="utf-8")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m doctor.fleet.launch_runner")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
    code = run(plan, Path(args.out))
    sys.stdout.flush()
    os._exit(code)  # skip the driver's teardown: the tasks are already cancelled


if __name__ == "__main__":
    sys.exit(main())
