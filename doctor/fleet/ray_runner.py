"""Run the collector as one Ray task pinned to each alive node (hard node affinity), every step bounded.

Meant to run in its own process (`python -m doctor.fleet.ray_runner`), which the parent kills at its
deadline: ray.init and ray.shutdown have no timeout of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from doctor.fleet.node_task import DELAY_ENV, ray_node_task

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
KEPT_RESOURCES = ("CPU", "GPU", "memory", "object_store_memory")


def gather(address: str, node_timeout_s: float, probe_timeout_s: float, delay_s: float = 0.0) -> dict[str, Any]:
    """The fleet section for the cluster at `address` ("local" starts a one-node cluster for the run).

    `node_timeout_s` is the budget of the whole call: nodes that have not answered when it is spent are timed out.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    t0 = time.monotonic()
    fleet: dict[str, Any] = {"engine": "ray", "target": address, "status": "ok", "error": None, "cluster": {},
                             "nodes": []}
    # Workers find qwen-doctor on their PYTHONPATH; prepend this checkout without shipping a working_dir.
    runtime_env = {"env_vars": {"PYTHONPATH": PACKAGE_ROOT + os.pathsep + "${PYTHONPATH}"}}
    kwargs: dict[str, Any] = {"address": address, "runtime_env": runtime_env, "logging_level": "ERROR",
                              "log_to_driver": False}
    if address == "local":
        kwargs.update(num_cpus=1, include_dashboard=False, object_store_memory=80 * 1024**2)
    ray.init(**kwargs)
    fleet["cluster"] = {
        "ray_version": ray.__version__,
        "driver_node_id": ray.get_runtime_context().get_node_id(),
        "resources": _resources(ray.cluster_resources()),
    }
    task = ray.remote(num_cpus=0, max_retries=0)(ray_node_task)
    refs: dict[Any, dict[str, Any]] = {}
    for info in ray.nodes():
        node = {"node_id": info["NodeID"], "hostname": info.get("NodeManagerHostname"),
                "ip": info.get("NodeManagerAddress"), "resources": _resources(info.get("Resources") or {}),
                "status": "dead", "error": "the GCS marks this node dead", "facts": None, "seconds": None}
        fleet["nodes"].append(node)
        if info.get("Alive"):
            strategy = NodeAffinitySchedulingStrategy(node_id=info["NodeID"], soft=False)
            refs[task.options(scheduling_strategy=strategy).remote(probe_timeout_s, delay_s)] = node
            node.update(status="timeout", error=f"no answer within {node_timeout_s:g} s")
    started = time.monotonic()
    deadline = t0 + node_timeout_s  # the whole run's budget, ray.init included
    pending = list(refs)
    while pending and time.monotonic() < deadline:
        ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.05, deadline - time.monotonic()))
        for ref in ready:
            node = refs[ref]
            node["seconds"] = round(time.monotonic() - started, 3)
            try:
                node["facts"] = ray.get(ref, timeout=10)
                node.update(status="ok", error=None)
            except Exception as exc:  # the task's own failure: node died, worker crashed, unschedulable
                node.update(status="error", error=_one_line(exc))
    for ref in pending:
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    fleet["seconds"] = round(time.monotonic() - t0, 3)
    return fleet


def _resources(res: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in res.items() if k in KEPT_RESOURCES}


def _one_line(exc: BaseException) -> str:
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m doctor.fleet.ray_runner")
    parser.add_argument("--address", required=True)
    parser.add_argument("--node-timeout", type=float, default=60.0)
    parser.add_argument("--probe-timeout", type=float, default=10.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    delay = float(os.environ.get(DELAY_ENV) or 0)
    try:
        fleet = gather(args.address, args.node_timeout, args.probe_timeout, delay)
    except Exception as exc:
        fleet = {"engine": "ray", "target": args.address, "status": "error", "error": _one_line(exc),
                 "cluster": {}, "nodes": []}
    Path(args.out).write_text(json.dumps(fleet, default=str), encoding="utf-8")
    if args.address == "local":
        import ray

        ray.shutdown()  # stops the one-node cluster this run started
    sys.stdout.flush()
    os._exit(0)  # skip a remote driver's teardown; its connection dies with the process


if __name__ == "__main__":
    sys.exit(main())
