"""QD-PLAN-* checks against recorded facts bundles (no GPU needed)."""

from __future__ import annotations

from doctor.results import Status
from tests.conftest import facts_with, load_fixture, run, status_of


def status(results, check_id):
    return results[check_id][0].status


def test_fp8_with_tp8_on_eight_a100s_fails_with_the_backend_message():
    results = run(load_fixture("a100-8x-nvlink"), only=("QD-PLAN",), tp=8, model="Qwen/Qwen3.5-35B-A3B-FP8")
    r = results["QD-PLAN-001"][0]
    assert r.status == Status.FAIL
    assert "The output_size of gate's and up's weight = 64 is not divisible by weight quantization block_n = 128." \
        in r.summary
    assert any("valid tensor-parallel sizes for Qwen/Qwen3.5-35B-A3B-FP8: 1, 2, 4" in f for f in r.fix)
    assert status(results, "QD-PLAN-002") == Status.SKIP


def test_bf16_on_one_h200_fits():
    results = run(load_fixture("h200"), only=("QD-PLAN",))
    assert status(results, "QD-PLAN-001") == Status.OK
    r = results["QD-PLAN-002"][0]
    assert r.status == Status.OK and r.evidence["kv_tokens"] > 262144


def test_bf16_on_one_l40s_does_not_fit_and_suggests_a_quantized_checkpoint():
    results = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-PLAN",), tp=1)
    r = results["QD-PLAN-002"][0]
    assert r.status == Status.FAIL
    assert r.summary.startswith("No available memory for the cache blocks")
    assert "use the Int4 checkpoint Qwen/Qwen3.5-35B-A3B-GPTQ-Int4" in r.fix


def test_quantization_option_selects_the_fp8_checkpoint_and_tp3_is_refused():
    results = run(load_fixture("a100-8x-nvlink"), only=("QD-PLAN-001",), tp=3, quantization="fp8")
    r = results["QD-PLAN-001"][0]
    assert r.status == Status.FAIL and "Qwen3.5-35B-A3B-FP8" in r.summary
    assert "Total number of attention heads (16) must be divisible by tensor parallel size (3)." in r.summary


def test_tp4_warns_that_kv_heads_are_replicated():
    results = run(load_fixture("a100-8x-nvlink"), only=("QD-PLAN-001",), tp=4)
    assert status(results, "QD-PLAN-001") == Status.WARN


def test_no_driver_skips_the_fit_check():
    results = run(load_fixture("no-driver"), only=("QD-PLAN-002",))
    assert status(results, "QD-PLAN-002") == Status.SKIP


def test_sglang_backend_plans_the_sglang_pools():
    results = run(facts_with("h200"), backend="sglang", only=("QD-PLAN-002",), mem_fraction_static=0.85)
    r = results["QD-PLAN-002"][0]
    assert r.status == Status.OK and r.evidence["kv_tokens"] > 0


def test_a_model_directory_without_config_json_is_a_failure_not_a_crash(tmp_path) -> None:
    results = run(load_fixture("h200"), backend="vllm", only=("QD-PLAN",), model=str(tmp_path))
    assert status_of(results, "QD-PLAN-001") == ["fail"] and "config.json" in results["QD-PLAN-001"][0].summary
    assert status_of(results, "QD-PLAN-002") == ["skip"]


def test_a_release_too_old_for_qwen35_is_reported_once_by_the_version_check_not_again_as_a_fit_failure():
    facts = facts_with(packages={"vllm": "0.16.0", "torch": "2.9.1", "transformers": "4.57.1"})
    results = run(facts, backend="vllm", only=("QD-VER-001", "QD-PLAN-002"))
    assert status(results, "QD-VER-001") == Status.FAIL
    fit = results["QD-PLAN-002"][0]
    assert fit.status == Status.SKIP and "see QD-VER-001" in fit.summary


def test_a_supported_release_still_gets_its_fit_planned():
    facts = facts_with(packages={"vllm": "0.17.1", "torch": "2.10.0", "transformers": "4.57.6"})
    assert status(run(facts, backend="vllm", only=("QD-PLAN-002",)), "QD-PLAN-002") == Status.OK
