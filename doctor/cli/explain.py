"""`qwen-doctor explain FILE... | -`: documented errors in server logs, each with its remedy, root cause first."""

from __future__ import annotations

import sys

import click

from doctor.cli import options


@click.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--context", "context_lines", type=click.IntRange(0, 20), default=2, show_default=True,
              help="Lines of context shown around the first match of each finding.")
@options.report_outputs
@options.fail_on
@options.verbose
def explain(sources, context_lines, report_out, fail_on, verbose) -> None:
    """Read logs (plain, gzip or '-' for stdin) and explain every known error once.

    Exit code 1 when an error-severity entry matched (or a warning, with --fail-on warn).
    """
    from doctor.report.model import Report, exit_code, now
    from doctor.report.sections import remedy_from_finding
    from remedies import Matcher, explain_sources
    from remedies.reader import check_readable
    from remedies.render import render_findings
    from remedies.results import to_results

    started = now()
    report_out = report_out.reading(*sources)
    report_out.check()
    for source in sources:
        check_readable(source)
    findings = explain_sources(sources, Matcher(context=context_lines))
    results = to_results(findings)
    report = Report(command="explain " + " ".join(sources), results=results,
                    facts_summary={"source": ", ".join(sources)},
                    sections={"remedies": [remedy_from_finding(f.to_dict()) for f in findings]},
                    argv=sys.argv[1:], created_at=started, finished_at=now())

    def terminal(redacted: Report, color: bool) -> str:
        names = str(redacted.facts_summary.get("source", "")).split(", ")
        return render_findings(redacted.sections.get("remedies") or [], names, verbose=verbose, color=color)

    report_out.write(report, fail_on=fail_on, verbose=verbose, terminal=terminal)
    sys.exit(exit_code(results, fail_on))
