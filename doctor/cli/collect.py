"""`qwen-doctor collect`: facts only, for offline analysis elsewhere."""

from __future__ import annotations

from pathlib import Path

import click

from doctor.cli import options
from doctor.errors import DoctorError


@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the bundle here (default: stdout).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds each probe may take before it is recorded as timed out.")
@click.option("--deep", is_flag=True, help="Also import torch in a subprocess for its exact arch list and CUDA state.")
@options.fleet_ray
@options.fleet_spark
@options.hf
@options.node_timeout
@click.option("--model", default=None, help="Model whose Hugging Face access and cache --hf probes.")
def collect(output: str | None, timeout: float, deep: bool, ray: str | None, spark: str | None, hf: bool,
            node_timeout: float, model: str | None) -> None:
    """Collect the facts snapshot (GPUs, driver, packages, host, env) as JSON; secrets are redacted."""
    from doctor.facts.collect import builtin_probes, collect as run_collect

    probes = builtin_probes()
    if deep:
        from doctor.facts.probes import torch_runtime

        probes["torch_runtime"] = torch_runtime.probe
    facts = run_collect(probes, timeout_s=timeout)
    from doctor.fleet.extend import extend

    extend(facts.data, ray=ray, spark=spark, hf=hf, model=model, node_timeout_s=node_timeout, probe_timeout_s=timeout)
    if output is None:
        click.echo(facts.to_json())
        return
    path = Path(output)
    if not path.parent.exists():
        raise DoctorError(f"cannot write {path}: directory {path.parent} does not exist")
    try:
        facts.save(path)
    except OSError as exc:
        raise DoctorError(f"cannot write {path}: {exc.strerror or exc}") from None
    click.echo(f"wrote {path} ({len(facts.gpus)} GPU(s), {facts.data['collect_seconds']} s)", err=True)
