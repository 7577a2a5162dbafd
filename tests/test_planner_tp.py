"""What changes in vLLM's determine_available_memory terms at TP > 1, rule by rule (doctor/planner/overhead.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner.coefficients import shipped
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, parse_gpus
from doctor.planner.overhead import (allreduce_output_bytes, logits_gather_bytes, moe_workspace_bytes,
                                     overhead_inputs, peak_activation, sampler_held_bytes, sampler_phase,
                                     vllm_overhead_terms)
from doctor.planner.plan import resolve_config
from doctor.planner.versions import vllm_rules

BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
NVFP4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")
H100 = parse_gpus("4xlogged-80G:79.33").gpu
VOCAB = 248320
PARTIAL = Path(__file__).parent / "data" / "published_kv" / "vllm-partial.yaml"


def test_the_bf16_fused_moe_workspaces_are_as_wide_as_the_hidden_size_at_any_tp():
    # TritonExperts.workspace_shapes: [M, topk, max(I / TP, H)] + [M, topk, max(2 I / TP, H)]; I = 512, H = 2048
    for tp in (1, 2, 4, 8):
        cfg = ServeConfig(tp=tp, backend_version="0.26.0")
        assert moe_workspace_bytes(BF16, cfg, 8192) == 8192 * 8 * (2048 + 2048) * 2


def test_fused_moe_chunks_its_workspaces_only_up_to_vllm_0_17():
    assert [vllm_rules(v).fused_moe_chunk for v in ("0.11.2", "0.13.0", "0.17.1", "0.18.1", "0.26.0")] == \
        [32768, 16384, 16384, None, None]
    per_token = 8 * (2048 + 2048) * 2
    assert moe_workspace_bytes(BF16, ServeConfig(backend_version="0.11.2"), 40000) == 32768 * per_token
    assert moe_workspace_bytes(BF16, ServeConfig(backend_version="0.15.1"), 40000) == 16384 * per_token
    assert moe_workspace_bytes(BF16, ServeConfig(backend_version="0.26.0"), 40000) == 40000 * per_token


def test_quantized_experts_keep_the_estimate_sharded_by_tp():
    one = moe_workspace_bytes(NVFP4, ServeConfig(tp=1), 8192)
    four = moe_workspace_bytes(NVFP4, ServeConfig(tp=4), 8192)
    assert four < one


def test_the_row_parallel_all_reduce_adds_one_output_at_tp_above_one():
    assert allreduce_output_bytes(BF16, ServeConfig(tp=1), 8192) == 0
    assert allreduce_output_bytes(BF16, ServeConfig(tp=2), 8192) == 8192 * 2048 * 2


def test_every_rank_samples_over_the_full_vocabulary():
    one = overhead_inputs(BF16, ServeConfig(tp=1, backend_version="0.26.0"), H100)
    four = overhead_inputs(BF16, ServeConfig(tp=4, backend_version="0.26.0"), H100)
    assert one.logits == four.logits == 1024 * VOCAB
    assert one.sampler_held == four.sampler_held


def test_the_logits_gather_holds_two_and_a_fraction_copies_and_stays_under_the_sampler():
    assert logits_gather_bytes(BF16, 1, 1024) == 0
    assert logits_gather_bytes(BF16, 4, 1024) == int(1024 * VOCAB * 2.25 * 2)
    coef = shipped()
    for tp in (2, 4, 8):
        inputs = overhead_inputs(BF16, ServeConfig(tp=tp, backend_version="0.26.0"), H100)
        assert inputs.logits_gather < inputs.logits * coef.sampler_bytes_per_logit
        assert sampler_phase(inputs, coef) == sampler_phase(overhead_inputs(BF16, ServeConfig(), H100), coef)


def test_the_sampler_phase_holds_the_dummy_forwards_hidden_states():
    assert sampler_held_bytes(BF16, 8192, 1024) == (8192 + 1024) * 2048 * 2
    inputs = overhead_inputs(BF16, ServeConfig(language_model_only=True, backend_version="0.26.0"), H100)
    coef = shipped()
    assert peak_activation(inputs, coef) == inputs.sampler_held + int(inputs.logits * coef.sampler_bytes_per_logit)


def test_nccl_and_custom_all_reduce_buffers_add_no_non_torch_memory():
    one = vllm_overhead_terms(BF16, ServeConfig(tp=1, backend_version="0.26.0"), H100)
    four = vllm_overhead_terms(BF16, ServeConfig(tp=4, backend_version="0.26.0"), H100)
    assert four.non_torch == one.non_torch


def test_the_tp4_boot_of_vllm_50722_is_forward_bound_and_its_peak_is_mostly_explained():
    # "5.66 GiB for peak activation" at 40000 batched tokens, TP 4: no sampler of <= 1024 rows reaches it, the
    # source-derived forward at TP 4 comes within 0.6 GiB of it and does not exceed it
    entry = next(e for e in yaml.safe_load(PARTIAL.read_text())["entries"] if e["id"] == "vllm-50722-tp4")
    cfg = resolve_config(BF16, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    gpu = parse_gpus(entry["gpus"]).gpu
    inputs = overhead_inputs(BF16, cfg, gpu)
    coef = shipped()
    assert inputs.encoder_outputs + sampler_phase(inputs, coef) < 5.0 * GIB
    planned = vllm_overhead_terms(BF16, cfg, gpu).peak_activation / GIB
    assert planned == pytest.approx(5.66, abs=0.6) and planned <= 5.66
