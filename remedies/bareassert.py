"""A message-less AssertionError read with the `assert` statement Python printed in the frame above it.

A bare `assert test` raises AssertionError without a message, and the traceback then ends in the class name
alone (cpython Lib/traceback.py format_exception_only), but prints the statement under the raising frame. That
statement is the only message there is: `AssertionError: assert config.model_type in (...)` is what the
signature index, the catalogue's samples and the reader are given, so a config-layout or version-skew assert
is matched with its test, not left as a bare class name.
"""

from __future__ import annotations

import re

_BARE_ASSERTION = re.compile(r"^(?:[\w.]{0,200}\.)?AssertionError$")
_ASSERT = re.compile(r"^assert\b\s*\S")
MAX_STATEMENT = 400


def with_statement(exception: str, statement: str) -> str:
    """`AssertionError: <the assert statement>` for a bare AssertionError raised by a printed `assert`, else the
    exception unchanged."""
    text = statement.strip()
    if not _BARE_ASSERTION.match(exception.strip()) or not _ASSERT.match(text):
        return exception
    return f"{exception.strip()}: {text[:MAX_STATEMENT]}"


def _open(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def statement_of(lines: list[str]) -> str:
    """The statement printed under a frame, from its lines (stripped, first first): a bare assert whose first
    line leaves a bracket open is joined with the lines that follow (Python 3.13 prints every line of a
    multi-line statement, cpython Lib/traceback.py StackSummary.format_frame_summary) until it closes; any
    other statement is its first line."""
    if not lines:
        return ""
    statement = lines[0]
    if not _ASSERT.match(statement) or _open(statement) <= 0:
        return statement
    for line in lines[1:]:
        statement = f"{statement} {line}"
        if _open(statement) <= 0 or len(statement) > MAX_STATEMENT:
            break
    return statement


def continues(statement: str) -> bool:
    """Whether a statement read so far is a bare assert whose brackets are still open (its next printed line
    belongs to it)."""
    return bool(_ASSERT.match(statement)) and _open(statement) > 0 and len(statement) <= MAX_STATEMENT
