"""`qwen-doctor deploy` as a user runs it, with the fake server standing in for the backend's python."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import psutil
import pytest
import yaml

from doctor.deploy.ports import free_port
from tests.support.deploy_helpers import descendants, kill_all, python_shim, wait_gone


def qd(*args: str, mode: str = "ok", timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor", "deploy", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "FAKE_SERVER_MODE": mode, **env})


def tiny_args(tmp_path, *more: str) -> list[str]:
    return ["--profile", "cpu-tiny", "--model", str(tmp_path), "--python", str(python_shim(tmp_path)),
            "--port", str(free_port()), "--log", str(tmp_path / "server.log"), "--burst", "3", *more]


def test_dry_run_prints_the_real_command_and_starts_nothing(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--dry-run", "-v"))  # -v: passed checks are listed, not only counted
    assert "would run:" in r.stderr and "-m vllm.entrypoints.openai.api_server --model" in r.stderr
    assert "VLLM_CPU_KVCACHE_SPACE=1" in r.stderr and "--structured-outputs-config" in r.stderr
    assert "QD-DEPLOY-FLAGS" in r.stdout and not (tmp_path / "server.log").exists()
    assert "QD-DRV-001 NVIDIA driver loaded: not applicable: the profile runs on CPU" in r.stdout


def test_a_failing_check_refuses_to_start_without_force(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path))  # the shim's interpreter has no vLLM: QD-VER-001 fails
    assert r.returncode == 1
    assert "refusing to start: failing checks QD-VER-001" in r.stderr
    assert not (tmp_path / "server.log").exists()


def schema_errors(doc: dict) -> list[str]:
    schema = json.loads(resources.files("doctor.report").joinpath("report.schema.json").read_text())
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]


def test_force_deploys_exercises_and_writes_every_report_format_in_one_run(tmp_path) -> None:
    html, xml, js, md = (tmp_path / f"report.{ext}" for ext in ("html", "xml", "json", "md"))
    r = qd(*tiny_args(tmp_path, "--force", "-v", "--report", str(html), "-o", str(xml), "-o", str(js), "-o", str(md)))
    assert "phase: ready" in r.stderr and "stopped: stopped by qwen-doctor: exited on SIGTERM" in r.stderr
    data = json.loads(js.read_text())
    assert schema_errors(data) == []
    ids = {res["check_id"]: res["status"] for res in data["results"]}
    assert ids["QD-VER-001"] == "fail" and ids["QD-DEPLOY-START"] == "ok" and ids["QD-DEPLOY-BURST"] == "ok"
    assert ids["QD-DEPLOY-KV"] == "skip"  # /tmp_path has no config.json for the planner
    sections = data["sections"]
    assert sections["metrics"]["requests"] == 3 and sections["metrics"]["errors"] == 0
    assert set(sections["metrics"]["percentiles"]["ttft_ms"]) == {"p50", "p90", "p99"}
    assert [ex["name"] for ex in sections["exercises"]] == [
        "models", "chat", "stream", "structured", "reasoning", "thinking_off", "tools", "tools_stream", "image",
        "prefix_cache", "speculative", "warmup", "burst"]
    assert sections["deployment"]["log_excerpt"] and "exercises" not in sections["deployment"]
    assert "burst: 3 ok / 0 failed" in r.stdout and "TTFT" in r.stdout and "ttft_ms" in r.stdout
    # The exercises that are also QD-DEPLOY-* results are not counted again in the headline.
    problems = sum(1 for res in data["results"] if res["status"] in ("warn", "fail", "error"))
    assert f"{problems} problem{'s' if problems > 1 else ''} found" in html.read_text()
    cases = [c.get("name") for c in ET.parse(xml).getroot().iter("testcase")]
    assert len(cases) == len(data["results"]) and not any("[EXERCISE]" in c for c in cases)
    assert "### Metrics" in md.read_text()
    assert r.returncode == 1  # QD-VER-001 still failed: forcing does not hide it


def test_planted_secrets_reach_no_output_byte(tmp_path) -> None:
    hf, key, said = "hf_PlantedDeployEnv0123456789abcd", "PlantedProfileApiKey55xy", "hf_PlantedInLogLine98765zyxwvu"
    profile = yaml.safe_load(Path("profiles/cpu-tiny.yaml").read_text())
    profile["flags"]["api-key"] = key
    path = tmp_path / "keyed.yaml"
    path.write_text(yaml.safe_dump(profile))
    outs = [tmp_path / f"r.{ext}" for ext in ("html", "xml", "json", "md", "txt")]
    args = tiny_args(tmp_path, "--force", *(a for o in outs for a in ("-o", str(o))))
    args[args.index("cpu-tiny")] = str(path)
    r = qd(*args, HF_TOKEN=hf, FAKE_SERVER_SAY=f"INFO using HF_TOKEN={said} for the hub")
    assert said in (tmp_path / "server.log").read_text(), "the secret was planted in the server log"
    data = json.loads(outs[2].read_text())
    by_id = {res["check_id"]: res["status"] for res in data["results"]}
    assert by_id["QD-DEPLOY-CHAT"] == "ok", "the client sent the profile's api key"
    assert "[REDACTED]" in data["sections"]["deployment"]["command"]
    assert any("[REDACTED]" in line for line in data["sections"]["deployment"]["log_excerpt"])
    for blob in [r.stdout.encode(), r.stderr.encode(), *(o.read_bytes() for o in outs)]:
        for secret in (hf, key, said):
            assert secret.encode() not in blob


def test_a_server_that_dies_at_start_reports_the_remedy_and_exit_1(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "--format", "json"), mode="die")
    data = json.loads(r.stdout)
    start = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-START")
    assert start["remedy_ids"][0] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED" and r.returncode == 1
    assert data["sections"]["remedies"][0]["id"] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED"
    assert schema_errors(data) == []
    assert "QD-R-VLLM-MAX-MODEL-LEN-DERIVED" in r.stderr  # the follower's progress line


def test_a_report_path_of_unknown_format_is_exit_2_before_anything_starts(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "--report", str(tmp_path / "report")))
    assert r.returncode == 2 and "cannot tell the report format" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "server.log").exists()


def test_a_kept_server_is_recorded_recognised_on_its_port_and_stopped_by_id(tmp_path) -> None:
    args = tiny_args(tmp_path, "--force", "--keep")
    r = qd(*args)
    line = next(x for x in r.stderr.splitlines() if x.startswith("server left running: id "))
    run_id = line.split("id ")[1].split(",")[0]
    pid = int(line.split("pid ")[1].split(",")[0])
    proc = psutil.Process(pid)
    try:
        assert f"qwen-doctor deploy --stop {run_id}" in r.stderr
        status = qd("--status")
        assert status.returncode == 0 and f"{run_id}  alive" in status.stdout and "cpu-tiny" in status.stdout
        # The kept server still writes server.log: a second deploy names a new log (an existing one is refused).
        again_args = [str(tmp_path / "again.log") if a == str(tmp_path / "server.log") else a for a in args]
        again = qd(*again_args, "-o", str(tmp_path / "busy.json"))
        assert again.returncode == 2 and "held by a server qwen-doctor started earlier" in again.stderr
        assert f"qwen-doctor deploy --stop {run_id}" in again.stderr and "Traceback" not in again.stderr
        busy = json.loads((tmp_path / "busy.json").read_text())
        assert busy["results"][0]["check_id"] == "QD-DEPLOY-OUTCOME" and busy["results"][0]["status"] == "fail"
        assert "held by a server qwen-doctor started earlier" in busy["results"][0]["summary"]
        stop = qd("--stop", run_id)
        assert stop.returncode == 0 and f"{run_id}: stopped with SIGTERM" in stop.stderr
        assert wait_gone([proc], 10) == []
        assert "no server started by qwen-doctor is recorded" in qd("--status").stdout
    finally:
        kill_all([proc])


def test_stop_of_an_unknown_id_is_exit_2() -> None:
    r = qd("--stop", "424242")
    assert r.returncode == 2 and "no server with id '424242'" in r.stderr


def test_run_records_with_foreign_types_are_skipped_by_status_and_stop() -> None:
    """A hand-edited or half-written record (pid as text, no start time) is not ours to list or stop."""
    runs = Path(os.environ["QWEN_DOCTOR_STATE_DIR"]) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    fields = {"host": "127.0.0.1", "port": 8000, "profile": "p", "backend": "vllm", "log": "l", "started_at": "s"}
    for name, odd in {"a": {"pid": "abc", "create_time": 1}, "b": {"pid": 7, "create_time": "x"},
                      "c": {"pid": -5, "create_time": 1}, "d": {"pid": 7, "create_time": None}}.items():
        (runs / f"{name}.json").write_text(json.dumps({**fields, **odd}))
    (runs / "e.json").write_text(json.dumps({**fields, "pid": 4242, "create_time": 1.0}))
    status = qd("--status")
    assert status.returncode == 0 and "4242  stale" in status.stdout, status.stderr
    stop = qd("--stop", "abc")
    assert stop.returncode == 2 and stop.stderr.count("\n") == 1 and "(known: 4242)" in stop.stderr, stop.stderr
    assert qd("--stop").returncode == 0
    assert not (runs / "e.json").exists()  # the stale record is removed under the name it had


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
