"""`check --spark` on a real local Spark session (local[2], Java 17): the barrier stage runs the collector."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.conftest import need

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]


def java_ok() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def qd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=full_env,
                          cwd=ROOT, timeout=300)


@pytest.fixture(autouse=True)
def _spark_available() -> None:
    need(find_spec("pyspark") is not None, "pyspark is not installed (pip install -e '.[spark]')")
    need(java_ok(), "Java 17 is needed by pyspark")


def test_check_spark_runs_the_barrier_stage_one_task_per_slot_on_local_spark():
    done = qd("check", "--spark", "local[2]", "--only", "QD-FLEET", "--format", "json", "--node-timeout", "120",
              env={"HF_ENDPOINT": "https://mirror.invalid"})
    report = json.loads(done.stdout)
    results: dict[str, list[dict]] = {}
    for r in report["results"]:
        results.setdefault(r["check_id"], []).append(r)
    assert [r["status"] for r in results["QD-FLEET-001"]] == ["ok", "ok"], results["QD-FLEET-001"]
    assert results["QD-FLEET-002"][0]["status"] == "ok"
    assert results["QD-FLEET-006"][0]["status"] == "skip" and "local mode" in results["QD-FLEET-006"][0]["summary"]
    assert results["QD-FLEET-004"][0]["status"] == "ok"  # local executors inherit the driver's environment
    table = report["sections"]["fleet"]
    assert table["engine"] == "spark" and table["target"] == "local[2]" and len(table["columns"]) == 2


def test_spark_bundle_records_the_gang_and_the_conf(tmp_path: Path):
    bundle = tmp_path / "spark.json"
    done = qd("collect", "--spark", "local[2]", "-o", str(bundle), "--node-timeout", "120")
    assert done.returncode == 0, done.stderr
    fleet = json.loads(bundle.read_text())["fleet"]
    assert fleet["cluster"]["barrier_tasks"] == 2 and fleet["cluster"]["conf"]["spark.master"] == "local[2]"
    assert [n["node_id"] for n in fleet["nodes"]] == ["task-0", "task-1"]


def test_a_master_nobody_answers_is_a_clear_failure_within_the_deadline():
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    done = qd("check", "--spark", f"spark://127.0.0.1:{port}", "--only", "QD-FLEET-001", "--format", "json",
              "--node-timeout", "20")
    [result] = json.loads(done.stdout)["results"]
    assert result["status"] == "fail" and done.returncode == 1
    assert time.monotonic() - t0 < 20 + 10 + 15  # --node-timeout + --timeout + start-up and report
