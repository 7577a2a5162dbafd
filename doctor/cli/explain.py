"""`qwen-doctor explain FILE... | -`: documented errors in server logs, each with its remedy, root cause first."""

from __future__ import annotations

import sys

import click

from doctor.cli import options


@click.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--context", "context_lines", type=click.IntRange(0, 20), default=2, show_default=True,
              help="Lines of context shown around the first match of each finding.")
@options.output_format
@options.fail_on
@options.verbose
def explain(sources, context_lines, fmt, fail_on, verbose) -> None:
    """Read logs (plain, gzip or '-' for stdin) and explain every known error once.

    Exit code 1 when an error-severity entry matched (or a warning, with --fail-on warn).
    """
    from doctor.report.model import Report, exit_code
    from remedies import Matcher, explain_sources
    from remedies.reader import check_readable
    from remedies.results import to_results

    for source in sources:
        check_readable(source)
    findings = explain_sources(sources, Matcher(context=context_lines))
    results = to_results(findings)
    report = Report(command="explain " + " ".join(sources), results=results,
                    sections={"explain": {"sources": list(sources),
                                          "findings": [f.to_dict() for f in findings]}})
    if fmt == "json":
        from doctor.report.jsonout import render_json

        click.echo(render_json(report), nl=False)
    else:
        from remedies.render import render_findings

        click.echo(render_findings(findings, sources, verbose=verbose, color=sys.stdout.isatty()), nl=False)
    sys.exit(exit_code(results, fail_on))
