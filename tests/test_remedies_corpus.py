"""The corpus of real log excerpts (tests/data/corpus): each names its remedy first when explained.

Healthy excerpts (start-up and serving lines from the same public threads) must raise nothing.

Every case in manifest.yaml is an excerpt copied from a public issue thread (or a log recorded by this
project, its source the fixture path) with the remedy a senior engineer would name first. Cases marked `needs: normalise` are failures the matcher can only see once
prefixes, wrapped lines and chained exceptions are normalised; they are expected to fail until then
(xfail, not strict, so they turn green without an edit here). Every other case must pass.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from remedies import explain_sources, load_catalogue

CORPUS = Path(__file__).parent / "data" / "corpus"
ROOT = Path(__file__).resolve().parents[1]
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = MANIFEST["cases"]
HEALTHY: list[dict[str, Any]] = MANIFEST.get("healthy") or []
UNSEEN: dict[str, str] = MANIFEST.get("unseen") or {}
KNOWN_NEEDS = {"normalise"}


def first_named(case: dict[str, Any]) -> str | None:
    """The id of the first remedy explain names for this case's excerpt, or None."""
    findings = explain_sources([CORPUS / case["file"]])
    return findings[0].remedy.id if findings else None


def _param(case: dict[str, Any]) -> Any:
    marks = []
    if case.get("needs"):
        marks.append(pytest.mark.xfail(strict=False, reason=f"needs {case['needs']} (diag-engine)"))
    return pytest.param(case, id=case["file"], marks=marks)


def test_the_corpus_has_at_least_150_sourced_cases_with_known_remedies():
    assert len(CASES) >= 150
    catalogue = load_catalogue()
    for case in CASES:
        assert (CORPUS / case["file"]).is_file(), case["file"]
        assert case["source"].startswith("https://github.com/") or (ROOT / case["source"]).is_file(), case["file"]
        assert catalogue.get(case["expect"]) is not None, f"{case['file']}: unknown remedy {case['expect']}"
        assert case.get("needs") in KNOWN_NEEDS | {None}, case["file"]
        assert case.get("note"), f"{case['file']}: every case says what it shows"


def test_every_case_file_is_listed_once():
    listed = Counter(case["file"] for case in [*CASES, *HEALTHY])
    assert [name for name, count in listed.items() if count > 1] == []
    on_disk = {p.name for p in CORPUS.glob("*.log")}
    assert on_disk == set(listed)


def test_every_catalogue_entry_is_in_the_corpus_or_says_why_not():
    covered = {case["expect"] for case in CASES}
    ids = {remedy.id for remedy in load_catalogue()}
    missing = sorted(ids - covered - set(UNSEEN))
    assert missing == [], "catalogue entries with no real excerpt and no 'unseen' reason"
    assert sorted(set(UNSEEN) & covered) == [], "an 'unseen' entry now has a case: drop it from 'unseen'"
    assert sorted(set(UNSEEN) - ids) == []


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_the_expected_remedy_is_named_first(case):
    assert first_named(case) == case["expect"]


def test_score_is_printed_and_every_case_not_waiting_for_normalisation_passes(capsys):
    results = [(case, first_named(case) == case["expect"]) for case in CASES]
    ready = [ok for case, ok in results if not case.get("needs")]
    total = sum(ok for _, ok in results)
    with capsys.disabled():
        print(f"\ncorpus: first-named remedy right in {total}/{len(results)} "
              f"({100 * total / len(results):.1f}%); without pending normalisation {sum(ready)}/{len(ready)}")
    assert all(ready)


def test_healthy_excerpts_of_both_backends_are_sourced():
    assert len(HEALTHY) >= 15
    assert {case["backend"] for case in HEALTHY} >= {"vllm", "sglang"}
    for case in HEALTHY:
        assert case["source"].startswith("https://github.com/") and case.get("note"), case["file"]


@pytest.mark.parametrize("case", HEALTHY, ids=[c["file"] for c in HEALTHY])
def test_a_healthy_excerpt_raises_nothing(case):
    assert [f.remedy.id for f in explain_sources([CORPUS / case["file"]])] == []
