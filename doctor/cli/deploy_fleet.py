"""`deploy` for a multi-node profile: `--dry-run` prints every node's commands; `--ray [ADDRESS]` checks the
cluster as a fleet, fills the head's address from the Ray head, starts each node's engine through a Ray task
pinned to it, follows every node's log, exercises the head's API and stops every node's process."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from doctor.errors import DoctorError


@dataclass(frozen=True)
class FleetArgs:
    """The command-line inputs a fleet deployment uses."""

    overrides: dict[str, Any]
    python: str | None
    ray: str | None
    dry_run: bool
    force: bool
    timeout: float
    log_path: str | None
    burst: int
    burst_tokens: int
    slo: dict[str, float]
    node_timeout: float = 60.0
    grace: float = 10.0


def go(run: Any, profile: Any, args: FleetArgs) -> None:
    """Run the fleet deployment for `run` (the CLI's _Run, which owns the report and the outcome)."""
    from doctor.deploy import fleet, prepare
    from doctor.flags.bridge import find_backend_python

    python = args.python or find_backend_python(profile.backend)
    if args.ray is None:
        head = prepare.with_interpreter(prepare.render(profile, **_render_kw(args.overrides)), python)
        run.report.results.append(prepare.flag_check(head, None))
        text = fleet.dry_run_text(profile, args.overrides, start_ray=True)
        run.report.sections["deployment"] = {"profile": profile.name, "nodes": text, "dry_run": True}
        if not args.dry_run:
            raise DoctorError(f"profile {profile.name} spans {profile.nodes} nodes: deploy it on a Ray cluster with "
                              "--ray [ADDRESS], or print each node's commands with --dry-run")
        click.echo(f"would run, per node:\n{text}", err=True)
        run.outcome("skip", f"dry run: {profile.nodes} node commands printed; nothing was started")
        return
    facts, results = _fleet_checks(run, profile, args, python)
    data = facts.data["fleet"]
    if data.get("status") != "ok":
        run.outcome("fail", f"the Ray cluster did not answer: {data.get('error')}")
        run.refused = True
        return
    head_ip, plans = fleet.plan_nodes(profile, args.overrides, data, python, data.get("target"))
    spec = fleet.head_spec(profile, plans, head_ip)
    results.append(prepare.flag_check(spec, facts.package_version(profile.backend)))
    run.report.results.extend(results)
    text = "\n\n".join(f"# node {p.rank} ({p.ip}, Ray node {p.node_id[:12]})\n{_shell(p.argv, p.env)}" for p in plans)
    run.report.sections["deployment"] = {"profile": profile.name, "nodes": text, "head_address": head_ip,
                                         "dry_run": args.dry_run}
    from doctor.deploy.preflight import blocking

    failing = blocking(results)
    if args.dry_run:
        click.echo(f"would run, per node (head {head_ip}):\n{text}", err=True)
        run.outcome("fail" if failing else "skip",
                    f"dry run: checks {_ids(failing)} fail, so deploy would refuse to start" if failing
                    else "dry run: the fleet checks pass; nothing was started")
        return
    if failing and not args.force:
        run.refused = True
        click.echo(f"refusing to start: failing checks {_ids(failing)} (fix them, or --force)", err=True)
        run.outcome("fail", f"refused to start: failing checks {_ids(failing)} (fix them, or --force)")
        return
    _launch(run, profile, args, spec, plans, data.get("target"), facts)


def _render_kw(overrides: dict[str, Any]) -> dict[str, Any]:
    kw = {k: overrides[k] for k in ("port", "host", "model") if k in overrides}
    kw["variables"] = {k: v for k, v in overrides.items() if k not in ("port", "host", "model")}
    return kw


def _shell(argv: list[str], env: dict[str, str]) -> str:
    from doctor.deploy.spec import LaunchSpec
    from doctor.redact import redact_text

    return redact_text(LaunchSpec(argv, env, "vllm", "", 0, "").shell())


def _ids(results: list[Any]) -> str:
    return ", ".join(r.check_id for r in results)


def _fleet_checks(run: Any, profile: Any, args: FleetArgs, python: str | None) -> tuple[Any, list[Any]]:
    """Collect this machine's facts plus every Ray node's, and run the fleet checks on them."""
    from doctor.deploy import fleet, prepare
    from doctor.deploy.kv import check_options
    from doctor.deploy.preflight import backend_packages, with_packages
    from doctor.facts.collect import collect
    from doctor.fleet.extend import extend
    from doctor.fleet.table import node_table
    from doctor.report.model import summarize

    click.echo(f"  checking the Ray cluster ({args.ray or 'RAY_ADDRESS / auto'}) ...", err=True)
    facts = collect(timeout_s=10.0)
    extend(facts.data, ray=args.ray, node_timeout_s=args.node_timeout, probe_timeout_s=10.0)
    if python:
        facts = with_packages(facts, backend_packages(python))
    run.report.facts_summary = summarize(facts, "live")
    if (table := node_table(facts)) is not None:
        run.report.sections["fleet"] = table
    spec = prepare.render(profile, **_render_kw(args.overrides))
    results = fleet.fleet_checks(facts, profile, check_options(spec))
    from doctor.cli.deploy import _verdict_line

    click.echo(f"  {_verdict_line(results)}", err=True)
    return facts, results


def _launch(run: Any, profile: Any, args: FleetArgs, spec: Any, plans: list[Any], address: str | None,
            facts: Any) -> None:  # noqa: ARG001 (kept for the report's facts later)
    """Start the launcher as deploy's server process; add the nodes' stop result and the run's files."""
    from doctor.cli.progress import progress_display
    from doctor.deploy import fleet
    from doctor.deploy.outcome import summarize_deploy
    from doctor.deploy.run import DeployRequest, deploy as run_deploy

    if not address:
        raise DoctorError("the Ray cluster's address is unknown: pass --ray ADDRESS")
    log = Path(args.log_path) if args.log_path else Path(tempfile.mkdtemp(prefix="qwen-doctor-deploy-")) / "server.log"
    run_dir = log.parent / f"{log.name}.fleet"
    launcher = fleet.launcher_spec(spec, plans, address, run_dir, args.grace)
    req = DeployRequest(spec=launcher, log_path=log, model="", timeout=args.timeout, keep=False,
                        grace=args.grace + fleet.SHUTDOWN_SLACK_S, burst=args.burst, burst_tokens=args.burst_tokens,
                        facts=None, slo=args.slo, check_port=False)
    run.stage = "start"
    with progress_display() as display:
        outcome = run_deploy(req, progress=display.event, watch=display.watch)
    summary = fleet.summary_of(run_dir)
    results = list(outcome.results)
    at = next((i + 1 for i, r in enumerate(results) if r.check_id == "QD-DEPLOY-STOP"), len(results))
    results.insert(at, fleet.stop_result(summary))  # next to the launcher's own stop
    run.report.results.extend(results)
    planned = run.report.sections.get("deployment") or {}
    run.report.sections.update(outcome.sections)
    deployment = run.report.sections.setdefault("deployment", {})
    deployment.update({"nodes": planned.get("nodes"), "head_address": planned.get("head_address"),
                       "fleet_run": str(run_dir), "head_url": spec.base_url,
                       "nodes_summary": (summary or {}).get("nodes")})
    status, text = summarize_deploy(outcome)
    run.outcome(status, f"{text} ({len(plans)} node process(es) through Ray)")
    if outcome.interrupted:
        run.code = outcome.exit_code
        click.echo(f"qwen-doctor: interrupted by {outcome.interrupted}; every node's engine was stopped", err=True)

