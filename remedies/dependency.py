"""A library's API changed under the engine: name the package, what the log's engine release requires of it, the fix.

Python words a call or an import that does not fit the installed code the same way whoever made the mistake:
the interpreter raises the TypeError of a signature (`f() got an unexpected keyword argument 'x'`, `takes 1
positional argument but 2 were given`, `missing 1 required positional argument`; cpython Python/ceval.c
too_many_positional / missing_arguments / initialize_locals, Python/getargs.c for C functions), the
ImportError of a name (`cannot import name 'X' from 'pkg.mod'`: Python/ceval.c import_from), the
AttributeError of a module or an object (Objects/moduleobject.c, Objects/object.c) and the
ModuleNotFoundError of a module that moved (Lib/importlib/_bootstrap.py `No module named {!r}`). Whether it is
a dependency's version, a usage error or an engine bug depends on who called whom, so it is decided from the
traceback's frames (`mismatch`):

- the deepest frame lies in a third-party package (`site-packages/<pkg>/`) that an engine frame, another
  package or nothing shown called: that package's installed release does not fit its caller;
- the deepest frame is engine code and its call names a package (the statement Python printed under it,
  `uvicorn.Config(...)`, or a callee whose name only that library defines, `Qwen2TokenizerFast.apply_chat_
  template`), or the message names the package's module (`module 'transformers.utils' has no attribute`,
  `cannot import name 'X' from 'flashinfer.sampling'`): the engine's call does not fit the installed release;
- a plugin or trainer (TRL, LMCache, ...) importing or calling into the engine: the engine release does not
  fit the plugin's.
It names nothing when the deepest frame is the user's own code, or engine code whose call names no package (an
engine bug or a usage error, left to the crash's own finding).

What each engine release requires of the package comes from its wheel's Requires-Dist
(remedies/dependency_pins.json, scripts/mine_dependency_pins.py); the release is the one the log prints
(`remedies.advisories.engine_release`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from remedies.crash import Frame
from remedies.layergaps import LOOKUP_FUNCTIONS
from remedies.model import FixStep

PINS_PATH = Path(__file__).parent / "dependency_pins.json"
ENGINES = ("vllm", "sglang")
# Importable module -> distribution where the two differ (each package's own setup metadata names them).
DISTRIBUTIONS = {
    "flashinfer": "flashinfer-python", "cv2": "opencv-python-headless", "PIL": "pillow", "yaml": "pyyaml",
    "zmq": "pyzmq", "google": "protobuf", "tvm_ffi": "apache-tvm-ffi", "flash_attn": "flash-attn",
    "vllm_flash_attn": "vllm-flash-attn", "sklearn": "scikit-learn", "attr": "attrs", "jwt": "pyjwt",
    "cpuinfo": "py-cpuinfo", "pynvml": "nvidia-ml-py", "cutlass": "nvidia-cutlass-dsl", "awq": "autoawq",
    "auto_gptq": "auto-gptq", "lmcache": "lmcache", "openai_harmony": "openai-harmony",
}
# Packages that call into the engine or that the engine calls but that no release's Requires-Dist names
# (trainers, plugins, optional kernels); the rest come from the mined requirements.
LIBRARIES = frozenset({
    "trl", "peft", "accelerate", "deepspeed", "verl", "lmcache", "xformers", "flash-attn", "bitsandbytes",
    "auto-gptq", "autoawq", "optimum", "datasets", "litellm", "llamafactory", "vllm-ascend", "deep-gemm",
    "flashinfer-python", "triton", "torch", "transformers", "huggingface-hub", "tokenizers", "pydantic",
    "fastapi", "starlette", "uvicorn", "openai", "numpy", "ray", "compressed-tensors", "outlines",
    "outlines-core", "xgrammar", "mistral-common", "llguidance", "safetensors", "torchvision",
})
# Callees whose name alone says whose they are (the engines define none of these names).
CALLEE_HINTS = (
    (re.compile(r"^(?:PreTrainedTokenizer(?:Fast|Base)?|\w{1,40}TokenizerFast|PretrainedConfig|GenerationConfig"
                r"|\w{1,40}ImageProcessor(?:Fast)?|\w{1,40}FeatureExtractor|AutoTokenizer|AutoConfig|AutoProcessor"
                r"|AutoModel\w{0,40}|PreTrainedModel|ProcessorMixin|BatchFeature)\b"), "transformers"),
    (re.compile(r"^(?:hf_hub_download|snapshot_download|HfApi|list_repo_files|try_to_load_from_cache)\b"),
     "huggingface-hub"),
    (re.compile(r"^(?:FastAPI|APIRouter)\b"), "fastapi"),
    (re.compile(r"^Starlette\b"), "starlette"),
    (re.compile(r"^(?:Config|Server)\.__init__$"), "uvicorn"),
)
# An attribute missing on a builtin value (`'NoneType' object has no attribute`) is a value the code did not expect,
# not an API that changed.
BUILTIN_TYPES = frozenset({"NoneType", "int", "float", "str", "bytes", "bool", "list", "dict", "tuple", "set",
                           "function", "method", "builtin_function_or_method", "module", "type", "object"})
# The engines' public API classes a plugin or trainer constructs (vllm/__init__.py, sglang/__init__.py exports).
ENGINE_API = {"vllm": frozenset({"LLM", "SamplingParams", "EngineArgs", "AsyncEngineArgs", "LLMEngine", "AsyncLLMEngine",
                                 "PoolingParams", "GuidedDecodingParams", "StructuredOutputsParams"}),
              "sglang": frozenset({"Engine", "ServerArgs", "Runtime"})}
_CALLED = re.compile(r"\b([A-Z]\w{1,60})\s{0,4}\(")
_SIGNATURE = re.compile(
    r"(?P<callee>[A-Za-z_][\w.<>]{0,200})\(\) (?:takes (?:from \d{1,3} to \d{1,3}|\d{1,3}|no) (?:positional |"
    r"keyword-only )?arguments?|takes exactly one argument|got an unexpected keyword argument '(?P<arg>\w{1,120})'"
    r"|got multiple values for (?:keyword )?argument '(?P<multi>\w{1,120})'|missing \d{1,3} required "
    r"(?:positional|keyword-only) arguments?|got some positional-only arguments passed as keyword arguments)"
    r"|'(?P<keyword>\w{1,120})' is an invalid keyword argument for (?P<c_callee>[A-Za-z_][\w.]{0,200})\(\)"
    # msgspec.Struct's own __init__ (msgspec/_core.c): vLLM's SamplingParams and its other msgspec structs
    r"|^\s?Unexpected keyword argument '(?P<struct_arg>\w{1,120})'|^\s?Missing required argument '\w{1,120}'"
)
_IMPORT_NAME = re.compile(r"cannot import name '(?P<name>\w{1,200})' from '(?P<module>[\w.]{1,300})'")
_MODULE_ATTR = re.compile(r"module '(?P<module>[\w.]{1,300})' has no attribute '(?P<name>\w{1,200})'")
_OBJECT_ATTR = re.compile(r"'(?P<callee>[A-Za-z_]\w{0,200})' object has no attribute '(?P<name>\w{1,200})'")
_NO_MODULE = re.compile(r"No module named '(?P<module>[A-Za-z_]\w{0,100}(?:\.\w{1,100}){1,10})'")
_STDLIB = re.compile(r"/lib/python3(?:\.\d{1,2})?/(?!(?:site|dist)-packages/)[\w./-]{1,300}\.py$")
_INSTALLED = re.compile(r"(?:^|[/\\])(?:site|dist)-packages[/\\](?P<top>[A-Za-z_]\w{0,100})[/\\]")
_DOTTED_CALL = re.compile(r"(?<![\w.])(?P<top>[A-Za-z_]\w{0,60})\.[A-Za-z_][\w.]{0,200}\s{0,4}\(")
_FROM_IMPORT = re.compile(r"^\s*(?:from\s+(?P<top>[A-Za-z_]\w{0,60})[\w.]{0,200}\s+import|import\s+(?P<mod>[A-Za-z_]\w{0,60}))")


@dataclass(frozen=True)
class Mismatch:
    """A dependency whose installed release does not fit its caller: which package, in what form, who called."""

    package: str
    form: str
    what: str
    caller: str
    evidence: str

    def to_dict(self) -> dict[str, str]:
        return {"package": self.package, "form": self.form, "what": self.what, "caller": self.caller,
                "evidence": self.evidence}


def distribution(module: str) -> str:
    """The distribution that installs an importable module (`huggingface_hub` -> `huggingface-hub`)."""
    top = module.split(".", 1)[0]
    return DISTRIBUTIONS.get(top) or str(canonicalize_name(top))


@lru_cache(maxsize=1)
def _pins() -> dict[str, dict[str, dict[str, str]]]:
    return json.loads(PINS_PATH.read_text(encoding="utf-8"))["engines"]


@lru_cache(maxsize=1)
def known_libraries() -> frozenset[str]:
    """Every distribution some mined engine release requires, and the curated callers and plugins."""
    required = {name for rows in _pins().values() for pins in rows.values() for name in pins}
    return frozenset(required | LIBRARIES) - set(ENGINES)


def transparent(frame: Frame) -> bool:
    """Whether a frame is the interpreter's own (`<frozen importlib._bootstrap>`, the standard library): it
    passes a call or an import on and says nothing about whose API it is."""
    path = frame.path.replace("\\", "/")
    return path.startswith("<frozen ") or bool(_STDLIB.search(path))


def own_lookup_dropped(stack: list[tuple[Frame, str]]) -> list[tuple[Frame, str]]:
    """The frames without the trailing attribute-lookup frames of the object itself (torch's
    Module.__getattr__: `remedies.layergaps`): the object, and the mistake, are its caller's."""
    end = len(stack)
    while end > 1 and stack[end - 1][0].function in LOOKUP_FUNCTIONS:
        end -= 1
    return stack[:end]


def owner(frame: Frame) -> str:
    """'vllm' / 'sglang' for engine code, the distribution of an installed third-party package, '' for the
    user's own code."""
    path = frame.path.replace("\\", "/")
    found = _INSTALLED.findall(path)
    if found:
        top = found[-1]
        return top if top in ENGINES else distribution(top)
    parts = path.split("/")
    return next((part for part in reversed(parts[:-1]) if part in ENGINES), "")


def _hinted(callee: str) -> str:
    """The library whose name alone a callee carries (CALLEE_HINTS), or ''."""
    for pattern, package in CALLEE_HINTS:
        if pattern.search(callee):
            return package
    return ""


def _named_by_statement(statement: str) -> str:
    """A library the statement under a frame calls or imports by its module's name (`uvicorn.Config(`)."""
    found = _FROM_IMPORT.match(statement)
    tops = [found.group("top") or found.group("mod")] if found else [m.group("top") for m in _DOTTED_CALL.finditer(statement)]
    for top in tops:
        dist = distribution(top)
        if dist in known_libraries():
            return dist
    return ""


def _form(exception: str) -> tuple[str, str, str] | None:
    """(form, callee or module, what) of an exception that can be an API mismatch, or None."""
    kind = exception.split(":", 1)[0].rsplit(".", 1)[-1]
    message = exception.split(":", 1)[1] if ":" in exception else ""
    if kind == "TypeError" and (hit := _SIGNATURE.search(message)):
        callee = hit.group("callee") or hit.group("c_callee") or ""
        arg = hit.group("arg") or hit.group("multi") or hit.group("keyword") or hit.group("struct_arg")
        who = f"{callee}()" if callee else "the call"
        return "signature", callee, who + (f" rejected the keyword '{arg}'" if arg else " was given arguments its "
                                                                                   "installed signature does not take")
    if kind == "ImportError" and (hit := _IMPORT_NAME.search(message)):
        return "import", hit.group("module"), f"{hit.group('module')} has no '{hit.group('name')}'"
    if kind == "ModuleNotFoundError" and (hit := _NO_MODULE.search(message)):
        return "module", hit.group("module"), f"there is no module {hit.group('module')}"
    if kind == "AttributeError" and (hit := _MODULE_ATTR.search(message)):
        return "import", hit.group("module"), f"{hit.group('module')} has no attribute '{hit.group('name')}'"
    if kind == "AttributeError" and (hit := _OBJECT_ATTR.search(message)) and hit.group("callee") not in BUILTIN_TYPES:
        return "object", hit.group("callee"), f"{hit.group('callee')} objects have no attribute '{hit.group('name')}'"
    return None


def mismatch(exception: str, frames: Iterable[tuple[Frame, str]]) -> Mismatch | None:
    """The dependency whose API the root `exception` shows changed under its caller, from the traceback's
    `frames` (outermost first, each with the statement printed under it), or None (see the module doc)."""
    form = _form(exception.strip())
    if form is None:
        return None
    kind, callee, what = form
    stack = [(frame, statement) for frame, statement in frames if not transparent(frame)]
    if kind == "object":
        stack = own_lookup_dropped(stack)
    owners = [owner(frame) for frame, _ in stack]
    deepest = owners[-1] if owners else None
    if deepest == "":
        return None  # the user's own code raised or called it
    caller = _caller(owners)
    if kind in ("import", "module"):
        package = distribution(callee)
        if package in ENGINES:
            if not deepest or deepest in ENGINES:
                return None  # the engine's own modules: a broken or mixed install, named by its own entries
            return Mismatch(package, kind, what, deepest, f"{deepest} imports from {callee}")
        if package not in known_libraries() and not _installed_in(exception, callee):
            return None
        importer = deepest if deepest and deepest != package else caller
        return Mismatch(package, kind, what, importer or "the engine", f"the message names the module {callee}")
    if deepest is not None and deepest not in ENGINES:
        statement = stack[-1][1]
        engine = _engine_called(statement, callee)
        if engine:  # a plugin or trainer calling the engine's API
            return Mismatch(engine, kind, what, deepest, f"{deepest} calls {engine}: `{statement or callee}`")
        if caller == "":
            return None  # the user's own code called straight into the library
        path = stack[-1][0].path
        return Mismatch(deepest, kind, what, caller or "its caller", f"raised inside it, at {path}")
    statement = stack[-1][1] if stack else ""
    package = _named_by_statement(statement) or _hinted(callee)
    if not package:
        return None  # engine code calling engine code, or nothing shows whose the callee is
    evidence = f"the call `{statement}`" if statement and _named_by_statement(statement) else f"{callee} is {package}'s"
    return Mismatch(package, kind, what, deepest or "the engine", evidence)


def _engine_called(statement: str, callee: str) -> str:
    """The engine a library's statement calls (`vllm.SamplingParams(`, or a class only the engine defines), or ''."""
    for found in _DOTTED_CALL.finditer(statement):
        if found.group("top") in ENGINES:
            return found.group("top")
    named = callee.split(".", 1)[0] or next((m.group(1) for m in _CALLED.finditer(statement)), "")
    return next((engine for engine, classes in ENGINE_API.items() if named in classes), "")


def _installed_in(exception: str, module: str) -> bool:
    """Whether the message shows the module's file under site-packages (`cannot import name 'X' from 'pkg.mod'
    (/…/site-packages/pkg/mod.py)`): an installed package, not the user's own module."""
    top = module.split(".", 1)[0]
    return any(found == top for found in _INSTALLED.findall(exception.replace("\\", "/")))


def _caller(owners: list[str]) -> str | None:
    """Who called into the deepest package's frames: the owner of the nearest frame outside them ('' for the
    user's own code), or None when the traceback shows no frame outside them."""
    if not owners:
        return None
    deepest = owners[-1]
    for found in reversed(owners):
        if found != deepest:
            return found
    return None


@dataclass(frozen=True)
class Requirement:
    """What an engine release requires of one package (its specifier; '' for any version)."""

    engine: str
    release: str
    package: str
    specifier: str | None

    def __str__(self) -> str:
        if self.specifier is None:
            return f"{self.engine} {self.release} does not require {self.package}"
        return f"{self.engine} {self.release} requires {self.package}{self.specifier or ' (any version)'}"


def requirement(engine: str, release: str, package: str) -> Requirement | None:
    """What `engine` `release` requires of `package` (its nearest mined release at or before it), or None when
    no release that old is mined."""
    rows = _pins().get(engine, {})
    try:
        wanted = Version(release)
    except InvalidVersion:
        return None
    older = [(Version(r), r) for r in rows if Version(r) <= wanted]
    if not older:
        return None
    _, mined = max(older)
    pins = rows[mined]
    return Requirement(engine, release, package, pins.get(package))


def newest(engine: str, package: str) -> Requirement | None:
    """What the newest mined release of `engine` requires of `package`, or None."""
    rows = _pins().get(engine, {})
    if not rows:
        return None
    mined = max(rows, key=Version)
    return Requirement(engine, mined, package, rows[mined].get(package))


@dataclass(frozen=True)
class Dependency:
    """The finding's facts: the mismatch, the engine and release the log prints, what that release requires."""

    mismatch: Mismatch
    engine: str
    release: str | None
    required: Requirement | None
    latest: Requirement | None
    cap: Cap | None = None

    @property
    def why(self) -> str:
        m = self.mismatch
        text = (f"The error comes from {m.package} ({m.evidence}): {m.what}, so the installed {m.package} is not "
                f"the release {m.caller} was written for.")
        if self.release is None:
            return text + f" The log does not print the {self.engine} release, so its requirement is not matched."
        if self.required is not None:
            capped = f" ({self.cap})" if self.cap is not None else ""
            return text + f" {self.required}{capped}."
        return text + f" No mined {self.engine} release is as old as {self.release}."

    def steps(self) -> tuple[FixStep, ...]:
        m, engine = self.mismatch, self.engine
        if m.package in ENGINES:
            return (FixStep(f"Install the {m.caller} release made for {engine}"
                            f"{' ' + self.release if self.release else ''} (pip show {m.caller} lists the "
                            f"{engine} it requires), or the {engine} release that {m.caller} requires; `pip check` "
                            "names the conflict."),
                    FixStep(f"Otherwise run {m.caller} and {engine} in separate environments and connect them over "
                            f"{engine}'s HTTP API."))
        first: list[FixStep] = []
        spec = self.required.specifier if self.required is not None else None
        if spec and self.cap is not None:
            first.append(FixStep(f"Install a {m.package} that {engine} {self.release} accepts and that predates the "
                                 f"change: pip install '{m.package}{_joined(spec, self.cap.bound)}' ({self.release} "
                                 f"sets no upper bound; {self.cap}). pip show {m.package} shows the one installed."))
        elif spec:
            first.append(FixStep(f"Install the {m.package} that {engine} {self.release} requires: "
                                 f"pip install '{m.package}{spec}' (pip show {m.package} shows the one installed; "
                                 "`pip check` names the conflict)."))
        elif self.required is not None and spec == "":
            first.append(FixStep(f"{engine} {self.release} requires {m.package} without a version bound: install the "
                                 f"{m.package} release {m.caller} was written for (the one before the change in which "
                                 f"{m.what}; pip show {m.package} shows the one installed), and pin it."))
        elif self.required is not None:
            first.append(FixStep(f"{engine} {self.release} does not require {m.package} itself; another package brought "
                                 f"it in (pip show {m.package}: Required-by). Install the {m.package} that package and "
                                 f"{m.caller} accept (`pip check` names the conflict), or reinstall the engine with its "
                                 f"dependencies: pip install --force-reinstall '{engine}=={self.release}'."))
        elif self.latest is not None and self.latest.specifier is None:
            first.append(FixStep(f"{engine} does not require {m.package} itself; another package brought it in (pip "
                                 f"show {m.package}: Required-by). Install the {m.package} that package and "
                                 f"{m.caller} accept (`pip check` names the conflict), or reinstall {engine} with its "
                                 "dependencies into a fresh virtual environment."))
        else:
            first.append(FixStep(f"Compare the installed {m.package} (pip show {m.package}) with what your {engine} "
                                 f"release requires of it (pip show {engine}, its Requires; `pip check` names the "
                                 f"conflict) and install a {m.package} inside that range."))
        latest = self.latest
        if latest is not None and latest.specifier and latest.release != self.release:
            first.append(FixStep(f"Or upgrade {engine} to a release whose requirement admits the installed "
                                 f"{m.package}: the newest, {engine} {latest.release}, requires "
                                 f"{m.package}{latest.specifier}."))
        first.append(FixStep(f"If another package needs a different {m.package}, run it in its own environment and "
                             f"talk to {engine} over its HTTP API instead of installing both together; a fresh "
                             f"virtual environment or the {engine} image keeps the pins together."))
        return tuple(first)

    def to_dict(self) -> dict[str, Any]:
        return {**self.mismatch.to_dict(), "engine": self.engine, "release": self.release,
                "required": self.required.specifier if self.required is not None else None,
                "newest": {"release": self.latest.release, "required": self.latest.specifier}
                if self.latest is not None else None}


@dataclass(frozen=True)
class Cap:
    """The upper bound a later engine release put on a package its earlier releases left open."""

    engine: str
    release: str
    bound: str

    def __str__(self) -> str:
        return f"{self.engine} {self.release}, the first later release to cap it, requires {self.bound}"


def first_cap(engine: str, release: str, package: str) -> Cap | None:
    """The first mined release after `release` whose requirement of `package` has an upper bound (`<X`), when
    `release`'s own requirement has none: a newer package broke the engine's calls there."""
    rows = _pins().get(engine, {})
    own = requirement(engine, release, package)
    if own is None or not own.specifier or _upper(own.specifier):
        return None
    for mined in sorted((r for r in rows if Version(r) > Version(release)), key=Version):
        bound = _upper(rows[mined].get(package) or "")
        if bound:
            return Cap(engine, mined, bound)
    return None


def _upper(specifier: str) -> str:
    """The `<X` / `<=X` / `==X` clause of a specifier, or ''."""
    for clause in specifier.split(","):
        clause = clause.strip()
        if clause.startswith(("<", "==")) and not clause.startswith("==="):
            return clause
    return ""


def _joined(specifier: str, bound: str) -> str:
    """The lower bounds of `specifier` with `bound` (`>=4.55.0` + `<5` -> `>=4.55.0,<5`)."""
    lower = [c.strip() for c in specifier.split(",") if c.strip().startswith((">", "!="))]
    return ",".join([*lower, bound]) if not bound.startswith("==") else bound


def dependency(found: Mismatch, engine: str, release: str | None) -> Dependency:
    """The facts for a mismatch in a log of `engine` at `release` (None when the log prints none)."""
    required = requirement(engine, release, found.package) if release else None
    cap = first_cap(engine, release, found.package) if release else None
    return Dependency(found, engine, release, required, newest(engine, found.package), cap)


def engine_of(frames: Iterable[Frame], head: Mapping[str, str | None]) -> str:
    """The engine a log runs: the one whose frames the traceback shows, else the one whose release it prints,
    else vLLM."""
    for frame in reversed(list(frames)):
        found = owner(frame)
        if found in ENGINES:
            return found
    return next((engine for engine in ENGINES if head.get(engine)), "vllm")
