"""Load and validate the catalogue YAML; the compiled catalogue is cached per process."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from remedies.errors import CatalogueError
from remedies.figures import derivable
from remedies.model import (
    COMPONENTS,
    DEFAULT_RANK,
    ID_PATTERN,
    SEVERITIES,
    SIGNATURE_PACKAGES,
    UNKNOWN,
    WRAPPER_RANK,
    FixStep,
    Remedy,
    Variant,
    Wording,
    template_fields,
)

CATALOGUE_DIR = Path(__file__).parent / "catalogue"
REQUIRED = ("id", "severity", "title", "literal", "pattern", "why", "fix", "source", "samples")
OPTIONAL = ("component", "root_cause_rank", "wrapper", "article_claim", "versions", "context", "stop", "also",
            "variants")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Catalogue:
    """The validated entries in file order, indexed by id."""

    entries: tuple[Remedy, ...]

    def __iter__(self) -> Iterator[Remedy]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, remedy_id: str) -> Remedy | None:
        """The entry with this id (case-insensitive; QD-R-UNKNOWN is the built-in unrecognised crash), or None."""
        wanted = remedy_id.upper()
        if wanted == UNKNOWN.id:
            return UNKNOWN
        return next((r for r in self.entries if r.id == wanted), None)


def load_catalogue(directory: Path | str | None = None) -> Catalogue:
    """Load every `*.yaml` under `directory` (the shipped catalogue by default), validated and cached."""
    return _load(Path(directory or CATALOGUE_DIR).resolve())


@lru_cache(maxsize=8)
def _load(directory: Path) -> Catalogue:
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CatalogueError(f"{directory}: no catalogue files (*.yaml)")
    entries: list[Remedy] = []
    seen: dict[str, str] = {}
    for path in files:
        for remedy in _load_file(path):
            if remedy.id in seen:
                raise CatalogueError(f"{path}: entry {remedy.id}: duplicate id (first defined in {seen[remedy.id]})")
            seen[remedy.id] = path.name
            entries.append(remedy)
    return Catalogue(tuple(entries))


def _load_file(path: Path) -> list[Remedy]:
    try:
        doc = yaml.load(path.read_bytes(), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    except OSError as exc:
        raise CatalogueError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise CatalogueError(f"{path}: expected a mapping with an 'entries' list")
    default_component = doc.get("component")
    return [_entry(path, i, raw, default_component) for i, raw in enumerate(doc["entries"])]


def _entry(path: Path, index: int, raw: Any, default_component: Any) -> Remedy:
    name = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else f"#{index + 1}"

    def bad(message: str) -> CatalogueError:
        return CatalogueError(f"{path}: entry {name}: {message}")

    if not isinstance(raw, dict):
        raise bad("expected a mapping")
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise bad(f"missing field(s): {', '.join(missing)}")
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise bad(f"unknown field(s): {', '.join(unknown)}")
    for key in ("id", "severity", "title", "literal", "pattern", "why"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise bad(f"'{key}' must be a non-empty string")
    if not ID_PATTERN.match(raw["id"]):
        raise bad(f"id must look like QD-R-<COMPONENT>-<NAME> in upper case (pattern {ID_PATTERN.pattern})")
    component = raw.get("component", default_component)
    if component not in COMPONENTS:
        raise bad(f"component must be one of {', '.join(COMPONENTS)}, got {component!r}")
    if raw["severity"] not in SEVERITIES:
        raise bad(f"severity must be one of {', '.join(SEVERITIES)}, got {raw['severity']!r}")
    try:
        regex = re.compile(raw["pattern"])
    except re.error as exc:
        raise bad(f"pattern does not compile: {exc}") from None
    also = _strings(raw.get("also", []), "also", bad, low=0, high=6)
    samples = _strings(raw["samples"], "samples", bad, low=1, high=3 + len(also) + len(raw.get("variants") or ()))
    literals = (raw["literal"], *also)
    variants = _variants(raw.get("variants", []), samples, bad)
    for sample in samples:
        if any(v.literal in sample and v.regex.search(sample) for v in variants):
            continue
        if not any(literal in sample for literal in literals):
            raise bad(f"literal {raw['literal']!r} (nor an 'also' one) does not occur in sample {sample!r}")
        if not regex.search(sample):
            raise bad(f"pattern does not match sample {sample!r}")
    for literal in also:
        if not any(literal in sample for sample in samples):
            raise bad(f"'also' literal {literal!r} occurs in no sample (each wording needs one)")
    source = _strings(raw["source"], "source", bad, low=1, high=10)
    wrapper = raw.get("wrapper", False)
    if not isinstance(wrapper, bool):
        raise bad("'wrapper' must be true or false")
    stop = raw.get("stop", False)
    if not isinstance(stop, bool):
        raise bad("'stop' must be true or false")
    if stop and raw["severity"] != "info":
        raise bad("a 'stop' entry (an operator's stop request) has severity info")
    rank = raw.get("root_cause_rank", WRAPPER_RANK if wrapper else DEFAULT_RANK)
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= 100:
        raise bad("'root_cause_rank' must be an integer from 0 (root cause) to 100 (wrapper)")
    claim = raw.get("article_claim")
    if claim is not None and not isinstance(claim, str):
        raise bad("'article_claim' must be a string")
    context = raw.get("context")
    if context is not None and (not isinstance(context, str) or not context.strip()):
        raise bad("'context' must be a non-empty regex string")
    try:
        context_regex = re.compile(context) if context else None
    except re.error as exc:
        raise bad(f"context does not compile: {exc}") from None
    fix = tuple(_fix_steps(raw["fix"], bad))
    groups = set(regex.groupindex) | set(context_regex.groupindex if context_regex else ())
    for step in fix:
        missing = sorted(set(step.fields) - groups - derivable(groups))
        if missing:
            raise bad(f"fix template field(s) {', '.join(missing)} are not named groups of the pattern "
                      "or its context (nor derived from them, see remedies/figures.py)")
    return Remedy(
        id=raw["id"],
        component=component,
        severity=raw["severity"],
        title=raw["title"].strip(),
        literal=raw["literal"],
        pattern=raw["pattern"],
        why=" ".join(raw["why"].split()),
        fix=fix,
        source=source,
        samples=samples,
        root_cause_rank=rank,
        wrapper=wrapper,
        article_claim=claim,
        versions=tuple(_wordings(raw.get("versions", []), bad)),
        context=context,
        stop=stop,
        also=also,
        variants=variants,
        regex=regex,
        context_regex=context_regex,
        origin=path.name,
    )


def _strings(value: Any, key: str, bad: Any, low: int, high: int) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise bad(f"'{key}' must be a list of non-empty strings")
    if not low <= len(value) <= high:
        raise bad(f"'{key}' must have {low} to {high} items, got {len(value)}")
    return tuple(value)


def _fix_steps(value: Any, bad: Any) -> list[FixStep]:
    if not isinstance(value, list) or not value:
        raise bad("'fix' must be a non-empty list")
    steps = []
    for item in value:
        if isinstance(item, str) and item.strip():
            steps.append(FixStep(" ".join(item.split())))
        elif isinstance(item, dict) and set(item) <= {"text", "applies", "otherwise"} \
                and isinstance(item.get("text"), str) and isinstance(item.get("otherwise", ""), str):
            applies = item.get("applies")
            if applies is not None:
                try:
                    Requirement(str(applies))
                except InvalidRequirement:
                    raise bad(f"fix step 'applies' is not a version range like 'sglang>=0.5.23': {applies!r}") from None
            otherwise = item.get("otherwise")
            if otherwise is not None:
                try:
                    names = template_fields(item["text"])
                except ValueError as exc:
                    raise bad(f"fix step is not a valid template ({exc}): {item['text']!r}") from None
                if not names or not otherwise.strip():
                    raise bad(f"a fix step with 'otherwise' must name figures as {{group}}: {item['text']!r}")
            steps.append(FixStep(" ".join(item["text"].split()), applies,
                                 " ".join(otherwise.split()) if otherwise else None))
        else:
            raise bad(f"fix step must be a string or a mapping with 'text' and optional 'applies': {item!r}")
    return steps


def _require_strings(item: Any, keys: tuple[str, ...], field: str, bad: Any) -> None:
    """One item of a list field: a mapping of exactly these keys, each a non-empty string."""
    if not isinstance(item, dict) or set(item) != set(keys) or not all(
        isinstance(v, str) and v.strip() for v in item.values()
    ):
        named = ", ".join(f"'{k}'" for k in keys[:-1]) + f" and '{keys[-1]}'"
        raise bad(f"'{field}' item must have non-empty {named}: {item!r}")


def _variants(value: Any, samples: tuple[str, ...], bad: Any) -> tuple[Variant, ...]:
    """`variants:` - wordings that name the entry only with their own context (literal, pattern, context);
    each needs a sample its literal and pattern match."""
    if not isinstance(value, list) or len(value) > 2:
        raise bad("'variants' must be a list of at most 2 {literal, pattern, context} mappings")
    found = []
    for item in value:
        _require_strings(item, ("literal", "pattern", "context"), "variants", bad)
        try:
            regex, context_regex = re.compile(item["pattern"]), re.compile(item["context"])
        except re.error as exc:
            raise bad(f"a variant's pattern or context does not compile: {exc}") from None
        if not any(item["literal"] in sample and regex.search(sample) for sample in samples):
            raise bad(f"variant {item['literal']!r}: no sample holds its literal and matches its pattern")
        found.append(Variant(item["literal"], item["pattern"], item["context"], regex, context_regex))
    return tuple(found)


def _wordings(value: Any, bad: Any) -> list[Wording]:
    """`versions:` - the source templates an entry matches, each with the releases that print it."""
    if not isinstance(value, list):
        raise bad("'versions' must be a list of {package, releases, template} mappings")
    wordings = []
    for item in value:
        _require_strings(item, ("package", "releases", "template"), "versions", bad)
        if item["package"] not in SIGNATURE_PACKAGES:
            raise bad(f"'versions' package must be one of {', '.join(SIGNATURE_PACKAGES)}, got {item['package']!r}")
        try:
            SpecifierSet(item["releases"])
        except InvalidSpecifier:
            raise bad(f"'versions' releases is not a range like '>=0.8.5,<0.10': {item['releases']!r}") from None
        wordings.append(Wording(item["package"], item["releases"], item["template"]))
    return wordings
