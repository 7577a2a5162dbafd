"""Parse and validate facts documents against the shipped JSON Schema (facts.schema.json).

Everything wrong with a bundle becomes one BadBundle line naming the field, e.g.
`b.json: nvml.gpus[3].memory.total: expected integer, got "abc"`. JSON that Python's parser accepts but no
collector writes (NaN / Infinity, numbers beyond 64 bits, nesting deeper than MAX_DEPTH) is refused the same way.
The schema is compiled once by fastjsonschema (the validator pip's validate-pyproject uses).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Iterable

from doctor.errors import BadBundle

MAX_DEPTH = 64
MAX_INT = 2**64 - 1
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_:-]{1,40}$")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The facts JSON Schema shipped with the package."""
    return json.loads(resources.files("doctor.facts").joinpath("facts.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=2)
def _validator(part: str | None) -> Callable[[Any], Any]:
    """The schema (or its `$defs/<part>`) compiled to Python by fastjsonschema: a 5,000-GPU bundle takes
    a fraction of a second (an interpreting validator takes seconds). Generating and compiling that code
    takes ~0.5 s, more than the rest of `check --from`, so its code object is cached on disk like a .pyc
    (keyed by the schema, fastjsonschema's version and the interpreter's bytecode magic); without a writable
    cache it is compiled each run."""
    return _cached_code(part)


def _generated(part: str | None) -> str:
    """fastjsonschema's Python source for the schema (or its `$defs/<part>`), every `$ref` inlined."""
    import fastjsonschema

    defs = schema()["$defs"]
    doc = _inline(schema() if part is None else defs[part], defs)
    doc.pop("$defs", None)
    doc["$schema"] = schema()["$schema"]
    return fastjsonschema.compile_to_code(doc)


def _cached_code(part: str | None) -> Callable[[Any], Any]:
    import hashlib
    import importlib.util
    import marshal
    import os
    from pathlib import Path

    import fastjsonschema

    from doctor.cachedir import cache_home, private_folder

    text = resources.files("doctor.facts").joinpath("facts.schema.json").read_bytes()
    key = hashlib.sha256(text + str(part).encode() + fastjsonschema.VERSION.encode()
                         + importlib.util.MAGIC_NUMBER).hexdigest()[:32]
    home = cache_home()
    path = home / "validators" / f"{key}.marshal" if home is not None else None
    try:
        code = marshal.loads(path.read_bytes()) if path is not None and private_folder(path.parent) else None
    except (OSError, ValueError, EOFError, TypeError):
        code = None
    if code is None:
        code = compile(_generated(part), f"<facts schema {key}>", "exec")
        if path is not None:
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                if not private_folder(path.parent):
                    raise PermissionError(f"{path.parent} is not private")  # a cache in a shared folder: none
                partial = path.with_suffix(f".{os.getpid()}.tmp")
                partial.write_bytes(marshal.dumps(code))
                os.replace(partial, path)
            except OSError:
                pass
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - fastjsonschema's own generated validator, as fastjsonschema.compile runs it
    # the root validator is named after the schema's $id ('validate' without one); everything is inlined, so it
    # is the only function the code defines
    validators = [v for k, v in namespace.items() if k.startswith("validate") and callable(v)]
    if len(validators) != 1:
        raise RuntimeError(f"fastjsonschema generated {len(validators)} validators for the facts schema, expected 1")
    return validators[0]


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with every local `$ref` replaced by its definition (it has no cycles)."""
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        inlined = _inline(defs[ref[len("#/$defs/"):]], defs)
        return {**inlined, **{k: _inline(v, defs) for k, v in node.items() if k != "$ref"}}
    return {k: _inline(v, defs) for k, v in node.items()}


def parse_json(text: str, source: str) -> Any:
    """json.loads, refusing what no collector writes: nesting deeper than MAX_DEPTH, NaN / Infinity, numbers
    beyond 64 bits, each named by its path."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise BadBundle(f"{source}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's own limit on integer digits (4300)
            raise BadBundle(f"{source}: an integer with thousands of digits: out of range") from None
        raise BadBundle(f"{source} is not a qwen-doctor facts bundle: invalid JSON ({_one_line(str(exc))[:200]})") from None
    check_tree(data, source)
    return data


def check_tree(data: Any, source: str, root: tuple[str | int, ...] = ()) -> None:
    """Depth, finite numbers and 64-bit integers everywhere in the document, named by path."""
    if _sound(data):
        return
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, root)]
    while stack:
        value, path = stack.pop()
        if len(path) - len(root) > MAX_DEPTH:
            raise BadBundle(f"{source}: {path_text(path[:len(root) + 8])}...: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, path + (str(k),)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(value))
        elif not _sound_scalar(value):
            raise BadBundle(f"{source}: {path_text(path)}: number out of range ({_shown(value)[:24]})")


def _sound(data: Any) -> bool:
    """The fast pass of check_tree, level by level without building paths (most documents are fine)."""
    level, depth = [data], 0
    while level:
        if depth > MAX_DEPTH:
            return False
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                below.extend(value.values())
            elif kind is list:
                below.extend(value)
            elif (kind is float or kind is int) and not _sound_scalar(value):
                return False
        level, depth = below, depth + 1
    return True


def _sound_scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -MAX_INT <= value <= MAX_INT
    return True


def validate(data: Any, source: str, part: str | None = None, root: tuple[str | int, ...] = (),
             parsed: bool = False) -> None:
    """Raise BadBundle naming the first field that breaks the schema (or its `$defs/<part>`).

    `parsed`: the document comes from parse_json, which already screened depth and numbers.
    """
    import fastjsonschema

    if not parsed:
        check_tree(data, source, root)
    try:
        _validator(part)(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise BadBundle(f"{source}: {describe(exc, data, root)}") from None


def describe(error: Any, data: Any, root: tuple[str | int, ...] = ()) -> str:
    """`path: what was expected, what was found` on one line, secrets redacted."""
    from doctor.redact import redact_text

    path = root + _typed_path(data, error.path[1:])
    rule, expected, got = error.rule, error.rule_definition, error.value
    if rule == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        text = f"expected {' or '.join(_TYPE_WORDS.get(t, t) for t in types)}, got {_shown(got)}"
    elif rule == "required":
        missing = next((k for k in expected if isinstance(got, dict) and k not in got), expected[0])
        path, text = path + (missing,), "missing (required)"
    elif rule in ("enum", "const"):
        options = expected if rule == "enum" else [expected]
        text = f"expected {' or '.join(json.dumps(o) for o in options)}, got {_shown(got)}"
    elif rule in ("minimum", "exclusiveMinimum"):
        text = f"must be >= {expected}, got {_shown(got)}"
    elif rule in ("maximum", "exclusiveMaximum"):
        text = f"must be <= {expected}, got {_shown(got)}"
    else:
        text = f"breaks the schema's {rule!r} rule"
    return redact_text(f"{path_text(path) or '(top level)'}: {text}")


def _typed_path(data: Any, parts: list[str]) -> tuple[str | int, ...]:
    """fastjsonschema names list positions as strings: walk the document to tell indices from keys."""
    out: list[str | int] = []
    node = data
    for part in parts:
        if isinstance(node, list) and str(part).isdigit():
            out.append(int(part))
            node = node[int(part)] if int(part) < len(node) else None
        else:
            out.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    return tuple(out)


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
