"""Fleet checks as specifications: pure functions of a facts document with a `fleet` section."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from doctor.errors import BadBundle
from doctor.facts.model import Facts
from doctor.fleet.table import node_table
from doctor.report.text import render_table
from tests.conftest import fixture_data, run, status_of

A100 = fixture_data("a100-8x-nvlink")


def node(name: str, status: str = "ok", gpus: float | None = 8, facts: dict[str, Any] | None = None,
         env: dict[str, str] | None = None, packages: dict[str, str] | None = None, shm: int | None = None,
         error: str | None = None) -> dict[str, Any]:
    data = copy.deepcopy(facts or A100)
    data["hostname"] = data["host"]["hostname"] = name
    if env is not None:
        data["env"] = env
    for pkg, version in (packages or {}).items():
        data["packages"][pkg] = {"version": version, "distribution": pkg}
    if shm is not None:
        data["host"]["shm"] = {"path": "/dev/shm", "total": shm, "free": shm}
    return {"node_id": f"{name}-0123456789abcdef", "hostname": name, "ip": f"10.0.0.{len(name)}",
            "status": status, "error": error, "resources": {} if gpus is None else {"GPU": gpus, "CPU": 64.0},
            "facts": data if status == "ok" else None, "seconds": 1.5}


def fleet_facts(nodes: list[dict[str, Any]], engine: str = "ray", driver_env: dict[str, str] | None = None,
                status: str = "ok", error: str | None = None, conf: dict[str, str] | None = None,
                driver_node: str | None = None, packages: dict[str, str] | None = None) -> Facts:
    data = copy.deepcopy(A100)
    for pkg, version in (packages or {}).items():
        data["packages"][pkg] = {"version": version, "distribution": pkg}
    if driver_env is not None:
        data["env"] = driver_env
    cluster: dict[str, Any] = {"conf": conf or {}} if engine == "spark" else {
        "ray_version": "2.52.0", "driver_node_id": driver_node or (nodes[0]["node_id"] if nodes else None)}
    data["fleet"] = {"engine": engine, "target": "head:6379", "status": status, "error": error,
                     "cluster": cluster, "nodes": nodes}
    return Facts.from_dict(data)


def test_without_fleet_facts_every_fleet_check_skips_with_the_way_to_get_them():
    results = run(Facts(copy.deepcopy(A100)), only=("QD-FLEET",))
    assert all(r.status.value == "skip" for rs in results.values() for r in rs)
    assert "--ray" in results["QD-FLEET-001"][0].summary


def test_every_node_answering_passes_and_a_dead_or_silent_node_is_named():
    facts = fleet_facts([node("dgx1"), node("dgx2", status="timeout", error="no answer within 60 s"),
                         node("dgx3", status="error", error="NodeDiedError: node dgx3 died"),
                         node("dgx4", status="dead", error="the GCS marks this node dead")])
    results = run(facts, only=("QD-FLEET-001",))["QD-FLEET-001"]
    by_node = {r.subject: r for r in results}
    assert by_node["dgx1"].status.value == "ok"
    assert by_node["dgx2"].status.value == "fail" and "60 s" in by_node["dgx2"].summary
    assert by_node["dgx3"].status.value == "fail" and "NodeDiedError" in by_node["dgx3"].summary
    assert by_node["dgx4"].status.value == "warn"


def test_unreachable_cluster_is_one_failure_with_the_reason():
    facts = fleet_facts([], status="error", error="GCS not reachable: TCP connect to head:6379 refused")
    [result] = run(facts, only=("QD-FLEET-001",))["QD-FLEET-001"]
    assert result.status.value == "fail" and "refused" in result.summary
    assert "QD-NET-002" in result.fix[0]


def test_version_parity_fails_on_torch_and_ray_but_only_warns_on_the_driver():
    same = run(fleet_facts([node("dgx1"), node("dgx2")]), only=("QD-FLEET-002",))
    assert status_of(same, "QD-FLEET-002") == ["ok"]
    torch = run(fleet_facts([node("dgx1"), node("dgx2", packages={"torch": "2.9.0+cu128"})]), only=("QD-FLEET-002",))
    [r] = torch["QD-FLEET-002"]
    assert r.status.value == "fail" and r.summary.startswith("torch")
    assert any("dgx2 2.9.0+cu128" in d for d in r.details)
    other_driver = copy.deepcopy(A100)
    other_driver["nvml"]["driver_version"] = "570.86.15"
    drv = run(fleet_facts([node("dgx1"), node("dgx2", facts=other_driver)]), only=("QD-FLEET-002",))
    assert status_of(drv, "QD-FLEET-002") == ["warn"]


@pytest.mark.parametrize("tp,pp,gpus,expected,words", [
    (8, 2, [8, 8], "ok", "16 GPU(s)"),
    (8, 4, [8, 8], "fail", "Cannot provide a placement group"),
    (16, 1, [8, 8], "warn", "spans nodes"),
    (2, 1, [0, 8], "fail", "no GPU"),
])
def test_tp_x_pp_against_ray_gpus_as_vllm_asks_for_them(tp, pp, gpus, expected, words):
    facts = fleet_facts([node(f"n{i}", gpus=g) for i, g in enumerate(gpus)])
    [r] = run(facts, only=("QD-FLEET-003",), tp=tp, pp=pp)["QD-FLEET-003"]
    assert r.status.value == expected
    assert words in r.summary + " ".join(r.details)


def test_ray_gpu_resource_wins_over_nvml_count_as_the_scheduler_sees_it():
    facts = fleet_facts([node("n0", gpus=2), node("n1", gpus=2)])
    [r] = run(facts, only=("QD-FLEET-003",), tp=2, pp=2)["QD-FLEET-003"]
    assert r.status.value == "ok" and r.evidence["total_gpus"] == 4


def test_hf_endpoint_on_driver_but_not_on_workers_fails():
    driver = {"HF_ENDPOINT": "https://mirror.example", "NCCL_DEBUG": "INFO"}
    facts = fleet_facts([node("dgx1", env={"NCCL_DEBUG": "INFO"}), node("dgx2", env=dict(driver))], driver_env=driver)
    [r] = run(facts, only=("QD-FLEET-004",))["QD-FLEET-004"]
    assert r.status.value == "fail" and "HF_ENDPOINT" in r.summary
    assert any("dgx1=(unset)" in d for d in r.details)


def test_env_consistency_passes_when_equal_and_warns_on_minor_vllm_differences():
    env = {"HF_HUB_OFFLINE": "1", "NCCL_SOCKET_IFNAME": "eth0"}
    ok = run(fleet_facts([node("a", env=dict(env)), node("b", env=dict(env))], driver_env=env), only=("QD-FLEET-004",))
    assert status_of(ok, "QD-FLEET-004") == ["ok"]
    minor = run(fleet_facts([node("a", env={**env, "VLLM_LOGGING_LEVEL": "DEBUG"}), node("b", env=dict(env))],
                            driver_env=env), only=("QD-FLEET-004",))
    assert status_of(minor, "QD-FLEET-004") == ["warn"]


def test_dev_shm_is_judged_per_node():
    facts = fleet_facts([node("big", shm=64 * 1024**3), node("docker", shm=64 * 1024**2)])
    results = {r.subject: r.status.value for r in run(facts, only=("QD-FLEET-005",))["QD-FLEET-005"]}
    assert results == {"big": "ok", "docker": "fail"}


ARTICLE_CONF = {"spark.master": "spark://driver:7077", "spark.executor.resource.gpu.amount": "1",
                "spark.task.resource.gpu.amount": "0.125", "spark.executor.instances": "32"}


def _spark(conf: dict[str, str], hosts: int = 4) -> Facts:
    return fleet_facts([node(f"dgx{i}", gpus=None) for i in range(hosts)], engine="spark", conf=conf)


def test_the_articles_spark_config_is_the_tp8_in_an_eighth_of_a_gpu_contradiction():
    results = run(_spark(ARTICLE_CONF), only=("QD-FLEET-006",), tp=8)["QD-FLEET-006"]
    tp = [r for r in results if "TP=8" in r.summary]
    assert tp and tp[0].status.value == "fail" and "1/8 of a GPU" in tp[0].summary
    assert any("discoveryScript" in r.summary and r.status.value == "warn" for r in results)
    assert not any("executors x" in r.summary for r in results)  # 32 x 1 GPU = 4 nodes x 8 GPUs: right


def test_one_engine_per_executor_spark_config_passes():
    conf = {"spark.master": "spark://driver:7077", "spark.executor.resource.gpu.amount": "8",
            "spark.task.resource.gpu.amount": "8", "spark.executor.instances": "4",
            "spark.executor.resource.gpu.discoveryScript": "/opt/spark/getGpusResources.sh"}
    assert status_of(run(_spark(conf), only=("QD-FLEET-006",), tp=8), "QD-FLEET-006") == ["ok"]


@pytest.mark.parametrize("conf,words,status", [
    ({"spark.task.resource.gpu.amount": "1"}, "without spark.executor.resource.gpu.amount", "fail"),
    ({"spark.executor.resource.gpu.amount": "2", "spark.task.resource.gpu.amount": "4"}, "no task can start", "fail"),
    ({"spark.executor.resource.gpu.amount": "8", "spark.task.resource.gpu.amount": "8",
      "spark.executor.instances": "8"}, "64 GPUs", "fail"),
    ({"spark.executor.resource.gpu.amount": "8", "spark.task.resource.gpu.amount": "8",
      "spark.executor.instances": "2"}, "the rest idle", "warn"),
    ({}, "does not schedule GPUs", "warn"),
])
def test_spark_gpu_lint_rules(conf, words, status):
    full = {"spark.master": "yarn", "spark.executor.resource.gpu.discoveryScript": "/x.sh", **conf}
    results = run(_spark(full), only=("QD-FLEET-006",), tp=8)["QD-FLEET-006"]
    assert any(words in r.summary and r.status.value == status for r in results), [r.summary for r in results]


def test_fleet_bundle_round_trips_through_collect_format_and_bad_fleet_is_bad_bundle(tmp_path: Path):
    facts = fleet_facts([node("dgx1"), node("dgx2")])
    path = tmp_path / "fleet.json"
    facts.save(path)
    assert Facts.load(path).data["fleet"]["nodes"][1]["hostname"] == "dgx2"
    broken = json.loads(path.read_text())
    broken["fleet"]["nodes"][0]["status"] = "sleepy"
    with pytest.raises(BadBundle, match=r"fleet.nodes\[0\]"):
        Facts.from_dict(broken)
    broken["fleet"] = {"engine": "slurm"}
    with pytest.raises(BadBundle, match="fleet.engine"):
        Facts.from_dict(broken)


def test_per_node_table_has_a_column_per_node_even_on_one_host():
    first, second = node("box"), node("box", packages={"torch": "2.9.0"})
    first["node_id"], second["node_id"] = "aaaaaaaa11", "bbbbbbbb22"
    table = node_table(fleet_facts([first, second]))
    assert table["columns"] == ["box/aaaaaaaa", "box/bbbbbbbb"]
    torch_row = next(r for r in table["rows"] if r["name"] == "torch")
    assert torch_row["values"][1] == "2.9.0" and torch_row["values"][0] != "2.9.0"
    text = render_table(table)
    assert text.splitlines()[0].startswith("ray fleet (head:6379)")
    assert "2.9.0" in text


def test_spark_parity_ignores_a_package_only_the_driver_host_has_but_not_a_missing_engine():
    with_vllm = copy.deepcopy(A100)
    with_vllm["packages"]["vllm"] = {"version": "0.17.1", "distribution": "vllm"}
    without_vllm = copy.deepcopy(A100)
    facts = fleet_facts([node("e1", facts=without_vllm), node("e2", facts=without_vllm)], engine="spark",
                        conf={"spark.master": "local[2]"}, packages={"vllm": "0.17.1"})
    assert facts.package_version("vllm")  # only the driver host has vLLM: a Spark driver does not run it
    assert status_of(run(facts, only=("QD-FLEET-002",)), "QD-FLEET-002") == ["ok"]
    split = fleet_facts([node("e1", facts=with_vllm), node("e2", facts=without_vllm)], engine="spark",
                        conf={"spark.master": "local[2]"})
    [r] = run(split, only=("QD-FLEET-002",))["QD-FLEET-002"]
    assert r.status.value == "fail" and "vllm" in r.summary and any("e2 missing" in d for d in r.details)
