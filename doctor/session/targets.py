"""Where a deploy runs, behind one interface: `plan(request, session)` checks the deployment there and says what
it would start; `launch(plan, session, progress, watch)` starts it, follows it, exercises it and stops it
(`session`: the doctor.session.session.Session whose report they fill and whose events they send).

- SingleMachine: this machine, one engine process (optionally a rehearsal with random weights).
- RayFleet: a multi-node profile; without --ray only every node's commands (a dry run), with --ray the cluster is
  checked as a fleet and each node's engine starts through a Ray task pinned to it (doctor/deploy/fleet.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from doctor.session.request import Plan, Request, verdict_line
from doctor.errors import DoctorError


def target_for(request: Request) -> "SingleMachine | RayFleet":
    """The target of the profile; DoctorError for an option that does not apply to it."""
    from doctor.deploy.fleet import is_multinode

    profile = request.profile
    if not is_multinode(profile):
        if request.ray is not None:
            raise DoctorError(f"--ray deploys a multi-node profile; {profile.name} runs on one machine")
        return SingleMachine()
    for name, given in (("--rehearse", request.rehearse), ("--keep", request.keep)):
        if given:
            raise DoctorError(f"{name} is not available for the multi-node profile {profile.name}")
    return RayFleet()


def _log_path(request: Request) -> Path:
    return (Path(request.log_path) if request.log_path
            else Path(tempfile.mkdtemp(prefix="qwen-doctor-deploy-")) / "server.log")


def _with_backend_packages(facts: Any, python: str | None) -> Any:
    from doctor.deploy.preflight import backend_packages, with_packages

    return with_packages(facts, backend_packages(python)) if python else facts


class SingleMachine:
    """One engine process on this machine."""

    def plan(self, request: Request, session: Any) -> Plan:
        from doctor.deploy import checkpoint, overrides, prepare
        from doctor.deploy.kv import check_options
        from doctor.deploy.preflight import preflight
        from doctor.deployment.version import engine_version
        from doctor.facts.collect import collect
        from doctor.flags.bridge import find_backend_python
        from doctor.redact import redact_text
        from doctor.report.model import summarize

        report, profile = session.report, request.profile
        spec = prepare.render(profile, request.port, request.host, request.model, request.variables)
        rehearsal = None
        if request.rehearse:
            from doctor.rehearse import rehearse_spec

            spec, rehearsal = rehearse_spec(spec, request.model or prepare.model_of(spec), build=not request.dry_run)
            report.results.append(rehearsal.result())
            report.sections["rehearsal"] = rehearsal.section()
        python = request.python or find_backend_python(spec.backend)
        spec = prepare.with_interpreter(spec, python)
        served_model = prepare.model_of(spec)
        if rehearsal is not None and not rehearsal.folder.is_dir():
            served_model = rehearsal.model  # a dry run writes no folder: judge the model it stands for
        facts = _with_backend_packages(collect(timeout_s=10.0), python)
        report.facts_summary = summarize(facts, "live")
        version = engine_version(spec.backend, facts)
        # Bad input (a flag the engine lacks, a value its setting cannot read, a checkpoint config too deep, too
        # large or no regular file) is refused before the progress line: its one line is all stderr holds.
        overrides.validate(request.flags, spec.backend, version)
        if served_model:
            checkpoint.read_config(served_model)
        deployment = spec.deployment.with_version(version)
        options = check_options(spec)
        session.on_event(f"  {redact_text('checking this machine and the profile ...')}")
        results = preflight(facts, spec.backend, profile, served_model, device=profile.hardware.device,
                            options=options, deployment=deployment)
        results.append(prepare.flag_check(spec, version))
        results.append(checkpoint.check(spec, served_model))
        report.results.extend(results)
        session.on_event(f"  {redact_text(verdict_line(results))}")
        shell = redact_text(spec.shell())
        shown = f":\n  {shell}" + (f"\nrehearsal checkpoint folder: {rehearsal.folder}" if rehearsal else "")
        if request.dry_run:
            report.sections["deployment"] = {"profile": profile.name, "command": shell, "dry_run": True}
        return Plan(self, results, shown, launch=(spec, served_model, facts, python, request), ready=True)

    def launch(self, plan: Plan, session: Any, progress: Callable[[str], None],
               watch: Callable[[Any], None] | None) -> None:
        from doctor.deploy.outcome import summarize_deploy
        from doctor.deploy.ports import PortInUse
        from doctor.deploy.run import DeployRequest, deploy

        spec, served_model, facts, python, request = plan.launch
        if not python and spec.argv[0] == "python":
            from doctor.flags.bridge import python_hint

            raise DoctorError(f"no python with {spec.backend} found: pass --python PATH ({python_hint(spec.backend)})")
        log = _log_path(request)
        req = DeployRequest(spec=spec, log_path=log, model=served_model, timeout=request.timeout, keep=request.keep,
                            burst=request.burst, burst_tokens=request.burst_tokens, facts=facts, slo=request.slo,
                            sweep=request.sweep, bench=request.bench)
        try:
            outcome = deploy(req, progress=progress, watch=watch)
        except PortInUse as exc:
            session.error = exc
            session.outcome("fail", f"not started: {exc}")
            return
        session.report.results.extend(outcome.results)
        session.report.sections.update(outcome.sections)
        status, summary = summarize_deploy(outcome)
        session.outcome(status, summary)
        if outcome.interrupted:
            session.code = outcome.exit_code
            session.on_event(f"qwen-doctor: interrupted by {outcome.interrupted}; the server was stopped")
        if outcome.kept_pid:
            session.stop_hint = (f"server left running: id {outcome.kept_id}, pid {outcome.kept_pid}, log {log}\n"
                                 f"  stop it with: qwen-doctor deploy --stop {outcome.kept_id}")


class RayFleet:
    """A multi-node profile: every node's commands, and with --ray the nodes of a Ray cluster."""

    node_timeout = 60.0
    grace = 10.0

    def plan(self, request: Request, session: Any) -> Plan:
        from doctor.deploy import fleet, prepare
        from doctor.deployment.version import engine_version
        from doctor.flags.bridge import find_backend_python

        profile, report = request.profile, session.report
        python = request.python or find_backend_python(profile.backend)
        overrides = request.overrides
        if request.ray is None:
            head = prepare.with_interpreter(prepare.render(profile, request.port, request.host, request.model,
                                                           request.variables), python)
            report.results.append(prepare.flag_check(head, None))
            text = fleet.dry_run_text(profile, overrides, start_ray=True)
            report.sections["deployment"] = {"profile": profile.name, "nodes": text, "dry_run": True}
            if not request.dry_run:
                raise DoctorError(f"profile {profile.name} spans {profile.nodes} nodes: deploy it on a Ray cluster "
                                  "with --ray [ADDRESS], or print each node's commands with --dry-run")
            session.on_event(f"would run, per node:\n{text}")
            session.outcome("skip", f"dry run: {profile.nodes} node commands printed; nothing was started")
            return Plan(self, [], text)
        facts, deployment, results = self._checks(request, session, python)
        data = facts.data["fleet"]
        if data.get("status") != "ok":
            session.outcome("fail", f"the Ray cluster did not answer: {data.get('error')}")
            session.refused = True
            return Plan(self, results, "")
        head_ip, plans = fleet.plan_nodes(profile, overrides, data, python, data.get("target"), deployment)
        spec = fleet.head_spec(profile, plans, head_ip)
        results.append(prepare.flag_check(spec, engine_version(profile.backend, facts)))
        report.results.extend(results)
        text = "\n\n".join(f"# node {p.rank} ({p.ip}, Ray node {p.node_id[:12]})\n{fleet.shell(p)}" for p in plans)
        report.sections["deployment"] = {"profile": profile.name, "nodes": text, "head_address": head_ip,
                                         "dry_run": request.dry_run}
        return Plan(self, results, f", per node (head {head_ip}):\n{text}", checked="fleet checks",
                    launch=(spec, plans, data.get("target"), request), ready=True)

    def _checks(self, request: Request, session: Any, python: str | None) -> tuple[Any, Any, list[Any]]:
        """This machine's facts plus every Ray node's, the profile's Deployment (built once, with the head's
        address), and the fleet checks on them."""
        from doctor.deploy import fleet
        from doctor.deploy.kv import check_options
        from doctor.deploy.spec import LaunchSpec
        from doctor.facts.collect import collect
        from doctor.fleet.extend import extend
        from doctor.fleet.table import node_table
        from doctor.report.model import summarize

        session.on_event(f"  checking the Ray cluster ({request.ray or 'RAY_ADDRESS / auto'}) ...")
        facts = collect(timeout_s=10.0)
        extend(facts.data, ray=request.ray, node_timeout_s=self.node_timeout, probe_timeout_s=10.0)
        facts = _with_backend_packages(facts, python)
        session.report.facts_summary = summarize(facts, "live")
        if (table := node_table(facts)) is not None:
            session.report.sections["fleet"] = table
        deployment = fleet.head_deployment(request.profile, request.overrides, facts.data["fleet"])
        results = fleet.fleet_checks(facts, request.profile, check_options(LaunchSpec.of(deployment)))
        session.on_event(f"  {verdict_line(results)}")
        return facts, deployment, results

    def launch(self, plan: Plan, session: Any, progress: Callable[[str], None],
               watch: Callable[[Any], None] | None) -> None:
        """Start the launcher as deploy's server process; add the nodes' stop result and the run's files."""
        from doctor.deploy import fleet
        from doctor.deploy.outcome import summarize_deploy
        from doctor.deploy.run import DeployRequest, deploy

        spec, plans, address, request = plan.launch
        if not address:
            raise DoctorError("the Ray cluster's address is unknown: pass --ray ADDRESS")
        log = _log_path(request)
        run_dir = log.parent / f"{log.name}.fleet"
        launcher = fleet.launcher_spec(spec, plans, address, run_dir, self.grace)
        req = DeployRequest(spec=launcher, log_path=log, model="", timeout=request.timeout, keep=False,
                            grace=self.grace + fleet.SHUTDOWN_SLACK_S, burst=request.burst,
                            burst_tokens=request.burst_tokens, facts=None, slo=request.slo, sweep=request.sweep,
                            bench=request.bench, check_port=False)
        outcome = deploy(req, progress=progress, watch=watch)
        summary = fleet.summary_of(run_dir)
        results = list(outcome.results)
        at = next((i + 1 for i, r in enumerate(results) if r.check_id == "QD-DEPLOY-STOP"), len(results))
        results.insert(at, fleet.stop_result(summary))  # next to the launcher's own stop
        report = session.report
        report.results.extend(results)
        planned = report.sections.get("deployment") or {}
        report.sections.update(outcome.sections)
        deployment = report.sections.setdefault("deployment", {})
        deployment.update({"nodes": planned.get("nodes"), "head_address": planned.get("head_address"),
                           "fleet_run": str(run_dir), "head_url": spec.base_url,
                           "nodes_summary": (summary or {}).get("nodes")})
        status, text = summarize_deploy(outcome)
        session.outcome(status, f"{text} ({len(plans)} node process(es) through Ray)")
        if outcome.interrupted:
            session.code = outcome.exit_code
            session.on_event(f"qwen-doctor: interrupted by {outcome.interrupted}; every node's engine was stopped")
