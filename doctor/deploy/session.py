"""One `deploy` as a library session: prepare(request) -> the plan of the run (checks judged, command shown),
run(plan) -> the outcome; one machine or a Ray fleet behind one target interface (doctor/deploy/targets.py).

The session fills its report as it goes, so that whatever ends the run (a refusal, a busy port, Ctrl-C, SIGTERM)
can still be reported, with the run's outcome as QD-DEPLOY-OUTCOME. Messages for the user go to `on_event`;
nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from doctor.deploy.outcome import outcome_result
from doctor.deploy.preflight import blocking
from doctor.errors import DoctorError
from doctor.results import Result, Status

Events = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    """What the user asked deploy to do (the CLI's options, parsed)."""

    profile: Any
    model: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    port: int | None = None
    host: str | None = None
    python: str | None = None
    dry_run: bool = False
    rehearse: bool = False
    ray: str | None = None
    keep: bool = False
    force: bool = False
    timeout: float = 900.0
    log_path: str | None = None
    burst: int = 8
    burst_tokens: int = 32
    slo: dict[str, float] = field(default_factory=dict)

    @property
    def overrides(self) -> dict[str, Any]:
        """The profile's render overrides (doctor.deploy.prepare.overrides_of)."""
        from doctor.deploy.prepare import overrides_of

        return overrides_of(self.profile, self.port, self.host, self.model, self.variables)


@dataclass
class Plan:
    """What the run will start, after the checks: the target, its checks' results and the command shown."""

    target: Any
    results: list[Result]
    shown: str
    checked: str = "checks"
    launch: Any = None
    ready: bool = False

    @property
    def failing(self) -> list[Result]:
        return blocking(self.results)


class Session:
    """One deploy invocation: its report, its outcome, and how it ended (error, exit code, refusal)."""

    def __init__(self, report: Any, on_event: Events = lambda text: None) -> None:
        self.report = report
        self.on_event = on_event
        self.error: DoctorError | None = None
        self.code: int | None = None
        self.refused = False
        self.stop_hint = ""
        self.stage = "checks"

    def outcome(self, status: str, summary: str, **kw: Any) -> None:
        """Put the run's outcome first among the results (after a rehearsal's notice; replacing an earlier one)."""
        results = [r for r in self.report.results if r.check_id != "QD-DEPLOY-OUTCOME"]
        at = 1 if results and results[0].check_id == "QD-DEPLOY-REHEARSAL" else 0  # a rehearsal says so first
        results.insert(at, outcome_result(status, summary, **kw))
        self.report.results = results

    def interrupted(self, exc: BaseException) -> None:
        """Ctrl-C or SIGTERM: exit 130 / 143, and the outcome says during which stage."""
        from doctor.deploy.process import Terminated

        how = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
        self.code = 143 if how == "SIGTERM" else 130
        self.on_event(f"qwen-doctor: interrupted by {how} during the {self.stage}")
        self.outcome("fail", f"interrupted by {how} during the {self.stage}; nothing was left running")

    def exit_code(self, fail_on: str) -> int:
        from doctor.report.model import exit_code

        if self.code is not None:
            return self.code
        code = exit_code(self.report.results, fail_on)
        return 1 if self.refused else code


def prepare(request: Request, session: Session) -> Plan:
    """Check the deployment on its target and decide: a dry run ends here (its outcome says what would
    happen), failing checks refuse the start unless --force; `plan.ready` when the run may start."""
    from doctor.deploy.targets import target_for

    plan = target_for(request).plan(request, session)
    if not plan.ready:
        return plan
    failing = plan.failing
    ids = ", ".join(r.check_id for r in failing)
    if request.dry_run:
        session.on_event(f"would run{plan.shown}")
        session.outcome("fail" if failing else "skip",
                        (f"dry run: checks {ids} fail, so deploy would refuse to start" if failing
                         else f"dry run: the {plan.checked} pass; nothing was started"))
        plan.ready = False
    elif failing and not request.force:
        session.refused = True
        session.on_event(f"refusing to start: failing checks {ids} (fix them, or --force)")
        session.outcome("fail", f"refused to start: failing checks {ids} (fix them, or --force)")
        plan.ready = False
    return plan


def run(plan: Plan, session: Session, progress: Events, watch: Callable[[Any], None] | None = None) -> None:
    """Start what the plan holds, follow, exercise and stop it; the outcome and results go into the report."""
    if plan.ready:
        session.stage = "start"
        plan.target.launch(plan, session, progress, watch)


def verdict_line(results: list[Result]) -> str:
    """The preflight verdict, said before the long start."""
    failing = [r.check_id for r in results if r.status in (Status.FAIL, Status.ERROR)]
    warned = [r.check_id for r in results if r.status == Status.WARN]
    ok = sum(1 for r in results if r.status == Status.OK)
    parts = [f"{ok} ok"]
    if warned:
        parts.append(f"{len(warned)} warn ({', '.join(warned)})")
    if failing:
        parts.append(f"{len(failing)} fail ({', '.join(failing)})")
    return "preflight: " + ", ".join(parts)
