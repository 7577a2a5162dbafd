"""The CUDA graphs vLLM captures, per release (doctor/planner/capture.py): the default capture sizes of
config/vllm.py `_set_cudagraph_sizes` and the graphs each model runner captures from them."""

from __future__ import annotations

from doctor.planner.capture import capture_plan, default_sizes, request_counts
from doctor.planner.config import ServeConfig
from doctor.planner.hardware import parse_gpus
from doctor.planner.overhead import overhead_inputs
from doctor.models import get_model

HOPPER, BLACKWELL = (9, 0), (10, 0)


def test_data_centre_blackwell_captures_up_to_1024_tokens_from_0_28():
    # 1, 2, 4, 8..248 step 8 (31), 256..1024 step 16 (49): one PIECEWISE graph each, FULL up to 1024 requests
    assert capture_plan(1024, 8192, 0, True, "0.28.0", BLACKWELL, True).piecewise == 3 + 31 + 49
    assert capture_plan(1024, 8192, 0, True, "0.26.0", BLACKWELL, True).piecewise == 3 + 31 + 17
    assert capture_plan(1024, 8192, 0, True, "0.28.0", HOPPER, True).piecewise == 3 + 31 + 17


def test_from_0_29_the_uniform_decode_sizes_are_appended_within_the_ceiling():
    newer, older = default_sizes(256, 8192, 2, "0.29.0", HOPPER), default_sizes(256, 8192, 2, "0.28.0", HOPPER)
    # n requests x 3 tokens for n = 1, 2, 4, 8, ... : 3, 6, 12 and 88 x 3 = 264 are off the 8 / 16 token stride
    assert {3, 6, 12, 264} <= set(newer) and not {3, 6, 12, 264} & set(older)
    assert max(newer) == 512 and request_counts(256, 512)[-1] == 256
    # DFlash's 15 tokens on 256 sequences: 32 requests x 16 = 512 is the widest, never 256 x 16 (vllm#54418)
    assert max(default_sizes(256, 8192, 15, "0.29.0", HOPPER)) == 512
    # without speculation nothing is appended
    assert default_sizes(256, 8192, 0, "0.29.0", HOPPER) == default_sizes(256, 8192, 0, "0.28.0", HOPPER)


def test_the_v1_runner_rounds_the_sizes_to_multiples_of_the_decode_query_and_the_v2_runner_does_not():
    sizes = default_sizes(8, 8192, 6, "0.30.0", HOPPER)
    v1 = capture_plan(8, 8192, 6, True, "0.30.0", HOPPER, v1_runner=True)
    v2 = capture_plan(8, 8192, 6, True, "0.30.0", HOPPER, v1_runner=False)
    assert v2.piecewise == len(sizes) and v1.piecewise == len({-(-s // 7) * 7 for s in sizes if -(-s // 7) * 7 <= 112})
    # FULL decode graphs: one per distinct multiple of 7 up to 8 requests (56 tokens), either runner
    assert v1.full == v2.full == 8
    # FULL decode graphs lost to the attention backend: PIECEWISE only
    assert capture_plan(8, 8192, 6, False, "0.30.0", HOPPER, v1_runner=False).full == 0


def test_releases_before_0_29_keep_the_capture_plan_the_logged_boots_checked():
    # "PIECEWISE=15 (largest=112), FULL=8 (largest=56)": 6 DFlash tokens, 8 sequences, vLLM 0.22.0
    logged = capture_plan(8, 32768, 6, True, "0.22.0", (12, 1), True)
    assert (logged.piecewise, logged.full) == (15, 8)


def test_the_plan_counts_the_graphs_of_the_release_it_plans():
    spec, gpu = get_model("Qwen/Qwen3.5-35B-A3B"), parse_gpus("1xB200").gpu
    cfg = ServeConfig(max_num_seqs=1024, max_num_batched_tokens=8192)
    assert overhead_inputs(spec, cfg.with_(backend_version="0.28.0"), gpu).graphs > \
        overhead_inputs(spec, cfg.with_(backend_version="0.26.0"), gpu).graphs


def test_an_off_stride_batched_token_limit_within_the_ceiling_is_captured_too():
    from doctor.planner.capture import capture_sizes

    assert capture_sizes(64, 100)[-1] == 100 and 96 in capture_sizes(64, 100)
    assert default_sizes(64, 100, 0, "0.30.0", HOPPER)[-1] == 100
