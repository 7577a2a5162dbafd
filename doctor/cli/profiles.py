"""`qwen-doctor profiles list|show|check`: the known-good profiles."""

from __future__ import annotations

import click

from doctor.cli import options
from doctor.errors import DoctorError


def _overrides(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DoctorError(f"--set expects KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


@click.group()
def profiles() -> None:
    """Known-good deployment profiles, rendered to the exact command they run."""


@profiles.command("list")
def list_cmd() -> None:
    """Every shipped profile with backend, model and GPUs."""
    from profiles import list_profiles

    for p in list_profiles():
        gpus = "CPU" if p.hardware.device == "cpu" else f"{p.hardware.gpu_count} GPU >= {p.hardware.min_gpu_memory_gib:g} GiB"
        click.echo(f"{p.name:20} {p.backend:7} {p.model:28} {gpus}")


@profiles.command("show")
@click.argument("name")
@click.option("--render", is_flag=True, help="Print the exact environment and command line, one flag per line.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override model, host, port or a profile variable.")
@click.option("--validate", "method", type=click.Choice(["auto", "schema", "real", "none"]), default="schema",
              show_default=True, help="With --render: judge the flags with the flag schema of the installed (or newest) "
              "version, the backend's real parser (slow: imports it in a subprocess), auto (real if installed), or not.")
@click.option("--backend-version", default=None, callback=options.version_value,
              help="Schema version to judge against (default: installed, else newest).")
def show(name: str, render: bool, sets: tuple[str, ...], method: str, backend_version: str | None) -> None:
    """Describe profile NAME (a shipped name or a YAML path)."""
    from profiles import load_profile

    p = load_profile(name)
    overrides = _overrides(sets)
    if not render:
        click.echo(f"{p.name}: {p.description}")
        click.echo(f"backend: {p.backend} {p.backend_version}   model: {p.model}")
        hw = p.hardware
        nodes = f"{p.nodes} nodes, each " if p.nodes > 1 else ""
        click.echo(f"hardware: {nodes}{hw.gpu_count} x GPU >= {hw.min_gpu_memory_gib:g} GiB, "
                   f"cc >= {hw.min_compute_capability}, NVLink {hw.nvlink}")
        for source in p.sources:
            click.echo(f"source: {source}")
        return
    cmd = p.render(overrides)
    if p.nodes > 1:
        from profiles.multinode import render_nodes, render_text

        click.echo(render_text(render_nodes(p, overrides)))
    else:
        click.echo(cmd.shell())
    if backend_version and backend_version not in p.backend_version:
        click.echo(f"# warning: {p.backend} {backend_version} is outside the profile's range {p.backend_version}", err=True)
    if method != "none":
        from doctor.flags import validate

        report = validate(cmd.backend_args, p.backend, backend_version, method="schema" if method == "schema" else method)
        for issue in report.issues:
            click.echo(f"# {report.method}: {issue.message}", err=True)
        click.echo(f"# flags checked with the {report.method}: {'ok' if report.ok else 'REJECTED'}", err=True)
        if not report.ok:
            raise SystemExit(1)


@profiles.command("check")
@click.argument("name")
@click.option("--from", "bundle", type=click.Path(dir_okay=False), help="Judge a collected facts bundle instead of this machine.")
def check_cmd(name: str, bundle: str | None) -> None:
    """Profile NAME's hardware requirements against this machine (or a bundle)."""
    from pathlib import Path

    from checks.profile import backend_version, requirements
    from doctor.context import CheckContext
    from doctor.facts.model import Facts
    from doctor.results import Status
    from profiles import load_profile

    p = load_profile(name)
    if bundle:
        facts = Facts.load(Path(bundle))
    else:
        from doctor.facts.collect import builtin_probes, collect

        facts = collect(builtin_probes(), timeout_s=10.0)
    ctx = CheckContext(facts=facts, backend=p.backend, profile=p)
    outcomes = [backend_version(ctx), *requirements(ctx)]
    where = f"bundle {bundle}" if bundle else "this machine"
    bad = [o for o in outcomes if o.status in (Status.FAIL, Status.ERROR)]
    unchecked = sum(o.status == Status.SKIP for o in outcomes)
    verdict = f"{len(bad)} requirement(s) not met" if bad else "no requirement fails"
    verdict += f", {unchecked} could not be checked" if unchecked else ""
    click.echo(f"profile {p.name} ({p.backend}) on {where}: {verdict}")
    for outcome in outcomes:
        click.echo(f"{outcome.status.symbol} {outcome.summary}")
        for fix in getattr(outcome, "fix", None) or []:
            click.echo(f"    fix: {fix}")
    if bad:
        raise SystemExit(1)
