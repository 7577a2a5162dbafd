"""Parse and validate facts documents against the shipped JSON Schema (facts.schema.json).

Everything wrong with a bundle becomes one BadBundle line naming the field, e.g.
`b.json: nvml.gpus[3].memory.total: expected integer, got "abc"`. JSON that Python's parser accepts but no
collector writes (NaN / Infinity, numbers beyond 64 bits, nesting deeper than MAX_DEPTH) is refused the same way.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable

from doctor.errors import BadBundle

MAX_DEPTH = 64
MAX_INT = 2**64 - 1
MAX_INT_DIGITS = 40
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_:-]{1,40}$")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The facts JSON Schema shipped with the package."""
    return json.loads(resources.files("doctor.facts").joinpath("facts.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=2)
def _validator(part: str | None) -> Any:
    from jsonschema import Draft202012Validator

    doc = schema() if part is None else {"$ref": f"#/$defs/{part}", "$defs": schema()["$defs"]}
    return Draft202012Validator(doc)


def parse_json(text: str, source: str) -> Any:
    """json.loads without NaN / Infinity and without the parser's own failure modes leaking out as tracebacks."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)
    except RecursionError:
        raise BadBundle(f"{source}: JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    except BadBundle as exc:
        raise BadBundle(f"{source}: {exc}") from None
    except ValueError as exc:
        raise BadBundle(f"{source} is not a qwen-doctor facts bundle: invalid JSON ({_one_line(str(exc))})") from None


def _reject_constant(name: str) -> Any:
    raise BadBundle(f"{name} is not a number a collector writes (NaN / Infinity are not JSON)")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadBundle(f"integer with {len(text.lstrip('-'))} digits is out of range")
    return int(text)


def check_tree(data: Any, source: str, root: tuple[str | int, ...] = ()) -> None:
    """Depth, finite numbers and 64-bit integers everywhere in the document, named by path."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, root)]
    while stack:
        value, path = stack.pop()
        if len(path) - len(root) > MAX_DEPTH:
            raise BadBundle(f"{source}: {path_text(path[:len(root) + 8])}...: nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, path + (str(k),)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise BadBundle(f"{source}: {path_text(path)}: number out of range ({value})")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise BadBundle(f"{source}: {path_text(path)}: integer out of range (beyond 64 bits)")


def validate(data: Any, source: str, part: str | None = None, root: tuple[str | int, ...] = ()) -> None:
    """Raise BadBundle naming the first field that breaks the schema (or its `$defs/<part>`)."""
    check_tree(data, source, root)
    error = first_error(_validator(part).iter_errors(data))
    if error is not None:
        raise BadBundle(f"{source}: {describe(error, root)}")


def first_error(errors: Iterable[Any]) -> Any:
    """The most relevant of the first errors (bounded, so a thousand bad GPUs cost no more than one)."""
    from jsonschema.exceptions import best_match

    return best_match(itertools.islice(errors, 20))


def describe(error: Any, root: tuple[str | int, ...] = ()) -> str:
    """`path: what was expected, what was found` on one line, secrets redacted."""
    from doctor.redact import redact_text

    path = root + tuple(error.absolute_path)
    kind, expected, got = error.validator, error.validator_value, error.instance
    if kind == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        text = f"expected {' or '.join(_TYPE_WORDS.get(t, t) for t in types)}, got {_shown(got)}"
    elif kind == "required":
        missing = next((k for k in expected if isinstance(got, dict) and k not in got), expected[0])
        path, text = path + (missing,), "missing (required)"
    elif kind in ("enum", "const"):
        options = expected if kind == "enum" else [expected]
        text = f"expected {' or '.join(json.dumps(o) for o in options)}, got {_shown(got)}"
    elif kind in ("minimum", "exclusiveMinimum"):
        text = f"must be >= {expected}, got {_shown(got)}"
    elif kind in ("maximum", "exclusiveMaximum"):
        text = f"must be <= {expected}, got {_shown(got)}"
    else:
        text = _one_line(error.message)[:160]
    return redact_text(f"{path_text(path) or '(top level)'}: {text}")


_TYPE_WORDS = {"object": "an object", "array": "a list", "null": "null"}


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:36] + '..."'


def path_text(path: Iterable[str | int]) -> str:
    """`nvml.gpus[3].memory.total`; odd keys are quoted, so the path stays one printable line."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part[:40], ensure_ascii=True)}]"
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())
