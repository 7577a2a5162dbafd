"""Pasted logs for the explain tests: write one to a file and explain it; build a traceback from its frames."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources

SITE = "/usr/local/lib/python3.12/dist-packages"


def explain_paste(tmp_path: Path, text: str) -> list:
    """The findings `explain` gives for `text` pasted as a log file."""
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain_sources([log])


def traceback_text(prefix: str, frames: list[tuple[str, int, str, str]], exception: str) -> str:
    """A Python traceback, each line after `prefix`: (path, line, function, statement) frames, then the exception."""
    lines = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, statement in frames:
        lines += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {statement}"]
    return "\n".join([*lines, f"{prefix}{exception}", ""])
