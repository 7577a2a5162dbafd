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


@pytest.fixture
def reasoning_server():
    port = free_port()
    httpd = serve(port, "tiny", reasoning=True, argv=["vllm", "serve", "/m", "--reasoning-parser", "qwen3"])
    yield f"http://127.0.0.1:{port}"
    httpd.shutdown()
    httpd.server_close()


def test_probe_finds_a_reasoning_parser_itself_and_passes_the_json_exercise(reasoning_server) -> None:
    r = qd(reasoning_server, "--format", "json")
    data = json.loads(r.stdout)
    ids = {x["check_id"]: x for x in data["results"]}
    assert ids["QD-DEPLOY-JSON"]["status"] == "ok", ids["QD-DEPLOY-JSON"]["summary"]
    assert ids["QD-DEPLOY-REASONING"]["status"] == "ok" and ids["QD-DEPLOY-THINKING-OFF"]["status"] == "ok"
    assert data["sections"]["probe"]["reasoning_parser"].startswith("detected") and r.returncode == 0


def test_no_reasoning_asserted_on_a_reasoning_server_fails_json_as_the_issue_saw(reasoning_server) -> None:
    r = qd(reasoning_server, "--no-reasoning", "--format", "json")
    ids = {x["check_id"]: x for x in json.loads(r.stdout)["results"]}
    assert ids["QD-DEPLOY-JSON"]["status"] == "fail" and "not JSON: ''" in ids["QD-DEPLOY-JSON"]["summary"]


def test_a_sweep_puts_a_labelled_chart_in_html_and_a_table_in_the_other_formats(server, tmp_path) -> None:
    html, md, txt, js = (tmp_path / f"r.{ext}" for ext in ("html", "md", "txt", "json"))
    r = qd(server, "--api-key", "sk-probe-secret-0123456789", "--sweep", "1,4,8", "--burst-tokens", "8",
           "--slo", "ttft_p99_ms=60000", *(x for p in (html, md, txt, js) for x in ("-o", str(p))))
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    chart = page[page.index('<section id="sweep-chart">'):]
    chart = chart[:chart.index("</section>")]
    assert chart.count("<svg") == 2 and "<polyline" in chart
    assert "concurrency (parallel streams, log scale)" in chart and "output throughput (tok/s)" in chart
    assert "latency (ms, log scale)" in chart and "http" not in chart, "labelled axes, no external assets"
    for text in (md.read_text(), txt.read_text()):
        assert "concurrency 1" in text and "concurrency 8" in text and "TTFT p50 ms" in text
    assert schema_errors(json.loads(js.read_text())) == []
    sweep = json.loads(js.read_text())["sections"]["sweep"]
    assert sweep["max_concurrency_meeting_slo"] == 8 and sweep["knee"] in (1, 4, 8)


@pytest.mark.parametrize("value", ["1,x", "0,8", "2000"])
def test_a_bad_sweep_is_one_line_and_exit_2(value) -> None:
    r = qd("http://127.0.0.1:9", "--sweep", value)
    assert r.returncode == 2 and "--sweep" in r.stderr and "Traceback" not in r.stderr
