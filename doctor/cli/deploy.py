"""`qwen-doctor deploy`: checks, then start a profile's server, exercise it, report, stop it."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

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
@click.option("--profile", "profile_name", required=True, metavar="P", help="Profile name or YAML file.")
@click.option("--model", default=None, help="Model id or local checkpoint directory (fills the profile's model).")
@click.option("--set", "variables", multiple=True, metavar="NAME=VALUE", help="A profile variable (repeatable).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to serve on (default: the profile's).")
@click.option("--host", default=None, help="Address to bind (default: the profile's).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="The backend's interpreter (default: $QWEN_DOCTOR_VLLM_PYTHON / $QWEN_DOCTOR_SGLANG_PYTHON, "
                   "else this one if it has the backend).")
@click.option("--dry-run", is_flag=True, help="Run the checks and print the command; start nothing.")
@click.option("--rehearse", is_flag=True,
              help="Serve the real architecture with random weights (--load-format dummy) from a generated "
                   "checkpoint folder in the user cache: memory, kernels, CUDA graphs, KV and API are real.")
@click.option("--keep", is_flag=True, help="Leave the server running after a healthy deploy.")
@click.option("--force", is_flag=True, help="Start even when a check fails.")
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True,
              help="Seconds the server may take to become healthy.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None,
              help="Server log file (default: a new file under the temp directory).")
@click.option("--burst", type=click.IntRange(1, 512), default=8, show_default=True, help="Parallel streams in the burst.")
@click.option("--burst-tokens", type=click.IntRange(1, 8192), default=32, show_default=True,
              help="Output tokens per burst request.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report to FILE; same as --output FILE (format by extension).")
@options.report_outputs
@options.fail_on
@options.verbose
def deploy(profile_name, model, variables, port, host, python, dry_run, rehearse, keep, force, timeout, log_path, burst,
           burst_tokens, report_path, report_out, fail_on, verbose) -> None:
    """Run the profile's checks, start its server, follow its log, exercise its API, stop it."""
    from doctor.deploy import prepare
    from doctor.deploy.preflight import backend_packages, blocking, preflight, with_packages
    from doctor.facts.collect import collect
    from doctor.flags.bridge import find_backend_python
    from doctor.redact import redact_text
    from doctor.report.model import Report, exit_code, now, summarize

    started = now()
    if report_path:
        report_out = dataclasses.replace(report_out, outputs=(*report_out.outputs, report_path))
    profile = prepare.load(profile_name)
    report_out = report_out.reading(profile.path, log_path)
    report_out.check()
    if log_path:
        from doctor.outfile import check_outputs

        check_outputs([log_path], [profile.path], what="server log")
    spec = prepare.render(profile, port=port, host=host, model=model, variables=_variables(variables))
    rehearsal = None
    if rehearse:
        from doctor.rehearse import rehearse_spec

        spec, rehearsal = rehearse_spec(spec, model or prepare.model_of(spec), build=not dry_run)
    python = python or find_backend_python(spec.backend)
    spec = prepare.with_interpreter(spec, python)
    served_model = prepare.model_of(spec)
    facts = collect(timeout_s=10.0)
    if python:
        facts = with_packages(facts, backend_packages(python))
    device = getattr(getattr(profile, "hardware", None), "device", "cuda")
    from doctor.deploy.kv import check_options

    results = preflight(facts, spec.backend, profile, served_model, device=device, options=check_options(spec))
    results.append(prepare.flag_check(spec, facts.package_version(spec.backend)))
    report = Report(command=f"deploy --profile {profile.name}", results=results,
                    facts_summary=summarize(facts, "live"), argv=sys.argv[1:], created_at=started)
    if rehearsal:
        report.results.insert(0, rehearsal.result())
        report.sections["rehearsal"] = rehearsal.section()
    stop_hint = ""
    if dry_run:
        shell = redact_text(spec.shell())
        report.sections["deployment"] = {"profile": profile.name, "command": shell, "dry_run": True}
        click.echo(f"would run:\n  {shell}", err=True)
        if rehearsal:
            click.echo(f"rehearsal checkpoint folder: {rehearsal.folder}", err=True)
    elif blocking(results) and not force:
        ids = ", ".join(r.check_id for r in blocking(results))
        click.echo(f"refusing to start: failing checks {ids} (fix them, or --force)", err=True)
    else:
        if not python and spec.argv[0] == "python":
            raise DoctorError(f"no python with {spec.backend} found: pass --python PATH or set "
                              f"QWEN_DOCTOR_{spec.backend.upper()}_PYTHON")
        from doctor.deploy.process import Terminated
        from doctor.deploy.run import DeployRequest, deploy as run_deploy

        log = Path(log_path) if log_path else Path(tempfile.mkdtemp(prefix="qwen-doctor-deploy-")) / "server.log"
        req = DeployRequest(spec=spec, log_path=log, model=served_model, timeout=timeout, keep=keep,
                            burst=burst, burst_tokens=burst_tokens, facts=facts)
        try:
            outcome = run_deploy(req, progress=_progress)
        except Terminated:
            click.echo("qwen-doctor: terminated; the server was stopped", err=True)
            sys.exit(143)
        report.results.extend(outcome.results)
        report.sections.update(outcome.sections)
        if outcome.kept_pid:
            stop_hint = (f"server left running: pid {outcome.kept_pid}, log {log}\n"
                         f"  stop it with: kill -TERM -- -{outcome.kept_pid}")
    report.finished_at = now()
    report_out.write(report, fail_on=fail_on, verbose=verbose,
                     terminal=lambda safe, color: _terminal(safe, color, verbose))
    if stop_hint:
        click.echo(stop_hint, err=True)
    code = exit_code(report.results, fail_on)
    if not dry_run and blocking(results) and not force:
        code = 1
    sys.exit(code)


def _progress(message: str) -> None:
    from doctor.redact import redact_text

    click.echo(f"  {redact_text(message)}", err=True)


def _terminal(report, color: bool, verbose: bool) -> str:
    """The generic report text (checks, exercise results, percentiles, remedies), then the deployment block."""
    from doctor.deploy.text import render_deployment
    from doctor.report.text import render_text

    return render_text(report, verbose=verbose, color=color) + render_deployment(report.sections)
