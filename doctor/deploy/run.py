"""The deployment itself: start, follow, wait, exercise, compare KV capacity, stop; results for the report."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from doctor.boundedhttp import bounded_client
from doctor.command_options import PORT
from doctor.deploy import kv, runs
from doctor.deploy.exercise import Exercise
from doctor.deploy.exercise_ids import EXERCISE_IDS, EXERCISE_TITLES, MEDIUM
from doctor.deploy.exercise_config import exercise_config
from doctor.deploy.bench import bench_section
from doctor.deploy.load import sweep_section
from doctor.deploy.probe import ProbeResult, exercise_server
from doctor.deploy.follower import LogFollower
from doctor.deploy.health import StartOutcome, wait_ready
from doctor.deploy.ports import PortInUse, port_is_free
from doctor.deploy.process import ServerProcess, supervised
from doctor.deploy.remedy import RemedyHit, ranked
from doctor.deploy.spec import LaunchSpec
from doctor.deploy.unknown import unknown_crash
from doctor.facts.model import Facts
from doctor.redact import redact_argv, redact_env, redact_text
from doctor.report.model import now
from doctor.report.sections import metrics_from_bench
from doctor.results import Result, Status
from doctor.stop_signals import SIGNAL_NAMES, signum_of

CATEGORY = "deploy"
EXIT_GRACE_S = 5.0    # how long a server that stopped answering /health is given to finish exiting


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
    slo: dict[str, float] = field(default_factory=dict)
    sweep: tuple[int, ...] = ()
    bench: bool = False
    check_port: bool = True  # off when the API is served by another machine (deploy --ray)


@dataclass
class DeployOutcome:
    """What the deployment produced: results for the shared report, sections, and a kept server's pid."""

    results: list[Result]
    sections: dict[str, Any]
    kept_pid: int | None = None
    remedies: list[RemedyHit] = field(default_factory=list)
    interrupted: str | None = None
    kept_id: str | None = None

    @property
    def exit_code(self) -> int | None:
        """130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP, None otherwise (the results decide)."""
        if self.interrupted is None:
            return None
        return {"SIGTERM": 143, "SIGHUP": 129}.get(self.interrupted, 130)


def _result(check_id: str, title: str, status: str, summary: str, severity: str = "high", **kw: Any) -> Result:
    return Result(check_id, title, CATEGORY, severity, Status(status), summary, **kw)


def _start_result(start: StartOutcome, remedies: list[RemedyHit], follower: LogFollower) -> Result:
    if start.ready:
        return _result("QD-DEPLOY-START", "Server starts and becomes healthy", "ok",
                       f"healthy after {start.seconds:.0f} s", "critical", evidence={"phases": follower.phase_times},
                       seconds=round(start.seconds, 3))
    fatal = [h for h in remedies if h.fatal] or remedies
    fix = [step for h in fatal[:1] for step in h.fix]
    details = [start.detail] + [f"log line {h.lineno}: {h.line}" for h in fatal[:3]]
    if start.state == "timeout" and not fatal and start.progressing:
        details.append(f"the server was still progressing (phase {start.phase}, last log line "
                       f"{start.quiet_s:.0f} s before the timeout): raise --timeout")
        fix = [f"raise --timeout (it was {start.timeout:g} s; try {start.timeout * 2:g})"]
    if not fatal:
        before = follower.before_shutdown or follower.excerpt()
        details += ["last log lines before qwen-doctor stopped the server:" if follower.before_shutdown
                    else "last log lines:", *before[-8:]]
    summary = (f"{fatal[0].id}: {fatal[0].title}" if fatal else start.detail)
    return _result("QD-DEPLOY-START", "Server starts and becomes healthy", "fail", summary, "critical",
                   details=details, fix=fix or ["Read the deployment log excerpt below; rerun with the same command "
                                                "by hand to see the full output."],
                   remedy_ids=[h.id for h in fatal[:3]], evidence=start.to_dict(), seconds=round(start.seconds, 3))


def exercise_result(ex: Exercise) -> Result:
    return _result(EXERCISE_IDS[ex.name], EXERCISE_TITLES[ex.name], ex.status, ex.summary,
                   "medium" if ex.name in MEDIUM else "high",
                   evidence={k: v for k, v in ex.data.items() if not isinstance(v, list) or len(v) < 50},
                   seconds=round(ex.seconds, 3))


def _state_after(spec: LaunchSpec, server: ServerProcess) -> str | None:
    """None when the server still runs and answers /health; otherwise what went wrong. A server that stops
    answering and then exits within EXIT_GRACE_S is reported by its exit, not by the refused request."""
    if not server.alive:
        return _exited(server)
    with bounded_client(5.0, trust_env=False, headers=spec.headers) as client:
        try:
            code = client.get(f"{spec.base_url}/health").status_code
        except httpx.HTTPError as exc:
            problem = f"/health failed: {type(exc).__name__}"
        else:
            if code == 200:
                return None
            problem = f"/health answers HTTP {code}"
    if server.exit_code_within(EXIT_GRACE_S) is not None:
        return _exited(server)
    return problem


def _exited(server: ServerProcess) -> str:
    server.wait_log_drained(5.0)
    return f"exited by itself with code {server.returncode}"


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


def _kv_result(follower: LogFollower, prediction: kv.KVPrediction) -> Result:
    status, summary = kv.compare(follower.kv_tokens, prediction)
    return _result("QD-DEPLOY-KV", "Logged KV capacity matches the plan", status, summary, "medium",
                   details=[follower.kv_line] if follower.kv_line and status == "warn" else [],
                   fix=["Something else holds memory, or a flag the planner does not model changed the budget: "
                        "compare `qwen-doctor plan` with the server's memory lines."] if status == "warn" else [],
                   evidence={"logged_tokens": follower.kv_tokens, "predicted_tokens": prediction.tokens,
                             "basis": prediction.basis})


def _stop_result(how: str, survivors: list[int], seconds: float = 0.0) -> Result:
    if survivors:
        return _result("QD-DEPLOY-STOP", "Server stopped, nothing left behind", "fail",
                       f"{len(survivors)} process(es) survived the shutdown: {survivors}", "critical",
                       fix=[f"kill -9 {' '.join(map(str, survivors))}"], seconds=round(seconds, 3))
    return _result("QD-DEPLOY-STOP", "Server stopped, nothing left behind", "ok", how, "critical",
                   seconds=round(seconds, 3))


def _check_port(spec: LaunchSpec) -> None:
    """Refuse a busy port, naming our own earlier server (and how to stop it) when it holds the port."""
    if port_is_free(spec.host, spec.port):
        return
    mine = runs.holder_of(spec.port)
    if mine is not None:
        raise PortInUse(f"port {spec.port} on {spec.host} is held by a server qwen-doctor started earlier "
                        f"(id {mine.id}, profile {mine.profile}, started {mine.started_at}, log {mine.log}); "
                        f"stop it with `{mine.stop_hint()}` or pass {PORT} with a free port")
    raise PortInUse(f"port {spec.port} on {spec.host} is already in use; stop what listens there "
                    f"(ss -ltnp 'sport = :{spec.port}') or pass {PORT} with a free port")


def deploy(req: DeployRequest, progress: Callable[[str], None] = lambda s: None,
           watch: Callable[[LogFollower], None] | None = None) -> DeployOutcome:
    """Run one deployment end to end. The server is always stopped unless `keep` and everything passed
    far enough to be worth keeping (it became healthy). `watch` receives the log follower (a live display
    reads its phase and last line). Ctrl-C or SIGTERM stop the server and end the
    run early: the outcome then says so (`interrupted`) and carries what was known."""
    spec = req.spec
    if req.check_port:
        _check_port(spec)
    follower = LogFollower(spec.backend, progress=progress)
    if watch is not None:
        watch(follower)
    started_at = now()
    record: list[runs.RunRecord] = []

    def on_started(pid: int):
        rec = runs.record_for(pid, host=spec.host, port=spec.port, profile=spec.profile_name,
                              backend=spec.backend, log=str(req.log_path), started_at=started_at,
                              command=redact_text(spec.shell()))
        record.append(rec)
        return runs.save(rec)

    server = ServerProcess(spec.argv, spec.env, req.log_path, on_line=follower.feed,
                           on_stop=follower.mark_shutdown, guard_grace=req.grace, on_started=on_started,
                           die_with_parent=not req.keep)
    exercises: list[Exercise] = []
    probed: ProbeResult | None = None
    start = StartOutcome("timeout", 0.0, "not started")
    kept = False
    died_at: str | None = None
    interrupted: str | None = None
    stage = "start"
    t0 = time.monotonic()
    try:
        with supervised(server, keep=lambda: kept, grace=req.grace):
            progress(f"starting: {redact_text(spec.shell())}")
            progress(f"log: {req.log_path}")
            server.start()
            start = wait_ready(spec.base_url, server, follower, req.timeout, headers=spec.headers)
            progress(f"start: {start.state} after {start.seconds:.0f} s ({start.detail})")
            if start.ready:
                stage = "exercises"
                cfg = exercise_config(spec, req.burst, req.burst_tokens, req.sweep, req.bench)
                probed = asyncio.run(exercise_server(spec.base_url, cfg, req.slo))
                exercises = probed.exercises
                for ex in exercises:
                    progress(f"{ex.name}: {ex.status}: {ex.summary}")
                died_at = _state_after(spec, server)
            kept = req.keep and start.ready and server.alive
            if kept:
                server.detach()
                if record:
                    runs.save(dataclasses.replace(record[0], kept=True))
            else:
                server.stop(req.grace)
    except KeyboardInterrupt as exc:  # Terminated too: supervised() has stopped the server already
        interrupted = SIGNAL_NAMES.get(signum_of(exc), "Ctrl-C")
        if stage == "start" and server.pid is not None:
            start = StartOutcome("interrupted", time.monotonic() - t0,
                                 f"{interrupted} during start (phase: {follower.phase}); qwen-doctor stopped the "
                                 "server", phase=follower.phase)
        progress(f"interrupted by {interrupted}")
    stop_how = server.stop_how or "not started"
    survivors = [p.pid for p in server.survivors()] if server.pid is not None and not kept else []
    if server.pid is not None and not kept:
        progress(f"stopped: {stop_how}")
        if record and not survivors:
            runs.forget(record[0])
    out = _outcome(req, server, follower, start, exercises, died_at, kept, stop_how, survivors, interrupted,
                   started_at, t0)
    if probed is not None:
        out.results += probed.results
        if probed.server is not None:
            out.sections["server"] = probed.server
        if probed.sweep:
            out.sections["sweep"] = sweep_section(probed.sweep)
        if probed.bench:
            out.sections["bench"] = bench_section(probed.bench)
    return out


def _outcome(req: DeployRequest, server: ServerProcess, follower: LogFollower, start: StartOutcome,
             exercises: list[Exercise], died_at: str | None, kept: bool, stop_how: str, survivors: list[int],
             interrupted: str | None, started_at: str, t0: float) -> DeployOutcome:
    """Results and report sections from what the deployment got to."""
    spec = req.spec
    remedies = follower.remedies
    if server.pid is not None and (not start.ready or died_at is not None):
        unknown = unknown_crash(req.log_path, follower.shutdown_line)
        remedies = ranked([*remedies, unknown]) if unknown is not None else remedies
    results = [_start_result(start, remedies, follower)] if server.pid is not None else []
    results += [exercise_result(ex) for ex in exercises]
    prediction = kv.KVPrediction(None, "the server did not start")
    if start.ready and not interrupted:
        prediction = kv.predict(req.spec, req.model, req.facts) if req.model else kv.KVPrediction(None, "no model")
        results.append(_alive_result(died_at, remedies, follower))
        results.append(_kv_result(follower, prediction))
    if not kept and server.pid is not None:
        results.append(_stop_result(stop_how, survivors, server.stop_seconds))
    sections: dict[str, Any] = {"deployment": {
        "profile": spec.profile_name, "backend": spec.backend, "url": spec.base_url,
        "command": redact_text(" ".join(spec.argv)), "argv": redact_argv(spec.argv), "pid": server.pid,
        "started_at": started_at, "ready_seconds": round(start.seconds, 1) if start.ready else None,
        "stopped": not kept, "exit_code": None if kept else server.returncode, "log_path": str(req.log_path),
        "log_excerpt": [redact_text(line) for line in follower.excerpt()],
        "env": redact_env(spec.env), "start": start.to_dict(), "phases": follower.phase_times,
        "stop": stop_how if not kept else f"kept running (pid {server.pid})",
        "seconds": round(time.monotonic() - t0, 1),
    }, "exercises": [exercise_section(ex) for ex in exercises],
        "remedies": [h.to_section(str(req.log_path)) for h in remedies]}
    if interrupted:
        sections["deployment"]["interrupted"] = interrupted
    if start.ready and exercises:
        sections["metrics"] = _metrics(exercises, req, follower.kv_tokens, prediction.tokens)
    return DeployOutcome(results, sections, server.pid if kept else None, remedies, interrupted,
                         str(server.pid) if kept else None)


def exercise_section(ex: Exercise) -> dict[str, Any]:
    """`sections.exercises[]`: the exercise's verdict, naming the result that reports it too."""
    return {"name": ex.name, "status": ex.status, "seconds": round(ex.seconds, 3), "summary": ex.summary,
            "check_id": EXERCISE_IDS[ex.name]}


def metrics_section(burst: Exercise, concurrency: int) -> dict[str, Any]:
    """`sections.metrics` of a burst: `vllm bench serve` figures as percentiles and throughput."""
    out = metrics_from_bench(burst.data)
    out["concurrency"] = concurrency
    return out


def _metrics(exercises: list[Exercise], req: DeployRequest, logged: int | None, predicted: int | None
             ) -> dict[str, Any]:
    """`sections.metrics`: the burst in `vllm bench serve` terms as percentiles/throughput, and KV capacity."""
    burst = next((e for e in exercises if e.name == "burst"), None)
    out = metrics_section(burst, req.burst) if burst and burst.data else {}
    out["kv_cache"] = {"predicted_tokens": predicted, "reported_tokens": logged}
    return out
