"""Burst metrics: the names and definitions of `vllm bench serve`, computed by hand here."""

from __future__ import annotations

import pytest

from doctor.deploy.metrics import RequestTiming, percentile, summarize
from doctor.deploy.schema import validate


def test_percentile_interpolates_linearly_between_ranks() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == 25.0          # halfway between 20 and 30
    assert percentile(values, 90) == pytest.approx(37.0)  # rank 2.7: 30 + 0.7 * 10
    assert percentile(values, 99) == pytest.approx(39.7)
    assert percentile([5.0], 99) == 5.0
    assert percentile([], 50) == 0.0


def test_summary_uses_vllm_bench_serve_keys_and_definitions() -> None:
    timings = [
        RequestTiming(ok=True, ttft=0.1, latency=1.1, itl=[0.25, 0.25, 0.25, 0.25], output_tokens=5, prompt_tokens=7),
        RequestTiming(ok=True, ttft=0.3, latency=2.3, itl=[0.5, 0.5, 0.5, 0.5], output_tokens=5, prompt_tokens=7),
        RequestTiming(ok=False, error="HTTP 500: boom"),
    ]
    m = summarize(timings, duration=2.5)
    assert m["completed"] == 2 and m["failed"] == 1 and m["errors"] == ["HTTP 500: boom"]
    assert m["total_output_tokens"] == 10 and m["total_input_tokens"] == 14
    assert m["request_throughput"] == pytest.approx(0.8)
    assert m["output_throughput"] == pytest.approx(4.0)
    assert m["total_token_throughput"] == pytest.approx(9.6)
    # TPOT = (latency - TTFT) / (tokens - 1): 250 ms and 500 ms
    assert m["mean_tpot_ms"] == pytest.approx(375.0)
    assert m["p50_ttft_ms"] == pytest.approx(200.0) and m["p99_ttft_ms"] == pytest.approx(298.0)
    assert m["median_itl_ms"] == pytest.approx(375.0) and m["p90_itl_ms"] == pytest.approx(500.0)
    assert m["p99_e2el_ms"] == pytest.approx(2288.0)
    for name in ("ttft", "tpot", "itl", "e2el"):
        assert {f"mean_{name}_ms", f"median_{name}_ms", f"std_{name}_ms", f"p50_{name}_ms", f"p90_{name}_ms",
                f"p99_{name}_ms"} <= set(m)


def test_one_token_requests_have_no_tpot() -> None:
    m = summarize([RequestTiming(ok=True, ttft=0.1, latency=0.1, output_tokens=1)], duration=1.0)
    assert m["mean_tpot_ms"] == 0.0 and m["completed"] == 1


SCHEMA = {"type": "object", "properties": {"answer": {"type": "boolean"}, "colour": {"enum": ["red", "blue"]},
                                           "n": {"type": "integer", "minimum": 0}},
          "required": ["answer", "colour"], "additionalProperties": False}


@pytest.mark.parametrize("value, problem", [
    ({"answer": True, "colour": "red"}, None),
    ({"answer": "yes", "colour": "red"}, "$.answer: expected boolean"),
    ({"answer": True}, "missing required property 'colour'"),
    ({"answer": True, "colour": "green"}, "'green' is not one of"),
    ({"answer": True, "colour": "red", "x": 1}, "unexpected property 'x'"),
    ({"answer": True, "colour": "red", "n": -1}, "-1 < minimum 0"),
    ({"answer": True, "colour": "red", "n": True}, "$.n: expected integer"),
    ([1], "$: expected object"),
])
def test_structured_output_validator(value, problem) -> None:
    errors = validate(value, SCHEMA)
    if problem is None:
        assert errors == []
    else:
        assert any(problem in e for e in errors), errors
