"""One `deploy` as a library session: prepare(request) -> the plan of the run (checks judged, command shown),
run(plan) -> the outcome; one machine or a Ray fleet behind one target interface (doctor/session/targets.py);
the request and the plan are doctor/session/request.py's.

The session fills its report as it goes, so that whatever ends the run (a refusal, a busy port, Ctrl-C, SIGTERM)
can still be reported, with the run's outcome as QD-DEPLOY-OUTCOME. Messages for the user go to `on_event`;
nothing here prints.
"""

from __future__ import annotations

from typing import Any, Callable

from doctor.deploy.outcome import outcome_result
from doctor.session.request import Plan, Request
from doctor.session.targets import target_for
from doctor.errors import DoctorError

Events = Callable[[str], None]


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
        """Ctrl-C, SIGTERM or SIGHUP: exit 130 / 143 / 129, and the outcome says during which stage."""
        from doctor.stop_signals import SIGNAL_NAMES, exit_code, signum_of

        signum = signum_of(exc)
        how = SIGNAL_NAMES.get(signum, "Ctrl-C")
        self.code = exit_code(signum)
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
