"""Mine the error and warning messages that serving stacks print, from their published wheels, statically.

Nothing is installed or imported. For each package and release the script reads only the serving-relevant
Python modules out of the wheel on PyPI (HTTP range requests, as scripts/extract_flag_schema.py does), parses
them with `ast` and turns the first argument of

- `raise SomeError(...)` (directly, or through a variable assigned earlier in the same function),
- `logger.error / warning / warn / exception / critical / fatal` (and vLLM's `*_once` variants),
- `assert test, msg` (its message) and a bare `assert test` (the statement itself, which is all a traceback prints),
- `errors.append("...")` where the module raises that list's items joined (`raise ValueError(" ".join(errors))`),

into a template: f-string fields, `%s` / `%d` / `%.2f` arguments and `str.format` fields all become `{}`.
Templates are merged across releases into `remedies/signatures/<package>.json` (template, kind, modules,
releases that print it), the data the catalogue is reviewed against and that tests/test_remedies_signatures.py
checks each entry's `versions:` claims with.

Coverage is printed per package: of the templates that describe a failure a user can fix (heuristic: an
error/warning whose text names a resource, limit, flag, version or setting; see USER_FIXABLE), how many a
catalogue remedy matches when the template is rendered with sample values.

Usage:
    python scripts/mine_signatures.py                       # representative releases of every package
    python scripts/mine_signatures.py vllm --versions 0.8.5 0.34.0 --max-files 40
    python scripts/mine_signatures.py vllm --all-minors     # newest patch of every vLLM minor from 0.8
    python scripts/mine_signatures.py --coverage-only       # report coverage of the committed JSON
    python scripts/mine_signatures.py --write-versions      # refresh the catalogue's `versions:` claims
    python scripts/mine_signatures.py --write-links         # refresh remedies/template_links.json (entry -> sites)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import os
import re
import sys
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from extract_flag_schema import _HttpFile  # noqa: E402  (shared range-request reader)

OUT_DIR = ROOT / "remedies" / "signatures"
SCHEMAS = ROOT / "doctor" / "flags" / "schemas"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "qwen-doctor" / "signature-sources"

# Serving-relevant modules per package (config, memory profiling, KV cache, model loading, distributed,
# scheduler, executor, HF download, CUDA initialisation). Kept narrow so the committed data stays small.
MODULES: dict[str, re.Pattern[str]] = {
    "vllm": re.compile(
        r"^vllm/("
        r"config(/[a-z_]+)?\.py|engine/arg_utils\.py|engine/llm_engine\.py|engine/multiprocessing/engine\.py"
        r"|worker/(worker|model_runner|cache_engine)\.py|executor/(ray_utils|multiproc_worker_utils)\.py"
        r"|v1/core/(kv_cache_utils|kv_cache_planning|sched/scheduler)\.py"
        r"|v1/engine/(core|core_client|utils|processor|input_processor|llm_engine|async_llm)\.py"
        r"|v1/executor/(multiproc_executor|ray_utils|ray_executor|abstract)\.py"
        r"|v1/worker/(gpu_worker|gpu_model_runner|worker_base|utils)\.py|v1/worker/gpu/[a-z_]+\.py|v1/utils\.py"
        r"|distributed/(parallel_state|utils)\.py|distributed/device_communicators/(shm_broadcast|pynccl_wrapper)\.py"
        r"|model_executor/models/registry\.py|model_executor/model_loader/[a-z_]+\.py"
        r"|model_executor/layers/quantization/utils/marlin_utils_fp8\.py|platforms/cuda\.py"
        r"|entrypoints/openai/(api_server|serving_engine)\.py|entrypoints/utils\.py|entrypoints/llm\.py"
        r"|transformers_utils/config\.py|utils/__init__\.py|utils\.py"
        r")$"
    ),
    "sglang": re.compile(
        r"^sglang/srt/("
        r"managers/(scheduler|tokenizer_manager|utils|schedule_batch|tp_worker|data_parallel_controller)\.py"
        r"|model_executor/(model_runner|cuda_graph_runner)\.py|model_executor/model_runner_kv_cache_mixin\.py"
        r"|mem_cache/(common|memory_pool|allocator)\.py|configs/model_config\.py|server_args\.py"
        r"|entrypoints/(engine|http_server)\.py|layers/sampler\.py|distributed/parallel_state\.py"
        r"|distributed/device_communicators/pynccl_wrapper\.py|hf_transformers_utils\.py|utils\.py|utils/common\.py"
        r")$"
    ),
    "huggingface_hub": re.compile(
        r"^huggingface_hub/(file_download|_snapshot_download|errors|hf_api|utils/_errors|utils/_http)\.py$"
    ),
    "transformers": re.compile(
        r"^transformers/(models/auto/(configuration_auto|auto_factory|tokenization_auto|processing_auto)|utils/hub"
        r"|configuration_utils|modeling_utils)\.py$"
    ),
    "ray": re.compile(
        r"^ray/(exceptions|_private/(worker|node|services|utils)|util/placement_group|scripts/scripts)\.py$"
    ),
    "torch": re.compile(
        r"^torch/(cuda/__init__|distributed/(distributed_c10d|rendezvous|elastic/rendezvous/api)"
        r"|utils/_triton)\.py$"
    ),
}

# Representative releases (old and new wordings); --all-minors widens vLLM to every minor.
DEFAULT_VERSIONS: dict[str, list[str]] = {
    "vllm": ["0.8.5", "0.10.2", "0.17.0", "0.26.0", "0.32.0", "0.34.0"],
    "sglang": ["0.4.0.post2", "0.4.3.post2", "0.4.6.post5", "0.4.9.post6", "0.5.2", "0.5.5", "0.5.9", "0.5.13",
               "0.5.17", "0.5.20", "0.5.23"],
    "huggingface_hub": ["0.25.2", "0.30.2", "1.0.0", "2.4.0"],
    "transformers": ["4.30.2", "4.36.2", "4.40.2", "4.45.2", "4.48.3", "4.51.3", "4.53.3", "4.57.1", "5.0.0", "5.25.0"],
    "ray": ["2.9.3", "2.40.0", "2.60.0"],
    "torch": ["2.4.0", "2.15.0"],
}

LOG_METHODS = {"error", "warning", "warn", "exception", "critical", "fatal",
               "error_once", "warning_once", "warn_once"}
PRINTF = re.compile(r"%(\([^)]*\))?[-+ #0]*(\d+|\*)?(\.\d+)?[sdrifgexXc]")
FORMAT_FIELD = re.compile(r"(?<!\{)\{[^{}]*\}(?!\})")
MIN_TEXT = 12  # characters of fixed text a template needs to be worth keeping

USER_FIXABLE = re.compile(
    r"memory|GiB|GB|MiB|\bGPU|cuda|CUDA|max_model_len|max_num_seqs|max_num_batched_tokens|context.length|"
    r"tensor.parallel|pipeline.parallel|divisible|not supported|exceeds?|larger than|smaller than|greater than|"
    r"time[d ]?out|timed out|disk|space|permission|token|gated|not found|no such|version|install|"
    r"quantiz|dtype|compute capability|--[a-z]|env(ironment)? var|please|try (increasing|decreasing|lowering|to)|"
    r"increase|decrease|lower|shared memory|/dev/shm|port|address|NCCL|driver|placement group|heartbeat",
    re.IGNORECASE,
)


# A stricter reading: the message itself tells the user what to change.
ACTIONABLE = re.compile(
    r"\btry\b|please|consider|\bset\b|increas|decreas|reduc|lower|--[a-z]|make sure|\bcheck\b|\buse\b|"
    r"upgrade|install|export ",
    re.IGNORECASE,
)


@dataclass
class Found:
    """One template as printed by one release, with where it is raised and the `if` test guarding it."""

    template: str
    kind: str
    module: str
    function: str = ""
    condition: str = ""


@dataclass(frozen=True)
class Site:
    """Where a template is printed: module, enclosing function (qualified) and guarding condition."""

    module: str
    function: str
    condition: str

    def to_json(self, flags: tuple[str, ...]) -> dict[str, object]:
        out: dict[str, object] = {"module": self.module, "function": self.function}
        if self.condition:
            out["condition"] = self.condition
        if flags:
            out["flags"] = list(flags)
        return out


@dataclass
class Signature:
    """A template merged across releases."""

    template: str
    kind: str
    modules: set[str] = field(default_factory=set)
    releases: set[str] = field(default_factory=set)
    sites: set[Site] = field(default_factory=set)

    def to_json(self, settings: frozenset[str] = frozenset()) -> dict[str, object]:
        out: dict[str, object] = {"template": self.template, "kind": self.kind, "modules": sorted(self.modules),
                                  "releases": sorted(self.releases, key=Version)}
        if self.sites:
            out["sites"] = [site.to_json(named_settings(f"{site.condition} {self.template}", settings))
                            for site in sorted(self.sites, key=lambda s: (s.module, s.function, s.condition))]
        return out


# ---------------------------------------------------------------- wheels


def _index(package: str) -> list[dict[str, object]]:
    request = urllib.request.Request(f"https://pypi.org/simple/{package.replace('_', '-')}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["files"]


def release_versions(package: str) -> list[Version]:
    """Final releases on PyPI that have a wheel, ascending."""
    found: set[Version] = set()
    for entry in _index(package):
        name = str(entry["filename"])
        if not name.endswith(".whl"):
            continue
        try:
            version = Version(name.split("-")[1])
        except (InvalidVersion, IndexError):
            continue
        if not version.is_prerelease and not version.is_devrelease:
            found.add(version)
    return sorted(found)


def newest_patch_per_minor(versions: Iterable[Version], since: Version) -> list[str]:
    """The newest release of each minor series from `since` on."""
    newest: dict[tuple[int, int], Version] = {}
    for version in versions:
        if version >= since:
            key = (version.major, version.minor)
            newest[key] = max(newest.get(key, version), version)
    return [str(v) for _, v in sorted(newest.items())]


def wheel_sources(package: str, version: str, max_files: int | None) -> dict[str, str]:
    """{path: source} of the serving modules of one release, read by range requests from PyPI."""
    prefix = f"{package.replace('-', '_')}-{version}-"
    names = [(str(f["filename"]), f) for f in _index(package)]
    wheels = [f for name, f in names if name.startswith(prefix) and name.endswith(".whl")]
    wheels.sort(key=lambda f: (not any(tag in str(f["filename"]) for tag in ("manylinux", "none-any")),
                               "x86_64" not in str(f["filename"]) and "none-any" not in str(f["filename"])))
    if not wheels:
        raise SystemExit(f"no wheel for {package}=={version} on PyPI")
    wheel = wheels[0]
    archive = zipfile.ZipFile(io.BufferedReader(_HttpFile(str(wheel["url"]), int(wheel["size"])), buffer_size=1 << 16))
    names = sorted(n for n in archive.namelist() if MODULES[package].search(n))[:max_files]
    return {name: archive.read(name).decode("utf-8", errors="replace") for name in names}


def cached_sources(package: str, version: str, cache: Path, max_files: int | None) -> dict[str, str]:
    """wheel_sources with an on-disk cache (outside git); a cached release is never fetched again."""
    digest = hashlib.sha1(MODULES[package].pattern.encode()).hexdigest()[:8]
    folder = cache / f"{package}-{version}-{digest}"  # a changed module list is fetched afresh
    marker = folder / ".complete"
    if marker.exists():
        return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.py"))}
    sources = wheel_sources(package, version, max_files)
    if not sources:
        raise SystemExit(f"{package}=={version}: no serving module matched {MODULES[package].pattern}")
    for rel, text in sources.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(version)
    return sources


# ---------------------------------------------------------------- templates


HOLE = "\x02"  # a runtime value inside a message, until the template is finished


def _text(node: ast.expr | None, names: dict[str, ast.expr], depth: int = 0) -> str | None:
    """The message an expression builds, runtime values as HOLE; None when it is not a message."""
    if node is None or depth > 6:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_field(v, names, depth) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, names, depth + 1), _text(node.right, names, depth + 1)
        if left is None and right is None:
            return None
        return (HOLE if left is None else left) + (HOLE if right is None else right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _text(node.left, names, depth + 1)
        return None if left is None else PRINTF.sub(HOLE, left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = _text(node.func.value, names, depth + 1)
        if base is None:
            return None
        return FORMAT_FIELD.sub(HOLE, base).replace("{{", "{").replace("}}", "}")
    if isinstance(node, ast.Name) and node.id in names:
        return _text(names[node.id], names, depth + 1)
    return None


def _field(value: ast.expr, names: dict[str, ast.expr], depth: int) -> str:
    """One part of an f-string: its text, a message variable of the same function inlined, or a hole."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.value.id in names:
        inlined = _text(names[value.value.id], names, depth + 1)
        if inlined is not None:
            return inlined
    return HOLE


def _template(raw: str, printf: bool) -> str:
    """Finish one message: lazy logging arguments become holes, holes become {}, whitespace collapsed."""
    text = PRINTF.sub(HOLE, raw) if printf else raw
    return " ".join(text.replace(HOLE, "{}").split())


def _useful(template: str) -> bool:
    fixed = template.replace("{}", "")
    return len(fixed.strip(" .:,'\"()[]")) >= MIN_TEXT


class _Collector(ast.NodeVisitor):
    """Walk one module, remembering string assignments per function so `raise X(msg)` resolves."""

    def __init__(self, module: str, source: str = "", joined: dict[str, str] | None = None) -> None:
        self.module = module
        self.source = source
        self.joined = joined or {}  # list name -> the exception class that raises its items joined
        self.found: list[Found] = []
        self._names: list[dict[str, ast.expr]] = [{}]
        self._earlier: list[dict[str, list[ast.expr]]] = [{}]  # a name's earlier assignments (other branches)
        self._scopes: list[str] = []
        self._tests: list[str] = []

    def _visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._names.append({})
        self._earlier.append({})
        self._scopes.append(node.name)
        tests, self._tests = self._tests, []
        self.generic_visit(node)
        self._tests = tests
        self._scopes.pop()
        self._names.pop()
        self._earlier.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scopes.append(node.name)
        self.generic_visit(node)
        self._scopes.pop()

    def visit_If(self, node: ast.If) -> None:
        """The body is guarded by the test, the else branch by its negation (an elif chain nests)."""
        self.visit(node.test)
        test = _source(node.test)
        for branch, guard in ((node.body, test), (node.orelse, f"not ({test})")):
            self._tests.append(guard)
            for statement in branch:
                self.visit(statement)
            self._tests.pop()

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert test, msg` raises AssertionError(msg) when the test is false. A bare `assert test` raises
        AssertionError without a message: the traceback prints the statement under the raising frame, so the
        statement as written (whitespace collapsed) is its template (remedies/bareassert.py reads it back)."""
        self._tests.append(f"not ({_source(node.test)})")
        if node.msg is not None:
            self._add(node.msg, "raise:AssertionError", printf=False)
        else:
            self._add_statement(node)
        self._tests.pop()
        self.generic_visit(node)

    def _add_statement(self, node: ast.Assert) -> None:
        statement = ast.get_source_segment(self.source, node) if self.source else None
        template = " ".join((statement or f"assert {ast.unparse(node.test)}").split())
        if _useful(template.removeprefix("assert ")):
            self.found.append(Found(template, "raise:AssertionError", self.module, ".".join(self._scopes),
                                    _chain(self._tests)))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                if target.id in self._names[-1]:
                    self._earlier[-1].setdefault(target.id, []).append(self._names[-1][target.id])
                self._names[-1][target.id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and node.target.id in self._names[-1]:
            self._names[-1][node.target.id] = ast.BinOp(self._names[-1][node.target.id], ast.Add(), node.value)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = exc.func.attr if isinstance(exc.func, ast.Attribute) else getattr(exc.func, "id", "?")
            self._add(exc.args[0], f"raise:{name}", printf=False)
            if isinstance(exc.args[0], ast.Name):  # a message assigned in each branch before one raise
                for earlier in self._earlier[-1].get(exc.args[0].id, ()):
                    self._add(earlier, f"raise:{name}", printf=False)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "append" and isinstance(func.value, ast.Name)
                and func.value.id in self.joined and node.args):
            self._add(node.args[0], f"raise:{self.joined[func.value.id]}", printf=False)
        if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and node.args:
            level = func.attr.removesuffix("_once")
            self._add(node.args[0], f"log:{'warning' if level == 'warn' else level}", printf=len(node.args) > 1,
                      lazy=node.args[1:])
        self.generic_visit(node)

    def _add(self, node: ast.expr, kind: str, printf: bool, lazy: list[ast.expr] | None = None) -> None:
        raw = _text(node, self._names[-1])
        if raw is None:
            return
        if lazy and raw.startswith("%s") and isinstance(lazy[0], ast.Name):
            inlined = _text(lazy[0], self._names[-1])  # logger.warning("%s ...", msg)
            raw = raw.replace("%s", inlined, 1) if inlined is not None else raw
        template = _template(raw, printf)
        if _useful(template):
            condition = _chain(self._tests)
            self.found.append(Found(template, kind, self.module, ".".join(self._scopes), condition))


MAX_CONDITION = 240
MAX_CHAIN = 480


def _chain(tests: list[str]) -> str:
    """The enclosing `if` tests of a raise, outermost first, joined by `and` (at most MAX_CHAIN characters,
    the innermost kept)."""
    parts = [f"({t})" if " or " in t and len(tests) > 1 else t for t in tests]
    while len(parts) > 1 and len(" and ".join(parts)) > MAX_CHAIN:
        parts.pop(0)
    return " and ".join(parts)


def _source(test: ast.expr) -> str:
    """The test as source text (one line, at most MAX_CONDITION characters)."""
    text = " ".join(ast.unparse(test).split())
    return text if len(text) <= MAX_CONDITION else text[:MAX_CONDITION - 1] + "…"


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|--[a-z][a-z0-9-]+")
# Identifiers that are also flag names but, in a condition, are ordinary variables (a model object, a device).
GENERIC_NAMES = frozenset({"model", "device", "config", "host", "port", "task", "runner", "seed", "version", "help",
                           "tokenizer", "revision", "load_format", "backend", "mode"})
ENV_VAR = re.compile(r"^(?:VLLM|SGLANG|SGL|NCCL|CUDA|HF|RAY|TORCH|PYTORCH)_[A-Z0-9_]+$")


def settings_of(package: str) -> frozenset[str]:
    """The engine flags (and aliases) of every release's flag schema of a package (doctor/flags/schemas)."""
    found: set[str] = set()
    for path in SCHEMAS.glob(f"{package}-*.json"):
        schema = json.loads(path.read_text(encoding="utf-8"))
        found |= set(schema["flags"]) | set(schema.get("aliases", {}))
    return frozenset(found)


def named_settings(text: str, flags: frozenset[str]) -> tuple[str, ...]:
    """The engine flags (as `--name`) and environment variables a condition or message names, in order."""
    found: list[str] = []
    for hit in IDENTIFIER.finditer(text):
        word, before = hit.group(), text[max(0, hit.start() - 5):hit.start()]
        if before.endswith(".") and not before.endswith("envs.") and ENV_VAR.match(word):
            continue  # an enum member or attribute (CompilationMode.VLLM_COMPILE), not an environment variable
        flag = word if word.startswith("--") else "--" + word.replace("_", "-")
        name = flag if flag in flags and (word.startswith("--") or word not in GENERIC_NAMES) else None
        name = name or (word if ENV_VAR.match(word) else None)
        if name and name not in found:
            found.append(name)
    return tuple(found)


def joined_lists(tree: ast.AST) -> dict[str, str]:
    """Lists whose items a module raises joined into one message (`raise ValueError(" ".join(error_msg))`, as
    vLLM's PEFTHelper.validate_legal does with what `_validate_features` appended): list name -> exception
    class. Each `<name>.append("...")` of the module is then a message that class raises."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
            continue
        exc = node.exc.func
        name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "?")
        for inner in ast.walk(node.exc.args[0]):
            if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "join"
                    and inner.args and isinstance(inner.args[0], ast.Name)):
                found[inner.args[0].id] = name
    return found


def templates(sources: dict[str, str]) -> Iterator[Found]:
    """Every message template of the given modules (modules that do not parse are skipped)."""
    for path, text in sorted(sources.items()):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        collector = _Collector(path, text, joined_lists(tree))
        collector.visit(tree)
        yield from collector.found


def merge(per_release: dict[str, list[Found]]) -> list[Signature]:
    """Templates keyed by (template, kind), each with the modules and releases that print it."""
    merged: dict[tuple[str, str], Signature] = {}
    for release, found in per_release.items():
        for item in found:
            sig = merged.setdefault((item.template, item.kind), Signature(item.template, item.kind))
            sig.modules.add(item.module)
            sig.releases.add(release)
            sig.sites.add(Site(item.module, item.function, item.condition))
    return sorted(merged.values(), key=lambda s: (s.template, s.kind))


# ---------------------------------------------------------------- coverage

SAMPLES = ("1234", "0.9", "GPU", "x")


def renderings(template: str) -> list[str]:
    """The template with every {} replaced by one sample value (one rendering per sample)."""
    return [template.replace("{}", value) for value in SAMPLES]


def covering(template: str, catalogue: Iterable[object]) -> list[str]:
    """Ids of the remedies whose literal (or one of its `also` literals: other wordings) and pattern match a
    rendering of the template."""
    hits = []
    for remedy in catalogue:
        literals = (remedy.literal, *getattr(remedy, "also", ()))
        if any(any(lit in text for lit in literals) and remedy.regex.search(text) for text in renderings(template)):
            hits.append(remedy.id)
    return hits


def user_fixable(signature: dict[str, object]) -> bool:
    """An error or warning whose text names something a user can change (heuristic, see USER_FIXABLE)."""
    kind = str(signature["kind"])
    failing = kind.startswith("raise:") or kind in ("log:error", "log:exception", "log:critical", "log:fatal",
                                                     "log:warning")
    return failing and bool(USER_FIXABLE.search(str(signature["template"])))


@dataclass(frozen=True)
class Coverage:
    """How many mined templates a remedy covers, overall and among the actionable ones."""

    templates: int
    fixable: int
    covered: int
    actionable: int
    actionable_covered: int

    def line(self, package: str) -> str:
        def share(part: int, whole: int) -> str:
            return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"

        return (f"coverage {package}: user-fixable templates covered by a remedy {share(self.covered, self.fixable)}; "
                f"of those that name their own fix {share(self.actionable_covered, self.actionable)}; "
                f"{self.templates} templates in all")


def coverage(package: str, data: dict[str, object]) -> Coverage:
    """Coverage of one package's mined templates by the shipped catalogue."""
    from remedies.loader import load_catalogue

    catalogue = list(load_catalogue())
    sigs = data["templates"]
    fixable = [s for s in sigs if user_fixable(s)]
    covered = [s for s in fixable if covering(str(s["template"]), catalogue)]
    actionable = [s for s in fixable if ACTIONABLE.search(str(s["template"]))]
    return Coverage(len(sigs), len(fixable), len(covered), len(actionable),
                    sum(1 for s in covered if ACTIONABLE.search(str(s["template"]))))


def release_runs(printed: Iterable[str], mined: list[str]) -> list[str]:
    """PEP 440 ranges covering the mined releases that print a template, one per unbroken run."""
    order = sorted(mined, key=Version)
    inside = [release in set(printed) for release in order]
    runs, start = [], None
    for index, present in enumerate([*inside, False]):
        if present and start is None:
            start = index
        elif not present and start is not None:
            upper = f",<{order[index]}" if index < len(order) else ""
            runs.append(f">={order[start]}{upper}")
            start = None
    return runs


def claims(package: str, data: dict[str, object]) -> dict[str, list[dict[str, str]]]:
    """Per remedy id, the `versions:` items its pattern earns from this package's mined templates."""
    from remedies.loader import load_catalogue

    catalogue = list(load_catalogue())
    found: dict[str, list[dict[str, str]]] = {}
    for sig in data["templates"]:
        for remedy_id in covering(str(sig["template"]), catalogue):
            for releases in release_runs(sig["releases"], data["releases"]):
                item = {"package": package, "releases": releases, "template": str(sig["template"])}
                if item not in found.setdefault(remedy_id, []):
                    found[remedy_id].append(item)
    return found


def links(catalogue: Iterable[object], signature_dir: Path) -> dict[str, list[dict[str, str]]]:
    """Per remedy id, the mined templates it covers (its pattern matches a rendering) with each raise / log
    site: package, kind, module, function, guarding condition and the template; over every `*.json` there."""
    catalogue = list(catalogue)
    found: dict[str, list[dict[str, str]]] = {}
    for path in sorted(signature_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        package = str(data.get("package", path.stem))
        for sig in data["templates"]:
            hits = covering(str(sig["template"]), catalogue)
            sites = sig.get("sites") or [{"module": m, "function": ""} for m in sig.get("modules", [])]
            for remedy_id in hits:
                for site in sites:
                    item = {"package": package, "kind": str(sig["kind"]), "module": str(site["module"]),
                            "function": str(site.get("function", "")), "condition": str(site.get("condition", "")),
                            "template": str(sig["template"])}
                    if item not in found.setdefault(remedy_id, []):
                        found[remedy_id].append(item)
    return {k: sorted(v, key=lambda i: tuple(i.values())) for k, v in sorted(found.items())}


def reviewed_links(path: Path, signature_dir: Path) -> dict[str, list[dict[str, str]]]:
    """The stored links whose template is still mined: wordings a reviewer added by hand (a rewording at a
    linked site that the entry's pattern does not match) survive a rewrite; links to vanished templates go."""
    if not path.is_file():
        return {}
    mined = {(str(json.loads(p.read_text(encoding="utf-8")).get("package", p.stem)), str(t["template"]))
             for p in sorted(signature_dir.glob("*.json"))
             for t in json.loads(p.read_text(encoding="utf-8"))["templates"]}
    stored = json.loads(path.read_text(encoding="utf-8"))
    return {k: [i for i in v if (i["package"], i["template"]) in mined] for k, v in stored.items()}


def dump_links(found: dict[str, list[dict[str, str]]]) -> str:
    """The links as JSON, one site per line (a reviewable diff)."""
    lines = []
    for remedy_id, items in found.items():
        body = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in items)
        lines.append(f"  {json.dumps(remedy_id)}: [\n{body}\n  ]")
    return "{\n" + ",\n".join(lines) + "\n}\n"


VERSIONS_BLOCK = re.compile(r"    versions:\n(?:      - .*\n|        .*\n)+")


def write_versions(catalogue_dir: Path, found: dict[str, list[dict[str, str]]]) -> int:
    """Rewrite every entry's `versions:` block from `found` (a YAML text edit; the rest of each file is kept).

    Returns the number of wordings written; review the diff before committing it.
    """
    written = 0
    for path in sorted(catalogue_dir.glob("*.yaml")):
        lines = VERSIONS_BLOCK.sub("", path.read_text(encoding="utf-8")).split("\n")
        starts = [i for i, line in enumerate(lines) if line.startswith("  - id: ")]
        if not starts:
            continue
        out = lines[:starts[0]]
        for begin, end in zip(starts, [*starts[1:], len(lines)]):
            block = lines[begin:end]
            trailing = 0
            while block and not block[-1]:
                block.pop()
                trailing += 1
            remedy_id = block[0].split(":", 1)[1].strip()
            items = sorted(found.get(remedy_id, []), key=lambda w: (w["package"], w["releases"], w["template"]))
            if items:
                block.append("    versions:")
                for item in items:
                    block += [f"      - package: {item['package']}", f"        releases: '{item['releases']}'",
                              f"        template: {json.dumps(item['template'], ensure_ascii=False)}"]
                written += len(items)
            out += block + [""] * trailing
        path.write_text("\n".join(out), encoding="utf-8")
    return written


# ---------------------------------------------------------------- main


def mine(package: str, versions: list[str], cache: Path, max_files: int | None) -> dict[str, object]:
    per_release: dict[str, list[Found]] = {}
    for version in versions:
        sources = cached_sources(package, version, cache, max_files)
        per_release[version] = list(templates(sources))
        print(f"{package} {version}: {len(sources)} modules, {len(per_release[version])} messages", flush=True)
    return {
        "package": package,
        "extractor": "static-ast/2 (scripts/mine_signatures.py)",
        "releases": sorted(per_release, key=Version),
        "modules": MODULES[package].pattern,
        "templates": [s.to_json(settings_of(package)) for s in merge(per_release)],
    }


def dump(data: dict[str, object]) -> str:
    """JSON with one template per line: small, and a new release shows up as a readable diff."""
    head = {k: v for k, v in data.items() if k != "templates"}
    lines = [json.dumps(t, ensure_ascii=False) for t in data["templates"]]
    return json.dumps(head, ensure_ascii=False)[:-1] + ', "templates": [\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("packages", nargs="*", metavar="PACKAGE", help=f"any of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--versions", nargs="+", help="releases to mine (default: a representative set)")
    parser.add_argument("--all-minors", action="store_true", help="the newest patch of every minor since 0.8 (vLLM)")
    parser.add_argument("--max-versions", type=int, help="mine at most this many releases per package (newest kept)")
    parser.add_argument("--max-files", type=int, help="read at most this many modules per release")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="extracted sources (outside git)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--coverage-only", action="store_true", help="only report coverage of the JSON in --out")
    parser.add_argument("--suggest", action="store_true",
                        help="print, per remedy, the `versions:` items its pattern earns (for catalogue review)")
    parser.add_argument("--write-links", action="store_true",
                        help="rewrite remedies/template_links.json: each entry's mined templates and their sites")
    parser.add_argument("--write-versions", action="store_true",
                        help="rewrite the catalogue's `versions:` blocks from the mined data of all packages")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.packages) - set(MODULES))
    if unknown:
        parser.error(f"unknown package(s): {', '.join(unknown)}")
    args.packages = args.packages or list(MODULES)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.write_links:
        from remedies.links import LINKS_FILE
        from remedies.loader import load_catalogue

        found = links(load_catalogue(), args.out)
        for remedy_id, items in reviewed_links(LINKS_FILE, args.out).items():
            found.setdefault(remedy_id, []).extend(i for i in items if i not in found[remedy_id])
        found = {k: sorted(v, key=lambda i: tuple(i.values())) for k, v in sorted(found.items())}
        LINKS_FILE.write_text(dump_links(found), encoding="utf-8")
        print(f"linked {len(found)} entries to {sum(map(len, found.values()))} sites; review `git diff {LINKS_FILE.name}`")
        return 0
    if args.write_versions:
        found: dict[str, list[dict[str, str]]] = {}
        for package in MODULES:
            data = json.loads((args.out / f"{package}.json").read_text(encoding="utf-8"))
            for remedy_id, items in claims(package, data).items():
                found.setdefault(remedy_id, []).extend(items)
        from remedies.loader import CATALOGUE_DIR

        print(f"wrote {write_versions(CATALOGUE_DIR, found)} wordings; review `git diff remedies/catalogue`")
        return 0
    for package in args.packages:
        target = args.out / f"{package}.json"
        if not (args.coverage_only or args.suggest):
            versions = args.versions or DEFAULT_VERSIONS[package]
            if args.all_minors:
                versions = newest_patch_per_minor(release_versions(package), Version("0.8"))
            if args.max_versions:
                versions = versions[-args.max_versions:]
            target.write_text(dump(mine(package, versions, args.cache, args.max_files)), encoding="utf-8")
        if not target.exists():
            continue
        data = json.loads(target.read_text(encoding="utf-8"))
        if args.suggest:
            for remedy_id, items in sorted(claims(package, data).items()):
                print(json.dumps({"id": remedy_id, "versions": items}, ensure_ascii=False))
            continue
        print(coverage(package, data).line(package))
    return 0


if __name__ == "__main__":
    sys.exit(main())
