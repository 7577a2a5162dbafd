"""Run the collector through a Spark barrier stage, one task per executor, and record the GPU configuration.

Meant to run in its own process (`python -m doctor.fleet.spark_runner`), which the parent kills at its deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from doctor.fleet.node_task import DELAY_ENV, spark_barrier_task
from doctor.redact import REDACTED, is_secret_name

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
CONF_KEPT = re.compile(
    r"^spark\.(master|executor\.instances|executor\.cores|task\.cpus|dynamicAllocation\.enabled|"
    r"(executor|task|driver|worker)\.resource\..*|executorEnv\..*)$"
)
EXECUTOR_WAIT_S = 30.0


def session(master: str | None, node_timeout_s: float) -> Any:
    """A Spark session whose barrier sync and slot checks give up instead of waiting for days."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("qwen-doctor-fleet")
    if master:
        builder = builder.master(master)
    python_path = PACKAGE_ROOT + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    settings = {
        "spark.ui.enabled": "false",
        "spark.barrier.sync.timeout": str(max(1, int(node_timeout_s))),
        "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s",
        "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "3",
        "spark.executorEnv.PYTHONPATH": python_path,
    }
    if (master or "").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Local executors share this machine: run them on this interpreter rather than whatever `python3` is.
        settings["spark.pyspark.python"] = sys.executable
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not spark.sparkContext.getConf().contains("spark.master"):
        raise RuntimeError("no Spark master configured: pass --spark MASTER (e.g. local[2], spark://HOST:7077)")
    return spark


def task_count(sc: Any, conf: dict[str, str]) -> int:
    """One task per executor; in local mode every task slot stands for an executor."""
    if conf.get("spark.master", "").startswith("local"):
        return max(1, sc.defaultParallelism)
    wanted = int(conf.get("spark.executor.instances") or 0)
    deadline = time.monotonic() + EXECUTOR_WAIT_S
    while True:
        executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        if executors >= max(1, wanted) or time.monotonic() > deadline:
            return max(1, executors)
        time.sleep(0.5)


def gather(master: str | None, node_timeout_s: float, probe_timeout_s: float, delay_s: float = 0.0) -> dict[str, Any]:
    """The fleet section from one barrier stage; the stage is cancelled at the deadline."""
    import pyspark

    t0 = time.monotonic()
    spark = session(master, node_timeout_s)
    try:
        sc = spark.sparkContext
        conf = {k: (REDACTED if is_secret_name(k) else v) for k, v in sc.getConf().getAll() if CONF_KEPT.match(k)}
        n = task_count(sc, conf)
        fleet: dict[str, Any] = {
            "engine": "spark", "target": conf.get("spark.master"), "status": "ok", "error": None,
            "cluster": {"spark_version": pyspark.__version__, "conf": conf, "barrier_tasks": n,
                        "default_parallelism": sc.defaultParallelism},
            "nodes": [],
        }
        box: dict[str, Any] = {}
        body = partial(spark_barrier_task, probe_timeout_s, delay_s)

        def stage() -> None:
            try:
                box["rows"] = sc.parallelize(range(n), n).barrier().mapPartitions(body).collect()
            except Exception as exc:
                box["error"] = exc

        worker = threading.Thread(target=stage, daemon=True)
        worker.start()
        worker.join(max(0.1, t0 + node_timeout_s - time.monotonic()))  # the budget covers the session start too
        if worker.is_alive():
            sc.cancelAllJobs()
            fleet.update(status="timeout", error=f"barrier stage of {n} task(s) did not finish within {node_timeout_s:g} s")
        elif "error" in box:
            fleet.update(status="error", error=_one_line(box["error"]))
        for row in sorted(box.get("rows") or [], key=lambda r: r["partition"]):
            facts = row["facts"] if isinstance(row.get("facts"), dict) else {}
            fleet["nodes"].append({
                "node_id": f"task-{row['partition']}", "hostname": facts.get("hostname"),
                "ip": (row.get("address") or "").rsplit(":", 1)[0] or None, "status": "ok", "error": None,
                "seconds": facts.get("collect_seconds"),
                "resources": {"GPU": float(len(row["gpu_addresses"].get("gpu", [])))},
                "executor_address": row.get("address"), "gpu_addresses": row["gpu_addresses"], "facts": facts,
            })
        fleet["seconds"] = round(time.monotonic() - t0, 3)
        return fleet
    finally:
        spark.stop()


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    reason = re.search(r"(SparkException|BarrierJobSlotsNumberCheckFailed|Exception)[^\n]*", text)
    line = reason.group(0) if reason else (text.splitlines() or [""])[0]
    return f"{type(exc).__name__}: {line.strip()}"[:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m doctor.fleet.spark_runner")
    parser.add_argument("--master", default=None)
    parser.add_argument("--node-timeout", type=float, default=60.0)
    parser.add_argument("--probe-timeout", type=float, default=10.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    delay = float(os.environ.get(DELAY_ENV) or 0)
    try:
        fleet = gather(args.master or None, args.node_timeout, args.probe_timeout, delay)
    except Exception as exc:
        fleet = {"engine": "spark", "target": args.master, "status": "error", "error": _one_line(exc),
                 "cluster": {}, "nodes": []}
    Path(args.out).write_text(json.dumps(fleet, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
