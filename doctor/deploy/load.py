"""Load as a user feels it: a burst of parallel streams and a concurrency sweep, each measured warm.

Before every measured wave one unmeasured wave is sent at the same concurrency and request shape: the first
batch of a size the server has not run yet pays one-time costs (kernel compilation and autotuning for the new
batch shape, CUDA-graph or allocator growth) that a user pays once, not on every request. That wave's time is
reported as the cold cost on its own (`warmup` exercise), never inside the percentiles.

The sweep's knee is the last concurrency before throughput stops scaling: the first step whose throughput
gain is under half of its concurrency gain (KNEE_EFFICIENCY) ends the useful range.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

import httpx

from doctor.deploy.exercise import PROMPT, STREAM_OPTIONS, Exercise, ExerciseConfig, stream_request
from doctor.deploy.judge import slo_misses
from doctor.deploy.metrics import RequestTiming, summarize
from doctor.errors import DoctorError

KNEE_EFFICIENCY = 0.5
# A warm-up wave this much slower than the measured one (and at least COLD_MIN_S slower) paid a one-time cost.
COLD_RATIO = 2.0
COLD_MIN_S = 0.5
SWEEP_MIN_REQUESTS = 8
MAX_SWEEP = 1024
SWEEP_KEYS = ("output_throughput", "request_throughput", "p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
              "p50_tpot_ms", "p90_tpot_ms", "p99_tpot_ms", "p50_itl_ms", "p99_itl_ms", "p50_e2el_ms", "p99_e2el_ms",
              "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms", "completed", "failed")


def burst_payload(cfg: ExerciseConfig, max_tokens: int | None = None) -> dict[str, Any]:
    """One burst request: a streamed chat that produces exactly `max_tokens` tokens (ignore_eos)."""
    return {"model": cfg.model, "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": max_tokens or cfg.burst_tokens, "temperature": 0, "stream": True,
            "stream_options": STREAM_OPTIONS, "ignore_eos": True}


async def wave(client: httpx.AsyncClient, payload: dict[str, Any], concurrency: int,
               requests: int | None = None) -> tuple[list[RequestTiming], float]:
    """`requests` streams (default: `concurrency`), at most `concurrency` in flight; (timings, seconds)."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> RequestTiming:
        async with gate:
            return await stream_request(client, payload)

    t0 = time.perf_counter()
    timings = await asyncio.gather(*(one() for _ in range(requests or concurrency)))
    return list(timings), time.perf_counter() - t0


def cold_cost(concurrency: int, cold: dict[str, Any], warm: dict[str, Any]) -> dict[str, Any]:
    """The warm-up wave against the measured one: its seconds and TTFT p50, and whether it paid a one-time cost."""
    paid = cold["duration"] >= COLD_RATIO * warm["duration"] and cold["duration"] - warm["duration"] >= COLD_MIN_S
    return {"concurrency": concurrency, "seconds": round(cold["duration"], 3),
            "p50_ttft_ms": round(cold["p50_ttft_ms"], 1), "warm_seconds": round(warm["duration"], 3),
            "one_time_cost": paid, "failed": cold["failed"]}


def cold_line(cold: dict[str, Any]) -> str:
    """`the first 8-wide batch took 9.0 s ...`: the cold cost in one sentence."""
    head = f"the first {cold['concurrency']}-wide batch took {cold['seconds']:.1f} s (TTFT p50 " \
           f"{cold['p50_ttft_ms']:.0f} ms)"
    if cold["one_time_cost"]:
        return (f"{head} against {cold['warm_seconds']:.1f} s warm: a one-time cost for a batch shape not seen "
                "before (kernel compilation / autotuning), kept out of the percentiles")
    return f"{head}, as fast as warm ({cold['warm_seconds']:.1f} s): no one-time cost seen"


def _summary(m: dict[str, Any], concurrency: int) -> str:
    return (f"{m['completed']}/{concurrency} streams, {m['output_throughput']:.1f} tok/s, "
            f"{m['request_throughput']:.2f} req/s, TTFT p50/p90/p99 {m['p50_ttft_ms']:.0f}/{m['p90_ttft_ms']:.0f}/"
            f"{m['p99_ttft_ms']:.0f} ms, TPOT p50 {m['p50_tpot_ms']:.1f} ms, ITL p99 {m['p99_itl_ms']:.1f} ms (warm)")


async def burst(client: httpx.AsyncClient, cfg: ExerciseConfig,
                before_measure: Callable[[], Awaitable[None]] | None = None) -> list[Exercise]:
    """The warm-up wave (its own `warmup` exercise) and N parallel streams measured warm (`burst`), in
    `vllm bench serve` metric names. `before_measure` runs between the two (the runner's /metrics window)."""
    payload = burst_payload(cfg)
    out: list[Exercise] = []
    cold_timings: list[RequestTiming] = []
    cold_s = 0.0
    if cfg.warmup:
        cold_timings, cold_s = await wave(client, payload, cfg.burst)
    if before_measure is not None:
        await before_measure()
    timings, duration = await wave(client, payload, cfg.burst)
    m = summarize(timings, duration)
    if cfg.warmup:
        cold = cold_cost(cfg.burst, summarize(cold_timings, cold_s), m)
        m["cold"] = cold
        out.append(Exercise("warmup", "ok" if not cold["failed"] else "warn", cold_line(cold)
                            + (f"; {cold['failed']} warm-up stream(s) failed" if cold["failed"] else ""),
                            cold_s, cold))
    line = _summary(m, cfg.burst)
    if m["failed"]:
        line = f"{m['failed']} of {cfg.burst} streams failed ({'; '.join(m['errors'])[:300]}); " + line
    out.append(Exercise("burst", "ok" if m["failed"] == 0 else "fail", line, duration, m))
    return out


def knee(levels: list[dict[str, Any]]) -> int | None:
    """The last concurrency before throughput stops scaling (see the module docstring); the largest one when
    it never stops; None without a level that completed a request."""
    done = [lv for lv in levels if lv["completed"] > 0]
    if not done:
        return None
    best = done[0]
    for prev, cur in zip(done, done[1:]):
        scale = cur["concurrency"] / prev["concurrency"]
        gain = cur["output_throughput"] / prev["output_throughput"] if prev["output_throughput"] > 0 else 0.0
        if scale > 1 and (gain - 1) < KNEE_EFFICIENCY * (scale - 1):
            return best["concurrency"]
        best = cur
    return best["concurrency"]


async def sweep(client: httpx.AsyncClient, cfg: ExerciseConfig, slo: dict[str, float]) -> Exercise:
    """Each concurrency of `cfg.sweep` in turn, warm (one unmeasured wave first), at least SWEEP_MIN_REQUESTS
    requests: throughput and TTFT / TPOT percentiles per level, the knee, the largest level meeting every SLO."""
    payload = burst_payload(cfg)
    levels: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for concurrency in cfg.sweep:
        cold_timings, cold_s = await wave(client, payload, concurrency)
        timings, duration = await wave(client, payload, concurrency, max(concurrency, SWEEP_MIN_REQUESTS))
        m = summarize(timings, duration)
        row = {"concurrency": concurrency, "requests": len(timings), "duration": round(duration, 3),
               **{k: m[k] for k in SWEEP_KEYS}}
        row["cold"] = cold_cost(concurrency, summarize(cold_timings, cold_s), m)
        row["slo_misses"] = slo_misses(slo, m) if slo else []
        levels.append(row)
    meeting = [lv["concurrency"] for lv in levels if not lv["failed"] and not lv["slo_misses"]]
    data = {"levels": levels, "knee": knee(levels), "slo": dict(slo),
            "max_concurrency_meeting_slo": max(meeting) if slo and meeting else None}
    failed = sum(lv["failed"] for lv in levels)
    parts = [f"{lv['concurrency']}: {lv['output_throughput']:.0f} tok/s TTFT p50 {lv['p50_ttft_ms']:.0f} ms"
             for lv in levels]
    line = "; ".join(parts) + f"; knee at {data['knee']}"
    if slo:
        line += (f"; the largest concurrency meeting every --slo is {data['max_concurrency_meeting_slo']}"
                 if meeting else "; no concurrency meets every --slo")
    status = "fail" if failed else ("warn" if slo and not meeting else "ok")
    if failed:
        line = f"{failed} stream(s) failed; " + line
    return Exercise("sweep", status, line, time.perf_counter() - t0, data)


def sweep_section(data: dict[str, Any]) -> dict[str, Any]:
    """`sections.sweep`: one row per concurrency in the report's grid shape (a table in every format), with the
    levels kept for the HTML chart."""
    columns = ["requests", "output tok/s", "req/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms",
               "cold s", "failed", "meets --slo"]
    rows = [{"name": f"concurrency {lv['concurrency']}", "values": [
        lv["requests"], round(lv["output_throughput"], 1), round(lv["request_throughput"], 2),
        round(lv["p50_ttft_ms"], 1), round(lv["p99_ttft_ms"], 1), round(lv["p50_tpot_ms"], 2),
        round(lv["p99_tpot_ms"], 2), lv["cold"]["seconds"], lv["failed"],
        ("yes" if not lv["slo_misses"] and not lv["failed"] else "no: " + ", ".join(lv["slo_misses"] or ["failures"]))
        if data.get("slo") else "-"]} for lv in data["levels"]]
    status = f"knee at concurrency {data['knee']}"
    if data.get("slo"):
        best = data.get("max_concurrency_meeting_slo")
        status += f"; largest meeting every --slo: {best}" if best else "; no concurrency meets every --slo"
    return {"columns": columns, "rows": rows, "status": status, "knee": data["knee"],
            "max_concurrency_meeting_slo": data.get("max_concurrency_meeting_slo"), "slo": data.get("slo") or {},
            "levels": data["levels"]}


def parse_sweep(text: str | None) -> tuple[int, ...]:
    """`--sweep 1,8,64,256`: distinct concurrencies from 1 to MAX_SWEEP in rising order; DoctorError otherwise."""
    if not text:
        return ()
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise DoctorError(f"--sweep expects concurrencies such as 1,8,64,256, got {text!r}") from None
    if not values or values[0] < 1 or values[-1] > MAX_SWEEP:
        raise DoctorError(f"--sweep: each concurrency must be from 1 to {MAX_SWEEP}, got {text!r}")
    return tuple(values)
