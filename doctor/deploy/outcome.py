"""The deploy's verdict as one result, QD-DEPLOY-OUTCOME, listed first in every report format."""

from __future__ import annotations

from typing import Any

from doctor.results import Result, Status

CHECK_ID = "QD-DEPLOY-OUTCOME"
TITLE = "Deploy outcome"


def outcome_result(status: str, summary: str, seconds: float = 0.0) -> Result:
    """The run's outcome: ok (deployed and every stage passed), fail, or skip (dry run)."""
    return Result(CHECK_ID, TITLE, "deploy", "critical", Status(status), summary, seconds=float(seconds or 0.0))


def summarize_deploy(outcome: Any) -> tuple[str, str]:
    """(status, sentence) for a finished `run.deploy()`: what happened to the server and the exercises."""
    results = {r.check_id: r for r in outcome.results}
    deployment = outcome.sections.get("deployment") or {}
    start = deployment.get("start") or {}
    if outcome.interrupted:
        where = "start" if start.get("state") in ("interrupted", "timeout") else "exercises"
        return "fail", (f"interrupted by {outcome.interrupted} during the {where}; the server was stopped "
                        f"({deployment.get('stop')})")
    first = results.get("QD-DEPLOY-START")
    if first is None or first.status != Status.OK:
        return "fail", f"the server did not become healthy: {first.summary if first else 'not started'}"
    failed = [r for r in outcome.results if r.status in (Status.FAIL, Status.ERROR) and r.check_id != CHECK_ID]
    exercises = outcome.sections.get("exercises") or []
    passed = sum(1 for e in exercises if e.get("status") == "ok")
    ran = sum(1 for e in exercises if e.get("status") != "skip")
    end = (f"kept running as id {outcome.kept_id} (stop it with `qwen-doctor deploy --stop {outcome.kept_id}`)"
           if outcome.kept_pid else deployment.get("stop") or "stopped")
    head = f"healthy after {start.get('seconds', 0):.0f} s, {passed}/{ran} exercises ok"
    if failed:
        return "fail", f"{head}, but {', '.join(r.check_id for r in failed)} failed; {end}"
    return "ok", f"deployed: {head}; {end}"
