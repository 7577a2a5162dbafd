"""Engine bugs named as such: a crash raised inside engine code, the known regressions of the log's release.

A crash no catalogue entry names (`remedies.crash`) whose root exception was raised in a vLLM or SGLang source
file has no user remedy to look up: no flag of the user's is in the message, and sizing or configuration advice
would not help. `engine_bug` says so, names the raise site, reads the engine release the log prints
(`engine_release`) and lists the known regressions of that release (remedies/advisories.yaml, with sources),
with the nearest release the sources say is free of them: the first release that fixed them all, else the last
release before the oldest of them.

An advisory is about one crash when its `symptom` matches the root exception, or when the crash was raised at
its `site` (the module and function of the raise, from the mined templates: scripts/derive_advisories.py) or
in the same module ("near" it); an advisory with neither names no crash (every crash of its releases is no
evidence of it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from remedies.crash import LLVM_FATAL, RAY_FATAL, Crash, Frame
from remedies.datalist import read_list
from remedies.errors import CatalogueError, LogReadError
from remedies.model import FixStep
from remedies.reader import STDIN, open_log
from remedies.templates import SIGNATURES_DIR

ADVISORIES_PATH = Path(__file__).parent / "advisories.yaml"
ENGINES = ("vllm", "sglang")
FIELDS = {"id", "engine", "releases", "title", "affects", "symptom", "fixed_in", "sources"}
OPTIONAL_FIELDS = {"site", "last_good"}
# Where each engine prints its own release (vLLM's API server and engine-config lines, V0 and V1, its image tag,
# pip pin or collect_env line; SGLang's image tag or the version its check_env / pip lines show), bounded so a
# huge line costs nothing.
RELEASE_LINES = {
    "vllm": re.compile(r"vLLM API server version (?P<v>\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+]{0,30})"
                       r"|Initializing an? (?:V[01] )?LLM engine \(v(?P<w>\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+]{0,30})\)"
                       r"|(?:vllm/vllm-openai:v|\bvllm==|vLLM Version\s{0,30}: )(?P<x>\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+]{0,30})"),
    "sglang": re.compile(r"(?:lmsysorg/sglang:v|sglang==|sglang version:? ?|SGLang v)"
                         r"(?P<v>\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+]{0,30})"),
}
ENGINE_FRAME = re.compile(r"(?:^|[/\\])(vllm|sglang)[/\\]")
# Exceptions an engine raises to refuse an input or a setting, or that name a flag: the user can act on them
# (the message says what to change), so they are not called engine bugs.
USER_FACING = re.compile(r"^(?:[\w.]{0,200}\.)?(?:ValueError|TypeError|NotImplementedError|ImportError|ModuleNotFoundError"
                         r"|FileNotFoundError|PermissionError|OSError|ConnectionError|TimeoutError|\w{0,40}OutOfMemoryError)\b"
                         r"|\s--[a-z][a-z-]{1,60}")
HEAD_BYTES = 4 << 20
# A raise site as the mined templates name it: the module path, then the (Class.)function it is raised in.
SITE = re.compile(r"(?:vllm|sglang)/[\w/]{1,200}\.py(?::[\w.]{1,120})?")


@dataclass(frozen=True)
class Advisory:
    """One known regression: the releases it affects, what it breaks, the first release without it."""

    id: str
    engine: str
    releases: SpecifierSet
    title: str
    affects: str
    symptom: re.Pattern[str] | None
    fixed_in: str | None
    sources: tuple[str, ...]
    site: str | None = None
    last_good: str | None = None

    @property
    def module(self) -> str | None:
        """The module of the raise site (`vllm/v1/core/sched/scheduler.py`), if the advisory names one."""
        return self.site.split(":", 1)[0] if self.site else None

    @property
    def function(self) -> str:
        """The function of the raise site (last dotted part: `_mamba_block_aligned_split`), or ''."""
        return self.site.split(":", 1)[1].rsplit(".", 1)[-1] if self.site and ":" in self.site else ""

    def placement(self, frame: Frame | None) -> str | None:
        """'at' the advisory's raise site, 'near' it (same module), or None, for a crash's raise frame."""
        if self.module is None or frame is None:
            return None
        path = frame.path.replace("\\", "/")
        if not path.endswith(self.module):
            return None
        return "at" if self.function and frame.function == self.function else "near"

    def covers(self, engine: str, release: str, crash_text: str, frame: Frame | None = None) -> bool:
        """Whether this advisory is about that engine release and this crash: its symptom matches the crash, or the
        crash was raised at or near its site. One with neither (a thread that reports a release broken without
        its message or frames) names no crash: every crash of its releases is not evidence of it."""
        if engine != self.engine or not _in(release, self.releases):
            return False
        return bool(self.symptom and self.symptom.search(crash_text)) or self.placement(frame) is not None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "engine": self.engine, "releases": str(self.releases), "title": self.title,
                "affects": self.affects, "site": self.site, "fixed_in": self.fixed_in, "last_good": self.last_good,
                "sources": list(self.sources)}


@dataclass(frozen=True)
class EngineBug:
    """A crash inside engine code: where it was raised, the log's release and its known regressions."""

    engine: str
    raised_at: str
    release: str | None
    advisories: tuple[Advisory, ...]
    nearest_clean: str | None
    frame: Frame | None = None
    beside: bool = False
    without: str | None = None

    @property
    def why(self) -> str:
        if self.beside:
            named = "; ".join(f"{self._named(a)}{self._fixed(a)}" for a in self.advisories)
            return f"This log also matches a known regression of {self.engine} {self.release}: {named}."
        text = (f"The root exception was raised inside {self.engine} itself ({self.raised_at}) and no catalogue "
                "entry ties it to a setting of yours: this looks like an engine bug, not a sizing or "
                "configuration problem.")
        if self.release is None:
            return text + f" The log does not print the {self.engine} release, so no known regression is matched."
        if not self.advisories:
            return text + f" No known regression of {self.engine} {self.release} is recorded for it."
        named = "; ".join(self._named(a) for a in self.advisories)
        return text + f" Known regressions of {self.engine} {self.release}: {named}."

    def _fixed(self, advisory: Advisory) -> str:
        if advisory.fixed_in:
            return f", fixed in {self.engine} {advisory.fixed_in}"
        if advisory.last_good:
            return f", not fixed in a release yet ({advisory.last_good} is the last without it)"
        return ", not fixed in a release yet"

    def _named(self, advisory: Advisory) -> str:
        where = advisory.placement(self.frame)
        site = f", raised {where} {advisory.site}" if where else ""
        return f"{advisory.title} ({advisory.sources[0].split(' ')[0]}{site})"

    @property
    def going_back(self) -> bool:
        """Whether the nearest clean release is older than the log's (no release has fixed them all yet)."""
        return bool(self.nearest_clean and self.release and _older(self.nearest_clean, self.release))

    def leading_steps(self) -> tuple[FixStep, ...]:
        """Beside a crash no entry names, the known regression's step first: the release to move to."""
        where = self.nearest_clean
        move = (f"move to {self.engine} {where} (pip install '{self.engine}=={where}' or the matching image tag)"
                if where else "follow the linked issue for the fix")
        return (FixStep(f"This crash matches the known regression of {self.engine} {self.release} named above: "
                        f"{move}."),)

    def steps(self) -> tuple[FixStep, ...]:
        """What to do instead of generic advice: change release, then report with the raise site; beside an
        entry, the release to move to if the entry's own steps do not clear it."""
        if self.beside:
            where = self.nearest_clean
            move = (f"move to {self.engine} {where} (pip install '{self.engine}=={where}' or the matching image tag)"
                    if where else "follow the linked issue for the fix")
            return (FixStep(f"If the steps above do not clear it, this is the known regression of {self.engine} "
                            f"{self.release} named above: {move}."),)
        first: list[FixStep] = []
        if self.nearest_clean and self.going_back:
            first.append(FixStep(f"Go back to {self.engine} {self.nearest_clean}, the newest release before those "
                                 f"the sources report broken (no release fixes them yet; pin it: pip install "
                                 f"'{self.engine}=={self.nearest_clean}' or the matching image tag), and follow "
                                 "the linked issues for the fix."))
        elif self.nearest_clean:
            first.append(FixStep(f"Move to {self.engine} {self.nearest_clean}, the nearest release the sources "
                                 f"say is free of the regressions above (pin it: pip install "
                                 f"'{self.engine}=={self.nearest_clean}' or the matching image tag)."))
        elif self.advisories:
            first.append(FixStep(f"No fixed {self.engine} release is recorded yet: follow the linked issues, or "
                                 f"go back to the release you ran before {self.release}."))
        elif self.without:
            first.append(FixStep(f"Move to {self.engine} {self.without}, the nearest release whose source no longer "
                                 f"raises this message (the check that fired was removed or rewritten there; pin it: "
                                 f"pip install '{self.engine}=={self.without}' or the matching image tag)."))
        else:
            first.append(FixStep(f"Try the newest {self.engine} patch release of your minor (or the previous "
                                 "release that worked for you); a crash inside engine code is fixed by a "
                                 "release, not by a flag."))
        return (*first,
                FixStep(f"Search the {self.engine} issue tracker for the root exception and {self.raised_at}; "
                        "report it with the full traceback and the launch command if it is new."))

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "raised_at": self.raised_at, "release": self.release,
                "advisories": [a.to_dict() for a in self.advisories], "nearest_clean": self.nearest_clean,
                "without_raise": self.without}


@lru_cache(maxsize=8)
def mined_releases(package: str) -> tuple[str, ...]:
    """The releases whose source the raise templates were mined from (remedies/signatures/<package>.json)."""
    try:
        doc = json.loads((SIGNATURES_DIR / f"{package}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(str(r) for r in doc.get("releases", ()))


def release_without(package: str, present: Iterable[str], release: str) -> str | None:
    """The nearest mined release after `release` whose source no longer raises a template printed by the mined
    releases `present`, when the log's release (or the nearest mined one before it) still raises it; else None."""
    carried = set(present)
    try:
        wanted = Version(release)
        mined = sorted((Version(r), r) for r in mined_releases(package))
    except InvalidVersion:
        return None
    before = [r for v, r in mined if v <= wanted]
    if not before or before[-1] not in carried:
        return None
    return next((r for v, r in mined if v > wanted and r not in carried), None)


def _in(release: str, spec: SpecifierSet) -> bool:
    try:
        return Version(release) in spec.__class__(str(spec), prereleases=True)
    except InvalidVersion:
        return False


def _older(left: str, right: str) -> bool:
    try:
        return Version(left) < Version(right)
    except InvalidVersion:
        return False


def load_advisories(path: Path | str | None = None) -> tuple[Advisory, ...]:
    """The validated advisories (remedies/advisories.yaml by default), cached per process."""
    return _load(Path(path or ADVISORIES_PATH).resolve())


@lru_cache(maxsize=4)
def _load(path: Path) -> tuple[Advisory, ...]:
    return tuple(_advisory(path, raw) for raw in read_list(path, "advisories"))


def _advisory(path: Path, raw: Any) -> Advisory:
    name = raw.get("id") if isinstance(raw, dict) else "?"

    def bad(message: str) -> CatalogueError:
        return CatalogueError(f"{path}: advisory {name}: {message}")

    if not isinstance(raw, dict) or not FIELDS <= set(raw) <= FIELDS | OPTIONAL_FIELDS:
        raise bad(f"fields must be {', '.join(sorted(FIELDS))} "
                  f"(and optionally {', '.join(sorted(OPTIONAL_FIELDS))})")
    if raw["engine"] not in ENGINES:
        raise bad(f"engine must be one of {', '.join(ENGINES)}")
    try:
        releases = SpecifierSet(str(raw["releases"]))
    except InvalidSpecifier:
        raise bad(f"releases is not a version range: {raw['releases']!r}") from None
    fixed = _outside(raw["fixed_in"], "fixed_in", releases, bad)
    last_good = _outside(raw.get("last_good"), "last_good", releases, bad)
    site = raw.get("site")
    if site is not None and (not isinstance(site, str) or not SITE.fullmatch(site)):
        raise bad(f"site must be 'package/module.py' or 'package/module.py:Class.function', got {site!r}")
    sources = raw["sources"]
    if not isinstance(sources, list) or not sources or not all(
            isinstance(s, str) and s.startswith("https://github.com/") for s in sources):
        raise bad("sources must be a non-empty list of GitHub issue / pull request URLs")
    try:
        symptom = re.compile(raw["symptom"]) if raw["symptom"] else None
    except re.error as exc:
        raise bad(f"symptom does not compile: {exc}") from None
    return Advisory(str(raw["id"]), raw["engine"], releases, str(raw["title"]), str(raw["affects"]), symptom,
                    fixed, tuple(sources), site, last_good)


def _outside(value: Any, field: str, releases: SpecifierSet, bad: Callable[[str], CatalogueError]) -> str | None:
    """A release named by `field` (fixed_in, last_good) as text, checked to be a release outside `releases`."""
    if value is None:
        return None
    try:
        Version(str(value))
    except InvalidVersion:
        raise bad(f"{field} is not a release: {value!r}") from None
    if _in(str(value), releases):
        raise bad(f"{field} {value} is inside the affected releases {releases}")
    return str(value)


# Native aborts whose component says they are its own bug (remedies.crash RAY_FATAL / LLVM_FATAL): Ray names
# the C++ file and line before its marker; LLVM's fatal error in a serving process is Triton's compiler's.
_NATIVE_BUGS = (
    (re.compile(re.escape(RAY_FATAL)), "ray"),
    (re.compile(f"^{re.escape(LLVM_FATAL)}"), "triton"),
)
_CPP_SITE = re.compile(r"\b[\w.-]{1,128}\.(?:cc|cpp|cu|h|hpp):\d{1,7}\b")


def native_bug(exception: str) -> tuple[str, str] | None:
    """(component, raise site) of a native abort its component calls its own bug, or None."""
    for pattern, component in _NATIVE_BUGS:
        if pattern.search(exception):
            site = _CPP_SITE.search(exception)
            where = site.group(0) if site else ("Triton's LLVM back end" if component == "triton" else component)
            return component, where
    return None


def native_engine_bug(text: str, log_lines: Callable[[], Iterable[str]]) -> EngineBug | None:
    """An EngineBug for a line its own component calls a bug (`native_bug`), with the log's release of it where
    the log prints one (`log_lines` is read only then), else None."""
    native = native_bug(text)
    if native is None:
        return None
    engine, raised_at = native
    release = engine_release(log_lines(), engine) if engine in RELEASE_LINES else None
    return EngineBug(engine, raised_at, release, (), None, None)


def engine_release(lines: Iterable[str], engine: str) -> str | None:
    """The engine release a log prints (the last one printed: a restarted server prints its new release).

    Every finding of a log asks about the same head (`read_head`), so the answer is kept per head and engine:
    one scan of a 4 MiB head costs about 0.1 s."""
    return _release_in(lines if isinstance(lines, tuple) else tuple(lines), engine)


@lru_cache(maxsize=8)
def _release_in(lines: tuple[str, ...], engine: str) -> str | None:
    found = None
    pattern = RELEASE_LINES[engine]
    for line in lines:
        hit = pattern.search(line[:4096])
        if hit:
            found = next(v for v in hit.groups() if v)
    return found


def read_head(path: Path | str) -> list[str]:
    """The first HEAD_BYTES of a plain or gzip log, as lines (empty when it cannot be read)."""
    if str(path) == STDIN:
        return []
    try:
        with open_log(path) as stream:
            return stream.read(HEAD_BYTES).decode("utf-8", errors="replace").splitlines()
    except (LogReadError, OSError, ValueError, EOFError):
        return []


def nearest_clean(engine: str, release: str, advisories: Iterable[Advisory]) -> str | None:
    """The nearest release free of every matched advisory: the lowest release past `release` that every fix
    reaches; when one has no fix yet, the newest release before all of them (their `last_good`); else None."""
    matched = [a for a in advisories if a.engine == engine]
    if not matched:
        return None
    if all(a.fixed_in is not None for a in matched):
        return str(max(Version(a.fixed_in) for a in matched if a.fixed_in is not None))
    if all(a.last_good is not None for a in matched):
        return str(min(Version(a.last_good) for a in matched if a.last_good is not None))
    return None


def beside_entry(text: str, frame: Frame | None, log_lines: Callable[[], Iterable[str]],
                 advisories: Iterable[Advisory] | None = None) -> EngineBug | None:
    """An EngineBug to show beside a catalogue entry's finding: the known regressions of the log's release whose
    symptom is in `text` (the entry's line and root exception) or whose raise site is `frame`'s, else None (an
    advisory with neither names no crash); the
    log's head (`log_lines`) is read only when some advisory's symptom or site fits."""
    pool = tuple(load_advisories() if advisories is None else advisories)
    fitting = [a for a in pool if (a.symptom is not None and a.symptom.search(text))
               or a.placement(frame) == "at"]
    if not fitting:
        return None
    lines = list(log_lines())
    for engine in ENGINES:
        release = engine_release(lines, engine)
        matched = tuple(a for a in fitting if release is not None and a.covers(engine, release, text, frame))
        if matched:
            return EngineBug(engine, str(frame) if frame else text.splitlines()[0], release, matched,
                             nearest_clean(engine, release, matched), frame, beside=True)
    return None


def engine_bug(crash: Crash, log_lines: Iterable[str],
               advisories: Iterable[Advisory] | None = None) -> EngineBug | None:
    """An EngineBug when the crash's root exception was raised in vLLM or SGLang source and is not one that
    refuses an input or a setting (USER_FACING), else None."""
    native = native_engine_bug(crash.exception, lambda: log_lines)
    if native is not None:
        return native
    if crash.frame is None or USER_FACING.search(crash.exception):
        return None
    found = ENGINE_FRAME.findall(crash.frame.path.replace("\\", "/"))
    if not found:
        return None
    engine = found[-1]
    release = engine_release(log_lines, engine)
    matched: tuple[Advisory, ...] = ()
    if release is not None:
        text = f"{crash.exception}\n{crash.frame}"
        matched = tuple(a for a in (load_advisories() if advisories is None else advisories)
                        if a.covers(engine, release, text, crash.frame))
    clean = nearest_clean(engine, release, matched) if release and matched else None
    return EngineBug(engine, str(crash.frame), release, matched, clean, crash.frame)
