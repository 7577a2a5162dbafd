"""Mine what each vLLM and SGLang release requires of its dependencies, for explain's dependency findings.

    python scripts/mine_dependency_pins.py            # read the index, rewrite remedies/dependency_pins.json
    python scripts/mine_dependency_pins.py --dry-run  # print the summary, write nothing

Every release from a floor on is read from the index through pip (`scripts/refresh_versions.requires_dist`:
the wheel's METADATA Requires-Dist, cached on disk). A requirement counts when it applies to a Linux x86_64
CPython 3.12 install with the extras a serving install takes (SGLang's `srt` / `runtime_common`); the file
keeps, per engine and release, each required distribution with its specifier ('' when the release names it
without a version), so `remedies.dependency` can say what the log's release needs of the package whose API
the traceback shows changed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import refresh_versions  # noqa: E402

OUT = ROOT / "remedies" / "dependency_pins.json"
FLOORS = {"vllm": Version("0.6.0"), "sglang": Version("0.4.0")}
EXTRAS = {"vllm": (), "sglang": ("srt", "runtime-common", "runtime_common")}
WORKERS = 2


def release_pins(engine: str, requires: list[str]) -> dict[str, str]:
    """distribution -> specifier ('' for any version) of one release's serving install."""
    reqs = refresh_versions._requirements(requires, extras=EXTRAS[engine])
    return {name: str(req.specifier) for name, req in sorted(reqs.items())}


def mine(engine: str) -> dict[str, dict[str, str]]:
    """release -> pins for every final release of `engine` from its floor on, oldest first."""
    versions = refresh_versions.releases(engine, FLOORS[engine])
    with ThreadPoolExecutor(WORKERS) as pool:
        requires = list(pool.map(lambda v: refresh_versions.requires_dist(engine, v), versions))
    return {str(v): release_pins(engine, r) for v, r in zip(versions, requires)}


def document(engines: dict[str, dict[str, dict[str, str]]], today: str, index: str) -> dict[str, Any]:
    return {
        "generated": f"scripts/mine_dependency_pins.py on {today}",
        "source": f"Requires-Dist of each release's wheel METADATA as the index serves it ({index}); "
                  "markers evaluated for Linux x86_64 CPython 3.12, SGLang with its srt / runtime_common extras",
        "engines": engines,
    }


def render(doc: dict[str, Any]) -> str:
    """The document as JSON with one line per release (diffs between runs show the releases that changed)."""
    head = {k: v for k, v in doc.items() if k != "engines"}
    lines = [json.dumps(head)[:-1] + ', "engines": {']
    for e, (engine, rows) in enumerate(doc["engines"].items()):
        lines.append(f" {json.dumps(engine)}: {{")
        for r, (release, pins) in enumerate(rows.items()):
            lines.append(f"  {json.dumps(release)}: {json.dumps(pins)}" + ("," if r < len(rows) - 1 else ""))
        lines.append(" }" + ("," if e < len(doc["engines"]) - 1 else ""))
    return "\n".join([*lines, "}}", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dry-run", action="store_true", help="print the summary, write nothing")
    args = parser.parse_args(argv)
    engines = {engine: mine(engine) for engine in FLOORS}
    index = refresh_versions.remote_index().index_url
    doc = document(engines, dt.date.today().isoformat(), index)
    for engine, rows in engines.items():
        print(f"{engine}: {len(rows)} releases ({next(iter(rows))} - {list(rows)[-1]})")
    if not args.dry_run:
        OUT.write_text(render(doc), encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
