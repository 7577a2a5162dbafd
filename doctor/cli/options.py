"""Reusable click options shared by several commands."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import click

from doctor.report.outputs import FORMATS as REPORT_FORMATS
from doctor.textsafe import COLOR_CHOICES

class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses nan and +-inf, which a range comparison lets through."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number



class ContextLength(click.ParamType):
    """A --max-model-len value as vLLM reads it (human_readable_int_or_auto): 32768, 32k, 32K, or auto / -1 (fit
    the length to the KV cache)."""

    name = "length"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from doctor.flags.values import human_readable_int_or_auto

        if isinstance(value, int):
            return value
        try:
            return human_readable_int_or_auto(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a length (an integer such as 32768 or 32k, or auto).", param, ctx)


def version_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Callback of a --backend-version option: a version number such as 0.26.0, refused before anything runs."""
    if value is None:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        Version(value)
    except InvalidVersion:
        raise click.BadParameter(f"{value!r} is not a version number (e.g. 0.26.0).", ctx, param) from None
    return value


backend = click.option("--backend", type=click.Choice(["vllm", "sglang"]), default=None,
                       help="The serving backend to check for (default: every installed one).")
from_bundle = click.option("--from", "bundle", type=click.Path(dir_okay=False), default=None,
                           help="Check a facts bundle written by `qwen-doctor collect` (plain or gzip), or a vLLM "
                                "collect_env / SGLang check_env output saved to a file, instead of this machine.")
fail_on = click.option("--fail-on", type=click.Choice(["warn", "fail"]), default="fail", show_default=True,
                       help="Lowest status that makes the exit code 1.")
verbose = click.option("-v", "--verbose", is_flag=True, help="Show details of passing checks and tracebacks.")


@dataclass(frozen=True)
class ReportOutputs:
    """What the user asked for with --format / --output / --redact-hosts; `write` renders a report accordingly.

    `inputs` are the files the command reads (bundle, profile, logs, config.json): no output may be one of them.
    """

    fmt: str | None
    outputs: tuple[str, ...]
    redact_hosts: bool
    inputs: tuple[str, ...] = ()
    color: str = "auto"

    def reading(self, *inputs: Any) -> "ReportOutputs":
        """The same request, knowing more input files of the command (None and '-' are ignored)."""
        more = tuple(str(i) for i in inputs if i is not None and str(i) not in ("", "-"))
        return dataclasses.replace(self, inputs=(*self.inputs, *more))

    def check(self) -> None:
        """Fail now (DoctorError) on a bad format or an unsafe path, before a long run."""
        from doctor.report.outputs import check_targets

        check_targets(self.outputs, self.fmt, self.inputs)

    def write(self, report: Any, fail_on: str = "fail", verbose: bool = False,
              terminal: Callable[[Any, bool], str] | None = None) -> list[str]:
        """Render and write; `terminal(redacted_report, color)` may replace the generic text on stdout."""
        from doctor.report.outputs import write_outputs

        return write_outputs(report, self.outputs, self.fmt, redact_hosts=self.redact_hosts, fail_on=fail_on,
                             verbose=verbose, terminal=terminal, inputs=self.inputs, color=self.color)


color_option = click.option(
    "--color", "color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
    help="Colour the terminal text: auto colours a terminal unless NO_COLOR is set.")


def report_outputs(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --format, -o/--output (repeatable, format by extension) and --redact-hosts; the command receives
    them as one `report_out: ReportOutputs` argument and ends with `report_out.write(report)`."""

    @functools.wraps(func)
    def wrapper(*args: Any, report_fmt: str | None, report_outputs: tuple[str, ...], redact_hosts: bool,
                color: str, **kwargs: Any) -> Any:
        return func(*args, report_out=ReportOutputs(report_fmt, report_outputs, redact_hosts, color=color),
                    **kwargs)

    for option in reversed([
        click.option("--format", "report_fmt", type=click.Choice(REPORT_FORMATS), default=None,
                     help="Report format for stdout and for --output files without a known extension "
                          "[default: text]."),
        click.option("-o", "--output", "report_outputs", multiple=True, metavar="PATH",
                     help="Write the report here; repeatable; the format follows the extension "
                          "(.html .xml=JUnit .json .md .txt; '-' is stdout)."),
        click.option("--redact-hosts", is_flag=True,
                     help="Also replace hostnames and IP addresses in the report (secrets are always redacted)."),
        color_option,
    ]):
        wrapper = option(wrapper)
    return wrapper


fleet_ray = click.option("--ray", "ray", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
                         help="Check every node of a Ray cluster (ADDRESS, else RAY_ADDRESS, else auto; 'local' "
                              "starts a one-node cluster).")
fleet_spark = click.option("--spark", "spark", is_flag=False, flag_value="", default=None, metavar="[MASTER]",
                           help="Check every executor through a Spark barrier stage (MASTER, else Spark's default).")
hf = click.option("--hf", is_flag=True, help="Probe Hugging Face (HF_ENDPOINT mirror and default, the model's API "
                                             "and download URL) and the local cache's completeness.")
node_timeout = click.option("--node-timeout", type=FiniteFloatRange(min=1), default=60.0, show_default=True,
                            help="Deadline of the whole --ray / --spark run in seconds: connecting, scheduling and "
                                 "every node's collection end within it (nodes that have not answered are reported "
                                 "as timed out); the runner is killed at the deadline and with this command.")


def no_fleet_with_bundle(ray: str | None, spark: str | None, hf: bool) -> None:
    """--ray/--spark/--hf collect live facts, which a saved bundle cannot add to."""
    from doctor.errors import DoctorError

    if ray is not None or spark is not None or hf:
        raise DoctorError("--ray, --spark and --hf collect live facts; with --from, collect them into the bundle "
                          "(`qwen-doctor collect --ray ... -o bundle.json`)")
