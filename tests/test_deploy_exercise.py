"""The exerciser against a fake OpenAI-compatible server on 127.0.0.1: verdicts for good and bad servers."""

from __future__ import annotations

import asyncio

import pytest

from doctor.deploy.exercise import ExerciseConfig
from doctor.deploy.probe import exercise_server
from doctor.deploy.ports import free_port
from tests.support.fake_server import serve


def exercise(mode: str = "ok", reasoning: bool = False, model: str = "tiny", burst: int = 4):
    port = free_port()
    httpd = serve(port, "tiny", mode, reasoning)
    try:
        cfg = ExerciseConfig(model=model, reasoning=reasoning, burst=burst, burst_tokens=8, max_tokens=8,
                             request_timeout=10)
        return {e.name: e for e in asyncio.run(exercise_server(f"http://127.0.0.1:{port}", cfg)).exercises}
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_healthy_server_passes_every_exercise_and_the_burst_reports_bench_metrics() -> None:
    ex = exercise()
    assert {n: e.status for n, e in ex.items()} == {
        "models": "ok", "chat": "ok", "stream": "ok", "structured": "ok", "reasoning": "skip", "thinking_off": "ok",
        "tools": "skip", "tools_stream": "skip", "image": "ok", "prefix_cache": "ok", "speculative": "skip",
        "warmup": "ok", "burst": "ok"}
    assert ex["chat"].data["completion_tokens"] == 8
    assert ex["stream"].data["output_tokens"] == 8 and ex["stream"].data["ttft_ms"] > 0
    burst = ex["burst"].data
    assert burst["completed"] == 4 and burst["failed"] == 0 and burst["total_output_tokens"] == 32
    assert burst["output_throughput"] > 0 and burst["p99_itl_ms"] >= burst["p50_itl_ms"] > 0
    assert "TTFT p50/p90/p99" in ex["burst"].summary


def test_structured_output_that_is_not_json_fails() -> None:
    ex = exercise("bad-json")
    assert ex["structured"].status == "fail" and "not JSON" in ex["structured"].summary


def test_reasoning_is_checked_only_when_the_parser_is_on_and_must_be_separate() -> None:
    assert exercise(reasoning=True)["reasoning"].status == "ok"
    leak = exercise("think-leak", reasoning=True)["reasoning"]
    assert leak.status == "fail" and "--reasoning-parser" in leak.summary


def test_healthy_but_dead_engine_fails_the_requests_not_the_listing() -> None:
    ex = exercise("engine-dead")
    assert ex["models"].status == "ok"
    for name in ("chat", "stream", "structured", "thinking_off", "image", "prefix_cache", "burst"):
        assert ex[name].status == "fail", name
    assert "HTTP 500" in ex["chat"].summary and "4 of 4 streams failed" in ex["burst"].summary


def test_asking_for_a_model_the_server_does_not_serve_fails_the_listing() -> None:
    ex = exercise(model="other")
    assert ex["models"].status == "fail" and "'other' is not served" in ex["models"].summary


@pytest.mark.parametrize("burst", [1, 16, 256])
def test_burst_size_is_respected(burst: int) -> None:
    assert exercise(burst=burst)["burst"].data["completed"] == burst


@pytest.mark.parametrize("reasoning, sent", [(True, {"enable_thinking": False}), (False, None)])
def test_structured_output_switches_thinking_off_only_with_a_reasoning_parser(reasoning: bool, sent) -> None:
    import json as _json

    import httpx

    from doctor.deploy.exercise import structured

    bodies: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(_json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": '{"answer": true, "colour": "red"}'}}]})

    async def go():
        async with httpx.AsyncClient(base_url="http://x", transport=httpx.MockTransport(answer)) as client:
            return await structured(client, ExerciseConfig(model="m", reasoning=reasoning))

    assert asyncio.run(go()).status == "ok"
    assert bodies[0].get("chat_template_kwargs") == (None if sent is None else sent)
