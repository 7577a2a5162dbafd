"""Speculative decoding's share of vLLM's profile-run peak: the dummy rejection sampler's run over max_num_seqs
rows (gpu_model_runner.py _dummy_sampler_run), checked against the recorded H200 boots with and without MTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus
from doctor.planner.bootlog import parse_boot_log
from doctor.planner.hardware import GIB
from doctor.planner.overhead import rejection_sampler_bytes, vllm_overhead_terms

QWEN = get_model("Qwen/Qwen3.5-35B-A3B")
H200 = parse_gpus("1xH200").gpu
FIXTURES = Path(__file__).parent / "fixtures" / "h200-rehearsal"


def _cfg(**kw) -> ServeConfig:
    return ServeConfig(language_model_only=True, max_model_len=262144, backend_version="0.26.0", **kw)


def test_the_rejection_sampler_holds_bf16_draft_and_bonus_rows_and_float32_copies_per_sequence() -> None:
    # randn logits, 2 BF16 rows per request (the bonus copy is the sampler's own input, inside its fitted
    # bytes per logit), and 3 float32 rows (bonus raw logits, the target logits' clone, the recovered-token
    # draw q): 16 bytes per vocabulary entry per sequence
    assert rejection_sampler_bytes(QWEN, _cfg(mtp_tokens=1, speculative_method="mtp"), 1024) == 1024 * 248320 * 16


def test_without_speculative_decoding_there_is_no_rejection_sampler_run() -> None:
    assert rejection_sampler_bytes(QWEN, _cfg(), 1024) == 0


def test_the_dummy_run_drafts_one_token_per_request_whatever_num_speculative_tokens() -> None:
    one = vllm_overhead_terms(QWEN, _cfg(mtp_tokens=1, speculative_method="mtp"), H200)
    three = vllm_overhead_terms(QWEN, _cfg(mtp_tokens=3, speculative_method="mtp"), H200)
    assert one.peak_activation == three.peak_activation


def test_the_term_scales_with_max_num_seqs_not_with_batched_tokens() -> None:
    small = rejection_sampler_bytes(QWEN, _cfg(mtp_tokens=1, max_num_seqs=256), 256)
    assert small * 4 == rejection_sampler_bytes(QWEN, _cfg(mtp_tokens=1, max_num_seqs=1024), 1024)
    wide = _cfg(mtp_tokens=1, max_num_batched_tokens=16384)
    assert rejection_sampler_bytes(QWEN, wide, 1024) == rejection_sampler_bytes(QWEN, _cfg(mtp_tokens=1), 1024)


@pytest.mark.parametrize("log, mtp", [("vllm-bf16-lm-only.log", 0), ("vllm-bf16-exercises.log", 1)])
def test_the_planned_peak_activation_is_the_h200_boot_s_within_3_percent(log: str, mtp: int) -> None:
    logged = parse_boot_log((FIXTURES / log).read_text(encoding="utf-8")).activation_gib
    cfg = _cfg(mtp_tokens=mtp, speculative_method="mtp" if mtp else None)
    planned = vllm_overhead_terms(QWEN, cfg, H200).peak_activation / GIB
    assert planned == pytest.approx(logged, rel=0.03)


@pytest.mark.parametrize("version, method, v1", [
    ("0.26.0", "mtp", True), ("0.28.0", "dflash", True),           # hybrid models stay on V1 up to 0.28
    ("0.29.0", "qwen3_5_mtp", False), ("0.29.0", "ngram", True),    # 0.29: V2 unless the method is V1-only
    ("0.30.0", "draft_model", True), ("0.31.0", "draft_model", False),
    ("0.32.0", "ngram", False), ("0.32.0", "suffix", True),
    ("0.34.0", "suffix", False),                                     # 0.34: no V1 GPU runner left
])
def test_the_model_runner_follows_each_release_s_v2_default(version: str, method: str, v1: bool) -> None:
    from doctor.planner.overhead import v1_model_runner

    cfg = ServeConfig(backend_version=version, mtp_tokens=2, speculative_method=method)
    assert v1_model_runner(cfg) is v1
    assert (rejection_sampler_bytes(QWEN, cfg, 64) > 0) is v1


@pytest.mark.parametrize("version, logits_only", [("0.28.0", False), ("0.29.0", True), ("0.32.0", True),
                                                  ("0.33.0", False), ("0.34.0", False)])
def test_the_v2_runner_s_dummy_sampler_holds_only_the_logits_from_0_29_until_0_33(version: str,
                                                                                  logits_only: bool) -> None:
    from doctor.planner.overhead import overhead_inputs, sampler_logits_only

    cfg = ServeConfig(language_model_only=True, backend_version=version)
    assert sampler_logits_only(cfg) is logits_only
    inputs = overhead_inputs(QWEN, cfg, H200)
    assert inputs.logits_only_bytes == (2.0 if logits_only else 0.0)


def test_on_0_30_the_h200_plan_reserves_the_bf16_logits_not_the_v1_sampler_s_run() -> None:
    v1 = vllm_overhead_terms(QWEN, _cfg(), H200)
    v2 = vllm_overhead_terms(QWEN, ServeConfig(language_model_only=True, max_model_len=262144,
                                               backend_version="0.30.0"), H200)
    # 1,024 x 248,320 logits: ~3.5 GiB through the V1 sampler, 0.47 GiB of BF16 logits; the forward over
    # the batched tokens is then the peak
    assert v2.peak_activation < v1.peak_activation - 2 * GIB
    assert v2.peak_activation >= 1024 * 248320 * 2
