"""Expert parallelism's communication buffers per all2all backend (doctor/planner/overhead.py), as vLLM 0.32.0's
distributed/device_communicators/all2all.py and DeepEP's csrc/legacy/config.hpp allocate them."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.overhead import (all2all_buffer_bytes, batched_dp_moe, deepep_low_latency_rdma_bytes,
                                     overhead_inputs, vllm_overhead_terms)

SPEC = get_model("Qwen/Qwen3.5-35B-A3B")
DP_EP = ServeConfig(dp=8, expert_parallel=True, backend_version="0.32.0", language_model_only=True)


def test_deepep_low_latency_rdma_buffer_holds_every_expert_s_messages_for_each_dispatched_token():
    # hidden 2048: a dispatch message is 16 + 2048 x 2 bytes, a combine message 16 x 4 + 2048 x 2; the receive
    # buffers (and the combine send buffer) hold 256 experts x 256 tokens of them, odd and even
    combine = 256 * 256 * (16 * 4 + 2048 * 2)
    expected = 2 * (combine + combine + 1024)
    assert deepep_low_latency_rdma_bytes(2048, 256, 256) == (expected + 128) // 128 * 128
    # twice the tokens, twice the buffer (to within the signalling buffers and the alignment)
    assert abs(deepep_low_latency_rdma_bytes(2048, 256, 512) - 2 * deepep_low_latency_rdma_bytes(2048, 256, 256)) < 4096


def test_each_backend_allocates_its_own_buffers_only_under_expert_parallelism():
    assert all2all_buffer_bytes(SPEC, DP_EP, 8192) == 0                                  # allgather_reducescatter
    assert all2all_buffer_bytes(SPEC, DP_EP.with_(all2all_backend="deepep_high_throughput"), 8192) == 1 << 30
    low_latency = DP_EP.with_(all2all_backend="deepep_low_latency")
    assert all2all_buffer_bytes(SPEC, low_latency, 256) == (1 << 30) + deepep_low_latency_rdma_bytes(2048, 256, 256)
    assert all2all_buffer_bytes(SPEC, low_latency.with_(expert_parallel=False), 256) == 0


def test_deepep_low_latency_over_dp_defaults_to_256_batched_tokens_and_sizes_its_buffer_for_them():
    low_latency = DP_EP.with_(all2all_backend="deepep_low_latency")
    gpu = parse_gpus("H200").gpu
    assert batched_dp_moe(low_latency) and not batched_dp_moe(DP_EP)
    assert overhead_inputs(SPEC, low_latency, gpu).max_num_batched_tokens == 256
    assert overhead_inputs(SPEC, low_latency.with_(max_num_batched_tokens=4096), gpu).max_num_batched_tokens == 4096
    terms = vllm_overhead_terms(SPEC, low_latency, gpu)
    default = vllm_overhead_terms(SPEC, DP_EP.with_(all2all_backend="deepep_high_throughput"), gpu)
    assert terms.non_torch - default.non_torch == deepep_low_latency_rdma_bytes(2048, 256, 256)


def test_the_dp_ep_layout_asked_is_the_layout_planned():
    p = plan(SPEC, parse_gpus("8xH200"), DP_EP.with_(all2all_backend="deepep_low_latency"))
    assert (p.config.tp, p.config.dp, p.config.expert_parallel) == (1, 8, True)
