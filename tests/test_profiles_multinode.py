"""Profiles that span nodes render one command per node: SGLang's per-node launch, vLLM over a Ray cluster."""

from __future__ import annotations

import pytest

from doctor.flags import load_schema, validate_args
from profiles import load_profile
from profiles.model import ProfileError, parse_profile
from profiles.multinode import render_nodes, render_text


def test_sglang_multinode_has_one_launch_per_node_with_its_rank_and_the_shared_init_address() -> None:
    nodes = render_nodes(load_profile("sglang-multinode"), {"head_address": "10.0.0.1"})
    assert [n.rank for n in nodes] == [0, 1]
    for node in nodes:
        (command,) = node.commands
        args = command.backend_args
        assert args[args.index("--nnodes") + 1] == "2"
        assert args[args.index("--node-rank") + 1] == str(node.rank)
        assert args[args.index("--dist-init-addr") + 1] == "10.0.0.1:20000"
        assert not [i for i in validate_args(args, load_schema("sglang", "0.5.23")) if i.kind != "deprecated"]


def test_vllm_multinode_serves_from_the_head_over_ray_and_workers_join_the_cluster() -> None:
    head, worker = render_nodes(load_profile("vllm-multinode"), {"head_address": "10.0.0.1"})
    ray_head, serve = head.commands
    assert ray_head.argv[:3] == ["ray", "start", "--head"]
    args = serve.backend_args
    assert args[args.index("--distributed-executor-backend") + 1] == "ray"
    assert int(args[args.index("--tensor-parallel-size") + 1]) * int(args[args.index("--pipeline-parallel-size") + 1]) == 16
    assert worker.commands[0].argv == ["ray", "start", "--address", "10.0.0.1:6379", "--num-gpus", "8"]
    assert not [i for i in validate_args(args, load_schema("vllm", "0.26.0")) if i.kind != "deprecated"]


def test_with_an_existing_ray_cluster_only_the_engine_starts() -> None:
    head, worker = render_nodes(load_profile("vllm-multinode"), start_ray=False)
    assert [c.argv[0] for c in head.commands] == ["vllm"] and worker.commands == ()
    assert "nothing to start" in render_text([head, worker])


def test_dgx_spark_pins_nccl_and_gloo_to_the_cx7_interface_on_every_node() -> None:
    profile = load_profile("vllm-dgx-spark-2x")
    assert profile.hardware.min_compute_capability == "12.1" and profile.nodes == 2
    for node in render_nodes(profile, {"ifname": "enp1s0f0np0"}):
        for command in node.commands:
            assert command.env["NCCL_SOCKET_IFNAME"] == command.env["GLOO_SOCKET_IFNAME"] == "enp1s0f0np0"
    text = render_text(render_nodes(profile))
    assert text.count("export NCCL_SOCKET_IFNAME=enp1s0f1np1") == 2 and "HEAD_IP:6379" in text


def test_a_multinode_sglang_profile_without_nnodes_is_refused(tmp_path) -> None:
    data = {"name": "x", "description": "d", "backend": "sglang", "backend_version": ">=0.5.9", "model": "m",
            "nodes": 2, "sources": ["s"], "flags": {"tp-size": 16},
            "hardware": {"gpu_count": 8, "min_gpu_memory_gib": 79, "min_compute_capability": "8.0"}}
    with pytest.raises(ProfileError, match="nnodes"):
        render_nodes(parse_profile(data, "x.yaml"))
    data["flags"] = {"tp-size": 16, "nnodes": 3, "dist-init-addr": "h:1"}
    with pytest.raises(ProfileError, match="nnodes is 3 but nodes is 2"):
        render_nodes(parse_profile(data, "x.yaml"))


def test_single_node_profiles_render_as_before() -> None:
    (node,) = render_nodes(load_profile("vllm-stable"))
    assert node.commands[0].argv == load_profile("vllm-stable").render().argv
