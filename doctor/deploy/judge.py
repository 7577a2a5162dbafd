"""Verdicts on the server's own metrics (sections.server) and on the burst against `--slo` targets.

Remedies for KV pressure follow vLLM's tuning guide (vllm docs/configuration/optimization.md, "Preemption":
when KV cache space runs out requests are preempted; raise gpu_memory_utilization, lower max_num_seqs or
max_num_batched_tokens, or add tensor parallelism) and SGLang's (docs/advanced_features/hyperparameter_tuning.md:
retractions mean the KV pool is too small for the load; raise --mem-fraction-static or lower
--max-running-requests).
"""

from __future__ import annotations

import math
from typing import Any

from doctor.deployment.table import option
from doctor.errors import DoctorError
from doctor.results import Result, Status

KV_NEAR_FULL = 0.95
SLO_METRICS = ("ttft", "tpot", "itl", "e2el")
SLO_STATS = ("p50", "p90", "p99", "mean", "median")


def _r(check_id: str, title: str, status: str, summary: str, severity: str = "high", **kw: Any) -> Result:
    return Result(check_id, title, "server", severity, Status(status), summary, **kw)


def _kv_fix(backend: str | None) -> list[str]:
    if backend == "sglang":
        return [f"Give the KV pool more memory (`{option('mem_fraction_static', backend)}`), or admit fewer requests "
                f"at once (`{option('max_num_seqs', backend)}`); `{option('kv_cache_dtype', backend)} fp8_e4m3` "
                "halves the KV per token."]
    return [f"Give the KV cache more memory (`{option('gpu_memory_utilization', 'vllm')}`), admit fewer sequences at "
            f"once (`{option('max_num_seqs', 'vllm')}`, `{option('max_num_batched_tokens', 'vllm')}`), shorten "
            f"`{option('max_model_len', 'vllm')}`, or add tensor parallelism; `{option('kv_cache_dtype', 'vllm')} fp8` "
            "halves the KV per token."]


def judge_server(server: dict[str, Any] | None, unavailable: str = "") -> list[Result]:
    """Results on KV usage, preemptions, the waiting queue and request errors the server counted."""
    if not server:
        return [_r("QD-SERVER-METRICS", "Server metrics readable", "skip",
                   f"no server metrics: {unavailable or '/metrics not scraped'}", "medium")]
    backend = server.get("backend")
    out = [_r("QD-SERVER-METRICS", "Server metrics readable", "ok",
              f"/metrics: {server.get('families')} metric families ({backend}), "
              f"{server.get('requests') if server.get('requests') is not None else '?'} requests counted by the server",
              "medium")]
    kv = server.get("kv_usage") or {}
    peak = kv.get("peak")
    if peak is not None:
        status = "warn" if peak >= KV_NEAR_FULL else "ok"
        out.append(_r("QD-SERVER-KV", "KV cache has headroom", status,
                      f"KV cache usage peaked at {peak:.0%} (before {_pct(kv.get('before'))}, after "
                      f"{_pct(kv.get('after'))})" + (": near full, new requests wait or preempt others"
                                                     if status == "warn" else ""),
                      fix=_kv_fix(backend) if status == "warn" else []))
    if "preemptions" in server:
        n = server["preemptions"]
        out.append(_r("QD-SERVER-PREEMPT", "No request was preempted", "warn" if n > 0 else "ok",
                      f"{n} preemption(s) during the exercises: the KV cache ran out and requests were recomputed"
                      if n > 0 else "no preemption during the exercises", fix=_kv_fix(backend) if n > 0 else []))
    waiting = server.get("waiting") or {}
    if waiting.get("after") is not None:
        grew = waiting["after"] > 0 and waiting["after"] > (waiting.get("before") or 0)
        out.append(_r("QD-SERVER-QUEUE", "Waiting queue drains", "warn" if grew else "ok",
                      (f"{waiting['after']:.0f} request(s) still waiting after the exercises ended (before: "
                       f"{waiting.get('before') or 0:.0f}, peak {waiting.get('peak') or 0:.0f}): the server is "
                       "not keeping up with its load") if grew else
                      f"queue drained (peak {waiting.get('peak') or 0:.0f} waiting)",
                      fix=["Other clients load this server, or it is stalled: compare `running` and `waiting` over "
                           "a minute; add replicas or capacity."] if grew else []))
    if "errors" in server:
        n = server["errors"]
        out.append(_r("QD-SERVER-ERRORS", "Server finished requests without errors", "fail" if n > 0 else "ok",
                      f"{n} request(s) ended with finished_reason=error on the server" if n > 0 else
                      "no request ended in error on the server", "critical",
                      fix=["Read the server log around the failed requests (KV load failures, engine errors)."]
                      if n > 0 else []))
    return out


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def parse_slo(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """`--slo NAME=VALUE`: NAME is METRIC_STAT_ms (ttft_p99_ms, tpot_p50_ms, itl_p90_ms, e2el_mean_ms) or
    error_rate (a fraction); DoctorError otherwise."""
    out: dict[str, float] = {}
    valid = [f"{m}_{s}_ms" for m in SLO_METRICS for s in SLO_STATS] + ["error_rate"]
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in valid:
            raise DoctorError(f"--slo expects NAME=VALUE with NAME one of ttft|tpot|itl|e2el _ p50|p90|p99|mean _ms "
                              f"or error_rate, got {item!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise DoctorError(f"--slo {name}: {value!r} is not a number") from None
        if not math.isfinite(out[name]):
            raise DoctorError(f"--slo {name}: {value!r} is not a finite number")
        if out[name] < 0:
            raise DoctorError(f"--slo {name}: must not be negative")
        if name == "error_rate" and out[name] > 1:
            raise DoctorError(f"--slo error_rate: a fraction from 0 to 1, got {value!r}")
    return out


def _measured(name: str, burst: dict[str, Any]) -> float | None:
    """The burst's value for an SLO name (client side, `vllm bench serve` keys)."""
    if name == "error_rate":
        total = (burst.get("completed") or 0) + (burst.get("failed") or 0)
        return (burst.get("failed") or 0) / total if total else None
    metric, stat, _ = name.split("_")
    return burst.get(f"{stat}_{metric}_ms")


def slo_misses(slo: dict[str, float], measured: dict[str, Any]) -> list[str]:
    """The SLO names that `measured` (a burst or sweep level, `vllm bench serve` keys) misses or cannot show."""
    return [name for name, target in slo.items()
            if (value := _measured(name, measured)) is None or value > target]


def judge_slo(slo: dict[str, float], burst: dict[str, Any] | None) -> Result | None:
    """QD-DEPLOY-SLO: every target met by the burst (as clients saw it), else fail naming the misses."""
    if not slo:
        return None
    title = "Burst meets the service-level objectives"
    if not burst:
        return Result("QD-DEPLOY-SLO", title, "deploy", "high", Status.FAIL, "no burst ran, so no objective was met")
    misses, met = [], []
    for name, target in slo.items():
        value = _measured(name, burst)
        unit = "" if name == "error_rate" else " ms"
        shown = f"{value:.3g}" if name == "error_rate" and value is not None else (
            f"{value:.1f}" if value is not None else "?")
        line = f"{name} {shown}{unit} (target ≤ {target:g}{unit})"
        (misses if value is None or value > target else met).append(line)
    if misses:
        return Result("QD-DEPLOY-SLO", title, "deploy", "high", Status.FAIL, "missed: " + "; ".join(misses),
                      details=[f"met: {m}" for m in met],
                      fix=["Lower the load (--burst), or tune the server for latency (smaller "
                           f"{option('max_num_seqs', 'vllm')}, chunked prefill) and compare the server-side latency "
                           "to tell network from engine."])
    return Result("QD-DEPLOY-SLO", title, "deploy", "high", Status.OK, "met: " + "; ".join(met))
