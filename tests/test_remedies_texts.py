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


MODEL_FIGURES = re.compile(r"67 GiB|16 attention heads|30 Gated-DeltaNet|248320|61 MiB")
KV_LOG = ("INFO 09-03 16:28:10 [utils.py:328] non-default args: {{'model_tag': '{model}', 'model': '{model}'}}\n"
          "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
          "initializing the engine.\n")


@pytest.mark.parametrize("remedy", ENTRIES, ids=[r.id for r in ENTRIES])
def test_model_figures_appear_only_in_steps_keyed_on_the_model_the_log_names(remedy):
    generic = [remedy.title, remedy.why, *_texts(remedy.render_fix({}))]
    assert [t for t in generic if MODEL_FIGURES.search(t)] == []


def _kv_finding(tmp_path: Path, model: str):
    log = tmp_path / "kv.log"
    log.write_text(KV_LOG.format(model=model), encoding="utf-8")
    (finding,) = [f for f in explain_sources([log]) if f.remedy.id == "QD-R-VLLM-KV-NO-MEMORY"]
    return " ".join(step["text"] for step in finding.to_dict()["remedy"]["fix"]) + finding.why


def test_a_llama_log_is_not_told_about_qwen35_weights(tmp_path: Path):
    text = _kv_finding(tmp_path, "meta-llama/Llama-3.1-70B-Instruct")
    assert "67 GiB" not in text and "Qwen3.5" not in text and "quantised checkpoint of the same model" in text


def test_a_qwen35_log_gets_its_figures(tmp_path: Path):
    text = _kv_finding(tmp_path, "Qwen/Qwen3.5-35B-A3B")
    assert "Qwen3.5-35B-A3B in BF16 needs about 67 GiB" in text and "Qwen/Qwen3.5-35B-A3B-FP8" in text
