"""Reusable click options shared by several commands."""

from __future__ import annotations

import click

backend = click.option("--backend", type=click.Choice(["vllm", "sglang"]), default=None,
                       help="The serving backend to check for (default: every installed one).")
from_bundle = click.option("--from", "bundle", type=click.Path(dir_okay=False), default=None,
                           help="Check a facts bundle written by `qwen-doctor collect` instead of this machine.")
output_format = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="Output format.")
fail_on = click.option("--fail-on", type=click.Choice(["warn", "fail"]), default="fail", show_default=True,
                       help="Lowest status that makes the exit code 1.")
verbose = click.option("-v", "--verbose", is_flag=True, help="Show details of passing checks and tracebacks.")

fleet_ray = click.option("--ray", "ray", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
                         help="Check every node of a Ray cluster (ADDRESS, else RAY_ADDRESS, else auto; 'local' "
                              "starts a one-node cluster).")
fleet_spark = click.option("--spark", "spark", is_flag=False, flag_value="", default=None, metavar="[MASTER]",
                           help="Check every executor through a Spark barrier stage (MASTER, else Spark's default).")
hf = click.option("--hf", is_flag=True, help="Probe Hugging Face (HF_ENDPOINT mirror and default, the model's API "
                                             "and download URL) and the local cache's completeness.")
node_timeout = click.option("--node-timeout", type=click.FloatRange(min=1), default=60.0, show_default=True,
                            help="Seconds every node gets to answer under --ray / --spark.")


def no_fleet_with_bundle(ray: str | None, spark: str | None, hf: bool) -> None:
    """--ray/--spark/--hf collect live facts, which a saved bundle cannot add to."""
    from doctor.errors import DoctorError

    if ray is not None or spark is not None or hf:
        raise DoctorError("--ray, --spark and --hf collect live facts; with --from, collect them into the bundle "
                          "(`qwen-doctor collect --ray ... -o bundle.json`)")
