"""The exercise stage shared by `deploy` and `probe`: scrape /metrics, run the exercises (with the server
sampled for peak KV usage and queue length during the burst), scrape again, judge both sides.

The server's latency figures cover the measured burst only (scraped after the warm-up, right before the
burst), so they describe the same requests as the client's; its counters (requests, preemptions, errors)
cover the whole exercise stage."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from doctor.deploy import judge, server_metrics
from doctor.deploy.exercise import EXERCISES, Exercise, ExerciseConfig, burst, warm_up
from doctor.results import Result

SAMPLE_EVERY_S = 0.5


@dataclass
class ProbeResult:
    """Exercises as the client saw them, the server's own figures (None when /metrics could not be read),
    and the verdicts on the server's figures and on the SLO."""

    exercises: list[Exercise]
    server: dict[str, Any] | None
    unavailable: str = ""
    results: list[Result] = field(default_factory=list)

    @property
    def burst(self) -> dict[str, Any] | None:
        b = next((e for e in self.exercises if e.name == "burst"), None)
        return b.data if b is not None and b.data else None


async def scrape(client: httpx.AsyncClient) -> server_metrics.Snapshot:
    """GET /metrics and parse it; MetricsError (with the reason) when it cannot be read."""
    try:
        r = await client.get("/metrics")
    except httpx.HTTPError as exc:
        raise server_metrics.MetricsError(f"GET /metrics failed: {type(exc).__name__}") from None
    if r.status_code != 200:
        raise server_metrics.MetricsError(f"GET /metrics answers HTTP {r.status_code} (SGLang needs --enable-metrics)")
    snap = server_metrics.parse(r.text)
    if snap.backend is None:
        raise server_metrics.MetricsError("/metrics has no vllm: or sglang: metrics")
    return snap


async def _sample(client: httpx.AsyncClient, peaks: dict[str, float], stop: asyncio.Event) -> None:
    """Keep the highest KV usage / waiting / running seen until `stop` is set."""
    while not stop.is_set():
        with contextlib.suppress(server_metrics.MetricsError):
            snap = await scrape(client)
            for key, value in snap.gauges.items():
                peaks[key] = max(peaks.get(key, value), value)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)


async def exercise_server(base_url: str, cfg: ExerciseConfig, slo: dict[str, float] | None = None) -> ProbeResult:
    """Run every exercise in order (an exception in one becomes its failure) between two /metrics scrapes."""
    limits = httpx.Limits(max_connections=max(cfg.burst, 4) + 4)
    timeout = httpx.Timeout(cfg.request_timeout, connect=5.0)
    exercises: list[Exercise] = []
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, trust_env=False,
                                 headers=dict(cfg.headers)) as client:
        before: server_metrics.Snapshot | None = None
        unavailable = ""
        try:
            before = await scrape(client)
        except server_metrics.MetricsError as exc:
            unavailable = str(exc)
        peaks: dict[str, float] = {}
        burst_before: server_metrics.Snapshot | None = None
        for fn in EXERCISES:
            name = fn.__name__.replace("list_", "")
            t0 = time.perf_counter()
            stop = asyncio.Event()
            sampler = None
            try:
                if fn is burst:
                    await warm_up(client, cfg)
                    if before is not None:
                        with contextlib.suppress(server_metrics.MetricsError):
                            burst_before = await scrape(client)
                        sampler = asyncio.create_task(_sample(client, peaks, stop))
                exercises.append(await fn(client, cfg))
            except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
                exercises.append(Exercise(name, "fail", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0))
            finally:
                if sampler is not None:
                    stop.set()
                    await sampler
        server = None
        if before is not None:
            try:
                server = server_metrics.compare(before, await scrape(client), peaks, latency_from=burst_before)
            except server_metrics.MetricsError as exc:
                unavailable = f"after the exercises: {exc}"
    out = ProbeResult(exercises, server, unavailable)
    out.results = judge.judge_server(server, unavailable)
    gate = judge.judge_slo(slo or {}, out.burst)
    if gate is not None:
        out.results.append(gate)
    return out
