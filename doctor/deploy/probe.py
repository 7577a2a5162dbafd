"""The exercise runner shared by `deploy` and `probe`: scrape /metrics, run the exercises in order (with the
server sampled for peak KV usage, queue and running requests during the measured burst), scrape again, judge
both sides.

What the server has comes in `cfg.traits` (deploy: from its command line); `cfg.reasoning` None means find out:
a chat answer that carries reasoning_content shows a reasoning parser, and the later exercises (JSON with
thinking off, the reasoning split) follow it. The server's latency figures cover the measured burst only
(scraped after the warm-up wave, right before the burst), so they describe the same requests as the client's;
its counters (requests, preemptions, errors) cover the whole exercise stage."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from doctor.boundedhttp import bounded_async_client
from doctor.deploy import judge, load, server_metrics
from doctor.deploy.bench import bench
from doctor.deploy.exercise import Exercise, ExerciseConfig, chat, list_models, reasoning, stream, structured
from doctor.deploy.exercise_features import image, prefix_cache, speculative
from doctor.deploy.exercise_tools import thinking_off, tool_call, tool_call_stream
from doctor.deploy.server_metrics import scrape
from doctor.results import Result

# Scrape back to back (this far apart) while the burst runs: a burst of a few hundred ms between two scrapes
# half a second apart was seen with 0 running requests.
SAMPLE_EVERY_S = 0.02
SETTLE_S = 2.0
# In order; the burst (with its warm-up wave) and the sweep come after these.
EXERCISES = (("models", list_models), ("chat", chat), ("stream", stream), ("structured", structured),
             ("reasoning", reasoning), ("thinking_off", thinking_off), ("tools", tool_call),
             ("tools_stream", tool_call_stream), ("image", image), ("prefix_cache", prefix_cache),
             ("speculative", speculative))

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
    detected: dict[str, Any] = field(default_factory=dict)

    @property
    def burst(self) -> dict[str, Any] | None:
        b = _named(self.exercises, "burst")
        return b.data if b is not None and b.data else None

    @property
    def bench(self) -> dict[str, Any] | None:
        b = _named(self.exercises, "bench")
        return b.data if b is not None and b.data.get("levels") else None

    @property
    def sweep(self) -> dict[str, Any] | None:
        s = _named(self.exercises, "sweep")
        return s.data if s is not None and s.data else None


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
    """Keep the highest KV usage / waiting / running seen until `stop` is set; count the samples."""
    while not stop.is_set():
        with contextlib.suppress(server_metrics.MetricsError):
            snap = await scrape(client)
            peaks["samples"] = peaks.get("samples", 0) + 1
            for key, value in snap.gauges.items():
                peaks[key] = max(peaks.get(key, value), value)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)


def _named(exercises: list[Exercise], name: str) -> Exercise | None:
    return next((e for e in exercises if e.name == name), None)


def _detect_reasoning(cfg: ExerciseConfig, exercises: list[Exercise]) -> tuple[ExerciseConfig, dict[str, Any]]:
    """With `cfg.reasoning` None, the chat answer decides: reasoning_content present means a reasoning parser."""
    if cfg.reasoning is not None:
        return cfg, {}
    answered = _named(exercises, "chat")
    seen = bool(answered is not None and answered.data.get("reasoning_content"))
    return replace(cfg, reasoning=seen), {"reasoning_parser": "detected (reasoning_content in the answers)"
                                          if seen else "none seen (no reasoning_content in the answers)"}


async def exercise_server(base_url: str, cfg: ExerciseConfig, slo: dict[str, float] | None = None) -> ProbeResult:
    """Run every exercise in order (an exception in one becomes its failure) between two /metrics scrapes."""
    widest = max((cfg.burst, *cfg.sweep))
    limits = httpx.Limits(max_connections=widest + 8)
    timeout = httpx.Timeout(cfg.request_timeout, connect=5.0)
    exercises: list[Exercise] = []
    answered = {"n": 0}
    detected: dict[str, Any] = {}

    async def count(response: httpx.Response) -> None:
        if response.request.url.path.endswith("/chat/completions") and response.status_code == 200:
            answered["n"] += 1

    async with bounded_async_client(cfg.request_timeout, base_url=base_url, timeout=timeout, limits=limits,
                                    trust_env=False, headers=dict(cfg.headers),
                                    event_hooks={"response": [count]}) as client:
        before: server_metrics.Snapshot | None = None
        unavailable = ""
        try:
            before = await scrape(client)
        except server_metrics.MetricsError as exc:
            unavailable = str(exc)
        peaks: dict[str, float] = {}
        window: dict[str, Any] = {}
        stop = asyncio.Event()

        async def guarded(name: str, run: Any) -> None:
            t0 = time.perf_counter()
            try:
                got = await run()
                exercises.extend(got if isinstance(got, list) else [got])
            except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
                exercises.append(Exercise(name, "fail", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0))

        async def open_window() -> None:
            if before is not None:
                with contextlib.suppress(server_metrics.MetricsError):
                    window["from"] = await settled_scrape(client, before, answered["n"])
                window["sampler"] = asyncio.create_task(_sample(client, peaks, stop))

        for name, fn in EXERCISES:
            await guarded(name, lambda fn=fn, c=cfg: fn(client, c))
            if fn is chat:
                cfg, detected = _detect_reasoning(cfg, exercises)
        try:
            await guarded("burst", lambda: load.burst(client, cfg, open_window))
        finally:
            stop.set()
            if "sampler" in window:
                await window["sampler"]
        if "from" in window and before is not None:  # the sweep's requests stay out of the burst's window
            with contextlib.suppress(server_metrics.MetricsError):
                window["to"] = await settled_scrape(client, before, answered["n"])
        if cfg.sweep:
            await guarded("sweep", lambda: load.sweep(client, cfg, slo or {}))
        if cfg.bench:
            await guarded("bench", lambda: bench(base_url, cfg))
        server = None
        if before is not None:
            try:
                after = await settled_scrape(client, before, answered["n"])
                server = server_metrics.compare(before, after, peaks, latency_from=window.get("from"),
                                                latency_to=window.get("to"))
                server["samples"] = int(peaks.get("samples", 0))
            except server_metrics.MetricsError as exc:
                unavailable = f"after the exercises: {exc}"
    out = ProbeResult(exercises, server, unavailable, detected=detected)
    out.results = judge.judge_server(server, unavailable)
    gate = judge.judge_slo(slo or {}, out.burst)
    if gate is not None:
        out.results.append(gate)
    return out
