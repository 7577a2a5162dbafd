"""The shipped catalogue: complete, sourced, and every sample line recognised by its own entry only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remedies import CatalogueError, Matcher, load_catalogue
from remedies.model import COMPONENTS

CATALOGUE = load_catalogue()
MATCHER = Matcher(CATALOGUE)
SAMPLES = [(r.id, s) for r in CATALOGUE for s in r.samples]


def test_catalogue_has_at_least_50_entries_covering_every_component():
    assert len(CATALOGUE) >= 50
    assert {r.component for r in CATALOGUE} == set(COMPONENTS)


def test_every_entry_is_sourced_and_has_ordered_fix_steps():
    for remedy in CATALOGUE:
        assert remedy.source and remedy.fix and remedy.why, remedy.id
        for source in remedy.source:
            assert source.startswith("https://") or re.match(r"^[\w.-]+/[\w.-]+ \S+", source), (remedy.id, source)


@pytest.mark.parametrize(("remedy_id", "sample"), SAMPLES, ids=[f"{i}:{n}" for n, (i, _) in enumerate(SAMPLES)])
def test_each_sample_line_matches_only_its_own_entry(remedy_id, sample):
    assert [r.id for r in MATCHER.match_line(sample)] == [remedy_id]


@pytest.mark.parametrize(
    ("claim", "remedy_id"),
    [
        ("RadixAttention table full", "QD-R-SGLANG-KV-POOL-FULL"),
        ("radix_size", "QD-R-SGLANG-SERVERARGS-KWARG"),
        ("RayRuntime", "QD-R-SGLANG-NO-RAYRUNTIME"),
        ('dtype="fp8"', "QD-R-VLLM-DTYPE-INVALID"),
        ("fp8_e4m3", "QD-R-VLLM-QUANTIZATION-INVALID"),
        ("save_pretrained", "QD-R-VLLM-SAVE-PRETRAINED"),
        ("size of tensor a (1856)", "QD-R-TORCH-TENSOR-SIZE-MISMATCH"),
    ],
)
def test_the_articles_invented_messages_and_apis_point_to_real_entries(claim, remedy_id):
    remedy = CATALOGUE.get(remedy_id)
    assert remedy is not None and claim in (remedy.article_claim or "")


def test_radix_table_full_is_answered_with_what_sglang_really_prints():
    remedy = CATALOGUE.get("QD-R-SGLANG-KV-POOL-FULL")
    assert remedy.literal == "KV cache pool is full. Retract requests."
    assert "RadixAttention table full" in remedy.title
    assert not MATCHER.match_line("RadixAttention table full")


def test_sglang_graph_flags_are_given_per_version_range():
    steps = {(s.applies, s.text) for s in CATALOGUE.get("QD-R-SGLANG-CUDA-GRAPH-CAPTURE").fix}
    assert any(a == "sglang<0.5.23" and "--cuda-graph-max-bs " in t + " " for a, t in steps)
    assert any(a == "sglang>=0.5.23" and "--cuda-graph-max-bs-decode" in t for a, t in steps)


@pytest.mark.parametrize(
    ("remedy_id", "flag"),
    [
        ("QD-R-VLLM-CONV1D-CACHE-LINES", "--max-cudagraph-capture-size"),
        ("QD-R-VLLM-KV-NO-MEMORY", "--language-model-only"),
        ("QD-R-VLLM-MAMBA-BLOCKS", "--max-num-seqs"),
        ("QD-R-SGLANG-NOT-ENOUGH-MEMORY", "--max-mamba-cache-size"),
    ],
)
def test_qwen35_specific_entries_name_the_real_flags(remedy_id, flag):
    assert any(flag in step.text for step in CATALOGUE.get(remedy_id).fix)


def test_wrappers_rank_after_root_causes():
    wrappers = [r for r in CATALOGUE if r.wrapper]
    assert {"QD-R-VLLM-ENGINE-CORE-INIT-FAILED", "QD-R-SGLANG-CHILD-FAILED"} <= {r.id for r in wrappers}
    assert min(r.rank for r in wrappers) > max(r.rank for r in CATALOGUE if not r.wrapper)


def test_lookup_is_case_insensitive_and_unknown_ids_give_none():
    assert CATALOGUE.get("qd-r-torch-cuda-oom").id == "QD-R-TORCH-CUDA-OOM"
    assert CATALOGUE.get("QD-R-NOPE") is None


def test_loading_is_cached_per_process():
    assert load_catalogue() is CATALOGUE


def test_a_missing_catalogue_directory_is_a_clear_error(tmp_path: Path):
    with pytest.raises(CatalogueError, match="no catalogue files"):
        load_catalogue(tmp_path)
