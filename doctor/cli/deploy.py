"""`qwen-doctor deploy`: checks, then start a profile's server, exercise it, report, stop it.

Whatever ends the run (success, a failing check, a refusal, a busy port, a timeout, Ctrl-C, SIGTERM) the
report is written to every output with the run's outcome as the result QD-DEPLOY-OUTCOME; the exit code is
the results' (1 on a problem), 2 for bad input and a busy port, 130 after Ctrl-C, 143 after SIGTERM. Bad input
(an unreadable --flag / --set, a profile that does not render, an unreachable cluster) writes nothing: its one
line is on stderr and every -o / --report file is left as it was.
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
import sys

import click

from doctor.cli import options
from doctor.cli.progress import progress_display
from doctor.errors import DoctorError


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
              help="Server log file, a new one: an existing file is refused, never overwritten (default: a new file "
                   "under the temp directory).")
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
    from doctor.deploy import overrides, prepare
    from doctor.session import session
    from doctor.session.request import Request
    from doctor.deploy.judge import parse_slo
    from doctor.deploy.load import parse_sweep
    from doctor.report.model import Report, now

    slo = parse_slo(slo_items)
    sweep = parse_sweep(sweep_text)
    if python and not shutil.which(python):
        raise DoctorError(f"--python {python}: not an executable file, nor a command on PATH")
    if report_path:
        report_out = dataclasses.replace(report_out, outputs=(*report_out.outputs, report_path))
    profile = prepare.load(profile_name)
    report_out = report_out.reading(profile.path, log_path)
    report_out.check()
    if log_path:
        from doctor.outfile import check_new

        check_new(log_path, [profile.path], what="server log")
    report = Report(command=f"deploy --profile {profile.name}", results=[], argv=sys.argv[1:], created_at=now())
    run = session.Session(report, on_event=lambda text: click.echo(text, err=True))
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        flag_overrides = overrides.parse(flags)
        request = Request(overrides.apply(profile, flag_overrides), model, overrides.parse_sets(variables),
                          flag_overrides, port, host, python, dry_run, rehearse, ray, keep, force, timeout,
                          log_path, burst, burst_tokens, slo, sweep, bench)
        plan = session.prepare(request, run)
        if plan.ready:
            with progress_display() as display:
                session.run(plan, run, progress=display.event, watch=display.watch)
    except KeyboardInterrupt as exc:
        run.interrupted(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    report.finished_at = now()
    if run.error is None:
        report_out.write(report, fail_on=fail_on, verbose=verbose,
                         terminal=lambda safe, color: _terminal(safe, color, verbose))
    elif any(path != "-" for path in report_out.outputs):  # a busy port: the files, one line on stderr
        report_out.write(report, fail_on=fail_on, verbose=verbose, terminal=lambda safe, color: "")
    if run.stop_hint:
        click.echo(run.stop_hint, err=True)
    if run.error is not None:
        raise run.error
    sys.exit(run.exit_code(fail_on))


def _raise_terminated(signum: int, frame: object) -> None:
    from doctor.deploy.process import Terminated

    raise Terminated(f"received signal {signum}")


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
