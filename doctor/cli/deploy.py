"""`qwen-doctor deploy`: checks, then start a profile's server, exercise it, report, stop it.

Whatever ends the run (success, a failing check, a refusal, a busy port, a timeout, Ctrl-C, SIGTERM) the
report is written to every output with the run's outcome as the result QD-DEPLOY-OUTCOME; the exit code is
the results' (1 on a problem), 2 for bad input and a busy port, 130 after Ctrl-C, 143 after SIGTERM.
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from doctor.cli import options
from doctor.errors import DoctorError


def _variables(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise DoctorError(f"--set expects NAME=VALUE, got {item!r}")
        out[name] = value
    return out


@click.command()
@click.option("--profile", "profile_name", default=None, metavar="P", help="Profile name or YAML file (required "
              "unless --status or --stop).")
@click.option("--model", default=None, help="Model id or local checkpoint directory (fills the profile's model).")
@click.option("--set", "variables", multiple=True, metavar="NAME=VALUE", help="A profile variable (repeatable).")
@click.option("--flag", "flags", multiple=True, metavar="NAME[=VALUE]",
              help="Override or add a backend flag of the profile (repeatable; NAME alone for a switch), checked "
                   "against the backend's flag schema.")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to serve on (default: the profile's).")
@click.option("--host", default=None, help="Address to bind (default: the profile's).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="The backend's interpreter (default: $QWEN_DOCTOR_VLLM_PYTHON / $QWEN_DOCTOR_SGLANG_PYTHON, "
                   "else this one if it has the backend).")
@click.option("--dry-run", is_flag=True, help="Run the checks and print the command; start nothing.")
@click.option("--rehearse", is_flag=True,
              help="Serve the real architecture with random weights (--load-format dummy) from a generated "
                   "checkpoint folder in the user cache: memory, kernels, CUDA graphs, KV and API are real.")
@click.option("--ray", "ray", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
              help="Deploy a multi-node profile on a Ray cluster (ADDRESS, else RAY_ADDRESS, else auto): fleet "
                   "checks, then each node's engine through a Ray task pinned to it; the head's API is exercised.")
@click.option("--keep", is_flag=True, help="Leave the server running after a healthy deploy.")
@click.option("--force", is_flag=True, help="Start even when a check fails.")
@click.option("--timeout", type=options.FiniteFloatRange(min=1), default=900.0, show_default=True,
              help="Seconds the server may take to become healthy.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None,
              help="Server log file (default: a new file under the temp directory).")
@click.option("--burst", type=click.IntRange(1, 512), default=8, show_default=True,
              help="Parallel streams in the burst (up to 512).")
@click.option("--burst-tokens", type=click.IntRange(1, 8192), default=32, show_default=True,
              help="Output tokens per burst request.")
@click.option("--slo", "slo_items", multiple=True, metavar="NAME=VALUE",
              help="A service-level objective the burst must meet (repeatable): ttft_p99_ms=2000, tpot_p50_ms=50, "
                   "error_rate=0 (METRIC_STAT_ms with METRIC ttft|tpot|itl|e2el and STAT p50|p90|p99|mean).")
@click.option("--sweep", "sweep_text", default=None, metavar="C1,C2,...",
              help="Also measure each concurrency warm (e.g. 1,8,64,256): throughput, TTFT / TPOT percentiles, the "
                   "knee, the largest concurrency meeting every --slo; a chart in the HTML report.")
@click.option("--bench", is_flag=True,
              help="Also run `vllm bench serve` against the server (at --burst, or each --sweep concurrency).")
@click.option("--status", "show_status", is_flag=True,
              help="List the servers qwen-doctor started (alive or stale) and exit.")
@click.option("--stop", "stop_id", is_flag=False, flag_value="all", default=None, metavar="[ID]",
              help="Stop the server with this id (see --status), or every one qwen-doctor started, and exit.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report to FILE; same as --output FILE (format by extension).")
@options.report_outputs
@options.fail_on
@options.verbose
def deploy(profile_name, model, variables, flags, port, host, python, dry_run, rehearse, ray, keep, force, timeout,
           log_path, burst, burst_tokens, slo_items, sweep_text, bench, show_status, stop_id, report_path, report_out,
           fail_on, verbose) -> None:
    """Run the profile's checks, start its server, follow its log, exercise its API, stop it."""
    if show_status or stop_id is not None:
        sys.exit(_manage_runs(show_status, stop_id))
    if not profile_name:
        raise DoctorError("deploy needs --profile P (or --status / --stop)")
    from doctor.deploy.judge import parse_slo
    from doctor.deploy.load import parse_sweep

    slo = parse_slo(slo_items)
    sweep = parse_sweep(sweep_text)
    if python and not shutil.which(python):
        raise DoctorError(f"--python {python}: not an executable file, nor a command on PATH")
    if report_path:
        report_out = dataclasses.replace(report_out, outputs=(*report_out.outputs, report_path))
    from doctor.deploy import prepare
    from doctor.report.model import Report, now

    profile = prepare.load(profile_name)
    report_out = report_out.reading(profile.path, log_path)
    report_out.check()
    if log_path:
        from doctor.outfile import check_outputs

        check_outputs([log_path], [profile.path], what="server log")

    report = Report(command=f"deploy --profile {profile.name}", results=[], argv=sys.argv[1:], created_at=now())
    run = _Run(report)
    run.sweep, run.bench = sweep, bench
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        if _is_fleet(profile, ray, rehearse, keep):
            _go_fleet(run, profile, model, variables, flags, port, host, python, ray, dry_run, force, timeout,
                      log_path, burst, burst_tokens, slo)
        else:
            run.go(profile, model, variables, flags, port, host, python, dry_run, rehearse, keep, force, timeout,
                   log_path, burst, burst_tokens, slo)
    except KeyboardInterrupt as exc:
        run.interrupted(exc)
    except DoctorError as exc:
        run.error = exc
        run.outcome("fail", str(exc))
    finally:
        signal.signal(signal.SIGTERM, previous)
    report.finished_at = now()
    if run.error is None:
        report_out.write(report, fail_on=fail_on, verbose=verbose,
                         terminal=lambda safe, color: _terminal(safe, color, verbose))
    elif any(path != "-" for path in report_out.outputs):  # bad input or a busy port: the files, one line on stderr
        report_out.write(report, fail_on=fail_on, verbose=verbose, terminal=lambda safe, color: "")
    if run.stop_hint:
        click.echo(run.stop_hint, err=True)
    if run.error is not None:
        raise run.error
    sys.exit(run.exit_code(fail_on))


def _is_fleet(profile: Any, ray: str | None, rehearse: bool, keep: bool) -> bool:
    """A multi-node profile (or --ray) deploys through doctor.cli.deploy_fleet; some options do not apply there."""
    from doctor.deploy.fleet import is_multinode

    if not is_multinode(profile):
        if ray is not None:
            raise DoctorError(f"--ray deploys a multi-node profile; {profile.name} runs on one machine")
        return False
    for name, given in (("--rehearse", rehearse), ("--keep", keep)):
        if given:
            raise DoctorError(f"{name} is not available for the multi-node profile {profile.name}")
    return True


def _go_fleet(run: "_Run", profile: Any, model: str | None, variables: tuple[str, ...], flag_items: tuple[str, ...],
              port: int | None, host: str | None, python: str | None, ray: str | None, dry_run: bool, force: bool,
              timeout: float, log_path: str | None, burst: int, burst_tokens: int, slo: dict[str, float]) -> None:
    from doctor.cli import deploy_fleet
    from doctor.deploy import overrides, prepare

    flag_overrides = overrides.parse(flag_items)
    profile = overrides.apply(profile, flag_overrides)
    args = deploy_fleet.FleetArgs(prepare.overrides_of(profile, port, host, model, _variables(variables)), python,
                                  ray, dry_run, force, timeout, log_path, burst, burst_tokens, slo)
    deploy_fleet.go(run, profile, args)


def _raise_terminated(signum: int, frame: object) -> None:
    from doctor.deploy.process import Terminated

    raise Terminated(f"received signal {signum}")


class _Run:
    """One deploy invocation: fills the report as it goes, so that any ending can still be reported."""

    def __init__(self, report: Any) -> None:
        self.report = report
        self.error: DoctorError | None = None
        self.code: int | None = None
        self.refused = False
        self.stop_hint = ""
        self.stage = "checks"
        self.sweep: tuple[int, ...] = ()
        self.bench = False

    def outcome(self, status: str, summary: str, **kw: Any) -> None:
        """Put the run's outcome first among the results (after a rehearsal's notice; replacing an earlier one)."""
        from doctor.deploy.outcome import outcome_result

        results = [r for r in self.report.results if r.check_id != "QD-DEPLOY-OUTCOME"]
        at = 1 if results and results[0].check_id == "QD-DEPLOY-REHEARSAL" else 0  # a rehearsal says so first
        results.insert(at, outcome_result(status, summary, **kw))
        self.report.results = results

    def interrupted(self, exc: BaseException) -> None:
        from doctor.deploy.process import Terminated

        how = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
        self.code = 143 if how == "SIGTERM" else 130
        click.echo(f"qwen-doctor: interrupted by {how} during the {self.stage}", err=True)
        self.outcome("fail", f"interrupted by {how} during the {self.stage}; nothing was left running")

    def exit_code(self, fail_on: str) -> int:
        from doctor.report.model import exit_code

        if self.code is not None:
            return self.code
        code = exit_code(self.report.results, fail_on)
        return 1 if self.refused else code

    def go(self, profile: Any, model: str | None, variables: tuple[str, ...], flag_items: tuple[str, ...],
           port: int | None, host: str | None, python: str | None, dry_run: bool, rehearse: bool, keep: bool,
           force: bool, timeout: float, log_path: str | None, burst: int, burst_tokens: int,
           slo: dict[str, float]) -> None:
        from doctor.deploy import checkpoint, overrides, prepare
        from doctor.deploy.kv import check_options
        from doctor.deploy.preflight import backend_packages, blocking, preflight, with_packages
        from doctor.facts.collect import collect
        from doctor.flags.bridge import find_backend_python
        from doctor.redact import redact_text
        from doctor.report.model import summarize

        report = self.report
        flag_overrides = overrides.parse(flag_items)
        profile = overrides.apply(profile, flag_overrides)
        spec = prepare.render(profile, port=port, host=host, model=model, variables=_variables(variables))
        rehearsal = None
        if rehearse:
            from doctor.rehearse import rehearse_spec

            spec, rehearsal = rehearse_spec(spec, model or prepare.model_of(spec), build=not dry_run)
            report.results.append(rehearsal.result())
            report.sections["rehearsal"] = rehearsal.section()
        python = python or find_backend_python(spec.backend)
        spec = prepare.with_interpreter(spec, python)
        served_model = prepare.model_of(spec)
        _say("checking this machine and the profile ...")
        facts = collect(timeout_s=10.0)
        if python:
            facts = with_packages(facts, backend_packages(python))
        report.facts_summary = summarize(facts, "live")
        overrides.validate(flag_overrides, spec.backend, facts.package_version(spec.backend))
        device = getattr(getattr(profile, "hardware", None), "device", "cuda")
        results = preflight(facts, spec.backend, profile, served_model, device=device, options=check_options(spec))
        results.append(prepare.flag_check(spec, facts.package_version(spec.backend)))
        results.append(checkpoint.check(spec, served_model))
        report.results.extend(results)
        _say(_verdict_line(results))
        if dry_run:
            shell = redact_text(spec.shell())
            report.sections["deployment"] = {"profile": profile.name, "command": shell, "dry_run": True}
            click.echo(f"would run:\n  {shell}", err=True)
            if rehearsal:
                click.echo(f"rehearsal checkpoint folder: {rehearsal.folder}", err=True)
            failing = blocking(results)
            self.outcome("fail" if failing else "skip",
                         (f"dry run: checks {_ids(failing)} fail, so deploy would refuse to start" if failing
                          else "dry run: the checks pass; nothing was started"))
            return
        if blocking(results) and not force:
            self.refused = True
            ids = _ids(blocking(results))
            click.echo(f"refusing to start: failing checks {ids} (fix them, or --force)", err=True)
            self.outcome("fail", f"refused to start: failing checks {ids} (fix them, or --force)")
            return
        if not python and spec.argv[0] == "python":
            from doctor.flags.bridge import python_hint

            raise DoctorError(f"no python with {spec.backend} found: pass --python PATH ({python_hint(spec.backend)})")
        self._start(spec, served_model, facts, log_path, timeout, keep, burst, burst_tokens, slo)

    def _start(self, spec: Any, served_model: str, facts: Any, log_path: str | None, timeout: float, keep: bool,
               burst: int, burst_tokens: int, slo: dict[str, float]) -> None:
        from doctor.cli.progress import progress_display
        from doctor.deploy.outcome import summarize_deploy
        from doctor.deploy.ports import PortInUse
        from doctor.deploy.run import DeployRequest, deploy as run_deploy

        log = Path(log_path) if log_path else Path(tempfile.mkdtemp(prefix="qwen-doctor-deploy-")) / "server.log"
        req = DeployRequest(spec=spec, log_path=log, model=served_model, timeout=timeout, keep=keep,
                            burst=burst, burst_tokens=burst_tokens, facts=facts, slo=slo, sweep=self.sweep,
                            bench=self.bench)
        self.stage = "start"
        try:
            with progress_display() as display:
                outcome = run_deploy(req, progress=display.event, watch=display.watch)
        except PortInUse as exc:
            self.error = exc
            self.outcome("fail", f"not started: {exc}")
            return
        self.report.results.extend(outcome.results)
        self.report.sections.update(outcome.sections)
        status, summary = summarize_deploy(outcome)
        self.outcome(status, summary)
        if outcome.interrupted:
            self.code = outcome.exit_code
            click.echo(f"qwen-doctor: interrupted by {outcome.interrupted}; the server was stopped", err=True)
        if outcome.kept_pid:
            self.stop_hint = (f"server left running: id {outcome.kept_id}, pid {outcome.kept_pid}, log {log}\n"
                              f"  stop it with: qwen-doctor deploy --stop {outcome.kept_id}")


def _ids(results: list[Any]) -> str:
    return ", ".join(r.check_id for r in results)


def _verdict_line(results: list[Any]) -> str:
    """The preflight verdict, printed before the long start."""
    from doctor.results import Status

    failing = [r.check_id for r in results if r.status in (Status.FAIL, Status.ERROR)]
    warned = [r.check_id for r in results if r.status == Status.WARN]
    ok = sum(1 for r in results if r.status == Status.OK)
    parts = [f"{ok} ok"]
    if warned:
        parts.append(f"{len(warned)} warn ({', '.join(warned)})")
    if failing:
        parts.append(f"{len(failing)} fail ({', '.join(failing)})")
    return "preflight: " + ", ".join(parts)


def _say(message: str) -> None:
    from doctor.redact import redact_text

    click.echo(f"  {redact_text(message)}", err=True)


def _manage_runs(show_status: bool, stop_id: str | None) -> int:
    """`--status` and `--stop [ID]`: list or stop the servers qwen-doctor started."""
    from doctor.deploy import runs

    records = runs.load_all()
    if show_status:
        if not records:
            click.echo(f"no server started by qwen-doctor is recorded ({runs.runs_dir()})")
        for r in records:
            click.echo(runs.describe(r))
    if stop_id is not None:
        targets = records if stop_id == "all" else [runs.find(stop_id)]
        if not targets:
            click.echo("nothing to stop", err=True)
        for r in targets:
            click.echo(runs.stop(r), err=True)
    return 0


def _terminal(report, color: bool, verbose: bool) -> str:
    """The generic report text (checks, exercise results, percentiles, remedies), then the deployment block."""
    from doctor.deploy.text import render_deployment
    from doctor.report.text import render_text

    return render_text(report, verbose=verbose, color=color) + render_deployment(report.sections)
