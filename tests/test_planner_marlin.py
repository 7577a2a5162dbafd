"""FP8 checkpoints on GPUs without FP8 tensor cores: vLLM runs them through Marlin W8A16, whose preparation turns
block-wise scales into group-wise ones in the model dtype (doctor/planner/weights.py)."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import parse_gpus, plan
from doctor.planner.config import ServeConfig
from doctor.planner.weights import fp8_runs_as_marlin, rank_weights

FP8 = get_model("Qwen/Qwen3.6-35B-A3B-FP8")
INT4 = get_model("Qwen/Qwen3.5-35B-A3B-GPTQ-Int4")
LM_ONLY = ServeConfig(tp=2, language_model_only=True)


def test_marlin_runs_fp8_only_below_compute_capability_8_9():
    assert fp8_runs_as_marlin((8, 6)) and fp8_runs_as_marlin((8, 0))
    assert not fp8_runs_as_marlin((8, 9)) and not fp8_runs_as_marlin((9, 0)) and not fp8_runs_as_marlin(None)


def test_an_ampere_rank_holds_one_bf16_scale_per_128_inputs_of_each_fp8_expert_weight():
    # 128 x 128 float32 block scales (4 / 16,384 bytes a parameter) become (K / 128, N) BF16 scales (2 / 128)
    native = rank_weights(FP8, LM_ONLY)["experts"]
    ampere = rank_weights(FP8, LM_ONLY, capability=(8, 6))["experts"]
    params = native / (1 + 4 / (128 * 128))
    assert abs(ampere - params * (1 + 2 / 128)) <= 1
    assert ampere - native > 0.2 * 2**30     # Qwen3.6-35B-A3B at TP 2: about 0.23 GiB a rank


def test_int4_marlin_and_unquantized_weights_do_not_change_with_the_gpu():
    assert rank_weights(INT4, LM_ONLY, capability=(8, 6)) == rank_weights(INT4, LM_ONLY)
    bf16 = get_model("Qwen/Qwen3.5-35B-A3B")
    assert rank_weights(bf16, LM_ONLY, capability=(8, 6)) == rank_weights(bf16, LM_ONLY)


def test_a_vllm_plan_on_rtx_3090s_loads_the_marlin_scales_and_an_sglang_plan_is_left_as_read():
    vllm_3090 = plan(FP8, parse_gpus("2xRTX3090"), ServeConfig(backend_version="0.26.0", tp=2,
                                                               language_model_only=True))
    vllm_4090 = plan(FP8, parse_gpus("2xRTX4090"), ServeConfig(backend_version="0.26.0", tp=2,
                                                               language_model_only=True))
    assert vllm_3090.ranks[0].weights["experts"] > vllm_4090.ranks[0].weights["experts"]
    sglang_3090 = plan(FP8, parse_gpus("2xRTX3090"), ServeConfig(backend="sglang", backend_version="0.5.16", tp=2,
                                                                 language_model_only=True))
    assert sglang_3090.ranks[0].weights["experts"] == rank_weights(FP8, LM_ONLY)["experts"]
