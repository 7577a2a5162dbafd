"""`qwen-doctor profiles list|show|check`: the known-good profiles."""

from __future__ import annotations

from pathlib import Path

import click

from doctor.cli import options
from doctor.deploy.overrides import parse_sets
from doctor import shellquote
from doctor.errors import DoctorError


@click.group()
def profiles() -> None:
    """Known-good deployment profiles, rendered to the exact command they run."""


@profiles.command("list")
def list_cmd() -> None:
    """Every shipped profile with backend, model and GPUs."""
    from profiles import list_profiles

    for p in list_profiles():
        gpus = "CPU" if p.hardware.device == "cpu" else f"{p.hardware.gpu_count} GPU >= {p.hardware.min_gpu_memory_gib:g} GiB"
        click.echo(f"{p.name:36} {p.backend:7} {p.model:32} {gpus}")


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
    overrides = parse_sets(sets, "KEY=VALUE")
    if not render:
        click.echo(f"{p.name}: {p.description}")
        click.echo(f"backend: {p.backend} {p.backend_version}   model: {p.model}")
        hw = p.hardware
        nodes = f"{p.nodes} nodes, each " if p.nodes > 1 else ""
        click.echo(f"hardware: {nodes}{hw.gpu_count} x {hw.gpu or 'GPU'} >= {hw.min_gpu_memory_gib:g} GiB, "
                   f"cc >= {hw.min_compute_capability}, NVLink {hw.nvlink}")
        click.echo(f"provenance: {_provenance(p)}")
        click.echo(f"planned: {_planned(p)}")
        for source in p.sources:
            click.echo(f"source: {source}")
        return
    from doctor.redact import redact_text

    cmd = p.render(overrides)
    if p.nodes > 1:
        from profiles.multinode import render_nodes, render_text

        click.echo(redact_text(render_text(render_nodes(p, overrides))))
    else:
        click.echo(redact_text(cmd.shell()))
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


def _provenance(p) -> str:
    """Where the profile came from: the imported recipe entry, else hand-written from its sources."""
    if not p.provenance:
        return f"hand-written from the {len(p.sources)} source(s) below"
    prov = p.provenance
    return (f"imported from {prov.get('repository')} {prov.get('file')} at commit {prov.get('commit')} "
            f"({prov.get('date')}): {prov.get('entry')}")


def _planned(p) -> str:
    """The plan of the profile's flags on its own GPUs: KV tokens and the fit, or why it cannot be planned."""
    from doctor.profile_plan import plan_profile, profile_gpus

    gpus = profile_gpus(p)
    if gpus is None:
        return "not planned (a CPU profile)" if p.hardware.device == "cpu" else "not planned (no catalogue GPU)"
    try:
        result = plan_profile(p)
    except DoctorError as exc:
        return f"cannot be planned on {gpus}: {exc}"
    verdict = "fits" if result.fits else f"DOES NOT FIT: {result.problems[0]}"
    return (f"{result.kv_tokens:,} KV tokens on {gpus} ({p.backend}, context {result.max_model_len:,}, "
            f"max concurrency {result.max_concurrency:.1f}); {verdict}")


@profiles.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output-dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the profiles here as NAME.yaml (default: only list what would be written).")
@click.option("--hardware", "hardware", multiple=True, metavar="ID[:GPUS]",
              help="Also import for this recipes taxonomy hardware profile (e.g. h100:2, rtx_5090).")
@click.option("--feature", "features", multiple=True, metavar="NAME",
              help="Also import each entry with this opt-in recipe feature on (e.g. spec_decoding).")
@click.option("--repository", default=None, help="Repository to cite for files outside a snapshot folder.")
def import_cmd(paths: tuple[Path, ...], folder: Path | None, hardware: tuple[str, ...], features: tuple[str, ...],
               repository: str | None) -> None:
    """Import profiles from vllm-project/recipes YAML (model files with taxonomy.yaml and strategies/*.yaml)
    and sgl-cookbook model files; each is validated against the flag schemas of its release range and planned
    on its GPUs. Entries that cannot be imported are listed with the reason."""
    from doctor.recipes.importer import import_profiles, write_profiles

    result = import_profiles(list(paths), list(hardware), list(features), repository)
    if folder is not None:
        for path in write_profiles(result, folder):
            click.echo(f"wrote {shellquote.shown(str(path))}")
    else:
        for name in sorted(result.profiles):
            click.echo(f"would write {name}.yaml")
    for skipped in result.skipped:
        click.echo(f"skipped {skipped.entry}: {skipped.why}")
    click.echo(f"{len(result.profiles)} profile(s), {len(result.skipped)} entr(ies) skipped", err=True)


@profiles.command("suggest")
@click.option("--gpus", default=None, metavar="NxGPU", help="Judge for these GPUs (e.g. 1xRTX5090, 8xH100) "
              "instead of this machine.")
@click.option("--from", "bundle", type=click.Path(dir_okay=False), default=None,
              help="Judge the machine a collected facts bundle describes.")
@click.option("--backend", type=click.Choice(["vllm", "sglang"]), default=None, help="Only this engine's profiles.")
@click.option("--all", "show_all", is_flag=True, help="List every rejected profile (default: the first 10).")
def suggest_cmd(gpus: str | None, bundle: str | None, backend: str | None, show_all: bool) -> None:
    """Rank the profiles that fit the machine (GPU model and count, memory, compute capability, installed
    engine), best first, and say why each other one does not fit. Exit 1 when none fits."""
    from doctor.suggest import machine_of, suggest
    from profiles import list_profiles

    machine = machine_of(gpus, bundle)
    verdicts = suggest(machine, list_profiles(), backend)
    fitting = [v for v in verdicts if v.fits]
    rejected = [v for v in verdicts if not v.fits]
    click.echo(f"{len(fitting)} profile(s) fit {machine}, best first:" if fitting else f"no profile fits {machine}")
    for place, verdict in enumerate(fitting, 1):
        p = verdict.profile
        strengths = f"  ({', '.join(verdict.strengths)})" if verdict.strengths else ""
        click.echo(f"{place:3}. {p.name:40} {p.backend:7} {p.model:32} {verdict.kv_tokens:>12,} KV tokens{strengths}")
    click.echo(f"rejected ({len(rejected)}):")
    for verdict in rejected if show_all else rejected[:10]:
        click.echo(f"  ✗ {verdict.profile.name}: {'; '.join(verdict.reasons)}")
    if len(rejected) > 10 and not show_all:
        click.echo(f"  ... {len(rejected) - 10} more (--all)")
    if not fitting:
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
