"""What changes in vLLM's determine_available_memory terms at TP > 1, rule by rule (doctor/planner/overhead.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner.coefficients import shipped
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import GIB, parse_gpus
from doctor.planner.moe import moe_workspace, triton_experts
from doctor.planner.overhead import (allreduce_output_bytes, logits_gather_bytes, overhead_inputs,
                                     peak_activation, sampler_held_bytes, sampler_phase, vllm_overhead_terms)
from doctor.planner.plan import resolve_config
from doctor.planner.versions import vllm_rules

BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
NVFP4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")
H100 = parse_gpus("4xlogged-80G:79.33").gpu
VOCAB = 248320
PARTIAL = Path(__file__).parent / "data" / "published_kv" / "vllm-partial.yaml"


def test_the_triton_fused_moe_workspaces_are_as_wide_as_the_hidden_size_at_any_tp():
    # TritonExperts.workspace_shapes: [M, topk, max(I / TP, H)] + [M, topk, max(2 I / TP, H)]; I = 512, H = 2048
    for tp in (1, 2, 4, 8):
        cfg = ServeConfig(tp=tp, backend_version="0.26.0")
        workspace = moe_workspace(BF16, cfg, 8192)
        assert workspace.peak == workspace.persistent == 8192 * 8 * (2048 + 2048) * 2


def test_the_modular_kernels_workspace_outlives_the_forward_from_vllm_0_14():
    # 0.13.0: fused_experts_impl, [M, topk, max(2I, H)] + [M x topk, I] allocated and freed per call
    old = moe_workspace(BF16, ServeConfig(backend_version="0.13.0"), 8192)
    assert old.peak == 8192 * 8 * (2048 + 512) * 2 and old.persistent == 0
    assert not vllm_rules("0.13.0").fused_moe_modular and vllm_rules("0.14.1").fused_moe_modular
    new = moe_workspace(BF16, ServeConfig(backend_version="0.14.1"), 8192)
    assert new.persistent == new.peak == 8192 * 8 * (2048 + 2048) * 2


def test_fused_moe_chunks_its_workspaces_only_up_to_vllm_0_17():
    assert [vllm_rules(v).fused_moe_chunk for v in ("0.11.2", "0.13.0", "0.17.1", "0.18.1", "0.26.0")] == \
        [32768, 16384, 16384, None, None]
    per_token = 8 * (2048 + 2048) * 2
    assert moe_workspace(BF16, ServeConfig(backend_version="0.11.2"), 40000).peak == 32768 * 8 * (2048 + 512) * 2
    # chunked modular kernel: the chunk's workspaces + the [M, H] output of all the tokens
    assert moe_workspace(BF16, ServeConfig(backend_version="0.15.1"), 40000).peak == \
        16384 * per_token + 40000 * 2048 * 2
    assert moe_workspace(BF16, ServeConfig(backend_version="0.26.0"), 40000).peak == 40000 * per_token


def test_triton_runs_the_experts_of_bf16_below_blackwell_and_of_block_fp8_on_hopper_with_tp():
    fp8 = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    assert triton_experts(BF16, ServeConfig(), (9, 0)) and triton_experts(BF16, ServeConfig(), (8, 6))
    assert not triton_experts(BF16, ServeConfig(), (10, 0)) and not triton_experts(BF16, ServeConfig(), (12, 0))
    assert triton_experts(fp8, ServeConfig(tp=4), (9, 0))
    assert not triton_experts(fp8, ServeConfig(tp=4, expert_parallel=True), (9, 0))
    assert not triton_experts(fp8, ServeConfig(), (12, 1)) and not triton_experts(NVFP4, ServeConfig(), (12, 0))


def test_flashinfer_s_runner_workspace_is_as_large_at_any_tp_where_the_hidden_size_outweighs_2i():
    # the runner's buffers are max(k M H, k M 2I / TP) wide: with H = 2048 >= 2 x 512 the hidden size decides, and
    # vLLM's kept (M, H) buffer does not shard either
    one = moe_workspace(NVFP4, ServeConfig(tp=1), 65536, (12, 0))
    four = moe_workspace(NVFP4, ServeConfig(tp=4), 65536, (12, 0))
    assert NVFP4.hidden_size >= 2 * NVFP4.moe.intermediate_size
    assert four == one and one.persistent == 65536 * NVFP4.hidden_size * 2


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


def test_the_sampler_phase_holds_the_dummy_forwards_hidden_states_and_the_moe_workspace():
    assert sampler_held_bytes(BF16, 8192, 1024) == (8192 + 1024) * 2048 * 2
    inputs = overhead_inputs(BF16, ServeConfig(language_model_only=True, backend_version="0.26.0"), H100)
    assert inputs.sampler_held == sampler_held_bytes(BF16, 8192, 1024) + 8192 * 8 * 4096 * 2
    coef = shipped()
    assert inputs.sampler_buffer == 132 * 248320 * 4     # the Triton top-k / top-p buffer, an H100's 132 SMs
    assert peak_activation(inputs, coef) == (inputs.sampler_held + int(inputs.logits * coef.sampler_bytes_per_logit)
                                             + inputs.sampler_buffer)


def test_the_h200_peak_is_the_moe_workspace_held_hidden_states_and_a_14_byte_sampler():
    # vLLM 0.26.0's sampler over [1024, 248320]: the bf16 logits _dummy_sampler_run holds (2 B), their float32
    # copy (4), softmax probs (4) and the exponential noise (4); top-k/top-p runs in place (Triton, >= 8 rows)
    # with a [132 SMs, V] float32 buffer. With the 0.5 GiB MoE workspace and the held hidden states this makes
    # the logged 4.01 GiB to within 0.05 GiB; without the workspace it would miss by 0.55 GiB.
    inputs = overhead_inputs(BF16, ServeConfig(language_model_only=True, backend_version="0.26.0"),
                             parse_gpus("1xH200").gpu)
    physical = inputs.sampler_held + inputs.logits * 14 + 132 * VOCAB * 4
    assert inputs.sampler_buffer == 132 * VOCAB * 4
    assert abs(physical / GIB - 4.01) < 0.05


def test_non_torch_memory_at_tp_above_one_stands_in_from_tp_one_until_a_tp_boot_is_fitted():
    # NCCL communicators and custom all-reduce buffers are set up before vLLM's baseline snapshot; what NCCL
    # connects lazily in the profile run depends on the topology, and no fully described TP > 1 boot is held
    one = vllm_overhead_terms(BF16, ServeConfig(tp=1, backend_version="0.26.0"), H100)
    four = vllm_overhead_terms(BF16, ServeConfig(tp=4, backend_version="0.26.0"), H100)
    assert four.non_torch == one.non_torch


def test_the_tp4_boot_of_vllm_50722_lies_between_its_forward_and_a_full_default_sampler():
    # "5.66 GiB for peak activation" at 40000 batched tokens, TP 4, max_num_seqs not logged: the source-derived
    # forward at TP 4 (+ the two images' outputs and pixel values) stays under it, though over the Triton
    # workspace it keeps; the sampler phase of the default 1024 rows over it
    entry = next(e for e in yaml.safe_load(PARTIAL.read_text())["entries"] if e["id"] == "vllm-50722-tp4")
    cfg = resolve_config(BF16, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    gpu = parse_gpus(entry["gpus"]).gpu
    inputs = overhead_inputs(BF16, cfg, gpu)
    assert inputs.max_num_seqs == 1024
    held = inputs.encoder_outputs + inputs.encoder_inputs
    kept = moe_workspace(BF16, cfg, 40000, (9, 0)).persistent
    assert kept > 2 * GIB and kept < held + inputs.forward_bytes < 5.66 * GIB
    assert 5.66 * GIB < vllm_overhead_terms(BF16, cfg, gpu).peak_activation < 7 * GIB


def test_only_the_last_pipeline_stage_runs_the_dummy_sampler():
    cfg = ServeConfig(pp=2, language_model_only=True, backend_version="0.26.0")
    last = overhead_inputs(BF16, cfg, H100)
    first = overhead_inputs(BF16, cfg, H100, last_stage=False)
    assert last.logits == 1024 * VOCAB and first.logits == first.logits_gather == 0
    assert vllm_overhead_terms(BF16, cfg, H100, last_stage=False).peak_activation < \
        vllm_overhead_terms(BF16, cfg, H100).peak_activation
