"""How many verdicts `check --from DUMP` gets right on real environment dumps pasted into issue threads.

Each case of tests/fixtures/env-dumps/manifest.yaml names a dump (vLLM collect_env or SGLang check_env), the
environment cause its thread shows, and the verdicts the checks must give (check id -> status). Every check
runs against the facts read from the dump, for the engine the dump belongs to.

    python bench/env_dump_accuracy.py                 # summary: verdicts and cases right
    python bench/env_dump_accuracy.py --misses        # and every wrong verdict
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from doctor import registry, runner  # noqa: E402
from doctor.context import CheckContext  # noqa: E402
from doctor.errors import BadBundle  # noqa: E402
from doctor.facts.model import Facts  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "env-dumps"


def expectations(manifest: dict[str, Any], case: dict[str, Any]) -> dict[str, list[str]]:
    """check id -> acceptable statuses: the case's own, over the verdicts every dump (with GPUs) shares."""
    common = manifest.get("common") or {}
    merged = {**(common.get("always") or {}), **((common.get("with_gpus") or {}) if case.get("gpus") else {}),
              **case["expect"]}
    return {cid: [want] if isinstance(want, str) else list(want) for cid, want in merged.items()}


def verdicts(path: Path) -> dict[str, list[str]]:
    """Every check's statuses for the dump at `path`, checked for the dump's own engine."""
    facts = Facts.load(path)
    reg = registry.load(plugins=False)
    backend = (facts.origin or {}).get("backend")
    results = runner.run_checks(runner.select(reg, backend), CheckContext(facts=facts, backend=backend))
    out: dict[str, list[str]] = {}
    for r in results:
        out.setdefault(r.check_id, []).append(r.status.value)
    return out


def score(corpus: Path = CORPUS) -> tuple[list[tuple[str, str, list[str], list[str]]], int, int, int, list[str],
                                         tuple[int, int]]:
    """(wrong verdicts, verdicts right, verdicts, cases fully right, files the reader refused or a check crashed on,
    (the cases' own verdicts right, of how many))."""
    manifest = yaml.safe_load((corpus / "manifest.yaml").read_text(encoding="utf-8"))
    wrong, right, total, cases_right, crashed = [], 0, 0, 0, []
    own_right = own_total = 0
    for case in manifest["cases"]:
        try:
            got = verdicts(corpus / case["file"])
        except BadBundle as exc:  # the reader refused the dump: every expected verdict is missed
            got = {}
            crashed.append(f"{case['file']} (refused: {str(exc).split(': ', 1)[-1][:80]})")
        if any("error" in statuses for statuses in got.values()):
            crashed.append(case["file"])
        ok = True
        for cid, want in expectations(manifest, case).items():
            total += 1
            have = got.get(cid, ["(not run)"])
            own = cid in case["expect"]
            own_total += own
            if all(s in want for s in have):
                right += 1
                own_right += own
            else:
                ok = False
                wrong.append((case["file"], cid, want, have))
        cases_right += ok
    return wrong, right, total, cases_right, crashed, (own_right, own_total)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="List every wrong verdict.")
    args = parser.parse_args()
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    wrong, right, total, cases_right, crashed, (own_right, own_total) = score()
    if args.misses:
        for file, cid, want, have in wrong:
            print(f"{file}: {cid} wants {'/'.join(want)}, got {'/'.join(have)}")
        for file in crashed:
            print(f"crashed or refused: {file}")
    cases = len(manifest["cases"])
    print(f"verdicts right: {right}/{total} ({100 * right / total:.1f}%), of which the cases' own (cause) verdicts "
          f"{own_right}/{own_total}; dumps fully right: {cases_right}/{cases}; refused or crashed on: {len(crashed)}")
    return 0 if not wrong and not crashed else 1


if __name__ == "__main__":
    sys.exit(main())
