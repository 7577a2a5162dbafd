"""Type and range rules for the values in a profile and in `--set` overrides; each failure names the field.

Checks read some flags as numbers (`Profile.tp`, `.max_model_len`, ...), so those are typed here (TYPED_FLAGS, the
rows of the settings table doctor/deployment/table.py of kind size, fraction, length or word); every other flag
value must be a finite scalar, a list of scalars or a small JSON object.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from doctor.deployment.table import typed_profile_names
from doctor.flags.values import AUTO_LENGTH, AUTO_LENGTH_SINCE, is_auto_length

MAX_NAME = 64
MAX_TEXT = 4096
MAX_INT = 2**63 - 1
MAX_LIST = 1000
MAX_JSON_DEPTH = 8
MAX_GPUS = 4096
PORT_RANGE = (1, 65535)

NAME = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_NAME - 1}}}$")
VARIABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
_HOST = re.compile(r"^[^\s\x00-\x1f\x7f]{1,255}$")


class ValueRuleError(ValueError):
    """A value that breaks its field's rule; the message says what is expected."""


def text(value: Any, limit: int = MAX_TEXT, single_line: bool = True) -> str:
    """A non-empty string of at most `limit` characters, without NUL (and without line breaks)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueRuleError(f"must be a non-empty string; got {show(value)}")
    if len(value) > limit:
        raise ValueRuleError(f"must be at most {limit} characters; got {len(value)}")
    if "\x00" in value or (single_line and ("\n" in value or "\r" in value)):
        raise ValueRuleError("must be one line of text without control characters")
    return value


def integer(value: Any, low: int, high: int) -> int:
    """An int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueRuleError(f"must be an integer from {low} to {high}; got {show(value)}")
    if not low <= value <= high:
        raise ValueRuleError(f"must be an integer from {low} to {high}; got {show(value)}")
    return value


def number(value: Any, low: float, high: float, low_open: bool = False) -> float:
    """A finite int or float in [low, high] ((low, high] with `low_open`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueRuleError(f"must be a finite number; got {show(value)}")
    if value > high or value < low or (low_open and value == low):
        left = "(" if low_open else "["
        raise ValueRuleError(f"must be in {left}{low:g}, {high:g}]; got {show(value)}")
    return value


def port(value: Any) -> int:
    """A TCP port, from an int or from the text of a `--set port=N`."""
    if isinstance(value, str) and re.fullmatch(r"\s*\d{1,6}\s*", value):
        value = int(value)
    if isinstance(value, str) or isinstance(value, bool) or not isinstance(value, int) \
            or not PORT_RANGE[0] <= value <= PORT_RANGE[1]:
        raise ValueRuleError(f"must be a port number from {PORT_RANGE[0]} to {PORT_RANGE[1]}; got {show(value)}")
    return value


def host(value: Any) -> str:
    """A host name or address: one word, no whitespace or control characters, at most 255 characters."""
    if not isinstance(value, str) or not _HOST.match(value):
        raise ValueRuleError(f"must be a host name or IP address; got {show(value)}")
    return value


def scalar(value: Any) -> Any:
    """A string, bool, bounded int or finite float."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return integer(value, -MAX_INT, MAX_INT)
    if isinstance(value, float):
        return number(value, -float(MAX_INT), float(MAX_INT))
    if isinstance(value, str):
        if len(value) > MAX_TEXT or "\x00" in value:
            raise ValueRuleError(f"must be at most {MAX_TEXT} characters without NUL")
        return value
    raise ValueRuleError(f"must be a string, number or boolean; got {type(value).__name__}")


def json_value(value: Any, depth: int = 0) -> Any:
    """A JSON-renderable value: scalars, lists and string-keyed mappings, at most MAX_JSON_DEPTH deep."""
    if depth > MAX_JSON_DEPTH:
        raise ValueRuleError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, dict):
        if len(value) > MAX_LIST:
            raise ValueRuleError(f"has more than {MAX_LIST} entries")
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueRuleError(f"keys must be strings; got {show(key)}")
            json_value(item, depth + 1)
        return value
    if isinstance(value, list):
        if len(value) > MAX_LIST:
            raise ValueRuleError(f"has more than {MAX_LIST} items")
        for item in value:
            json_value(item, depth + 1)
        return value
    if value is None:
        return value
    return scalar(value)


def flag_value(flag: str, value: Any, auto_length: bool = False) -> Any:
    """A profile flag's value: typed for the flags checks read, else a scalar, a list of scalars or a mapping.
    `auto_length`: the pinned release reads `max-model-len: auto` / -1 (vLLM from AUTO_LENGTH_SINCE)."""
    rule = TYPED_FLAGS.get(flag)
    if flag == "max-model-len" and (value == AUTO_LENGTH or (isinstance(value, str) and is_auto_length(value))):
        if auto_length:
            return value
        raise ValueRuleError(f"must be an integer from 1 to {2**31 - 1}; got {show(value)} (vLLM reads auto / -1 "
                             f"from {AUTO_LENGTH_SINCE}: pin backend_version to >={AUTO_LENGTH_SINCE})")
    if rule is not None:
        return rule(value)
    if value is None or (isinstance(value, list) and not value):
        raise ValueRuleError("has no value")
    if isinstance(value, list):
        if len(value) > MAX_LIST:
            raise ValueRuleError(f"has more than {MAX_LIST} items")
        return [scalar(v) for v in value]
    if isinstance(value, dict):
        return json_value(value)
    return scalar(value)


def _size(value: Any) -> int:
    return integer(value, 1, MAX_GPUS)


def _fraction(value: Any) -> float:
    return number(value, 0.0, 1.0, low_open=True)


def _length(value: Any) -> int:
    return integer(value, 1, 2**31 - 1)


def _word(value: Any) -> str:
    return text(value, limit=128)


_KIND_RULES: dict[str, Callable[[Any], Any]] = {"size": _size, "fraction": _fraction, "length": _length, "word": _word}
TYPED_FLAGS: dict[str, Callable[[Any], Any]] = {name: _KIND_RULES[kind] for name, kind in typed_profile_names().items()}


def show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
