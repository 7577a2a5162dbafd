"""When vLLM's placement-group check and Ray's infeasible-request report both fit a log, the placement-group entry
comes first: Ray's "No available node types can fulfill ..." (autoscaler) and "... cannot be scheduled right now. It
requires ..." (raylet cluster_task_manager.cc) are the engine's placement-group bundles seen from Ray, and the
vLLM entry (vllm/v1/executor/ray_utils.py initialize_ray_cluster / _wait_until_pg_ready) names the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

INFEASIBLE = {
    "autoscaler v2": "(autoscaler +7s) Error: No available node types can fulfill resource requests {'GPU': 1.0}*2. "
                     "Add suitable node types to this cluster to resolve this issue.",
    "autoscaler v1": "(autoscaler +9s) Error: No available node types can fulfill resource request "
                     "defaultdict(<class 'float'>, {'GPU': 1.0}). Add suitable node types to this cluster to resolve this issue.",
    "raylet": "WARNING worker.py:2058 -- The actor or task with ID ffffffffffffffff01000000 cannot be scheduled right "
              "now. It requires {GPU: 1.000000} for placement, however the cluster currently cannot provide the "
              "requested resources.",
}
TIMEOUT = ("ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, 'node:10.0.0.5': "
           "0.001}, {'GPU': 1.0}] within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster "
           "has enough resources.")
EXCEED = ("(EngineCore_DP0 pid=34) WARNING 03-30 14:11:45 [ray_utils.py:352] Tensor parallel size (2) exceeds "
          "available GPUs (1). This may result in Ray placement group allocation failures.")


def ids(tmp_path: Path, *lines: str) -> list[str]:
    log = tmp_path / "ray.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [f.remedy.id for f in explain_sources([log])]


@pytest.mark.parametrize("ray", INFEASIBLE.values(), ids=INFEASIBLE.keys())
def test_the_placement_group_timeout_comes_before_rays_infeasible_request(tmp_path, ray):
    found = ids(tmp_path, ray, TIMEOUT)
    assert found[:2] == ["QD-R-RAY-PLACEMENT-GROUP-TIMEOUT", "QD-R-RAY-INFEASIBLE-REQUEST"]


@pytest.mark.parametrize("ray", INFEASIBLE.values(), ids=INFEASIBLE.keys())
def test_more_gpus_asked_than_ray_has_comes_before_rays_infeasible_request(tmp_path, ray):
    found = ids(tmp_path, EXCEED, ray)
    assert found[:2] == ["QD-R-RAY-PG-GPUS-EXCEED", "QD-R-RAY-INFEASIBLE-REQUEST"]


def test_rays_infeasible_request_alone_is_still_named(tmp_path):
    assert ids(tmp_path, INFEASIBLE["autoscaler v2"])[0] == "QD-R-RAY-INFEASIBLE-REQUEST"



def test_the_older_releases_gpus_exceed_the_cluster_wording_comes_before_rays_report(tmp_path):
    old = "ValueError: The number of required GPUs exceeds the total number of available GPUs in the cluster."
    assert ids(tmp_path, INFEASIBLE["autoscaler v2"], old)[0] == "QD-R-RAY-PG-GPUS-EXCEED"
