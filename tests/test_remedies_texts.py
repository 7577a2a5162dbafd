"""Remedy texts fit the log: every entry renders without a leftover {placeholder}, with its figures or without."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from remedies import explain_sources, load_catalogue
from remedies.matcher import Matcher

ENTRIES = list(load_catalogue())
MATCHER = Matcher()
PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_]\w*\}(?!\})")


def _texts(steps) -> list[str]:
    return [step.text for step in steps]


def test_the_placeholder_check_finds_a_field_and_ignores_json_and_go_templates():
    assert PLACEHOLDER.findall("find who sent {signal}") == ["{signal}"]
    assert PLACEHOLDER.findall("--limit-mm-per-prompt '{\"image\": N}'") == []
    assert PLACEHOLDER.findall("docker image inspect IMAGE --format '{{.Os}}/{{.Architecture}}'") == []


@pytest.mark.parametrize("remedy", ENTRIES, ids=[r.id for r in ENTRIES])
def test_every_entry_renders_without_figures_and_leaves_no_placeholder(remedy):
    rendered = [remedy.title, remedy.why, *_texts(remedy.render_fix({}))]
    assert [PLACEHOLDER.findall(text) for text in rendered if PLACEHOLDER.search(text)] == []


@pytest.mark.parametrize("remedy", ENTRIES, ids=[r.id for r in ENTRIES])
def test_every_entry_renders_with_the_figures_of_its_samples(remedy):
    for sample in remedy.samples:
        matches = [m for m in MATCHER.scan(io.BytesIO((sample + "\n").encode())) if m.remedy.id == remedy.id]
        for match in matches:
            leftover = [t for t in _texts(match.fix) if PLACEHOLDER.search(t)]
            assert leftover == [], (sample, leftover)


def test_a_finding_whose_message_printed_no_figures_shows_the_generic_steps(tmp_path: Path):
    log = tmp_path / "mm.log"
    log.write_text("ValueError: You set image=1 (or defaulted to 1) in `--limit-mm-per-prompt`, but passed 3 items "
                   "in the same prompt.\n", encoding="utf-8")
    (finding,) = [f for f in explain_sources([log]) if f.remedy.id == "QD-R-VLLM-MM-LIMIT"]
    steps = [step["text"] for step in finding.to_dict()["remedy"]["fix"]]
    assert steps[0].startswith("Restart with a larger limit") and not any(PLACEHOLDER.search(s) for s in steps)


def test_the_figures_fill_the_step_when_the_message_prints_them(tmp_path: Path):
    log = tmp_path / "stop.log"
    log.write_text("(EngineCore pid=7) INFO 12-04 10:00:00 [core.py:1] [shutdown] EngineCore: trigger received "
                   "signal=SIGTERM\n", encoding="utf-8")
    remedy = load_catalogue().get("QD-R-VLLM-STOP-REQUESTED")
    (match,) = Matcher(load_catalogue()).scan(io.BytesIO(log.read_bytes()))
    assert match.remedy is remedy and "find who sent SIGTERM" in match.fix[0].text
