"""Expert parallelism's communication buffers per all2all backend (doctor/planner/overhead.py), as vLLM 0.32.0's
distributed/device_communicators/all2all.py and DeepEP's csrc/legacy/config.hpp allocate them."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.overhead import (all2all_buffer_bytes, batched_dp_moe, deepep_low_latency_rdma_bytes,
                                     ep_group_spans_nodes, overhead_inputs, vllm_overhead_terms)

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


def test_an_expert_parallel_group_spans_nodes_as_vllm_lays_its_ranks_out():
    # ranks (DP, PP, TP) with TP innermost; a stage's EP group is its DP x TP ranks
    assert not ep_group_spans_nodes(ServeConfig(dp=16, expert_parallel=True), None)          # one node
    assert ep_group_spans_nodes(ServeConfig(dp=16, expert_parallel=True), 8)
    assert not ep_group_spans_nodes(ServeConfig(dp=8, expert_parallel=True), 8)
    assert not ep_group_spans_nodes(ServeConfig(dp=16, expert_parallel=False), 8)            # no EP group
    # TP 4 x PP 2 x DP 2 on nodes of 8: stage 0 is ranks 0-3 and 8-11, two nodes
    layered = ServeConfig(tp=4, pp=2, dp=2, expert_parallel=True)
    assert ep_group_spans_nodes(layered, 8, pp_rank=0) and ep_group_spans_nodes(layered, 8, pp_rank=1)
    assert not ep_group_spans_nodes(ServeConfig(tp=4, pp=2, dp=1, expert_parallel=True), 4, pp_rank=1)


def test_deepep_high_throughput_across_nodes_adds_an_rdma_buffer_of_the_same_size():
    ht = DP_EP.with_(dp=16, all2all_backend="deepep_high_throughput")
    assert all2all_buffer_bytes(SPEC, ht, 8192, internode=True) == 2 << 30
    low_latency = ht.with_(all2all_backend="deepep_low_latency")   # its RDMA buffer is there on one node too
    assert all2all_buffer_bytes(SPEC, low_latency, 256, internode=True) == all2all_buffer_bytes(SPEC, low_latency, 256)
    # the environment's VLLM_DEEPEP_BUFFER_SIZE_MB sizes both; FORCE_INTRA_NODE drops the RDMA buffer
    assert all2all_buffer_bytes(SPEC, ht.with_(deepep_buffer_mb=512), 8192, internode=True) == 1 << 30
    assert all2all_buffer_bytes(SPEC, ht.with_(deepep_force_intranode=True), 8192, internode=True) == 1 << 30


def test_plan_gpus_per_node_plans_the_rdma_buffer_off_each_rank_s_kv_cache():
    import json

    from click.testing import CliRunner

    from doctor.cli.main import cli

    args = ["plan", "--gpus", "16xH200", "--dp", "16", "--enable-expert-parallel", "--backend-version", "0.32.0",
            "--flag", "--all2all-backend deepep_high_throughput", "--format", "json"]

    def cache(*extra: str) -> int:
        result = CliRunner().invoke(cli, [*args, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["sections"]["plan"]["ranks"][0]["cache_bytes"]

    one_node, two_nodes = cache(), cache("--gpus-per-node", "8")
    assert one_node - two_nodes == 1 << 30
    report = json.loads(CliRunner().invoke(cli, [*args, "--gpus-per-node", "8"]).output)
    assert report["sections"]["plan"]["gpus"]["per_node"] == 8
    assert cache("--gpus-per-node", "16") == one_node


def test_a_profile_that_spans_nodes_is_planned_on_its_nodes():
    from doctor.profile_plan import plan_profile
    from profiles import load_profile

    assert plan_profile(load_profile("vllm-multinode")).hardware.gpus_per_node == 8
    assert plan_profile(load_profile("vllm-fp8")).hardware.gpus_per_node is None


def test_a_re_plan_from_a_log_onto_nodes_adds_the_rdma_buffer_too():
    import json

    from click.testing import CliRunner

    from doctor.cli.main import cli
    from tests.conftest import FIXTURES

    args = ["plan", "--from-log", str(FIXTURES / "h200-rehearsal" / "vllm-bf16-lm-only.log"), "--gpus", "8xH200",
            "--tp", "1", "--dp", "8", "--enable-expert-parallel", "--flag", "--all2all-backend deepep_high_throughput",
            "--format", "json"]
    caches = [json.loads(CliRunner().invoke(cli, [*args, *extra]).output)["sections"]["plan"]["ranks"][0]["cache_bytes"]
              for extra in ((), ("--gpus-per-node", "4"))]
    assert caches[0] - caches[1] == 1 << 30
