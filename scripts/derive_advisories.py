"""Derive the source facts of each engine advisory (remedies/advisories.yaml) from the mined raise templates.

An advisory is harvested from an issue thread (its `sources`): the engine, the releases the thread reports as
broken, a `symptom` (a regex over the root exception) and, when the thread names one, the release that fixed
it. What the threads do not say reliably comes from the templates mined out of every release's wheel
(remedies/signatures/{vllm,sglang}.json, scripts/mine_signatures.py):

- `site`: the module and function of the raise the symptom matches (one site; when the symptom matches no
  mined raise or several functions, a site the thread's traceback names is kept), so a crash raised there or in
  the same module is tied to the advisory even when its message was cut or reworded;
- `last_good` (unless the thread names a nearer one): the newest mined release older than every release the
  advisory affects - the nearest release without the regression when no release fixes it yet;
- `fixed_in` (only where the thread names no fixed release, and the symptom - or, where it is raised in several
  functions, the site the thread's traceback names - pins one raise site): the first
  mined release after the affected ones that no longer has that raise - the assertion or check that fired was
  removed or rewritten there.

    python scripts/derive_advisories.py            # print the derived facts that differ from the file
    python scripts/derive_advisories.py --write    # write them into remedies/advisories.yaml and docs/advisories.md
    python scripts/derive_advisories.py --check    # exit 1 if either is not up to date (a test runs this)
    python scripts/derive_advisories.py --candidates vllm   # where to harvest next (see `candidates`)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
ADVISORIES = ROOT / "remedies" / "advisories.yaml"
DOC = ROOT / "docs" / "advisories.md"
SIGNATURES = ROOT / "remedies" / "signatures"
ORDER = ("id", "engine", "releases", "title", "affects", "symptom", "site", "fixed_in", "last_good", "sources")
HOLE = "x"


def mined(engine: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The engine's mined releases (oldest first) and its raise templates."""
    data = json.loads((SIGNATURES / f"{engine}.json").read_text(encoding="utf-8"))
    releases = sorted(data["releases"], key=Version)
    return releases, [t for t in data["templates"] if str(t["kind"]).startswith("raise:")]


def raised(symptom: str | None, templates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The raise templates whose message (holes filled) the symptom matches, with the exception class."""
    if not symptom:
        return []
    pattern = re.compile(symptom)
    hits = []
    for template in templates:
        message = str(template["template"]).replace("{}", HOLE)
        exception = str(template["kind"]).split(":", 1)[1]
        if pattern.search(f"{exception}: {message}") or pattern.search(message):
            hits.append(template)
    return hits


def site_of(hits: list[dict[str, Any]]) -> str | None:
    """'module:function' when every matched template is raised in one function, else None."""
    sites = {(s["module"], s.get("function", "")) for t in hits for s in t.get("sites", [])}
    if len(sites) != 1:
        return None
    module, function = sites.pop()
    return f"{module}:{function}" if function else module


def derive(advisory: dict[str, Any]) -> dict[str, Any]:
    """The advisory with its site, last_good and (when the thread has none) fixed_in derived."""
    releases, templates = mined(advisory["engine"])
    spec = SpecifierSet(str(advisory["releases"]), prereleases=True)
    affected = [r for r in releases if Version(r) in spec]
    out = dict(advisory)
    hits = raised(advisory.get("symptom"), templates)
    site = site_of(hits)
    out["site"] = site or advisory.get("site")
    if advisory.get("last_good") is None and affected:
        older = [r for r in releases if Version(r) < Version(affected[0]) and Version(r) not in spec]
        out["last_good"] = older[-1] if older else None
    pinned = site or advisory.get("site")  # the thread's traceback pins the site where the symptom has several
    if advisory.get("fixed_in") is None and pinned and affected:
        module = pinned.split(":", 1)[0]
        present = {r for t in hits if any(s["module"] == module for s in t.get("sites", [])) for r in t["releases"]}
        if set(affected) <= present:
            later = [r for r in releases if Version(r) > Version(affected[-1]) and Version(r) not in spec]
            out["fixed_in"] = next((r for r in later if r not in present), None)
    return {key: out.get(key) for key in ORDER}


HEADER = """\
# Known regressions of engine releases (vLLM, SGLang), harvested from GitHub issue threads about crashes and
# regressions (each advisory's `sources`): the releases the thread reports broken, a `symptom` regex over the
# root exception, and the fixed release when the thread names one. `site`, `last_good` and a `fixed_in` the
# thread does not give are derived from the mined raise templates of every release
# (remedies/signatures/{vllm,sglang}.json) by scripts/derive_advisories.py - do not edit them by hand; run
# `python scripts/derive_advisories.py --write` after adding an advisory. explain names the advisories of the
# log's release when its crash sits inside engine code: by symptom or by raise site (or its module); one with
# neither names no crash (kept as the record of the thread). Loaded and validated by remedies/advisories.py;
# tests/test_remedies_advisories.py.
"""


def dump(advisories: list[dict[str, Any]]) -> str:
    body = yaml.safe_dump({"advisories": advisories}, sort_keys=False, allow_unicode=True, width=118)
    return HEADER + body


def render_doc(advisories: list[dict[str, Any]]) -> str:
    """docs/advisories.md: one row per advisory, what explain says when a crash matches it."""
    lines = ["# Engine advisories", "",
             "Generated from `remedies/advisories.yaml` by `python scripts/derive_advisories.py --write`; do not edit",
             "by hand. `qwen-doctor explain` names these when a log's crash was raised inside vLLM / SGLang code that",
             "no catalogue entry ties to a setting: the advisories of the release the log prints whose symptom matches",
             "the crash or whose raise site is where it was raised (or in the same module), and the nearest release",
             "without them (the first fixed release; with none yet, the newest release before those reported broken).",
             "", f"{len(advisories)} advisories.", "",
             "| id | releases | raise site | fixed in | last good | what breaks | sources |",
             "|---|---|---|---|---|---|---|"]
    for a in advisories:
        sources = "<br>".join(str(s).split(" ", 1)[0] for s in a["sources"])
        cells = [a["id"], f"{a['engine']} `{a['releases']}`", f"`{a['site']}`" if a["site"] else "",
                 a["fixed_in"] or "", a["last_good"] or "", str(a["title"]).replace("|", "/"), sources]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


INTERNAL = ("raise:AssertionError", "raise:RuntimeError")


def candidates(engine: str) -> list[tuple[str, str, str, str]]:
    """Where to look for the next advisories: engine-internal raises (assertions, RuntimeErrors - no user
    setting in them) whose wording is gone in the next mined release while their module still raises there
    (the module was not removed or renamed): the check that fired was removed or rewritten, often by a fix. (last release with it, first without,
    site, template), oldest first; a thread about that raise in those releases is an advisory to harvest."""
    releases, templates = mined(engine)
    found = []
    for template in templates:
        if template["kind"] not in INTERNAL or not template.get("sites"):
            continue
        present = [r for r in releases if r in template["releases"]]
        last = present[-1]
        later = releases[releases.index(last) + 1:]
        if not later:
            continue
        functions = {(s["module"], s.get("function", "")) for s in template["sites"]}
        modules = {m for m, _ in functions}
        still = any(s["module"] in modules and later[0] in t["releases"]
                    for t in templates for s in t.get("sites", []))
        if still:
            site = ", ".join(f"{m}:{f}" if f else m for m, f in sorted(functions))
            found.append((last, later[0], site, str(template["template"])))
    return sorted(found, key=lambda c: (Version(c[0]), c[2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the derived facts into remedies/advisories.yaml")
    mode.add_argument("--check", action="store_true", help="exit 1 when remedies/advisories.yaml is not up to date")
    mode.add_argument("--candidates", choices=("vllm", "sglang"),
                      help="list engine-internal raises reworded or removed between mined releases")
    args = parser.parse_args(argv)
    if args.candidates:
        found = candidates(args.candidates)
        for last, first_without, site, template in found:
            print(f"{last} -> {first_without}  {site}  {template[:100]}")
        print(f"{len(found)} candidate raise sites", file=sys.stderr)
        return 0
    doc = yaml.safe_load(ADVISORIES.read_text(encoding="utf-8"))
    current = [{key: a.get(key) for key in ORDER} for a in doc["advisories"]]
    derived = [derive(a) for a in current]
    changed = [(a, b) for a, b in zip(current, derived) if a != b]
    for before, after in changed:
        diff = {k: (before[k], after[k]) for k in ORDER if before[k] != after[k]}
        print(f"{after['id']}: {diff}")
    doc_stale = not DOC.is_file() or DOC.read_text(encoding="utf-8") != render_doc(derived)
    if doc_stale:
        print(f"{DOC.relative_to(ROOT)} is not up to date")
    if args.write:
        ADVISORIES.write_text(dump(derived), encoding="utf-8")
        DOC.write_text(render_doc(derived), encoding="utf-8")
    sites = sum(1 for a in derived if a["site"])
    print(f"{len(derived)} advisories, {sites} with a mined raise site, "
          f"{sum(1 for a in derived if a['last_good'])} with a last good release; {len(changed)} to update",
          file=sys.stderr)
    return 1 if args.check and (changed or doc_stale) else 0


if __name__ == "__main__":
    sys.exit(main())
