"""What runs on each node: qwen-doctor's collector and nothing else (no engine import on the node's hot path)."""

from __future__ import annotations

import os
import time
from typing import Any, Iterable, Iterator

# Fault injection for the tests: seconds a node task sleeps before collecting, so a test can stop a node mid-run.
DELAY_ENV = "QWEN_DOCTOR_NODE_TASK_DELAY_S"


def collect_node(probe_timeout_s: float = 10.0, delay_s: float = 0.0) -> dict[str, Any]:
    """The facts document of the machine this runs on."""
    from doctor.facts.collect import collect

    if delay_s > 0:
        time.sleep(delay_s)
    data = collect(timeout_s=probe_timeout_s).data
    data["pid"] = os.getpid()
    return data


def ray_node_task(probe_timeout_s: float, delay_s: float) -> dict[str, Any]:
    """Ray task body: the facts plus the node id Ray really ran it on (to prove the affinity pinning)."""
    import ray

    data = collect_node(probe_timeout_s, delay_s)
    data["ray_node_id"] = ray.get_runtime_context().get_node_id()
    return data


def spark_barrier_task(probe_timeout_s: float, delay_s: float, _rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Spark barrier-stage body: wait for the whole gang, then report this task's executor, GPUs and facts."""
    from pyspark import BarrierTaskContext

    ctx = BarrierTaskContext.get()
    ctx.barrier()
    partition = ctx.partitionId()
    infos = ctx.getTaskInfos()
    yield {
        "partition": partition,
        "address": infos[partition].address if partition < len(infos) else None,
        "gang_size": len(infos),
        "gpu_addresses": {name: list(info.addresses) for name, info in ctx.resources().items()},
        "facts": collect_node(probe_timeout_s, delay_s),
    }
