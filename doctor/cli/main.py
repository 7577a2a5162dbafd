"""The `qwen-doctor` command group. Subcommands load lazily so that start-up stays fast."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from doctor import __version__

# Command name -> "module:attribute". Each command lives in its own module under doctor/cli/.
COMMANDS: dict[str, str] = {
    "check": "doctor.cli.check:check",
    "collect": "doctor.cli.collect:collect",
    "deploy": "doctor.cli.deploy:deploy",
    "lint": "doctor.cli.lint:lint",
    "profiles": "doctor.cli.profiles:profiles",
    "explain": "doctor.cli.explain:explain",
    "plan": "doctor.cli.plan:plan",
    "probe": "doctor.cli.probe:probe",
    "remedies": "doctor.cli.remedies:remedies",
}

DEBUG_ENV = "QWEN_DOCTOR_DEBUG"


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (or listed in --help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a reader that closed stdout (`| head -1`) ends it quietly with exit 0 (click itself
        would exit 1, the code of a failed check)."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _quiet_stdout()
            raise click.exceptions.Exit(0) from None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that nothing more, not even the flush at exit, fails on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="qwen-doctor")
def cli() -> None:
    """Diagnose, plan, deploy and report Qwen3.5-35B-A3B on NVIDIA GPUs with vLLM and SGLang.

    Exit codes: 0 all good, 1 a check failed (or warned with --fail-on warn), 2 usage or bad input.
    """


def _usage_line(exc: click.ClickException) -> str:
    """Click's usage error as the one line the CLI promises, pointing at the command's --help."""
    text = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    return f"{text} (see '{ctx.command_path} --help')" if ctx is not None else text


def _one_line(message: str) -> str:
    """An error message as the one line the CLI promises (a parser's multi-line message joined)."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def main(argv: list[str] | None = None) -> Any:
    """Entry point: every DoctorError is one line on stderr with exit 2, never a traceback; everything on
    stderr is redacted (`doctor.cli.stderr`)."""
    from doctor.cli import stderr

    stream = stderr.install(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    finally:
        stream.flush()


def _run(argv: list[str] | None) -> Any:
    from doctor.errors import DoctorError

    try:
        return cli.main(args=argv, prog_name="qwen-doctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"qwen-doctor: error: {_usage_line(exc)}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("qwen-doctor: aborted", err=True)
        sys.exit(130)
    except DoctorError as exc:
        click.echo(f"qwen-doctor: error: {_one_line(str(exc))}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("qwen-doctor: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(0)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        click.echo(f"qwen-doctor: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                   f"(set {DEBUG_ENV}=1 for the traceback)", err=True)
        sys.exit(2)
