"""Extract per-version CLI flag schemas of vLLM and SGLang from their published wheels, statically.

Nothing is installed or imported: the script reads only the few Python files that define the CLI
(through HTTP range requests into the wheel on PyPI, so a 400 MB vLLM wheel costs a few MB), parses
them with `ast`, and replays how argparse options are built:

- vLLM: `make_arg_parser` (entrypoints/openai or entrypoints/launchers `cli_args.py`), `FrontendArgs`,
  `EngineArgs.add_cli_args` and `get_kwargs(<Config dataclass>)`, whose field annotations decide type,
  choices (Literal), nargs (list/tuple), BooleanOptionalAction (bool) and JSON (nested dataclass).
- SGLang: `ServerArgs.add_cli_args` in `sglang/srt/server_args.py` (explicit add_argument calls).

Each flag also records its default: the dataclass field / `default=` expression when it is a literal, and,
for defaults the engine settles at startup (RUNTIME_DEFAULTS), a rule plus the file::function of that
wheel that resolves it; vLLM's get_batch_defaults branches become per-device tiers.

Usage (see docs/flags.md):
    python scripts/extract_flag_schema.py vllm 0.17.0 0.32.0 --out doctor/flags/schemas
    python scripts/extract_flag_schema.py sglang 0.5.9 0.5.23 --out doctor/flags/schemas
    python scripts/extract_flag_schema.py vllm 0.32.0 --compare-real .venv-vllm/bin/python
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import sys
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor.flags.schema import NOT_RECORDED, FlagSchema, FlagSpec  # noqa: E402

SOURCE_PATTERNS = {
    "vllm": re.compile(
        r"^vllm/(engine/arg_utils\.py|config/[^/]+\.py|config\.py|entrypoints/[^/]+/cli_args\.py"
        r"|utils/argparse_utils\.py)$"
    ),
    "sglang": re.compile(r"^sglang/srt/(server_args\.py|arg_groups/.+\.py)$"),
}
# Read only to find where a default left to the engine is resolved (RUNTIME_DEFAULTS), never for flags.
RULE_SOURCE_PATTERNS = {
    "vllm": re.compile(r"^vllm/platforms/(interface|cuda)\.py$"),
    "sglang": re.compile(r"^sglang/srt/(model_executor/model_runner(_kv_cache_mixin)?\.py"
                         r"|mem_cache/kv_cache_configurator\.py)$"),
}
CACHE_LAYOUT = "2"  # bump when the patterns above change: older caches are fetched again
EXTRACTOR = "static-ast/1 (scripts/extract_flag_schema.py)"
HUMAN_INT_FIELDS = {"max_num_batched_tokens", "max_num_scheduled_tokens", "kv_cache_memory_bytes",
                    "safetensors_prefetch_block_size", "max_num_queued_tokens"}
DATACLASS_DECORATORS = {"dataclass", "config", "pydantic_dataclass"}


class _HttpFile(io.RawIOBase):
    """A seekable, read-only view of a remote file through HTTP range requests."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        if self.pos >= self.size or not len(buffer):
            return 0
        end = min(self.size, self.pos + len(buffer)) - 1
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_files(package: str, version: str) -> tuple[str, dict[str, str]]:
    """(wheel file name, {path: source}) of the CLI-defining files of one published wheel."""
    request = urllib.request.Request(f"https://pypi.org/simple/{package}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    wheels = [f for f in files if f["filename"].startswith(f"{package}-{version}-") and f["filename"].endswith(".whl")]
    wheels.sort(key=lambda f: ("x86_64" not in f["filename"] and "none-any" not in f["filename"]))
    if not wheels:
        raise SystemExit(f"no wheel for {package}=={version} on PyPI")
    wheel = wheels[0]
    archive = zipfile.ZipFile(io.BufferedReader(_HttpFile(wheel["url"], wheel["size"]), buffer_size=1 << 16))
    patterns = (SOURCE_PATTERNS[package], RULE_SOURCE_PATTERNS[package])
    sources = {n: archive.read(n).decode("utf-8") for n in archive.namelist() if any(p.search(n) for p in patterns)}
    return wheel["filename"], sources


def cached_sources(package: str, version: str, cache: Path) -> tuple[str, dict[str, str]]:
    """wheel_files with an on-disk cache of the extracted sources (outside git)."""
    folder = cache / f"{package}-{version}"
    marker = folder / "WHEEL_NAME"
    layout = folder / "CACHE_LAYOUT"
    if marker.exists() and layout.exists() and layout.read_text().strip() == CACHE_LAYOUT:
        sources = {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in folder.rglob("*.py")}
        return marker.read_text().strip(), sources
    name, sources = wheel_files(package, version)
    for rel, text in sources.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    marker.write_text(name)
    layout.write_text(CACHE_LAYOUT)
    return name, sources


# ---------------------------------------------------------------- static model of the sources


@dataclass
class Module:
    """One parsed source file with its module-level names."""

    path: str
    tree: ast.Module
    assigns: dict[str, ast.expr] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)


class Index:
    """All modules of one version: classes, functions and module-level constants by name."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.modules: list[Module] = []
        for path, text in sorted(sources.items()):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            module = Module(path, tree)
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    module.assigns.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    module.assigns.setdefault(node.target.id, node.value)
                elif isinstance(node, ast.ClassDef):
                    module.classes[node.name] = node
                elif isinstance(node, ast.FunctionDef):
                    module.functions[node.name] = node
                elif isinstance(node, ast.If):
                    for sub in node.body:
                        if isinstance(sub, ast.Assign) and isinstance(sub.targets[0], ast.Name):
                            module.assigns.setdefault(sub.targets[0].id, sub.value)
            self.modules.append(module)

    def cls(self, name: str) -> ast.ClassDef | None:
        for module in self.modules:
            if name in module.classes:
                return module.classes[name]
        return None

    def const(self, name: str) -> ast.expr | None:
        for module in self.modules:
            if name in module.assigns:
                return module.assigns[name]
        return None

    def function(self, name: str) -> ast.FunctionDef | None:
        for module in self.modules:
            if name in module.functions:
                return module.functions[name]
        return None

    def method(self, class_name: str, method: str) -> tuple[ast.FunctionDef, str] | None:
        """The method as defined on the class or its first base that has it, with the defining class."""
        node = self.cls(class_name)
        if node is None:
            return None
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                return item, class_name
        for base in node.bases:
            if isinstance(base, ast.Name):
                found = self.method(base.id, method)
                if found:
                    return found
        return None

    def bases(self, class_name: str) -> list[str]:
        node = self.cls(class_name)
        return [b.id for b in node.bases if isinstance(b, ast.Name)] if node else []

    def is_dataclass(self, class_name: str) -> bool:
        node = self.cls(class_name)
        if node is None:
            return False
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in DATACLASS_DECORATORS:
                return True
        return any(self.is_dataclass(b) for b in self.bases(class_name))

    def fields(self, class_name: str) -> list[tuple[str, ast.expr]]:
        """Dataclass fields in definition order, bases first (like dataclasses.fields)."""
        node = self.cls(class_name)
        if node is None:
            return []
        out: dict[str, ast.expr] = {}
        for base in reversed(self.bases(class_name)):
            out.update(dict(self.fields(base)))
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                text = ast.unparse(item.annotation)
                if "ClassVar" in text or "InitVar" in text:
                    continue
                out[item.target.id] = item.annotation
        return list(out.items())


    def class_values(self, class_name: str, seen: frozenset[str] = frozenset()) -> dict[str, ast.expr | None]:
        """Class-level values by name (field defaults and class constants), bases first; None: no default."""
        node = self.cls(class_name)
        if node is None or class_name in seen:
            return {}
        out: dict[str, ast.expr | None] = {}
        for base in reversed(self.bases(class_name)):
            out.update(self.class_values(base, seen | {class_name}))
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                out[item.target.id] = item.value
            elif isinstance(item, ast.Assign):
                out.update({t.id: item.value for t in item.targets if isinstance(t, ast.Name)})
        return out


# ---------------------------------------------------------------- defaults


@dataclass(frozen=True)
class Default:
    """A parser default: a JSON value when it is a literal, else the expression's source text."""

    known: bool
    value: Any = None


NUMERIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b,
               ast.LShift: lambda a, b: a << b}
EMPTY_FACTORIES = {"list": [], "dict": {}, "set": [], "tuple": []}


def resolve_default(index: Index, node: ast.expr | None, depth: int = 0) -> Default:
    """The value a default expression evaluates to, when it is built from literals, module constants,
    other classes' field defaults, `Field(default=...)` / `field(default_factory=...)` and arithmetic."""
    if node is None:
        return Default(False, "required")
    unknown = Default(False, ast.unparse(node))
    if depth > 8:
        return unknown
    if isinstance(node, ast.Constant):
        value = node.value
        if value is Ellipsis or isinstance(value, (bytes, complex)):
            return unknown
        if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
            return unknown
        return Default(True, value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = resolve_default(index, node.operand, depth + 1)
        if inner.known and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
            return Default(True, -inner.value if isinstance(node.op, ast.USub) else inner.value)
        return unknown
    if isinstance(node, ast.BinOp) and type(node.op) in NUMERIC_OPS:
        left, right = resolve_default(index, node.left, depth + 1), resolve_default(index, node.right, depth + 1)
        numbers = all(d.known and isinstance(d.value, (int, float)) and not isinstance(d.value, bool)
                      for d in (left, right))
        if numbers:
            try:
                return Default(True, NUMERIC_OPS[type(node.op)](left.value, right.value))
            except (ArithmeticError, ValueError):
                return unknown
        return unknown
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [resolve_default(index, e, depth + 1) for e in node.elts]
        return Default(True, [i.value for i in items]) if all(i.known for i in items) else unknown
    if isinstance(node, ast.Dict):
        if any(not isinstance(k, ast.Constant) or not isinstance(k.value, str) for k in node.keys):
            return unknown
        values = [resolve_default(index, v, depth + 1) for v in node.values]
        if all(v.known for v in values):
            return Default(True, {k.value: v.value for k, v in zip(node.keys, values)})  # type: ignore[union-attr]
        return unknown
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if name in ("Field", "field"):
            if "default" in keywords:
                return resolve_default(index, keywords["default"], depth + 1)
            if node.args and not (isinstance(node.args[0], ast.Constant) and node.args[0].value is Ellipsis):
                return resolve_default(index, node.args[0], depth + 1)
            if "default_factory" in keywords:
                return _factory(index, keywords["default_factory"], depth + 1)
            return Default(False, "required")
        if name == "get_field" and len(node.args) == 2 and isinstance(node.args[0], ast.Name) \
                and isinstance(node.args[1], ast.Constant):
            return resolve_default(index, index.class_values(node.args[0].id).get(str(node.args[1].value)), depth + 1)
        if name in EMPTY_FACTORIES and not node.args and not node.keywords:
            return Default(True, type(EMPTY_FACTORIES[name])())
        return unknown
    if isinstance(node, ast.Name):
        value = index.const(node.id)
        return resolve_default(index, value, depth + 1) if value is not None else unknown
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and index.cls(node.value.id) is not None:
        values = index.class_values(node.value.id)
        if node.attr in values:
            return resolve_default(index, values[node.attr], depth + 1)
    return unknown


def _factory(index: Index, node: ast.expr, depth: int) -> Default:
    if isinstance(node, ast.Name) and node.id in EMPTY_FACTORIES:
        return Default(True, type(EMPTY_FACTORIES[node.id])())
    if isinstance(node, ast.Lambda):
        return resolve_default(index, node.body, depth)
    return Default(False, f"{ast.unparse(node)}()")


# ---------------------------------------------------------------- annotations -> argparse kwargs


def _atoms(index: Index, node: ast.expr | None, depth: int = 0) -> list[tuple[str, Any]]:
    """Flatten an annotation into atoms: ('bool',), ('literal', values), ('list', elem), ('dataclass', name)..."""
    if node is None or depth > 12:
        return [("other", None)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _atoms(index, ast.parse(node.value, mode="eval").body, depth + 1)
        except SyntaxError:
            return [("other", None)]
    if isinstance(node, ast.Constant) and node.value is None:
        return [("None", None)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _atoms(index, node.left, depth + 1) + _atoms(index, node.right, depth + 1)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("Optional",):
            return _atoms(index, args[0], depth + 1) + [("None", None)]
        if head == "Union":
            return [a for arg in args for a in _atoms(index, arg, depth + 1)]
        if head == "Annotated":
            return _atoms(index, args[0], depth + 1)
        if head == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            nested = [x for a in args if not isinstance(a, ast.Constant) for x in _atoms(index, a, depth + 1)]
            for kind, extra in nested:
                if kind == "literal":
                    values += extra
            return [("literal", values)]
        if head in ("list", "List", "Sequence"):
            return [("list", _atoms(index, args[0], depth + 1))]
        if head in ("set", "Set"):
            return [("set", _atoms(index, args[0], depth + 1))]
        if head in ("tuple", "Tuple"):
            ellipsis = any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in args)
            return [("tuple", (_atoms(index, args[0], depth + 1), None if ellipsis else len(args)))]
        if head in ("dict", "Dict", "Mapping"):
            return [("dict", None)]
        if head in ("Callable", "type", "Type"):
            return [("other", head)]
        return _atoms(index, node.value, depth + 1)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    if name in ("bool", "int", "float", "str"):
        return [(name, None)]
    if name in ("dict", "Dict"):
        return [("dict", None)]
    if name in ("list", "List"):
        return [("list", [("str", None)])]
    if name is None:
        return [("other", None)]
    if index.cls(name) is not None:
        return [("dataclass", name)] if index.is_dataclass(name) else [("other", name)]
    alias = index.const(name)
    if alias is not None and isinstance(alias, (ast.Subscript, ast.BinOp)):
        return _atoms(index, alias, depth + 1)
    if alias is not None and isinstance(alias, ast.Call) and getattr(alias.func, "id", "") == "TypeAliasType":
        return _atoms(index, alias.args[1], depth + 1)
    return [("other", name)]


def _elem_type(atoms: list[tuple[str, Any]]) -> str:
    kinds = {k for k, _ in atoms}
    for kind in ("int", "float"):
        if kinds == {kind}:
            return kind
    return "str"


def field_kwargs(index: Index, field_name: str, annotation: ast.expr) -> dict[str, Any]:
    """Mirror of vLLM's `_compute_kwargs` for one dataclass field."""
    atoms = _atoms(index, annotation)
    kinds = {k for k, _ in atoms}
    out: dict[str, Any] = {"type": "str"}
    if "dataclass" in kinds:
        out["type"] = "json"
    elif kinds == {"bool", "str", "None"}:
        out.update(type="str", nargs="?")
    elif "bool" in kinds:
        out = {"action": "bool_optional"}
    elif "literal" in kinds:
        values = next(v for k, v in atoms if k == "literal")
        if values:
            out["type"] = {int: "int", float: "float"}.get(type(values[0]), "str")
            if "str" not in kinds:
                out["choices"] = [str(v) for v in sorted(values, key=str)]
    elif kinds & {"tuple", "list", "set"}:
        kind = next(k for k in ("tuple", "list", "set") if k in kinds)
        payload = next(v for k, v in atoms if k == kind)
        if kind == "tuple":
            elem, count = payload
            out.update(type=_elem_type(elem), nargs="+" if count is None else count)
        else:
            out.update(type=_elem_type(payload), nargs="+")
    elif "int" in kinds:
        # engine/arg_utils.py: max_model_len reads human_readable_int_or_auto ("auto" / -1: fit to the KV cache)
        # in every release read, 0.17.0-0.34.0; the HUMAN_INT_FIELDS read human_readable_int
        out["type"] = ("human_int_or_auto" if field_name == "max_model_len"
                       else "human_int" if field_name in HUMAN_INT_FIELDS else "int")
    elif "float" in kinds:
        out["type"] = "float"
    elif "dict" in kinds and ("str" in kinds or "other" in kinds):
        out["type"] = "str"
    elif "dict" in kinds:
        out["type"] = "json"
    if "None" in kinds and "bool" not in kinds and "choices" in out:
        out["choices"].append("None")
    return out


# ---------------------------------------------------------------- replaying add_argument calls


@dataclass
class Kwargs:
    """A `get_kwargs(Cls)` result held in a local variable, with the edits made to it."""

    cls: str
    edits: dict[str, dict[str, Any]] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)


class Replayer:
    """Walks parser-building functions and records every option they add."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.options: list[tuple[list[str], dict[str, Any]]] = []
        self.depth = 0

    def run_function(self, fn: ast.FunctionDef, cls: str | None, bound: dict[str, Any]) -> None:
        if self.depth > 8:
            return
        self.depth += 1
        env = dict(bound)
        self._block(fn.body, env, cls)
        self.depth -= 1

    def _block(self, body: list[ast.stmt], env: dict[str, Any], cls: str | None) -> None:
        for stmt in body:
            self._stmt(stmt, env, cls)

    def _stmt(self, stmt: ast.stmt, env: dict[str, Any], cls: str | None) -> None:
        if isinstance(stmt, (ast.If, ast.With, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                self._block(getattr(stmt, part, []) or [], env, cls)
            for handler in getattr(stmt, "handlers", []):
                self._block(handler.body, env, cls)
            return
        if isinstance(stmt, ast.For):
            self._for(stmt, env, cls)
            return
        if isinstance(stmt, ast.Assign):
            self._assign(stmt, env, cls)
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                key = self._subscript_path(target, env)
                if key and len(key[1]) == 2:
                    key[0].edits.setdefault(key[1][0], {})[key[1][1]] = None
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                self._call(node, env, cls)

    def _kwargs_source(self, value: ast.expr, env: dict[str, Any], cls: str | None) -> Kwargs | None:
        if isinstance(value, ast.Call):
            func = value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "get_kwargs" and value.args:
                arg = value.args[0]
                target = cls if isinstance(arg, ast.Name) and arg.id == "cls" else getattr(arg, "id", None)
                return Kwargs(target) if target else None
            for arg in value.args:
                if isinstance(arg, ast.Name) and isinstance(env.get(arg.id), Kwargs):
                    return env[arg.id]
        if isinstance(value, ast.Name) and isinstance(env.get(value.id), Kwargs):
            return env[value.id]
        return None

    def _assign(self, stmt: ast.Assign, env: dict[str, Any], cls: str | None) -> None:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            source = self._kwargs_source(stmt.value, env, cls)
            if source is not None:
                env[target.id] = source
            return
        key = self._subscript_path(target, env)
        if key and len(key[1]) == 2:
            key[0].edits.setdefault(key[1][0], {})[key[1][1]] = stmt.value

    def _subscript_path(self, node: ast.expr, env: dict[str, Any]) -> tuple[Kwargs, list[str]] | None:
        keys: list[str] = []
        while isinstance(node, ast.Subscript):
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                return None
            keys.insert(0, node.slice.value)
            node = node.value
        if isinstance(node, ast.Name) and isinstance(env.get(node.id), Kwargs):
            return env[node.id], keys
        return None

    def _for(self, stmt: ast.For, env: dict[str, Any], cls: str | None) -> None:
        it = stmt.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and isinstance(it.func.value, ast.Name) and isinstance(env.get(it.func.value.id), Kwargs)):
            source = env[it.func.value.id]
            adds = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
                       for n in ast.walk(stmt))
            if adds:
                for name, annotation in self.index.fields(source.cls):
                    if name in source.removed:
                        continue
                    kwargs = self._materialize(source, name, annotation)
                    kwargs["dest"] = name
                    self.options.append(([f"--{name.replace('_', '-')}"], kwargs))
            return
        self._block(stmt.body, env, cls)

    def _materialize(self, source: Kwargs, name: str, annotation: ast.expr | None) -> dict[str, Any]:
        kwargs = field_kwargs(self.index, name, annotation) if annotation is not None else {"type": "str"}
        kwargs["default"] = resolve_default(self.index, self.index.class_values(source.cls).get(name))
        for key, value in source.edits.get(name, {}).items():
            if value is None:
                kwargs.pop(key, None)
            else:
                kwargs.update(self._explicit({key: value}))
        return kwargs

    def _call(self, call: ast.Call, env: dict[str, Any], cls: str | None) -> None:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "add_cli_args_from_dataclass" and len(call.args) >= 2:
            target = getattr(call.args[1], "id", None)
            target = cls if target == "cls" else target
            if target:
                self._annotated_fields(target)
            return
        if not isinstance(func, ast.Attribute):
            return
        if func.attr == "add_argument":
            self._add_argument(call, env)
            return
        owner = func.value
        target: str | None = None
        if isinstance(owner, ast.Name):
            target = cls if owner.id in ("cls", "self") else owner.id
        elif isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super" and cls:
            bases = self.index.bases(cls)
            target = bases[0] if bases else None
        if not target or self.index.cls(target) is None:
            return
        found = self.index.method(target, func.attr)
        if found is None or func.attr not in ("add_cli_args", "_customize_cli_kwargs"):
            return
        method, _defined_in = found
        params = [a.arg for a in method.args.args]
        if params and params[0] in ("cls", "self"):
            params = params[1:]
        bound = {}
        for param, arg in zip(params, call.args):
            if isinstance(arg, ast.Name) and arg.id in env:
                bound[param] = env[arg.id]
        cls_for_call = cls if isinstance(owner, ast.Call) or getattr(owner, "id", "") in ("cls", "self") else target
        self.run_function(method, cls_for_call, bound)

    def _annotated_fields(self, class_name: str) -> None:
        """Mirror of SGLang's add_cli_args_from_dataclass: fields annotated A[T, "help"] or A[T, Arg(...)]."""
        fields = self.index.fields(class_name)
        field_values = self.index.class_values(class_name)
        for module in self.index.modules:  # SGLang >= 0.5.20: namespaces in arg_groups/fields/ carry _NS_PATH
            if "/arg_groups/fields/" in module.path:
                for node in module.classes.values():
                    if any(isinstance(i, (ast.Assign, ast.AnnAssign)) and "_NS_PATH" in ast.unparse(i) for i in node.body):
                        fields += self.index.fields(node.name)
                        field_values = {**self.index.class_values(node.name), **field_values}
        for name, annotation in fields:
            if not (isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", "") in ("A", "Annotated")):
                continue
            parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            meta: dict[str, ast.expr] | None = None
            for part in parts[1:]:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    meta = {}
                    break
                if isinstance(part, ast.Call) and getattr(part.func, "id", "") == "Arg":
                    meta = {kw.arg: kw.value for kw in part.keywords if kw.arg}
                    break
            if meta is None:
                continue
            if isinstance(meta.get("no_cli"), ast.Constant) and meta["no_cli"].value:
                continue
            cli = meta.get("cli_name")
            primary = cli.value if isinstance(cli, ast.Constant) else f"--{name.replace('_', '-')}"
            aliases = self._choices(meta["aliases"]) if "aliases" in meta else []
            names = [primary, *(aliases or [])]
            atoms = [a for a in _atoms(self.index, parts[0]) if a[0] != "None"]
            kinds = {k for k, _ in atoms}
            kwargs: dict[str, Any] = {"type": "str"}
            if "action" in meta:
                kwargs.update(self._explicit({"action": meta["action"]}))
                extra = meta.get("action_kwargs")
                if isinstance(extra, ast.Dict):
                    kwargs.update(self._explicit({k.value: v for k, v in zip(extra.keys, extra.values)
                                                  if isinstance(k, ast.Constant)}))
                kwargs.setdefault("action", "store")
            elif "literal" in kinds and len(kinds) == 1:
                values = atoms[0][1]
                kwargs["type"] = {int: "int", float: "float"}.get(type(values[0]), "str") if values else "str"
                kwargs["choices"] = self._choices(meta["choices"]) if "choices" in meta else [str(v) for v in values]
            elif kinds == {"list"} and "type_parser" not in meta:
                kwargs.update(type=_elem_type(atoms[0][1]), nargs="+")
                if "nargs" in meta and isinstance(meta["nargs"], ast.Constant):
                    kwargs["nargs"] = meta["nargs"].value
                if "choices" in meta:
                    kwargs["choices"] = self._choices(meta["choices"])
            elif kinds == {"bool"}:
                kwargs = {"action": "store_true"}
            else:
                kwargs["type"] = _type_name(meta["type_parser"]) if "type_parser" in meta else _elem_type(atoms)
                if "choices" in meta:
                    kwargs["choices"] = self._choices(meta["choices"])
                if "nargs" in meta and isinstance(meta["nargs"], ast.Constant):
                    kwargs["nargs"] = meta["nargs"].value
            kwargs["default"] = resolve_default(self.index, field_values.get(name))
            kwargs["dest"] = name
            if "fallback" in meta:
                kwargs["fallback"] = resolve_default(self.index, meta["fallback"])
            self.options.append((names, kwargs))

    def _add_argument(self, call: ast.Call, env: dict[str, Any]) -> None:
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        names = [n for n in names if n.startswith("-")]
        if not names:
            return
        kwargs: dict[str, Any] = {"type": "str"}
        explicit: dict[str, ast.expr] = {}
        for kw in call.keywords:
            if kw.arg is None:
                value = kw.value
                if isinstance(value, ast.Dict):  # **{**group_kwargs["field"], "default": None}
                    for key, item in zip(value.keys, value.values):
                        if key is None:
                            value = item
                        elif isinstance(key, ast.Constant):
                            explicit[str(key.value)] = item
                path = self._subscript_path(value, env)
                if path and len(path[1]) == 1:
                    source, (field_name,) = path
                    annotation = dict(self.index.fields(source.cls)).get(field_name)
                    kwargs = self._materialize(source, field_name, annotation)
            else:
                explicit[kw.arg] = kw.value
        kwargs.update(self._explicit(explicit))
        dest = explicit.get("dest")
        long_names = [n for n in names if n.startswith("--")]
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            kwargs["dest"] = dest.value
        else:
            kwargs["dest"] = (long_names or names)[0].lstrip("-").replace("-", "_")
        self.options.append((names, kwargs))

    def _explicit(self, explicit: dict[str, ast.expr]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "action" in explicit:
            node = explicit["action"]
            text = node.value if isinstance(node, ast.Constant) else ast.unparse(node)
            if "BooleanOptionalAction" in str(text):
                out.update(action="bool_optional", type="str")
            elif text in ("store_true", "store_false", "append", "count"):
                out["action"] = text
                if text != "append":
                    out["type"] = "str"
            elif "DeprecatedAlias" in str(text) or "DeprecatedStore" in str(text) and "True" not in str(text):
                out.update(action="store", deprecated=True)  # SGLang: old spelling that still takes a value
            elif "Deprecated" in str(text):
                out.update(action="store_true", type="str", deprecated=True)
        if "type" in explicit:
            out["type"] = _type_name(explicit["type"])
        if "nargs" in explicit:
            node = explicit["nargs"]
            if isinstance(node, ast.Constant):
                out["nargs"] = node.value
        if "choices" in explicit:
            out["choices"] = self._choices(explicit["choices"])
        if "deprecated" in explicit and isinstance(explicit["deprecated"], ast.Constant):
            out["deprecated"] = bool(explicit["deprecated"].value)
        if "default" in explicit:
            out["default"] = resolve_default(self.index, explicit["default"])
        return out

    def _choices(self, node: ast.expr, depth: int = 0) -> list[str] | None:
        if depth > 6:
            return None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            values: list[str] = []
            for elt in node.elts:
                if isinstance(elt, ast.Constant):
                    values.append(str(elt.value))
                elif isinstance(elt, ast.Starred):
                    inner = self._choices(elt.value, depth + 1)
                    if inner is None:
                        return None
                    values += inner
                else:
                    return None
            return values
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            return [str(k) for k in keys] if len(keys) == len(node.keys) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._choices(node.left, depth + 1), self._choices(node.right, depth + 1)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.Call):
            fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fname in ("list", "sorted", "tuple", "set") and node.args:
                return self._choices(node.args[0], depth + 1)
            if fname == "keys" and isinstance(node.func, ast.Attribute):
                return self._choices(node.func.value, depth + 1)
            if fname == "get_args" and node.args:
                atoms = _atoms(self.index, node.args[0])
                values = [str(v) for k, vals in atoms if k == "literal" for v in vals]
                return values or None
            return None
        if isinstance(node, ast.Name):
            value = self.index.const(node.id)
            return self._choices(value, depth + 1) if value is not None else None
        return None


def _type_name(node: ast.expr) -> str:
    text = ast.unparse(node)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "optional_type" and node.args:
        return _type_name(node.args[0])
    if text in ("int", "float", "str"):
        return text
    if text in ("json.loads",) or "parse_type(json.loads)" in text:
        return "json"
    if text == "human_readable_int_or_auto":
        return "human_int_or_auto"
    if text == "human_readable_int":
        return "human_int"
    return "str"


# ---------------------------------------------------------------- per-backend entry points


# Defaults the engine only settles at startup: (rule, functions that may resolve it). A rule is recorded
# for a version only where one of those functions exists in its wheel and names the field; `default_source`
# lists them as file::function.
RUNTIME_DEFAULTS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "vllm": {
        "max_num_batched_tokens": (
            "None: picked at startup from the usage context and the GPU's memory (EngineArgs.get_batch_defaults; "
            "the OpenAI server on a CUDA GPU >= 70 GiB that is not an A100: 8192, else 2048; some versions add a "
            "larger tier), doubled in throughput mode, at least max_model_len when chunked prefill is off",
            ("_set_default_max_num_seqs_and_batched_tokens_args", "=get_batch_defaults")),
        "max_num_seqs": (
            "None: picked at startup from the usage context and the GPU's memory (EngineArgs.get_batch_defaults; "
            "the OpenAI server on a CUDA GPU >= 70 GiB that is not an A100: 1024, else 256), doubled in "
            "throughput mode",
            ("_set_default_max_num_seqs_and_batched_tokens_args", "=get_batch_defaults")),
        "block_size": (
            "None: the platform's block size (16 on CUDA, CacheConfig.DEFAULT_BLOCK_SIZE / "
            "check_and_update_config); hybrid (attention + mamba) models raise it so one attention page holds "
            "one mamba state",
            ("__post_init__", "_apply_block_size_default", "check_and_update_config",
             "_align_hybrid_block_size", "update_block_size_for_backend")),
        "gpu_memory_utilization": (
            "None: CacheConfig.resolved_gpu_memory_utilization (1.0 with the extensible KV cache, else 0.92)",
            ("resolved_gpu_memory_utilization",)),
        "enable_prefix_caching": (
            "None: on unless the model or its attention backend rules it out "
            "(_set_default_chunked_prefill_and_prefix_caching_args)",
            ("_set_default_chunked_prefill_and_prefix_caching_args",)),
        "enable_chunked_prefill": (
            "None: on unless the model or its runner rules it out "
            "(_set_default_chunked_prefill_and_prefix_caching_args)",
            ("_set_default_chunked_prefill_and_prefix_caching_args",)),
        "max_model_len": (
            "None: the model's derived maximum (max_position_embeddings and rope scaling of its config)",
            ("get_and_verify_max_len", "_get_and_verify_max_len", "__post_init__")),
    },
    "sglang": {
        "mem_fraction_static": (
            "None: (GPU memory - reserve) / GPU memory, the reserve growing with chunked_prefill_size, the "
            "decode CUDA-graph batch size and TP x PP (at least 10 GiB above 60 GiB), scaled down for "
            "multimodal models unless --language-only",
            ("_handle_gpu_memory_settings", "handle_gpu_memory_settings")),
        "chunked_prefill_size": (
            "None: by GPU memory (< 20 GiB: 2048; 20-35 GiB: 2048 or 4096 by version; < 60 GiB: 4096; "
            "< 160 GiB: 8192; else 16384)",
            ("_handle_gpu_memory_settings", "handle_gpu_memory_settings")),
        "cuda_graph_max_bs": (
            "None: by GPU memory and TP size (_handle_gpu_memory_settings)",
            ("_handle_gpu_memory_settings", "handle_gpu_memory_settings", "_handle_cuda_graph",
             "handle_cuda_graph_config")),
        "max_running_requests": (
            "None: from the KV pool (max_total_num_tokens / context_len x 512, clamped to 2048-4096; hybrid "
            "models at most a third of the mamba slots); 48 with speculative decoding",
            ("=init_memory_pool", "=resolve_max_num_reqs", "_handle_speculative_decoding")),
        "page_size": (
            "None: 1, or what the attention backend needs (_handle_page_size)",
            ("_handle_page_size", "handle_page_size", "handle_attention_backend_compatibility",
             "_handle_attention_backend_compatibility")),
        "max_mamba_cache_size": (
            "None: the mamba pool takes mamba_full_memory_ratio / (1 + ratio) of the memory left for caches",
            ("handle_max_mamba_cache", "_handle_max_mamba_cache")),
        "speculative_num_steps": (
            "None: auto_choose_speculative_params (EAGLE / NEXTN / MTP: chosen per model) when a speculative "
            "algorithm is set",
            ("_handle_speculative_decoding", "handle_speculative_decoding", "auto_choose_speculative_params")),
        "speculative_eagle_topk": (
            "None: auto_choose_speculative_params when a speculative algorithm is set",
            ("_handle_speculative_decoding", "handle_speculative_decoding", "auto_choose_speculative_params")),
        "speculative_num_draft_tokens": (
            "None: auto_choose_speculative_params when a speculative algorithm is set (topk 1: steps + 1)",
            ("_handle_speculative_decoding", "handle_speculative_decoding", "auto_choose_speculative_params")),
    },
}


def _stores(target: ast.expr, name: str) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_stores(t, name) for t in target.elts)
    if isinstance(target, ast.Attribute):
        return target.attr == name
    return isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and target.slice.value == name


def _declares(node: ast.AST, name: str) -> bool:
    """SGLang >= 0.5.19 resolution hooks: declare_resolution(server_args, source, name=value)."""
    if not isinstance(node, ast.Call):
        return False
    called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return called == "declare_resolution" and any(kw.arg == name for kw in node.keywords)


def _resolves(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether a function sets the field `name`: stores it (attribute or string key, also in tuple
    unpacking), declares it (declare_resolution, setattr) or is named after it (a resolving property)."""
    if name in fn.name:
        return True
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        if any(_stores(t, name) for t in targets) or _declares(node, name):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr" and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == name:
            return True
    return False


class Resolvers:
    """Every function of one version's sources (module level and methods), to find where a default is set."""

    MAX_LISTED = 6

    def __init__(self, sources: dict[str, str]) -> None:
        self.functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        for path, text in sorted(sources.items()):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for owner in [tree, *(n for n in tree.body if isinstance(n, ast.ClassDef))]:
                prefix = f"{owner.name}." if isinstance(owner, ast.ClassDef) else ""
                for node in owner.body:
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.functions.append((f"{path}::{prefix}{node.name}", node))

    def find(self, dest: str, functions: tuple[str, ...]) -> list[str]:
        """file::Class.function of `functions` that set `dest` (a name starting with "=" computes it: it
        only has to name it), then any other function that declares it or stores `server_args.<dest>`."""
        names = [f.lstrip("=") for f in functions]
        named: list[tuple[int, str]] = []
        for where, fn in self.functions:
            if fn.name not in names:
                continue
            rank = names.index(fn.name)
            if _resolves(fn, dest) or functions[rank].startswith("=") and _names(fn, dest):
                named.append((rank, where))
        others = [where for where, fn in self.functions if fn.name not in names and _declares_or_sets(fn, dest)]
        return ([where for _, where in sorted(named)] + others)[: self.MAX_LISTED]


def _names(fn: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == name or isinstance(n, ast.Constant) and n.value == name
               or isinstance(n, ast.keyword) and n.arg == name for n in ast.walk(fn))


def _declares_or_sets(fn: ast.AST, name: str) -> bool:
    """SGLang's own ways of resolving a ServerArgs field: declare_resolution(...) or server_args.<name> = ..."""
    for node in ast.walk(fn):
        if _declares(node, name):
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == name and getattr(t.value, "id", "") == "server_args"
                   for t in targets):
                return True
    return False


def _capability_flags(fn: ast.FunctionDef) -> dict[str, list[int]]:
    """Local names bound to `current_platform.is_device_capability((12, 1))` -> [12, 1]."""
    out: dict[str, list[int]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and getattr(node.value.func, "attr", "") == "is_device_capability" \
                and node.value.args and isinstance(node.value.args[0], ast.Tuple):
            cap = [e.value for e in node.value.args[0].elts if isinstance(e, ast.Constant)]
            if len(cap) == 2:
                out[node.targets[0].id] = cap
    return out


def _tier_condition(test: ast.expr, capabilities: dict[str, list[int]]) -> dict[str, Any]:
    """`device_memory >= 70 * GiB_bytes and "a100" not in device_name and not is_gb10` -> {"min_memory_gib": 70,
    "exclude_names": ["a100"], "exclude_capabilities": [[12, 1]]}; a conjunct of another shape leaves the
    tier inexact."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out: dict[str, Any] = {"when": ast.unparse(test), "min_memory_gib": 0, "exclude_names": [],
                           "exclude_capabilities": [], "exact": True}
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) \
                and getattr(part.operand, "id", "") in capabilities:
            out["exclude_capabilities"].append(capabilities[part.operand.id])  # type: ignore[union-attr]
            continue
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.GtE) \
                and getattr(part.left, "id", "") == "device_memory":
            right = part.comparators[0]
            if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Mult) and isinstance(right.left, ast.Constant) \
                    and getattr(right.right, "id", "") == "GiB_bytes":
                out["min_memory_gib"] = right.left.value
                continue
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.NotIn) \
                and isinstance(part.left, ast.Constant) and getattr(part.comparators[0], "id", "") == "device_name":
            out["exclude_names"].append(str(part.left.value))
            continue
        out["exact"] = False
    return out


def vllm_batch_tiers(index: Index) -> dict[str, list[dict[str, Any]]]:
    """EngineArgs.get_batch_defaults as data: per flag, the `vllm serve` (OPENAI_API_SERVER) value of each
    branch of its device-memory if/elif/else chain, first match wins (platform-specific TPU / CPU branches
    that follow are left out: the planner sizes CUDA GPUs)."""
    found = index.method("EngineArgs", "get_batch_defaults")
    if found is None:
        return {}
    chain = next((s for s in found[0].body if isinstance(s, ast.If)
                  and "default_max_num_batched_tokens" in ast.unparse(s.body[0])), None)
    tiers: dict[str, list[dict[str, Any]]] = {"max_num_batched_tokens": [], "max_num_seqs": []}
    capabilities = _capability_flags(found[0])
    branches: list[tuple[dict[str, Any], list[ast.stmt]]] = []
    node: ast.stmt | None = chain
    while isinstance(node, ast.If):
        branches.append((_tier_condition(node.test, capabilities), node.body))
        rest, node = node.orelse, None
        if len(rest) == 1 and isinstance(rest[0], ast.If):
            node = rest[0]
        elif rest:
            branches.append(({"when": "else", "min_memory_gib": 0, "exclude_names": [], "exclude_capabilities": [],
                              "exact": True}, rest))
    for condition, body in branches:
        for stmt in body:
            if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Dict)):
                continue
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            flag = getattr(target, "id", "").removeprefix("default_")
            if flag not in tiers:
                continue
            for key, value in zip(stmt.value.keys, stmt.value.values):
                if key is not None and ast.unparse(key).endswith("OPENAI_API_SERVER"):
                    resolved = resolve_default(index, value)
                    if resolved.known:
                        tiers[flag].append({**condition, "value": resolved.value})
    return {flag: rows for flag, rows in tiers.items() if rows}


BASE_DEFAULTS = {"store_true": False, "store_false": True}


def _default_entry(backend: str, kwargs: dict[str, Any], action: str,
                   found: Resolvers) -> tuple[Any, str | None, tuple[str, ...]]:
    """(default value or NOT_RECORDED, rule, source) of one option."""
    default: Default = kwargs.get("default") or Default(True, BASE_DEFAULTS.get(action))
    fallback: Default | None = kwargs.get("fallback")
    dest = kwargs.get("dest", "")
    rule, functions = RUNTIME_DEFAULTS.get(backend, {}).get(dest, (None, ()))
    placeholder = default.known and default.value is None
    where = found.find(dest, functions) if placeholder and (functions or fallback) else []
    if placeholder and fallback is not None and fallback.known:
        # SGLang Arg(resolvable=True, fallback=X): a resolution hook may declare a value, else X applies
        return fallback.value, rule or f"None on the command line: a resolution hook may set it, else {fallback.value!r}", \
            tuple(where)
    if where and rule:
        return None, rule, tuple(where)
    if not default.known:
        if default.value == "required":
            return NOT_RECORDED, None, ()
        return NOT_RECORDED, f"computed: `{default.value}`", ()
    return default.value, None, ()


def _schema(backend: str, version: str, source: str, options: list[tuple[list[str], dict[str, Any]]],
            sources: dict[str, str] | None = None, tiers: dict[str, list[dict[str, Any]]] | None = None) -> FlagSchema:
    flags: dict[str, FlagSpec] = {}
    aliases: dict[str, str] = {}
    found = Resolvers(sources or {})
    for names, kwargs in options:
        canonical = max((n for n in names if n.startswith("--")), key=len, default=names[0])
        action = kwargs.get("action", "store")
        typ = kwargs.get("type", "str")
        if action in ("bool_optional", "store_true", "store_false", "count"):
            typ = "str"
        choices = kwargs.get("choices") if action != "bool_optional" else None
        default, rule, where = _default_entry(backend, kwargs, action, found)
        by_device = tuple((tiers or {}).get(kwargs.get("dest", ""), ())) if rule else ()
        flags[canonical] = FlagSpec(canonical, typ, tuple(choices) if choices is not None else None,
                                    kwargs.get("nargs"), action, bool(kwargs.get("deprecated", False)),
                                    default, rule, where, by_device)
        for name in names:
            if name != canonical:
                aliases[name] = canonical
    flags.setdefault("--help", FlagSpec("--help", action="help"))
    aliases.setdefault("-h", "--help")
    return FlagSchema(backend, version, flags, aliases, source, EXTRACTOR, normalize_underscores=backend == "vllm")


def _flag_sources(backend: str, sources: dict[str, str]) -> dict[str, str]:
    return {path: text for path, text in sources.items() if SOURCE_PATTERNS[backend].search(path)}


def extract_vllm(version: str, wheel: str, sources: dict[str, str]) -> FlagSchema:
    """Replay make_arg_parser of one vLLM version."""
    index = Index(_flag_sources("vllm", sources))
    replayer = Replayer(index)
    fn = index.function("make_arg_parser")
    if fn is None:
        raise SystemExit(f"vllm {version}: no make_arg_parser found")
    replayer.run_function(fn, None, {})
    return _schema("vllm", version, wheel, replayer.options, sources, vllm_batch_tiers(index))


def extract_sglang(version: str, wheel: str, sources: dict[str, str]) -> FlagSchema:
    """Replay ServerArgs.add_cli_args of one SGLang version."""
    index = Index(_flag_sources("sglang", sources))
    found = index.method("ServerArgs", "add_cli_args")
    if found is None:
        raise SystemExit(f"sglang {version}: no ServerArgs.add_cli_args found")
    replayer = Replayer(index)
    replayer.run_function(found[0], "ServerArgs", {})
    return _schema("sglang", version, wheel, replayer.options, sources)


def compare(static: FlagSchema, real: dict[str, Any]) -> dict[str, Any]:
    """How close the static schema is to the real parser's dump: names, then attributes of shared names."""
    real_schema = FlagSchema.from_json(real)
    static_names, real_names = set(static.option_strings()), set(real_schema.option_strings())
    shared = sorted(set(static.flags) & set(real_schema.flags))
    attr_diffs = {}
    for name in shared:
        a, b = static.flags[name], real_schema.flags[name]
        diffs = [k for k in ("type", "choices", "nargs", "action") if getattr(a, k) != getattr(b, k)]
        if a.default is not NOT_RECORDED and b.default is not NOT_RECORDED and a.default_rule is None \
                and a.default != b.default:
            diffs.append("default")
        if diffs:
            attr_diffs[name] = {k: [getattr(a, k), getattr(b, k)] for k in diffs}
    return {
        "real_options": len(real_names), "static_options": len(static_names),
        "matched_options": len(static_names & real_names),
        "missing_in_static": sorted(real_names - static_names),
        "extra_in_static": sorted(static_names - real_names),
        "real_flags": len(real_schema.flags), "flags_with_identical_attributes": len(shared) - len(attr_diffs),
        "attribute_differences": attr_diffs,
    }


def default_cache() -> Path:
    """The user's cache directory for extracted wheel sources: $XDG_CACHE_HOME (else ~/.cache)/qwen-doctor."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qwen-doctor" / "wheel-sources"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("backend", choices=["vllm", "sglang"])
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--out", type=Path, default=ROOT / "doctor" / "flags" / "schemas")
    parser.add_argument("--cache", type=Path, default=default_cache(),
                        help="where the few extracted source files are kept (default: the user's cache directory, "
                             "$XDG_CACHE_HOME/qwen-doctor/wheel-sources)")
    parser.add_argument("--compare-real", metavar="PYTHON",
                        help="a python with this backend installed: compare with its real parser")
    args = parser.parse_args(argv)
    extract = extract_vllm if args.backend == "vllm" else extract_sglang
    args.out.mkdir(parents=True, exist_ok=True)
    for version in args.versions:
        wheel, sources = cached_sources(args.backend, version, args.cache)
        schema = extract(version, wheel, sources)
        target = args.out / f"{args.backend}-{version}.json"
        target.write_text(json.dumps(schema.to_json(), indent=0, sort_keys=False) + "\n", encoding="utf-8")
        print(f"{args.backend} {version}: {len(schema.flags)} flags, {len(schema.option_strings())} options -> {target}")
        if args.compare_real:
            from doctor.flags.bridge import real_schema

            report = compare(schema, real_schema(args.backend, args.compare_real))
            print(json.dumps(report, indent=1))
    return 0




if __name__ == "__main__":
    sys.exit(main())
