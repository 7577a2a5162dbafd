"""Healthy logs raise nothing: no entry, no unrecognised crash, through files and through the live feed."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import Matcher, explain_sources

HEALTHY = Path(__file__).parent / "data" / "healthy"
LOGS = sorted(HEALTHY.glob("*.log"))


def header(path: Path, key: str) -> str:
    prefix = f"# {key}:"
    return next(line[len(prefix):].strip() for line in path.read_text(encoding="utf-8").splitlines()
                if line.startswith(prefix))


def test_the_corpus_covers_both_backends_and_both_vllm_engines_with_sources():
    assert len(LOGS) >= 30
    backends = [header(p, "backend") for p in LOGS]
    assert sum(b.startswith("sglang") for b in backends) >= 8
    assert any("(V0" in b for b in backends) and any("(V1" in b for b in backends)
    assert all(header(p, "source") for p in LOGS)
    readme = (HEALTHY / "README.md").read_text(encoding="utf-8")
    assert all(p.name in readme for p in LOGS)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_a_healthy_log_yields_nothing(path):
    assert explain_sources([path]) == []


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_a_healthy_log_fed_live_yields_nothing(path):
    matcher = Matcher()
    lines = path.read_text(encoding="utf-8").splitlines()
    # an operator's stop request is reported as a marker (the follower stops matching there), nothing else
    assert [m.remedy.id for n, line in enumerate(lines, start=1) for m in matcher.feed(line, n)
            if not m.remedy.stop] == []
