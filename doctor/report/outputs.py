"""Render one report to stdout and/or files: format by extension, redaction once, safe atomic writes.

Used by every command through `doctor.cli.options.report_outputs`:
    write_outputs(report, outputs=["r.html", "r.xml"], fmt=None, redact_hosts=False, inputs=["bundle.json"])

Files are written by `doctor.outfile` (regular files or new paths only, never an input of the command,
atomic with a unique temp name, permissions kept); a replaced file is said so on stderr.
"""

from __future__ import annotations

import dataclasses

import importlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

from doctor import shellquote
from doctor.errors import DoctorError
from doctor.outfile import check_outputs, write_file
from doctor.report.model import Report
from doctor.textsafe import use_color

FORMATS = ("text", "json", "junit", "md", "html")
EXTENSIONS = {".txt": "text", ".log": "text", ".json": "json", ".xml": "junit", ".md": "md",
              ".markdown": "md", ".html": "html", ".htm": "html"}
STDOUT = "-"
Terminal = Callable[[Report, bool], str]
Inputs = Iterable["str | Path | None"]
FACTS_FORMATS = ("json", "html", "md")   # the formats that embed the raw facts document
_RENDERERS = {"text": "doctor.report.text:render_text", "json": "doctor.report.jsonout:render_json",
              "junit": "doctor.report.junit:render_junit", "md": "doctor.report.markdown:render_markdown",
              "html": "doctor.report.html:render_html"}


@dataclass(frozen=True)
class Target:
    """Where one rendering goes (a path, or '-' for stdout) and in which format."""

    path: str
    fmt: str


def plan_targets(outputs: list[str] | tuple[str, ...], fmt: str | None) -> list[Target]:
    """Decide each output's format; stdout gets `fmt` (text by default) unless a file output is given.

    A known extension decides a file's format; `--format` covers stdout ('-') and unknown extensions, and it
    must agree with a known extension rather than be silently ignored.
    """
    if fmt is not None and fmt not in FORMATS:
        raise DoctorError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    if not outputs:
        return [Target(STDOUT, fmt or "text")]
    targets = []
    for out in outputs:
        if out == STDOUT:
            targets.append(Target(STDOUT, fmt or "text"))
            continue
        by_ext = EXTENSIONS.get(Path(out).suffix.lower())
        if by_ext and fmt and by_ext != fmt:
            raise DoctorError(f"--format {fmt} contradicts the extension of {out} ({by_ext}); "
                              f"drop --format or rename the file")
        if not (by_ext or fmt):
            raise DoctorError(f"cannot tell the report format of {out} from its extension "
                              f"(use .html, .xml, .json, .md or .txt, or add --format)")
        targets.append(Target(out, by_ext or fmt))
    return targets


def check_targets(outputs: list[str] | tuple[str, ...], fmt: str | None, inputs: Inputs = ()) -> list[Target]:
    """The targets, after checking that every file can be written safely (a regular file or a new path, none
    of them an input of the command): a command calls this before long work."""
    targets = plan_targets(outputs, fmt)
    check_outputs([t.path for t in targets if t.path != STDOUT], inputs, what="report")
    return targets


def render(report: Report, fmt: str, *, fail_on: str = "fail", verbose: bool = False, color: bool = False) -> str:
    """One format of the report; every renderer redacts a report that was not redacted yet (secrets only)."""
    module, func = _RENDERERS[fmt].split(":")
    renderer = getattr(importlib.import_module(module), func)
    if fmt == "text":
        return renderer(report, verbose=verbose, color=color)
    if fmt == "junit":
        return renderer(report, fail_on=fail_on)
    return renderer(report)


def write_outputs(report: Report, outputs: list[str] | tuple[str, ...] = (), fmt: str | None = None, *,
                  redact_hosts: bool = False, fail_on: str = "fail", verbose: bool = False,
                  terminal: Terminal | None = None, inputs: Inputs = (), color: str = "auto") -> list[str]:
    """Redact once, render every requested format, then write: stdout, and files atomically; the files written.

    Every path is checked before anything is written, so a bad `--output` leaves all files as they were;
    `inputs` are the files the command read, which no output may replace.
    When only files are requested, stdout still gets the terminal text and stderr one line per file.
    `terminal(redacted_report, color)` replaces the generic text on stdout (a command's own table, say);
    it must render from the report it is given, which is the redacted one.
    """
    inputs = tuple(inputs)
    targets = check_targets(outputs, fmt, inputs)
    if all(t.path != STDOUT for t in targets):
        targets = [Target(STDOUT, "text"), *targets]
    if report.facts is not None and not any(t.fmt in FACTS_FORMATS for t in targets):
        report = replace(report, facts=None)   # nothing renders them: spare the redaction pass
    safe = report.redacted(hosts=redact_hosts)
    paint = use_color(color, sys.stdout)
    rendered = []
    for t in targets:
        if t.path == STDOUT and t.fmt == "text" and terminal is not None:
            rendered.append((t, terminal(safe, paint)))
        else:
            rendered.append((t, render(safe, t.fmt, fail_on=fail_on, verbose=verbose,
                                       color=paint and t.path == STDOUT)))
    for t, text in rendered:  # files first: a closed pipe on stdout (`| head`) must not cost them
        if t.path != STDOUT:
            replaced = write_file(t.path, text, inputs, what="report")
            print(f"wrote {shellquote.shown(t.path)} ({t.fmt}{', replaced the existing file' if replaced else ''})", file=sys.stderr)
    for t, text in rendered:
        if t.path == STDOUT:
            _write_stdout(text)
    return [t.path for t in targets if t.path != STDOUT]


def _write_stdout(text: str) -> None:
    """Write to stdout; a reader that closed the pipe early (`| head`) ends the output quietly."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
