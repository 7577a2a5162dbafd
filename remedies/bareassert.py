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
