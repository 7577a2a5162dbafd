"""`qwen-doctor lint FILE...`: wrong or invented deployment idioms in anything users paste, with the real ones."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from doctor.cli import options


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backend-version", default=None, callback=options.version_value, help="Judge CLI flags against this backend version's flag schema.")
@options.report_outputs
@options.fail_on
@options.verbose
def lint(files: tuple[Path, ...], backend_version: str | None, report_out, fail_on, verbose) -> None:
    """Lint Markdown, blog posts and chat text, Python, shell scripts, Dockerfiles, compose / Kubernetes /
    Helm YAML, notebooks and qwen-doctor profiles.

    Every finding points at the line of the original file. Exit code 1 when an error-severity idiom is found
    (or a warning, with --fail-on warn).
    """
    from doctor.lint import LintError, lint_path
    from doctor.lint.results import render_terminal, to_result
    from doctor.report.model import Report, exit_code, now

    report_out = report_out.reading(*files)
    report_out.check()
    started = now()
    results = []
    for path in files:
        try:
            findings = lint_path(path, backend_version)
        except LintError as exc:
            raise LintError(f"{path}: {exc}") from None
        results += [to_result(f, str(path)) for f in findings]
    report = Report(command="lint " + " ".join(str(f) for f in files), results=results,
                    facts_summary={"files": ", ".join(str(f) for f in files)},
                    argv=sys.argv[1:], created_at=started, finished_at=now())

    def terminal(redacted: Report, color: bool) -> str:
        return render_terminal(redacted.results, color=color)

    report_out.write(report, fail_on=fail_on, verbose=verbose, terminal=terminal)
    click.echo(f"{len(results)} finding(s) in {len(files)} file(s)", err=True)
    sys.exit(exit_code(results, fail_on))
