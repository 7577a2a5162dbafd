"""deploy() end to end against the fake server started as a real process group (vLLM and SGLang paths)."""

from __future__ import annotations

import time

import psutil

from doctor.deploy.run import DeployRequest, deploy
from tests.support.deploy_helpers import fake_spec, wait_gone


def run(tmp_path, backend="vllm", mode="ok", timeout=60.0, keep=False, reasoning=False, extra=(), **env):
    spec = fake_spec(tmp_path, backend, mode, reasoning, extra, **env)
    said: list[str] = []
    t0 = time.monotonic()
    out = deploy(DeployRequest(spec=spec, log_path=tmp_path / "server.log", timeout=timeout, keep=keep, grace=3,
                               burst=4, burst_tokens=8), progress=said.append)
    return out, {r.check_id: r for r in out.results}, said, time.monotonic() - t0


def test_a_healthy_vllm_server_is_started_exercised_and_stopped(tmp_path) -> None:
    out, by_id, said, _ = run(tmp_path, FAKE_SERVER_CHILD="1")
    assert {k: r.status.value for k, r in by_id.items()} == {
        "QD-DEPLOY-START": "ok", "QD-DEPLOY-MODELS": "ok", "QD-DEPLOY-CHAT": "ok", "QD-DEPLOY-STREAM": "ok",
        "QD-DEPLOY-JSON": "ok", "QD-DEPLOY-REASONING": "skip", "QD-DEPLOY-THINKING-OFF": "ok",
        "QD-DEPLOY-TOOLS": "skip", "QD-DEPLOY-TOOLS-STREAM": "skip", "QD-DEPLOY-IMAGE": "ok",
        "QD-DEPLOY-PREFIX-CACHE": "ok", "QD-DEPLOY-SPEC-DECODE": "skip", "QD-DEPLOY-WARMUP": "ok",
        "QD-DEPLOY-BURST": "ok", "QD-DEPLOY-ALIVE": "ok",
        "QD-DEPLOY-KV": "skip", "QD-DEPLOY-STOP": "ok", "QD-SERVER-METRICS": "ok", "QD-SERVER-KV": "ok",
        "QD-SERVER-PREEMPT": "ok", "QD-SERVER-QUEUE": "ok", "QD-SERVER-ERRORS": "ok"}
    server = out.sections["server"]
    assert server["backend"] == "vllm" and server["requests"] >= 4 and server["preemptions"] == 0
    assert set(server["latency"]) == {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "queue_ms"}
    d, m = out.sections["deployment"], out.sections["metrics"]
    assert m["kv_cache"]["reported_tokens"] == 2_097_152 and d["start"]["state"] == "ready"
    assert m["requests"] == 4 and m["errors"] == 0 and m["concurrency"] == 4
    assert set(m["percentiles"]) == {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}
    assert set(m["percentiles"]["ttft_ms"]) == {"p50", "p90", "p99"}
    assert {ex["check_id"] for ex in out.sections["exercises"]} <= set(by_id)
    assert d["stopped"] is True and d["url"].startswith("http://127.0.0.1:")
    assert any(s.startswith("phase: loading weights") for s in said)
    assert (tmp_path / "server.log").read_text().count("\n") >= 3
    assert out.kept_pid is None


def test_the_sglang_path_uses_the_same_launcher_and_exerciser(tmp_path) -> None:
    out, by_id, said, _ = run(tmp_path, backend="sglang", reasoning=True)
    assert by_id["QD-DEPLOY-START"].status.value == "ok"
    assert by_id["QD-DEPLOY-REASONING"].status.value == "ok"
    assert by_id["QD-DEPLOY-BURST"].status.value == "ok"
    assert out.sections["metrics"]["kv_cache"]["reported_tokens"] == 2_618_868
    assert any(s.startswith("phase: CUDA graphs") for s in said)


def test_a_server_dying_during_start_yields_the_matched_remedy_not_a_timeout(tmp_path) -> None:
    out, by_id, _, seconds = run(tmp_path, mode="die", timeout=120)
    start = by_id["QD-DEPLOY-START"]
    assert start.status.value == "fail" and seconds < 30
    assert start.remedy_ids[0] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED"
    assert any("max-model-len" in f for f in start.fix)
    assert out.sections["deployment"]["start"]["state"] == "died"
    (remedy,) = [m for m in out.sections["remedies"] if m["id"] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED"]
    assert remedy["first_line"] == {"source": str(tmp_path / "server.log"), "line": remedy["first_line"]["line"]}
    assert remedy["why"] and remedy["component"] == "vllm" and "metrics" not in out.sections
    assert "QD-DEPLOY-CHAT" not in by_id and by_id["QD-DEPLOY-STOP"].status.value == "ok"
    assert by_id["QD-DEPLOY-STOP"].summary == "exited by itself with code 1", "not 'exited on SIGTERM'"
    assert "exited by itself with code 1 during start" in start.details[0]


def test_a_fatal_line_stops_the_wait_even_if_the_server_lingers(tmp_path) -> None:
    out, by_id, _, seconds = run(tmp_path, mode="fatal", timeout=120)
    assert out.sections["deployment"]["start"]["state"] == "fatal" and seconds < 40
    assert by_id["QD-DEPLOY-START"].remedy_ids == ["QD-R-VLLM-MAX-MODEL-LEN-DERIVED"]
    assert by_id["QD-DEPLOY-STOP"].status.value == "ok"


def test_a_server_that_never_gets_healthy_times_out_and_is_stopped(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="hang", timeout=3, FAKE_SERVER_IGNORE_TERM="1")
    start = by_id["QD-DEPLOY-START"]
    assert start.status.value == "fail" and "not healthy after 3 s" in start.summary
    assert "SIGKILL" in by_id["QD-DEPLOY-STOP"].summary and by_id["QD-DEPLOY-STOP"].status.value == "ok"


def test_keep_leaves_a_healthy_server_running(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, keep=True)
    try:
        assert out.kept_pid and psutil.pid_exists(out.kept_pid)
        assert "QD-DEPLOY-STOP" not in by_id
        assert out.sections["deployment"]["stop"] == f"kept running (pid {out.kept_pid})"
    finally:
        import os
        import signal

        proc = psutil.Process(out.kept_pid)
        os.killpg(out.kept_pid, signal.SIGTERM)
        assert wait_gone([proc], 10) == []


def test_a_server_that_dies_on_its_first_request_fails_even_though_health_passed(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="crash")
    assert by_id["QD-DEPLOY-START"].status.value == "ok"
    alive = by_id["QD-DEPLOY-ALIVE"]
    assert alive.status.value == "fail" and "exited by itself with code 1" in alive.summary
    assert by_id["QD-DEPLOY-STOP"].summary == "exited by itself with code 1"
    assert alive.remedy_ids == ["QD-R-VLLM-ENGINE-DEAD"]
    assert by_id["QD-DEPLOY-CHAT"].status.value == "fail"


def test_lines_logged_during_our_own_shutdown_are_not_reported_as_remedies(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="shutdown-noise")
    assert "EngineDeadError" in (tmp_path / "server.log").read_text()
    assert out.remedies == [] and out.sections["remedies"] == []
    assert by_id["QD-DEPLOY-STOP"].status.value == "ok"


def test_an_api_key_is_sent_by_the_client_and_redacted_in_the_report(tmp_path) -> None:
    out, by_id, said, _ = run(tmp_path, extra=("--api-key", "sk-secret-0123456789abcdef"))
    assert by_id["QD-DEPLOY-START"].status.value == "ok" and by_id["QD-DEPLOY-BURST"].status.value == "ok"
    assert "sk-secret" not in out.sections["deployment"]["command"] and "sk-secret" not in " ".join(said)


def test_deploy_exercises_what_its_command_line_switched_on_and_sweeps(tmp_path) -> None:
    spec = fake_spec(tmp_path, "vllm", "ok", True, ("--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                                                    "--language-model-only"))
    out = deploy(DeployRequest(spec=spec, log_path=tmp_path / "server.log", timeout=30, grace=5, burst=2,
                               burst_tokens=8, sweep=(1, 2), slo={"ttft_p99_ms": 60_000}))
    by_id = {r.check_id: r for r in out.results}
    assert by_id["QD-DEPLOY-TOOLS"].status.value == "fail" and "hermes" in by_id["QD-DEPLOY-TOOLS"].summary
    assert by_id["QD-DEPLOY-IMAGE"].status.value == "skip" and "--language-model-only" in \
        by_id["QD-DEPLOY-IMAGE"].summary
    assert by_id["QD-DEPLOY-JSON"].status.value == "ok" and by_id["QD-DEPLOY-SWEEP"].status.value == "ok"
    sweep = out.sections["sweep"]
    assert [row["name"] for row in sweep["rows"]] == ["concurrency 1", "concurrency 2"]
    assert sweep["max_concurrency_meeting_slo"] == 2


class _DyingServer:
    """A server that no longer answers and exits a moment after it is asked."""

    def __init__(self, code: int | None) -> None:
        self.code, self.asked = code, []
        self.alive = True

    def exit_code_within(self, timeout: float) -> int | None:
        self.asked.append(timeout)
        return self.code

    @property
    def returncode(self) -> int | None:
        return self.code

    def wait_log_drained(self, timeout: float = 5.0) -> None:
        pass


def test_a_server_still_dying_when_health_is_refused_is_reported_by_its_exit_code(tmp_path) -> None:
    from doctor.deploy.run import EXIT_GRACE_S, _state_after

    spec = fake_spec(tmp_path)  # nothing listens on its port: the fake server is never started
    dying = _DyingServer(code=1)
    assert _state_after(spec, dying) == "exited by itself with code 1"
    assert dying.asked == [EXIT_GRACE_S]
    hanging = _DyingServer(code=None)
    assert _state_after(spec, hanging).startswith("/health failed: Connect")
