"""`qwen-doctor collect`: facts only, for offline analysis elsewhere."""

from __future__ import annotations

import click

from doctor import shellquote
from doctor.cli import options


@click.command()
@click.option("-o", "--output", default=None, metavar="PATH",
              help="Write the bundle here (a regular file or a new path; default or '-': stdout).")
@click.option("--timeout", type=options.FiniteFloatRange(min=0.1), default=10.0, show_default=True,
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
    from doctor.outfile import check_outputs, write_file

    if output is not None and output != "-":
        check_outputs([output], what="bundle")
    probes = builtin_probes()
    if deep:
        from doctor.facts.probes import torch_runtime

        probes["torch_runtime"] = torch_runtime.probe
    facts = run_collect(probes, timeout_s=timeout)
    from doctor.fleet.extend import extend

    extend(facts.data, ray=ray, spark=spark, hf=hf, model=model, node_timeout_s=node_timeout, probe_timeout_s=timeout)
    if output is None or output == "-":
        click.echo(facts.to_json())
        return
    replaced = write_file(output, facts.to_json() + "\n", what="bundle")
    click.echo(f"wrote {shellquote.shown(output)} ({len(facts.gpus)} GPU(s), {facts.data['collect_seconds']} s"
               f"{', replaced the existing file' if replaced else ''})", err=True)
