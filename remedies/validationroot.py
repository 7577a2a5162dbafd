"""A pydantic ValidationError read with its first error's message: the root text a config check raised.

pydantic_core prints a validation error as a header line and, indented below it, each error's message
(pydantic-core src/errors/validation_exception.rs `display_errors`):

    pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig
      Value error, invalid reasoning parser: qwen3_5 (chose from { ... }) [type=value_error, input_value=...]
        For further information visit https://errors.pydantic.dev/2.11/v/value_error

The header names only the model; the text a config's validator raised ("Value error, ..." for a ValueError, or a
field's constraint) is on the indented line, which a traceback reader would take for a frame line. `detail`
returns that line's message (without pydantic's `[type=..., input_value=...]` tail and its help-URL line), to be
read as the exception's message, so that the finding carries the root text and the templates can place it.
"""

from __future__ import annotations

import re

HEADER = re.compile(r"(?:^|[\s.:])\d{1,4} validation errors? for [\w.\[\],|-]{1,160}(?: [\w.\[\]-]{1,100})?$")
MAX_DETAIL_LINES = 4
_TAIL = re.compile(r"\s*\[type=[\w.-]{1,80}(?:,.*)?\]?\s*$")
_HELP = re.compile(r"^For further information visit\b")


def awaits_detail(exception: str) -> bool:
    """Whether an exception line so far is a pydantic validation header with no error message read yet."""
    return bool(HEADER.search(exception.strip()))


def detail(line: str) -> str | None:
    """The message of an indented pydantic error line (its type / input tail removed), or None for the help-URL
    line or an empty one."""
    stripped = line.strip()
    if not stripped or _HELP.match(stripped):
        return None
    message = _TAIL.sub("", stripped)
    return message or None
