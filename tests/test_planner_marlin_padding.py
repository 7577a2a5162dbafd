"""Marlin's MoE thread-tile padding (doctor/planner/marlin_padding.py): from vLLM 0.26.0 an INT4 or Marlin-FP8
expert layer whose intermediate size per rank is not a multiple of lcm(64, group) is zero-padded up to one, and
"Model loading took" counts the padded weights."""

from __future__ import annotations

import pytest

from doctor.models import get_model
from doctor.planner import parse_gpus, plan
from doctor.planner.config import ServeConfig
from doctor.planner.marlin_padding import expert_padding, padded_intermediate
from doctor.planner.weights import rank_weights

INT4 = get_model("Qwen/Qwen3.5-35B-A3B-GPTQ-Int4")     # group 128
FP8 = get_model("Qwen/Qwen3.5-35B-A3B-FP8")            # 128 x 128 blocks
AMPERE, HOPPER = (8, 0), (9, 0)


def test_the_padded_size_is_the_next_multiple_of_the_thread_tile_and_the_group():
    # marlin_moe_padded_intermediate: round_up(intermediate, math.lcm(64, group)), group <= 0 counts as 1
    assert padded_intermediate(64, 128) == 128
    assert padded_intermediate(128, 128) == 128
    assert padded_intermediate(96, -1) == 128
    assert padded_intermediate(64, 32) == 64


# Qwen3.5-35B-A3B: 512 expert channels split 1/TP; TP 3, 5, 6 and 7 do not divide its 16 heads (planned apart)
@pytest.mark.parametrize("tp, per_rank, padded", [(1, 512, 512), (2, 256, 256), (4, 128, 128), (8, 64, 128)])
def test_int4_experts_per_rank_at_each_tp_on_vllm_0_26(tp: int, per_rank: int, padded: int):
    cfg = ServeConfig(backend_version="0.26.0", tp=tp)
    assert expert_padding(INT4, cfg, HOPPER) == padded / per_rank
    unpadded = rank_weights(INT4, cfg.with_(backend_version="0.22.0"), capability=HOPPER)["experts"]
    assert rank_weights(INT4, cfg, capability=HOPPER)["experts"] == pytest.approx(unpadded * padded / per_rank, abs=8)


@pytest.mark.parametrize("tp", [3, 5, 6, 7])
def test_a_tp_that_does_not_divide_the_heads_is_refused_before_any_padding_matters(tp: int):
    refused = plan(INT4, parse_gpus(f"{tp}xA100-80G"), ServeConfig(backend_version="0.26.0", tp=tp))
    assert not refused.fits and "divisible by tensor parallel size" in refused.problems[0]


def test_fp8_experts_are_padded_only_where_they_run_as_marlin():
    cfg = ServeConfig(backend_version="0.26.0", tp=8)
    assert expert_padding(FP8, cfg, AMPERE) == 2.0      # W8A16 Marlin below compute capability 8.9
    assert expert_padding(FP8, cfg, HOPPER) == 1.0      # FP8 tensor cores: no Marlin
    native = rank_weights(FP8, cfg, capability=HOPPER)["experts"]
    assert rank_weights(FP8, cfg, capability=AMPERE)["experts"] > 1.9 * native


def test_no_padding_before_0_26_with_expert_parallelism_or_on_sglang():
    assert expert_padding(INT4, ServeConfig(backend_version="0.22.0", tp=8), HOPPER) == 1.0
    # expert parallelism keeps every expert whole: 512 channels
    assert expert_padding(INT4, ServeConfig(backend_version="0.26.0", tp=8, expert_parallel=True), HOPPER) == 1.0
    assert expert_padding(INT4, ServeConfig(backend="sglang", backend_version="0.5.16", tp=8), HOPPER) == 1.0
    assert expert_padding(get_model("Qwen/Qwen3.5-35B-A3B"), ServeConfig(backend_version="0.26.0", tp=8),
                          HOPPER) == 1.0


def test_an_8_gpu_int4_plan_carries_the_padded_experts():
    at_026 = plan(INT4, parse_gpus("8xA100-80G"), ServeConfig(backend_version="0.26.0", tp=8))
    at_022 = plan(INT4, parse_gpus("8xA100-80G"), ServeConfig(backend_version="0.22.0", tp=8))
    grown = at_026.ranks[0].weights["experts"] - at_022.ranks[0].weights["experts"]
    assert grown == pytest.approx(at_022.ranks[0].weights["experts"], abs=8)
