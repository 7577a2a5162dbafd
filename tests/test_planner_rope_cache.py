"""The rotary cos / sin caches vLLM registers while the model loads count in the weights a vLLM plan gives
("Model loading took"): the target's M-RoPE cache and a DFlash drafter's own (doctor/planner/rope_cache.py)."""

from __future__ import annotations

from dataclasses import replace

from doctor.models import get_model
from doctor.planner import parse_gpus, plan
from doctor.planner.config import ServeConfig
from doctor.planner.drafters import known_drafters
from doctor.planner.flags import serve_config_from_argv
from doctor.planner.rope_cache import drafter_rope_cache_bytes, target_rope_cache_bytes

QWEN = get_model("Qwen/Qwen3.5-35B-A3B")
DFLASH = '{"method": "dflash", "model": "z-lab/Qwen3.5-35B-A3B-DFlash", "num_speculative_tokens": 8}'


def test_qwen35_mrope_cache_spans_four_times_its_positions_in_0_26() -> None:
    """mrope.py: cache_max_position_num = 262,144 x 4 rows of 256 x 0.25 = 64 BF16 values: 0.125 GiB."""
    assert target_rope_cache_bytes(QWEN, ServeConfig(backend_version="0.26.0")) == 262_144 * 4 * 64 * 2


def test_mrope_cache_spans_the_positions_once_from_0_32_without_pruning() -> None:
    """qwen3_vl.py mrope_positions_factor (0.32.0): 4 only with multimodal pruning, else 1."""
    assert target_rope_cache_bytes(QWEN, ServeConfig(backend_version="0.32.0")) == 262_144 * 64 * 2


def test_an_architecture_whose_rotary_code_was_not_read_counts_no_cache() -> None:
    other = replace(QWEN, architecture="LlamaForCausalLM")
    assert target_rope_cache_bytes(other, ServeConfig(backend_version="0.26.0")) == 0


def test_vllm_plan_weights_hold_the_rotary_cache_and_sglang_plans_do_not() -> None:
    vllm = plan(QWEN, parse_gpus("1xH100"), ServeConfig(backend_version="0.26.0"))
    sglang = plan(QWEN, parse_gpus("1xH100"), ServeConfig(backend="sglang", backend_version="0.5.16"))
    assert vllm.ranks[0].weights["rotary cache"] == 262_144 * 4 * 64 * 2
    assert "rotary cache" not in sglang.ranks[0].weights


def test_the_rotary_cache_sits_on_every_tensor_parallel_rank_unsplit() -> None:
    p = plan(QWEN, parse_gpus("2xH100"), ServeConfig(backend_version="0.26.0", tp=2))
    assert {r.weights["rotary cache"] for r in p.ranks} == {262_144 * 4 * 64 * 2}


def test_dflash_drafter_keys_a_cache_of_its_own_at_its_full_head_dim() -> None:
    """qwen3_dflash.py get_rope(head_dim 128, max_position 262,144): not the target's (head 256, rotary 64)."""
    drafter = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
    assert drafter_rope_cache_bytes(drafter) == 262_144 * 128 * 2
    cfg = serve_config_from_argv("vllm", ["--speculative-config", DFLASH], backend_version="0.26.0")
    rank = plan(QWEN, parse_gpus("1xH100"), cfg).ranks[0]
    assert rank.weights["drafter"] == drafter.weight_bytes(1) + drafter.fused_kv_copy_bytes(1) + 262_144 * 128 * 2
