"""`qwen-doctor lint FILE`: the deployment article's wrong idioms and the real flags."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backend-version", default=None, help="Judge CLI flags against this backend version's flag schema.")
def lint(files: tuple[Path, ...], backend_version: str | None) -> None:
    """Lint a profile YAML, a shell script with a vllm serve / sglang.launch_server line, or a Python file."""
    from doctor.lint import LintError, lint_path

    total = 0
    for path in files:
        try:
            findings = lint_path(path, backend_version)
        except LintError as exc:
            raise LintError(f"{path}: {exc}") from None
        for finding in findings:
            click.echo(finding.render(str(path)))
        total += len(findings)
    click.echo(f"{total} finding(s) in {len(files)} file(s)", err=True)
    if total:
        raise SystemExit(1)
