"""deploy for multi-node profiles without Ray: --dry-run's per-node commands, the node plan drawn from a Ray
fleet section (head first, its address filled in), the head's API address, the launcher's plan file and the
verdict on how the nodes were stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doctor.deploy import fleet
from doctor.errors import DoctorError
from doctor.results import Status
from profiles import load_profile

ROOT = Path(__file__).resolve().parents[1]


def qd(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


def _flag(line_args: list[str], name: str) -> str:
    return line_args[line_args.index(name) + 1]


def test_sglang_dry_run_prints_one_launch_per_node_with_its_rank_and_the_shared_init_address() -> None:
    done = qd("deploy", "--profile", "sglang-multinode", "--dry-run", "--set", "head_address=10.0.0.1")
    assert done.returncode == 0, done.stderr
    blocks = done.stderr.split("# node ")[1:]
    assert [b.split(":")[0] for b in blocks] == ["0", "1"]
    for rank, block in enumerate(blocks):
        words = block.replace("\\\n", " ").split()
        assert _flag(words, "--nnodes") == "2" and _flag(words, "--node-rank") == str(rank)
        assert _flag(words, "--dist-init-addr") == "10.0.0.1:20000"
    assert "Deploy skip: dry run: 2 node commands printed" in done.stdout


def test_vllm_dry_run_prints_the_ray_executor_command_and_the_ray_start_lines() -> None:
    done = qd("deploy", "--profile", "vllm-multinode", "--dry-run")
    assert done.returncode == 0, done.stderr
    words = done.stderr.replace("\\\n", " ").split()
    assert _flag(words, "--distributed-executor-backend") == "ray"
    assert "ray start --head --port 6379" in done.stderr and "ray start --address HEAD_IP:6379" in done.stderr


def test_help_offers_ray() -> None:
    assert "--ray [ADDRESS]" in qd("deploy", "--help").stdout


def test_a_multinode_profile_without_ray_or_dry_run_is_a_usage_error() -> None:
    done = qd("deploy", "--profile", "sglang-multinode")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("or print each node's commands with --dry-run")


def test_ray_with_a_single_machine_profile_is_a_usage_error() -> None:
    done = qd("deploy", "--profile", "cpu-tiny", "--ray", "127.0.0.1:1", "--set", "model_dir=/m")
    assert done.returncode == 2 and "runs on one machine" in done.stderr


def _node(node_id: str, ip: str, head: bool = False, status: str = "ok") -> dict[str, Any]:
    return {"node_id": node_id, "ip": ip, "hostname": ip, "status": status, "head": head, "facts": {}}


FLEET = {"engine": "ray", "target": "10.0.0.1:6379", "status": "ok", "cluster": {"driver_node_id": "n-driver"},
         "nodes": [_node("n-c", "10.0.0.3"), _node("n-dead", "10.0.0.0", status="timeout"),
                   _node("n-b", "10.0.0.2"), _node("n-head", "10.0.0.1", head=True)]}


def test_the_ray_head_is_rank_0_and_the_other_answering_nodes_follow_by_address() -> None:
    assert [n["node_id"] for n in fleet.ordered_nodes(FLEET, 3)] == ["n-head", "n-b", "n-c"]
    with pytest.raises(DoctorError, match="spans 4 nodes but only 3"):
        fleet.ordered_nodes(FLEET, 4)
    no_head = {**FLEET, "nodes": [_node("n-driver", "10.0.0.9"), _node("n-b", "10.0.0.2")]}
    assert fleet.ordered_nodes(no_head, 2)[0]["node_id"] == "n-driver"  # the driver's node when none says head


def test_sglang_plan_pins_each_rank_to_its_node_with_the_heads_address() -> None:
    profile = load_profile("sglang-multinode")
    head_ip, plans = fleet.plan_nodes(profile, {}, FLEET, "/opt/sglang/bin/python", "10.0.0.1:6379")
    assert head_ip == "10.0.0.1"
    assert [(p.rank, p.node_id, p.ip) for p in plans] == [(0, "n-head", "10.0.0.1"), (1, "n-b", "10.0.0.2")]
    for plan in plans:
        assert plan.argv[0] == "/opt/sglang/bin/python"
        assert _flag(plan.argv, "--node-rank") == str(plan.rank)
        assert _flag(plan.argv, "--dist-init-addr") == "10.0.0.1:20000"
        assert "RAY_ADDRESS" not in plan.env
    spec = fleet.head_spec(profile, plans, head_ip)
    assert spec.base_url == "http://10.0.0.1:30000"  # the profile binds 0.0.0.0: a client uses the head's address


def test_vllm_plan_starts_only_the_head_and_points_its_ray_executor_at_the_cluster() -> None:
    profile = load_profile("vllm-multinode")
    head_ip, plans = fleet.plan_nodes(profile, {"port": 8123}, FLEET, None, "10.0.0.1:6379")
    (plan,) = plans
    assert plan.node_id == "n-head" and plan.env["RAY_ADDRESS"] == "10.0.0.1:6379"
    assert _flag(plan.argv, "--distributed-executor-backend") == "ray"
    assert fleet.head_spec(profile, plans, head_ip).base_url == "http://10.0.0.1:8123"


def test_the_launcher_reads_its_plan_from_the_run_directory(tmp_path: Path) -> None:
    profile = load_profile("sglang-multinode")
    head_ip, plans = fleet.plan_nodes(profile, {}, FLEET, None, "10.0.0.1:6379")
    spec = fleet.launcher_spec(fleet.head_spec(profile, plans, head_ip), plans, "10.0.0.1:6379", tmp_path / "run", 7)
    assert spec.argv[1:3] == ["-m", "doctor.fleet.launch_runner"] and spec.base_url == "http://10.0.0.1:30000"
    plan = json.loads(Path(spec.argv[spec.argv.index("--plan") + 1]).read_text())
    assert plan["address"] == "10.0.0.1:6379" and plan["grace"] == 7
    assert [n["node_id"] for n in plan["nodes"]] == ["n-head", "n-b"]


def _summary(**node: Any) -> dict[str, Any]:
    base = {"rank": 0, "started": {"pid": 10}, "how": "stopped by qwen-doctor", "exit_code": None, "survivors": []}
    return {"status": "ok", "ended_by": "stopped by qwen-doctor", "nodes": [base, {**base, "rank": 1, **node}]}


def test_the_stop_verdict_names_what_outlived_a_node_and_a_missing_summary_fails() -> None:
    assert fleet.stop_result(_summary()).status == Status.OK
    left = fleet.stop_result(_summary(survivors=[4242]))
    assert left.status == Status.WARN and "node 1: [4242]" in left.summary
    assert fleet.stop_result(None).status == Status.FAIL
    assert fleet.stop_result({**_summary(), "status": "error", "error": "ConnectionError: x"}).status == Status.FAIL


def test_dry_run_text_is_the_profiles_per_node_rendering() -> None:
    text = fleet.dry_run_text(load_profile("sglang-multinode"), {"head_address": "10.9.9.9"}, start_ray=True)
    assert text.count("--dist-init-addr 10.9.9.9:20000") == 2 and "# node 1: worker" in text


def test_every_catalogue_sample_matches_the_same_remedies_behind_a_node_prefix() -> None:
    """The launcher prefixes each node's log line with its rank and address; remedy matching must not care."""
    from doctor.fleet.launch_runner import _Node
    from remedies import Matcher
    from remedies.loader import load_catalogue

    prefix = _Node({"rank": 1, "ip": "10.0.0.2", "node_id": "n-b", "argv": []}).prefix
    assert prefix == "(node 1 10.0.0.2) "
    lines = [(s.splitlines()[0], any(v.literal in s and v.regex.search(s) for v in r.variants))
             for r in load_catalogue() for s in r.samples if isinstance(s, str) and s.strip()]
    assert len(lines) > 50
    for line, needs_context in lines:  # a variant's wording (a bare "Killed") names nothing without its context
        plain = {m.remedy.id for m in Matcher().feed(line, 1)}
        assert (needs_context or plain) and {m.remedy.id for m in Matcher().feed(prefix + line, 1)} == plain, line


def test_the_launcher_finds_this_checkout_first_on_its_path_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), "/opt/extra"]))
    profile = load_profile("sglang-multinode")
    head_ip, plans = fleet.plan_nodes(profile, {}, FLEET, None, "10.0.0.1:6379")
    spec = fleet.launcher_spec(fleet.head_spec(profile, plans, head_ip), plans, "10.0.0.1:6379", tmp_path, 7)
    assert spec.env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/opt/extra"]
