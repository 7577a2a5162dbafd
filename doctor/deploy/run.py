"""The deployment itself: start, follow, wait, exercise, compare KV capacity, stop; results for the report."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from doctor.deploy import kv
from doctor.deploy.exercise import Exercise, ExerciseConfig, run_all
from doctor.deploy.follower import LogFollower
from doctor.deploy.health import StartOutcome, wait_ready
from doctor.deploy.ports import ensure_port_free
from doctor.deploy.process import ServerProcess, supervised
from doctor.deploy.remedy import RemedyHit
from doctor.deploy.spec import LaunchSpec
from doctor.facts.model import Facts
from doctor.redact import redact_env, redact_text
from doctor.results import Result, Status

CATEGORY = "deploy"
EXERCISE_IDS = {"models": "QD-DEPLOY-MODELS", "chat": "QD-DEPLOY-CHAT", "stream": "QD-DEPLOY-STREAM",
                "structured": "QD-DEPLOY-JSON", "reasoning": "QD-DEPLOY-REASONING", "burst": "QD-DEPLOY-BURST"}
EXERCISE_TITLES = {"models": "Model listed by /v1/models", "chat": "Chat completion",
                   "stream": "Streamed chat completion", "structured": "JSON-schema structured output",
                   "reasoning": "Reasoning parser separates thinking", "burst": "Concurrency burst"}


@dataclass(frozen=True)
class DeployRequest:
    """Everything one deployment needs besides the command: limits, exercise sizes, where the log goes."""

    spec: LaunchSpec
    log_path: Path
    model: str = ""
    timeout: float = 600.0
    keep: bool = False
    grace: float = 15.0
    burst: int = 8
    burst_tokens: int = 32
    facts: Facts | None = None


@dataclass
class DeployOutcome:
    """What the deployment produced: results for the shared report, sections, and a kept server's pid."""

    results: list[Result]
    sections: dict[str, Any]
    kept_pid: int | None = None
    remedies: list[RemedyHit] = field(default_factory=list)


def _result(check_id: str, title: str, status: str, summary: str, severity: str = "high", **kw: Any) -> Result:
    return Result(check_id, title, CATEGORY, severity, Status(status), summary, **kw)


def _start_result(start: StartOutcome, remedies: list[RemedyHit], follower: LogFollower) -> Result:
    if start.ready:
        return _result("QD-DEPLOY-START", "Server starts and becomes healthy", "ok",
                       f"healthy after {start.seconds:.0f} s", "critical", evidence={"phases": follower.phase_times})
    fatal = [h for h in remedies if h.fatal] or remedies
    fix = [step for h in fatal[:1] for step in h.fix]
    details = [start.detail] + [f"log line {h.lineno}: {h.line}" for h in fatal[:3]]
    if not fatal:
        details += ["last log lines:", *follower.excerpt()[-5:]]
    summary = (f"{fatal[0].id}: {fatal[0].title}" if fatal else start.detail)
    return _result("QD-DEPLOY-START", "Server starts and becomes healthy", "fail", summary, "critical",
                   details=details, fix=fix or ["Read the deployment log excerpt below; rerun with the same command "
                                                "by hand to see the full output."],
                   remedy_ids=[h.id for h in fatal[:3]], evidence=start.to_dict())


def _exercise_result(ex: Exercise) -> Result:
    return _result(EXERCISE_IDS[ex.name], EXERCISE_TITLES[ex.name], ex.status, ex.summary,
                   "medium" if ex.name == "reasoning" else "high",
                   evidence={k: v for k, v in ex.data.items() if not isinstance(v, list) or len(v) < 50},
                   seconds=round(ex.seconds, 3))


def _state_after(spec: LaunchSpec, server: ServerProcess) -> str | None:
    """None when the server still runs and answers /health; otherwise what went wrong."""
    if not server.alive:
        server.wait_log_drained(5.0)
        return f"exited with code {server.returncode}"
    with httpx.Client(timeout=5.0, trust_env=False, headers=spec.headers) as client:
        try:
            code = client.get(f"{spec.base_url}/health").status_code
        except httpx.HTTPError as exc:
            return f"/health failed: {type(exc).__name__}"
    return None if code == 200 else f"/health answers HTTP {code}"


def _alive_result(died_at: str | None, remedies: list[RemedyHit], follower: LogFollower) -> Result:
    title = "Server survives the exercises"
    if died_at is None:
        return _result("QD-DEPLOY-ALIVE", title, "ok", "still running after every exercise", "critical")
    fatal = [h for h in remedies if h.fatal]
    return _result("QD-DEPLOY-ALIVE", title, "fail",
                   f"after the exercises the server {died_at}: a healthy start did not mean a working server",
                   "critical", details=[f"log line {h.lineno}: {h.line}" for h in fatal[:3]] or
                   ["last log lines:", *follower.excerpt()[-5:]],
                   fix=[step for h in fatal[:1] for step in h.fix], remedy_ids=[h.id for h in fatal[:3]])


def _kv_result(follower: LogFollower, req: DeployRequest) -> Result:
    prediction = kv.predict(req.spec, req.model, req.facts) if req.model else kv.KVPrediction(None, "no model")
    status, summary = kv.compare(follower.kv_tokens, prediction)
    return _result("QD-DEPLOY-KV", "Logged KV capacity matches the plan", status, summary, "medium",
                   details=[follower.kv_line] if follower.kv_line and status == "warn" else [],
                   fix=["Something else holds memory, or a flag the planner does not model changed the budget: "
                        "compare `qwen-doctor plan` with the server's memory lines."] if status == "warn" else [],
                   evidence={"logged_tokens": follower.kv_tokens, "predicted_tokens": prediction.tokens,
                             "basis": prediction.basis})


def _stop_result(how: str, survivors: list[int]) -> Result:
    if survivors:
        return _result("QD-DEPLOY-STOP", "Server stopped, nothing left behind", "fail",
                       f"{len(survivors)} process(es) survived the shutdown: {survivors}", "critical",
                       fix=[f"kill -9 {' '.join(map(str, survivors))}"])
    return _result("QD-DEPLOY-STOP", "Server stopped, nothing left behind", "ok", how, "critical")


def deploy(req: DeployRequest, progress: Callable[[str], None] = lambda s: None) -> DeployOutcome:
    """Run one deployment end to end. The server is always stopped unless `keep` and everything passed
    far enough to be worth keeping (it became healthy)."""
    spec = req.spec
    ensure_port_free(spec.host, spec.port)
    follower = LogFollower(spec.backend, progress=progress)
    server = ServerProcess(spec.argv, spec.env, req.log_path, on_line=follower.feed)
    exercises: list[Exercise] = []
    start = StartOutcome("timeout", 0.0, "not started")
    kept = False
    died_at: str | None = None
    stop_how, survivors = "not started", []
    t0 = time.monotonic()
    with supervised(server, keep=lambda: kept, grace=req.grace):
        progress(f"starting: {redact_text(spec.shell())}")
        progress(f"log: {req.log_path}")
        server.start()
        start = wait_ready(spec.base_url, server, follower, req.timeout, headers=spec.headers)
        progress(f"start: {start.state} after {start.seconds:.0f} s ({start.detail})")
        if start.ready:
            cfg = ExerciseConfig(model=spec.served_model_name, reasoning=bool(spec.reasoning_parser),
                                 burst=req.burst, burst_tokens=req.burst_tokens,
                                 headers=tuple(spec.headers.items()))
            exercises = asyncio.run(run_all(spec.base_url, cfg))
            for ex in exercises:
                progress(f"{ex.name}: {ex.status}: {ex.summary}")
            died_at = _state_after(spec, server)
        kept = req.keep and start.ready and server.alive
        if kept:
            server.detach()
        else:
            follower.mark_shutdown()
            stop_how = server.stop(req.grace)
            survivors = [p.pid for p in server.survivors()]
            progress(f"stopped: {stop_how}")
    remedies = follower.remedies
    results = [_start_result(start, remedies, follower)]
    results += [_exercise_result(ex) for ex in exercises]
    if start.ready:
        results.append(_alive_result(died_at, remedies, follower))
        results.append(_kv_result(follower, req))
    if not kept:
        results.append(_stop_result(stop_how, survivors))
    sections = {"deployment": {
        "profile": spec.profile_name, "backend": spec.backend, "base_url": spec.base_url,
        "command": redact_text(" ".join(spec.argv)), "env": redact_env(spec.env), "log_path": str(req.log_path),
        "start": start.to_dict(), "phases": follower.phase_times, "kv_cache_tokens": follower.kv_tokens,
        "log_excerpt": [redact_text(line) for line in follower.excerpt()],
        "remedies": [h.to_dict() for h in remedies], "exercises": [e.to_dict() for e in exercises],
        "metrics": next((e.data for e in exercises if e.name == "burst"), {}),
        "stop": stop_how if not kept else f"kept running (pid {server.pid})",
        "seconds": round(time.monotonic() - t0, 1),
    }}
    return DeployOutcome(results, sections, server.pid if kept else None, remedies)
