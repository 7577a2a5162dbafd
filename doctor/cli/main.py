"""The `qwen-doctor` command group. Subcommands load lazily so that start-up stays fast."""

from __future__ import annotations

import os
import sys

from doctor.cli import interrupt

if os.path.basename(sys.argv[0] if sys.argv else "").startswith("qwen-doctor"):
    interrupt.exit_at_once()  # the console script: Ctrl-C during the imports below is one line, exit 130

import importlib  # noqa: E402
from typing import Any  # noqa: E402

import click  # noqa: E402

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

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt as exc:
            raise interrupt.Interrupted(interrupt.signum_of(exc)) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C reaches `main` past click (which would print a blank line first)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise interrupt.Interrupted(interrupt.signum_of(exc)) from None


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
    stderr is redacted (`doctor.cli.stderr`); closed or failing standard streams change nothing
    (`doctor.cli.streams`); Ctrl-C, SIGTERM and SIGHUP are exit 130 / 143 / 129 and one line
    (`doctor.cli.interrupt`). `argv` None is the
    program itself (sys.argv), which also owns the SIGINT handler."""
    program = argv is None
    try:
        if program:
            interrupt.exit_at_once()
            interrupt.ignore_at_exit()
        from doctor.cli import stderr, streams

        streams.install()
        stream = stderr.install(sys.argv[1:] if argv is None else argv)
        try:
            if program:
                interrupt.raise_interrupt()
            return _run(argv)
        finally:
            if program:
                interrupt.exit_at_once()
            stream.flush()
            if program:
                interrupt.raise_swallowed()
    except (KeyboardInterrupt, interrupt.Interrupted) as exc:
        if program:
            interrupt.exit_at_once()
        signum = interrupt.signum_of(exc)
        click.echo(interrupt.LINES.get(signum, interrupt.LINE), err=True)
        sys.exit(interrupt.exit_code(signum))


def _run(argv: list[str] | None) -> Any:
    """The command, ended in exit 2 and one line when its stdout could not be written (see `streams`)."""
    try:
        outcome = _command(argv)
    except SystemExit as exc:
        _refuse_lost_stdout(exc.code)
        raise
    _refuse_lost_stdout(0)
    return outcome


def _refuse_lost_stdout(code: Any) -> None:
    from doctor.cli import streams

    why = streams.lost_stdout() if code in (0, 1, None) else None
    if why is not None:
        click.echo(f"qwen-doctor: error: cannot write to stdout: {why}; what it held is incomplete", err=True)
        sys.exit(2)


def _command(argv: list[str] | None) -> Any:
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
        sys.exit(interrupt.EXIT_INTERRUPTED)
    except DoctorError as exc:
        click.echo(f"qwen-doctor: error: {_one_line(str(exc))}", err=True)
        sys.exit(2)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        click.echo(f"qwen-doctor: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                   f"(set {DEBUG_ENV}=1 for the traceback)", err=True)
        sys.exit(2)
