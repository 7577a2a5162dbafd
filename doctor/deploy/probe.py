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
from doctor.deployment.table import option
from doctor.results import Result

SAMPLE_EVERY_S = 0.5
SETTLE_S = 2.0


def _finished(snap: server_metrics.Snapshot, since: server_metrics.Snapshot) -> int:
    """Requests whose end-to-end latency the server recorded between two scrapes."""
    h = snap.histograms.get("e2el")
    return int(h.minus(since.histograms.get("e2el")).count) if h is not None else 0


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
        b = _named(self.exercises, "burst")
        return b.data if b is not None and b.data else None


async def scrape(client: httpx.AsyncClient) -> server_metrics.Snapshot:
    """GET /metrics and parse it; MetricsError (with the reason) when it cannot be read."""
    try:
        r = await client.get("/metrics")
    except httpx.HTTPError as exc:
        raise server_metrics.MetricsError(f"GET /metrics failed: {type(exc).__name__}") from None
    if r.status_code != 200:
        raise server_metrics.MetricsError(f"GET /metrics answers HTTP {r.status_code} "
                                         f"(SGLang needs {option('metrics', 'sglang')})")
    snap = server_metrics.parse(r.text)
    if snap.backend is None:
        raise server_metrics.MetricsError("/metrics has no vllm: or sglang: metrics")
    return snap


async def settled_scrape(client: httpx.AsyncClient, since: server_metrics.Snapshot,
                         expected: int) -> server_metrics.Snapshot:
    """Scrape until the server has recorded `expected` finished requests since `since` (at most SETTLE_S): a
    server records a request's latency around its last bytes, so a scrape right after the client's last read
    can miss the final requests (and a window started then would take them in)."""
    snap = await scrape(client)
    deadline = time.perf_counter() + SETTLE_S
    while _finished(snap, since) < expected and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
        snap = await scrape(client)
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


def _named(exercises: list[Exercise], name: str) -> Exercise | None:
    return next((e for e in exercises if e.name == name), None)


async def exercise_server(base_url: str, cfg: ExerciseConfig, slo: dict[str, float] | None = None) -> ProbeResult:
    """Run every exercise in order (an exception in one becomes its failure) between two /metrics scrapes."""
    limits = httpx.Limits(max_connections=max(cfg.burst, 4) + 4)
    timeout = httpx.Timeout(cfg.request_timeout, connect=5.0)
    exercises: list[Exercise] = []
    answered = {"n": 0}

    async def count(response: httpx.Response) -> None:
        if response.request.url.path.endswith("/chat/completions") and response.status_code == 200:
            answered["n"] += 1

    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, trust_env=False,
                                 headers=dict(cfg.headers), event_hooks={"response": [count]}) as client:
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
                            burst_before = await settled_scrape(client, before, answered["n"])
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
                after = await settled_scrape(client, before, answered["n"])
                server = server_metrics.compare(before, after, peaks, latency_from=burst_before)
            except server_metrics.MetricsError as exc:
                unavailable = f"after the exercises: {exc}"
    out = ProbeResult(exercises, server, unavailable)
    out.results = judge.judge_server(server, unavailable)
    gate = judge.judge_slo(slo or {}, out.burst)
    if gate is not None:
        out.results.append(gate)
    return out
