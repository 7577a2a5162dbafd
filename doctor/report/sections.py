"""The documented shapes of `Report.sections`, filled by `plan`, `deploy` and `explain`; every renderer reads them.

Every key is optional; a section that is absent is simply not rendered. The JSON Schema shipped next to this
module (`report.schema.json`, see `docs/report-schema.md`) enforces the same shapes, so a report that a
command writes is validated by the tests. Byte counts are integers, durations are seconds unless the key
ends in `_ms`.

sections.plan        : `doctor.planner.render.plan_to_dict(plan)` as is (model, gpus, config, ranks[], rules[],
                       fits, kv_tokens, max_model_len, problems[], suggestions[]).
sections.deployment  : {profile, backend, command (str), argv [str], url, pid, started_at, ready_seconds,
                       stopped (bool), exit_code, log_path, log_excerpt [str]}.
sections.exercises[] : {name, status ok|warn|fail|skip|error, seconds, summary, details [str], fix [str],
                       check_id}; they count toward the report's status; one JUnit testcase each, unless
                       `check_id` names a result that already reports the exercise (deploy's QD-DEPLOY-*).
sections.metrics     : {requests, concurrency, duration_s, errors,
                       throughput {requests_per_s, output_tokens_per_s, total_tokens_per_s},
                       percentiles {ttft_ms|tpot_ms|itl_ms|e2el_ms: {p50, p90, p99}},
                       kv_cache {predicted_tokens, reported_tokens}}.
sections.server      : the server's own /metrics between two scrapes (`doctor.deploy.server_metrics.compare`):
                       {backend, families, requests, latency {ttft_ms|tpot_ms|itl_ms|e2el_ms|queue_ms: {p50, p90,
                       p99, mean}} (of the measured burst: latency_requests), preemptions, errors, aborted,
                       kv_usage|waiting|running {before, after, peak}}.
sections.probe       : {url, model, metrics ("read" or why not)} of `qwen-doctor probe`.
sections.remedies[]  : {id, title, severity, component, count (default 1), first_line {source, line},
                       last_line {source, line}, line, context {before [str], after [str]}, why,
                       fix [str | {text, applies}], source [url], wrapper (bool), raised_by, engine_bug,
                       root {exception, inferred, raised_at, statement, raised_by, cited} (where the finding has them)}:
                       `remedy_from_finding(finding.to_dict())`.
sections.logs[]      : {source, lines [str]}: raw log excerpts shown collapsed.

A `vllm bench serve`-style burst result (`p99_ttft_ms`, `request_throughput`...) becomes sections.metrics
through `metrics_from_bench`.
"""

from __future__ import annotations

from typing import Any, TypedDict

from doctor.results import Status

PERCENTILE_METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
PERCENTILES = ("p50", "p90", "p99")
SECTION_ORDER = ("plan", "deployment", "exercises", "metrics", "server", "probe", "remedies", "logs")


class Location(TypedDict):
    source: str
    line: int


class Deployment(TypedDict, total=False):
    profile: str
    backend: str
    command: str
    argv: list[str]
    url: str
    pid: int
    started_at: str
    ready_seconds: float
    stopped: bool
    exit_code: int | None
    log_path: str
    log_excerpt: list[str]


class Exercise(TypedDict, total=False):
    name: str
    status: str
    seconds: float
    summary: str
    details: list[str]
    fix: list[str]
    check_id: str


class Percentiles(TypedDict, total=False):
    p50: float
    p90: float
    p99: float


class Metrics(TypedDict, total=False):
    requests: int
    concurrency: int
    duration_s: float
    errors: int
    throughput: dict[str, float]
    percentiles: dict[str, Percentiles]
    kv_cache: dict[str, int | None]


class RemedyMatch(TypedDict, total=False):
    id: str
    title: str
    severity: str
    component: str
    count: int
    first_line: Location
    last_line: Location
    line: str
    context: dict[str, list[str]]
    why: str
    fix: list[Any]
    source: list[str]
    wrapper: bool


class LogExcerpt(TypedDict):
    source: str
    lines: list[str]


def fix_text(step: Any) -> str:
    """A remedy fix step as one line: plain strings as they are, `{text, applies}` with its version range."""
    if isinstance(step, dict):
        text = str(step.get("text", ""))
        return f"{text} [{step['applies']}]" if step.get("applies") else text
    return str(step)


def as_status(value: Any) -> Status:
    """A section's status string as a Status; anything unknown counts as an error, never silently as ok."""
    try:
        return Status(value)
    except ValueError:
        return Status.ERROR


def metrics_from_bench(bench: dict[str, Any]) -> dict[str, Any]:
    """`sections.metrics` from a `vllm bench serve`-style result (`p99_ttft_ms`, `request_throughput`, ...)."""
    percentiles: dict[str, dict[str, float]] = {}
    for key, value in bench.items():
        head, _, rest = key.partition("_")
        if head in PERCENTILES and rest.endswith("_ms") and isinstance(value, (int, float)):
            percentiles.setdefault(rest, {})[head] = float(value)
    throughput = {name: float(bench[key]) for name, key in (("requests_per_s", "request_throughput"),
                                                            ("output_tokens_per_s", "output_throughput"),
                                                            ("total_tokens_per_s", "total_token_throughput"))
                  if isinstance(bench.get(key), (int, float))}
    out: dict[str, Any] = {"percentiles": percentiles, "throughput": throughput}
    if isinstance(bench.get("completed"), int):
        out["requests"] = bench["completed"] + int(bench.get("failed") or 0)
        out["errors"] = int(bench.get("failed") or 0)
    if isinstance(bench.get("duration"), (int, float)):
        out["duration_s"] = float(bench["duration"])
    return out


def remedy_from_finding(finding: dict[str, Any]) -> dict[str, Any]:
    """`sections.remedies[]` entry from `remedies.explain.Finding.to_dict()` (the remedy flattened in; where the
    finding has them, the engine source that raised it, the engine bug it names, its root exception and the
    dependency whose API changed)."""
    remedy = finding.get("remedy") or {}
    where = {key: finding[key] for key in ("raised_by", "engine_bug", "root", "dependency") if finding.get(key)}
    return {
        **where,
        "id": remedy.get("id", ""), "title": remedy.get("title", ""), "severity": remedy.get("severity", ""),
        "component": remedy.get("component", ""), "count": int(finding.get("count") or 1),
        "first_line": finding.get("first"), "last_line": finding.get("last"), "line": finding.get("line", ""),
        "context": finding.get("context") or {"before": [], "after": []}, "why": remedy.get("why", ""),
        "fix": list(remedy.get("fix") or []), "source": list(remedy.get("source") or []),
        "wrapper": bool(remedy.get("wrapper")),
    }
