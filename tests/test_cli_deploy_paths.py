"""Every way a deploy can end leaves a report with its outcome; no way leaves a server behind;
--flag and the checkpoint's config.json are checked before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.support.deploy_helpers import descendants, kill_all, wait_gone
from tests.test_cli_deploy import _is_fake_server, qd, tiny_args


def outcome(path) -> dict:
    data = json.loads(path.read_text())
    first = data["results"][0]
    assert first["check_id"] == "QD-DEPLOY-OUTCOME", "the outcome is the first result"
    return first


def test_a_refusal_writes_the_report_with_the_refusal_as_outcome(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.xml")))
    assert r.returncode == 1 and (tmp_path / "r.xml").exists()
    first = outcome(tmp_path / "r.json")
    assert first["status"] == "fail" and first["summary"].startswith("refused to start: failing checks QD-VER-001")


def test_a_healthy_deploy_has_an_ok_outcome_first(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "-o", str(tmp_path / "r.json")))
    first = outcome(tmp_path / "r.json")
    assert first["status"] == "ok" and first["summary"].startswith("deployed: healthy after")
    assert "stopped by qwen-doctor" in first["summary"] and "preflight: " in r.stderr
    assert r.stderr.index("preflight: ") < r.stderr.index("starting: ")  # the verdict comes before the start


def test_a_start_timeout_shows_the_log_before_the_shutdown_and_says_raise_timeout(tmp_path) -> None:
    r = qd(*tiny_args(tmp_path, "--force", "--timeout", "3", "-o", str(tmp_path / "r.json")), mode="slow")
    assert r.returncode == 1
    data = json.loads((tmp_path / "r.json").read_text())
    start = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-START")
    assert "not healthy after 3 s" in start["summary"]
    assert any("still progressing" in d and "raise --timeout" in d for d in start["details"])
    assert start["fix"][0].startswith("raise --timeout")
    tail = start["details"][start["details"].index("last log lines before qwen-doctor stopped the server:") + 1:]
    assert tail and all("Shutting down" not in line for line in tail)
    assert "Shutting down" in (tmp_path / "server.log").read_text()  # logged, but after the shutdown began
    assert outcome(tmp_path / "r.json")["summary"].startswith("the server did not become healthy")


def _start_deploy(tmp_path, *extra: str, **env: str) -> tuple[subprocess.Popen, list[psutil.Process]]:
    cmd = [sys.executable, "-m", "doctor", "deploy", *tiny_args(tmp_path, "--force", *extra)]
    doctor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "FAKE_SERVER_MODE": "hang", "FAKE_SERVER_CHILD": "1", **env})
    family: list[psutil.Process] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(family) < 2:  # the server and its grandchild
        family = [p for p in descendants(doctor.pid) if _is_fake_server(p)]
        time.sleep(0.2)
    return doctor, family


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_an_interrupted_start_writes_every_report_with_the_interruption(tmp_path, sig, code, name) -> None:
    doctor, family = _start_deploy(tmp_path, "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.html"))
    try:
        assert len(family) >= 2, "the fake server did not start"
        doctor.send_signal(sig)
        _, err = doctor.communicate(timeout=60)
        assert doctor.returncode == code, err
        assert wait_gone(family, 10) == []
        first = outcome(tmp_path / "r.json")
        assert first["status"] == "fail" and first["summary"].startswith(f"interrupted by {name} during the start")
        data = json.loads((tmp_path / "r.json").read_text())
        start = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-START")
        assert start["evidence"]["state"] == "interrupted" and data["sections"]["remedies"] == []
        assert "interrupted by" in (tmp_path / "r.html").read_text()
    finally:
        kill_all(family)
        if doctor.poll() is None:
            doctor.kill()


def test_sigkill_of_qwen_doctor_leaves_no_server_process(tmp_path) -> None:
    doctor, family = _start_deploy(tmp_path)
    try:
        assert len(family) >= 2, "the fake server did not start"
        doctor.kill()
        doctor.wait(10)
        assert wait_gone(family, 30) == [], "the server outlived a SIGKILLed qwen-doctor"
        # the guard removes the record once it sees the group empty (it polls every 0.5 s): wait for that
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "no server started by qwen-doctor is recorded" not in qd("--status").stdout:
            time.sleep(0.5)
        assert "no server started by qwen-doctor is recorded" in qd("--status").stdout
    finally:
        kill_all(family)


def test_a_max_model_len_above_the_checkpoint_limit_fails_the_dry_run_naming_the_limit(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 256, "num_attention_heads": 4}))
    r = qd(*tiny_args(tmp_path, "--flag", "max-model-len=4096", "--dry-run", "--format", "json"))
    data = json.loads(r.stdout)
    check = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-CONFIG")
    assert check["status"] == "fail" and "--max-model-len 4096" in check["summary"] and "256" in check["summary"]
    assert "--max-model-len 4096" in r.stderr  # the override reached the command
    assert r.returncode == 1 and data["results"][0]["status"] == "fail"


def test_a_flag_override_within_the_limit_passes_and_reaches_the_command(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 256}))
    r = qd(*tiny_args(tmp_path, "--flag", "max-model-len=128", "--flag", "max-num-seqs=4", "--dry-run",
                      "--format", "json"))
    data = json.loads(r.stdout)
    assert next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-CONFIG")["status"] == "ok"
    command = data["sections"]["deployment"]["command"]
    assert "--max-model-len 128" in command and "--max-model-len 256" not in command
    assert "--max-num-seqs 4" in command


@pytest.mark.parametrize("flag, message", [
    ("max-model-lenn=4096", "has no option --max-model-lenn (did you mean max-model-len?)"),
    ("max-model-len=lots", "--flag max-model-len: argument --max-model-len"),
    ("port=1", "--flag port: use --port instead"),
])
def test_a_bad_flag_is_one_line_and_exit_2(tmp_path, flag, message) -> None:
    r = qd(*tiny_args(tmp_path, "--flag", flag, "--dry-run"))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_ctrl_c_during_the_checks_still_writes_the_report(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    import doctor.facts.collect
    from doctor.cli.deploy import deploy

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(doctor.facts.collect, "collect", interrupted)
    out = tmp_path / "r.json"
    r = CliRunner().invoke(deploy, tiny_args(tmp_path, "--force", "-o", str(out)))
    assert r.exit_code == 130
    first = outcome(out)
    assert first["status"] == "fail" and first["summary"].startswith("interrupted by Ctrl-C during the checks")
    assert not (tmp_path / "server.log").exists()


@pytest.mark.parametrize("dry_run", [["--dry-run"], []], ids=["dry run", "real run"])
def test_deploy_log_naming_an_existing_file_is_refused_before_anything_starts(tmp_path, dry_run) -> None:
    log = tmp_path / "server.log"
    log.write_text("the log of last night's crash\n")
    r = qd("--profile", "vllm-stable", *dry_run, "--log", str(log))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "refusing to overwrite server log" in r.stderr and "Traceback" not in r.stderr
    assert log.read_text() == "the log of last night's crash\n"
