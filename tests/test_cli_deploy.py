"""`qwen-doctor deploy` as a user runs it, with the fake server standing in for the backend's python."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from doctor.deploy.ports import free_port
from tests.support.deploy_helpers import descendants, kill_all, python_shim, wait_gone


def qd(*args: str, mode: str = "ok", timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor", "deploy", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "FAKE_SERVER_MODE": mode, **env})


def tiny_args(tmp_path, *more: str) -> list[str]:
    return ["--profile", "cpu-tiny", "--model", str(tmp_path), "--python", str(python_shim(tmp_path)),
            "--port", str(free_port()), "--log", str(tmp_path / "server.log"), "--burst", "3", *more]


def test_dry_run_prints_the_real_command_and_starts_nothing(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--dry-run"))
    assert "would run:" in r.stderr and "-m vllm.entrypoints.openai.api_server --model" in r.stderr
    assert "VLLM_CPU_KVCACHE_SPACE=1" in r.stderr and "--structured-outputs-config" in r.stderr
    assert "QD-DEPLOY-FLAGS" in r.stdout and not (tmp_path / "server.log").exists()
    assert "QD-DRV-001 NVIDIA driver loaded: not applicable: the profile runs on CPU" in r.stdout


def test_a_failing_check_refuses_to_start_without_force(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path))  # the shim's interpreter has no vLLM: QD-VER-001 fails
    assert r.returncode == 1
    assert "refusing to start: failing checks QD-VER-001" in r.stderr
    assert not (tmp_path / "server.log").exists()


def test_force_deploys_exercises_and_writes_one_report(tmp_path) -> None:
    report = tmp_path / "report.json"
    r = qd(*tiny_args(tmp_path, "--force", "--report", str(report)))
    assert "phase: ready" in r.stderr and "stopped: exited on SIGTERM" in r.stderr
    data = json.loads(report.read_text())
    ids = {res["check_id"]: res["status"] for res in data["results"]}
    assert ids["QD-VER-001"] == "fail" and ids["QD-DEPLOY-START"] == "ok" and ids["QD-DEPLOY-BURST"] == "ok"
    assert ids["QD-DEPLOY-KV"] == "skip"  # /tmp_path has no config.json for the planner
    assert data["sections"]["deployment"]["metrics"]["completed"] == 3
    assert data["sections"]["deployment"]["log_excerpt"]
    assert "burst: 3 ok / 0 failed" in r.stdout and "TTFT" in r.stdout
    assert r.returncode == 1  # QD-VER-001 still failed: forcing does not hide it


def test_a_server_that_dies_at_start_reports_the_remedy_and_exit_1(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "--format", "json"), mode="die")
    data = json.loads(r.stdout)
    start = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-START")
    assert start["remedy_ids"][0] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED" and r.returncode == 1
    assert data["sections"]["deployment"]["remedies"][0]["id"] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED"


def test_keep_prints_how_to_stop_the_server(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "--keep"))
    line = next(x for x in r.stderr.splitlines() if x.startswith("server left running: pid "))
    pid = int(line.split("pid ")[1].split(",")[0])
    try:
        assert psutil.pid_exists(pid) and f"kill -TERM -- -{pid}" in r.stderr
    finally:
        proc = psutil.Process(pid)
        os.killpg(pid, signal.SIGTERM)
        assert wait_gone([proc], 10) == []


def test_a_busy_port_is_one_clear_line_and_exit_2(tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        args = tiny_args(tmp_path, "--force")
        args[args.index("--port") + 1] = str(port)
        r = qd(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"qwen-doctor: error: port {port} on 127.0.0.1 is already in use" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--profile", "no-such-profile"], "unknown profile 'no-such-profile'"),
    (["--profile", "cpu-tiny", "--set", "novalue"], "--set expects NAME=VALUE"),
    (["--profile", "cpu-tiny"], "variable 'model_dir' has no value"),
])
def test_bad_input_is_one_line_and_exit_2(args, message) -> None:
    r = qd(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_a_malformed_profile_file_is_exit_2(tmp_path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_bytes(b"name: [unclosed\n\x00\xff")
    r = qd("--profile", str(bad))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_sglang_profile_renders_a_command_its_flag_schema_accepts(tmp_path) -> None:
    r = qd("--profile", "sglang-stable", "--port", str(free_port()), "--python", str(python_shim(tmp_path)),
           "--dry-run", "--format", "json")
    data = json.loads(r.stdout)
    flags = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-FLAGS")
    assert flags["status"] == "ok" and "schema sglang" in flags["summary"]
    assert "-m sglang.launch_server --model-path" in r.stderr


def _is_fake_server(p: psutil.Process) -> bool:
    try:
        cmd = " ".join(p.cmdline())
    except psutil.Error:
        return False
    return "fake_server" in cmd or "time.sleep(600)" in cmd


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_killing_qwen_doctor_mid_deploy_leaves_no_child_process(tmp_path, sig, code) -> None:
    cmd = [sys.executable, "-m", "doctor", "deploy", *tiny_args(tmp_path, "--force")]
    doctor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "FAKE_SERVER_MODE": "hang", "FAKE_SERVER_CHILD": "1"})
    family: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(family) < 2:  # the server and its grandchild
            family = [p for p in descendants(doctor.pid) if _is_fake_server(p)]
            time.sleep(0.2)
        assert len(family) >= 2, "the fake server did not start"
        doctor.send_signal(sig)
        _, err = doctor.communicate(timeout=60)
        assert doctor.returncode == code, err
        assert wait_gone(family, 10) == [], "a child of the deploy survived"
        assert descendants(doctor.pid) == []
    finally:
        kill_all(family)
        if doctor.poll() is None:
            doctor.kill()
