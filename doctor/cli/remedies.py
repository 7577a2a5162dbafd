"""`qwen-doctor remedies list|show ID`: browse the error catalogue that `explain` matches against."""

from __future__ import annotations

import json

import click

_format = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="Output format.")


@click.group()
def remedies() -> None:
    """Browse the remedy catalogue (documented errors and how to fix them)."""


@remedies.command("list")
@click.option("--component", type=click.Choice(["vllm", "sglang", "ray", "nccl", "torch", "cuda", "hf", "spark", "host"]),
              default=None, help="Only entries of this component.")
@_format
def list_(component, fmt) -> None:
    """One line per entry: id, component, severity, title."""
    from remedies import load_catalogue

    entries = [r for r in load_catalogue() if component in (None, r.component)]
    if fmt == "json":
        click.echo(json.dumps([r.to_dict() for r in entries], indent=2))
        return
    for r in entries:
        click.echo(f"{r.id:<38} {r.component:<7} {r.severity:<8} {r.title}")


@remedies.command()
@click.argument("remedy_ids", metavar="ID...", nargs=-1, required=True)
@_format
def show(remedy_ids, fmt) -> None:
    """Everything about one or more entries: samples, why, fix steps per version, sources."""
    from doctor.errors import DoctorError
    from remedies import load_catalogue
    from remedies.terminal import render_entry_terminal

    catalogue = load_catalogue()
    found = [catalogue.get(i) for i in remedy_ids]
    unknown = [i for i, r in zip(remedy_ids, found) if r is None]
    if unknown:
        raise DoctorError(f"unknown remedy id {', '.join(unknown)} (see: qwen-doctor remedies list)")
    if fmt == "json":
        click.echo(json.dumps([r.to_dict() for r in found], indent=2))
    else:
        click.echo("\n".join(render_entry_terminal(r) for r in found), nl=False)
