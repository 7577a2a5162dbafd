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
