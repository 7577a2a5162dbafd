"""The --ray / --spark / --hf options as a user meets them: usage errors are one line and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]


def qd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    full_env.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=full_env,
                          cwd=ROOT, timeout=120)


@pytest.mark.parametrize("address,words", [("head:99999", "between 1 and 65535"),
                                           ("http://head:8265", "dashboard"),
                                           ("grpc://head", "unknown scheme")])
def test_a_malformed_ray_address_is_a_usage_error(address: str, words: str):
    done = qd("check", "--ray", address, "--only", "QD-FLEET")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and words in done.stderr and "Traceback" not in done.stderr


def test_fleet_options_cannot_be_combined_with_a_saved_bundle():
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--hf")
    assert done.returncode == 2 and "collect them into the bundle" in done.stderr


def test_ray_and_spark_together_is_a_usage_error():
    done = qd("check", "--ray", "head:6379", "--spark", "local[2]")
    assert done.returncode == 2 and "exclusive" in done.stderr


def test_a_bad_ray_address_in_the_environment_is_a_failed_check_not_a_crash():
    done = qd("check", "--only", "QD-NET", "--format", "json", env={"RAY_ADDRESS": "head:notaport"})
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert results["QD-NET-001"]["status"] == "fail" and done.returncode == 1


def test_fleet_checks_are_listed():
    listed = qd("check", "--list").stdout
    for cid in ("QD-FLEET-001", "QD-FLEET-006", "QD-NET-002", "QD-HF-002", "QD-HF-003"):
        assert cid in listed
