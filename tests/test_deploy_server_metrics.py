"""The server's /metrics: parsed with vLLM's and SGLang's names, compared before/after, judged; the shared
probe stage against the fake server; ITL from token counts; --slo gates."""

from __future__ import annotations

import asyncio

import pytest

from doctor.deploy import judge, server_metrics
from doctor.deploy.exercise import ExerciseConfig, token_timing
from doctor.deploy.ports import free_port
from doctor.deploy.probe import exercise_server
from doctor.errors import DoctorError
from tests.support.fake_server import serve

VLLM_TEXT = """# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} {a}
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} {b}
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} {b}
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} {s}
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} {b}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} {kv}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} {w}
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} {p}
# TYPE vllm:request_success counter
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} {b}
vllm:request_success_total{engine="0",finished_reason="error",model_name="m"} {e}
"""


def text(a=0, b=0, s=0.0, kv=0.0, w=0, p=0, e=0) -> str:
    out = VLLM_TEXT
    for k, v in dict(a=a, b=b, s=s, kv=kv, w=w, p=p, e=e).items():
        out = out.replace("{" + k + "}", str(v))
    return out


def test_vllm_metrics_are_read_and_compared_as_deltas_between_two_scrapes() -> None:
    before = server_metrics.parse(text(a=10, b=10, s=0.5, kv=0.0, w=0, p=1))
    after = server_metrics.parse(text(a=14, b=20, s=2.5, kv=0.5, w=2, p=4, e=1))
    assert before.backend == "vllm"
    d = server_metrics.compare(before, after, {"kv_usage": 0.97})
    ttft = d["latency"]["ttft_ms"]
    assert ttft["mean"] == 200.0  # (2.5 - 0.5) s over 10 new requests
    assert ttft["p50"] == pytest.approx(100 + 400 * (5 - 4) / 6, abs=0.01)  # rank 5 of 10: 4 below 0.1 s, 6 in (0.1, 0.5]
    assert d["preemptions"] == 3 and d["errors"] == 1
    assert d["kv_usage"] == {"before": 0.0, "after": 0.5, "peak": 0.97}
    results = {r.check_id: r.status.value for r in judge.judge_server(d)}
    assert results == {"QD-SERVER-METRICS": "ok", "QD-SERVER-KV": "warn", "QD-SERVER-PREEMPT": "warn",
                       "QD-SERVER-QUEUE": "warn", "QD-SERVER-ERRORS": "fail"}


def test_a_coarse_first_bucket_cannot_inflate_the_percentiles_beyond_what_the_mean_allows() -> None:
    h = server_metrics.Histogram({0.3: 100.0, float("inf"): 100.0}, total=0.027, count=100.0)  # mean 0.27 ms
    assert h.quantile(0.5) == pytest.approx(0.15)  # plain interpolation: "150 ms"
    assert server_metrics.estimate(h, 0.5) == pytest.approx(0.00054)  # at most mean / (1 - 0.5)
    assert server_metrics.estimate(h, 0.99) == pytest.approx(0.027)


def test_text_that_is_not_prometheus_format_is_an_error() -> None:
    with pytest.raises(server_metrics.MetricsError):
        server_metrics.parse("vllm:x{le= 1\n")


def probe(mode="ok", backend="vllm", slo=None, burst=4, tokens=8, **env):
    port = free_port()
    httpd = serve(port, "tiny", mode, backend=backend)
    try:
        cfg = ExerciseConfig(model="tiny", burst=burst, burst_tokens=tokens, max_tokens=8, request_timeout=10)
        return asyncio.run(exercise_server(f"http://127.0.0.1:{port}", cfg, slo))
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_the_probe_stage_reports_the_servers_own_figures_beside_the_clients(backend) -> None:
    out = probe(backend=backend)
    assert out.server is not None and out.server["backend"] == backend
    assert out.server["requests"] >= 4 + 2  # the burst, its warm-up and the other exercises
    assert out.server["latency_requests"] == 4, "the server's latency covers the measured burst, as the client's"
    assert set(out.server["latency"]["ttft_ms"]) == {"p50", "p90", "p99", "mean"}
    assert out.server["kv_usage"]["peak"] >= out.server["kv_usage"]["before"]
    assert {r.check_id: r.status.value for r in out.results}["QD-SERVER-KV"] == "ok"


def test_requests_the_server_records_late_are_waited_for_rather_than_missed(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_RECORD_LAG", "0.3")
    out = probe()
    assert out.server["latency_requests"] == 4, "neither a late warm-up nor a late burst request shifts the window"


def test_a_server_under_kv_pressure_is_judged_with_remedies() -> None:
    out = probe("pressure")
    by_id = {r.check_id: r for r in out.results}
    assert by_id["QD-SERVER-KV"].status.value == "warn" and "98%" in by_id["QD-SERVER-KV"].summary
    assert by_id["QD-SERVER-PREEMPT"].status.value == "warn" and "--gpu-memory-utilization" in \
        by_id["QD-SERVER-PREEMPT"].fix[0]
    assert by_id["QD-SERVER-QUEUE"].status.value == "warn"


def test_without_metrics_the_exercises_still_run_and_the_gap_is_said(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_NO_METRICS", "1")
    out = probe()
    assert out.server is None and "HTTP 404" in out.unavailable
    assert [r.status.value for r in out.results] == ["skip"] and out.burst["completed"] == 4


def test_itl_counts_tokens_not_chunks(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_PAIRS", "1")  # two tokens per chunk after the first, 4 ms apart
    burst = probe(burst=2, tokens=9).burst
    assert burst["total_output_tokens"] == 18
    assert burst["median_itl_ms"] >= 1.0  # chunk arrival timing gives ~0 ms for coalesced tokens


def test_chunks_that_arrive_together_share_the_gap_before_them(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_BUNCH", "4")  # 4 one-token chunks back to back, then 8 ms of silence
    burst = probe(burst=2, tokens=17).burst
    assert burst["median_itl_ms"] >= 1.0, "timing each chunk would give ~0 ms for 3 tokens out of 4"


def test_token_timing_groups_arrivals_and_spreads_each_gap_over_its_tokens() -> None:
    ttft, itl = token_timing([(10.1, 1), (10.2, 1), (10.2001, 1), (10.2002, 1), (10.3, 2)], 10.0)
    assert ttft == pytest.approx(0.1)
    assert itl == pytest.approx([0.1 / 3] * 3 + [0.0998 / 2] * 2)


def test_an_slo_gates_the_burst() -> None:
    out = probe(slo={"ttft_p99_ms": 60000, "error_rate": 0})
    assert out.results[-1].check_id == "QD-DEPLOY-SLO" and out.results[-1].status.value == "ok"
    out = probe(slo={"tpot_p50_ms": 0.0001})
    gate = out.results[-1]
    assert gate.status.value == "fail" and gate.summary.startswith("missed: tpot_p50_ms")


@pytest.mark.parametrize("item", ["ttft_p99=5", "latency_p50_ms=1", "error_rate=x", "ttft_p99_ms=-1"])
def test_a_bad_slo_is_a_clear_error(item) -> None:
    with pytest.raises(DoctorError):
        judge.parse_slo([item])
