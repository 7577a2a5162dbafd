"""`qwen-doctor probe URL` against a running (fake) server: exercises, the server's own figures, verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from doctor.deploy.ports import free_port
from tests.support.fake_server import serve
from tests.test_cli_deploy import schema_errors


@pytest.fixture
def server(request):
    mode = getattr(request, "param", "ok")
    port = free_port()
    httpd = serve(port, "tiny", mode, api_key="sk-probe-secret-0123456789")
    yield f"http://127.0.0.1:{port}"
    httpd.shutdown()
    httpd.server_close()


def qd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor", "probe", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def test_probe_writes_a_report_with_the_servers_kv_usage_and_preemptions(server, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = qd(server + "/v1", "--api-key", "sk-probe-secret-0123456789", "--burst", "6", "-o", str(out),
           "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert schema_errors(data) == []
    ids = {x["check_id"]: x["status"] for x in data["results"]}
    assert ids["QD-DEPLOY-CHAT"] == "ok" and ids["QD-DEPLOY-BURST"] == "ok"
    assert ids["QD-SERVER-KV"] == "ok" and ids["QD-SERVER-PREEMPT"] == "ok"
    srv = data["sections"]["server"]
    assert srv["backend"] == "vllm" and srv["preemptions"] == 0 and srv["kv_usage"]["after"] is not None
    assert data["sections"]["probe"]["model"] == "tiny"  # found through /v1/models
    assert data["sections"]["metrics"]["requests"] == 6
    for blob in (r.stdout, r.stderr, out.read_text(), (tmp_path / "r.html").read_text()):
        assert "sk-probe-secret" not in blob


@pytest.mark.parametrize("server", ["pressure"], indirect=True)
def test_a_server_under_pressure_gets_warnings_with_remedies(server, tmp_path) -> None:
    r = qd(server, "--api-key", "sk-probe-secret-0123456789", "--format", "json", "--fail-on", "warn")
    data = json.loads(r.stdout)
    by_id = {x["check_id"]: x for x in data["results"]}
    assert by_id["QD-SERVER-KV"]["status"] == "warn" and by_id["QD-SERVER-KV"]["fix"]
    assert by_id["QD-SERVER-PREEMPT"]["status"] == "warn" and r.returncode == 1


def test_an_slo_that_is_missed_fails_the_probe(server) -> None:
    r = qd(server, "--api-key", "sk-probe-secret-0123456789", "--slo", "ttft_p50_ms=0.001", "--format", "json")
    data = json.loads(r.stdout)
    gate = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-SLO")
    assert gate["status"] == "fail" and r.returncode == 1


@pytest.mark.parametrize("args, message", [
    (["ftp://x"], "probe needs an http(s) URL"),
    (["http://127.0.0.1:9"], "cannot reach http://127.0.0.1:9"),
    (["http://127.0.0.1:9", "--slo", "fast=1"], "--slo expects NAME=VALUE"),
])
def test_bad_input_is_one_line_and_exit_2(args, message) -> None:
    r = qd(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_a_missing_api_key_is_said(server) -> None:
    r = qd(server)
    assert r.returncode == 2 and "HTTP 401 (pass --api-key)" in r.stderr
