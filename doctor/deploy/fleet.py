"""`deploy --ray` for a multi-node profile: fleet checks, a node plan from the Ray cluster, the launcher's spec,
and the results of how the nodes were stopped.

The plan puts rank 0 on the Ray head (whose node IP becomes the profile's `head_address`) and the other ranks on
the other alive nodes in address order. SGLang starts one process per node; vLLM starts `vllm serve` on the head
only, and its Ray executor places the workers across the cluster (vLLM docs serving/parallelism_scaling.md).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from doctor import shellquote
from doctor.deploy.spec import LaunchSpec
from doctor.errors import DoctorError
from doctor.results import Result, Status

FLEET_CHECKS = ("QD-FLEET", "QD-NET-004")
ANY_ADDRESS = ("0.0.0.0", "::", "")
SHUTDOWN_SLACK_S = 40.0  # the launcher's graceful cancel, force cancel and sweep, on top of the engine's grace


@dataclass(frozen=True)
class NodePlan:
    """What one node runs: its rank, the Ray node it is pinned to, and the engine command."""

    rank: int
    node_id: str
    ip: str
    argv: list[str]
    env: dict[str, str]
    deployment: Any = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "node_id": self.node_id, "ip": self.ip, "argv": self.argv, "env": self.env}


def is_multinode(profile: Any) -> bool:
    return int(getattr(profile, "nodes", 1) or 1) > 1


def dry_run_text(profile: Any, overrides: dict[str, Any], start_ray: bool) -> str:
    """Every node's commands as shell text (profiles/multinode.render_text)."""
    from profiles import ProfileError
    from profiles.multinode import render_nodes, render_text

    try:
        return render_text(render_nodes(profile, overrides, start_ray=start_ray))
    except ProfileError as exc:
        raise DoctorError(str(exc)) from None


def fleet_checks(facts: Any, profile: Any, options: dict[str, Any]) -> list[Result]:
    """The fleet and inter-node network checks on facts that carry a `fleet` section."""
    from doctor import registry, runner
    from doctor.context import CheckContext

    reg = registry.load(plugins=True)
    specs = runner.select(reg, profile.backend, only=FLEET_CHECKS)
    ctx = CheckContext(facts=facts, backend=profile.backend, profile=profile, options=options)
    return runner.run_checks(specs, ctx)


def _alive(fleet: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in fleet.get("nodes") or [] if n.get("status") == "ok"]


def head_node(fleet: dict[str, Any]) -> dict[str, Any] | None:
    """The answering node that is the Ray head (else the driver's node), or None."""
    alive = _alive(fleet)
    driver = (fleet.get("cluster") or {}).get("driver_node_id")
    return next((n for n in alive if n.get("head")), None) or next(
        (n for n in alive if n.get("node_id") == driver), None)


def ordered_nodes(fleet: dict[str, Any], wanted: int) -> list[dict[str, Any]]:
    """`wanted` answering nodes, the Ray head first; DoctorError when the cluster has fewer."""
    head = head_node(fleet)
    if head is None:
        raise DoctorError("cannot tell the Ray head among the cluster's nodes (no node answered as the head)")
    others = sorted((n for n in _alive(fleet) if n is not head),
                    key=lambda n: (str(n.get("ip")), str(n.get("node_id"))))
    chosen = [head, *others][:wanted]
    if len(chosen) < wanted:
        raise DoctorError(f"the profile spans {wanted} nodes but only {len(chosen)} node(s) of the Ray cluster "
                          "answered (see QD-FLEET-001)")
    return chosen


def head_deployment(profile: Any, overrides: dict[str, Any], fleet: dict[str, Any]) -> Any:
    """The profile's Deployment under the user's overrides, built once for the checks and every node's command:
    with the Ray head's address as `head_address` when the cluster names its head."""
    from profiles import ProfileError

    head = head_node(fleet) if fleet.get("status") == "ok" else None
    if head is not None:
        overrides = {**overrides, "head_address": str(head.get("ip") or "")}
    try:
        return profile.deployment(overrides)
    except ProfileError as exc:
        raise DoctorError(str(exc)) from None


def plan_nodes(profile: Any, overrides: dict[str, Any], fleet: dict[str, Any], python: str | None,
               ray_address: str | None, deployment: Any = None) -> tuple[str, list[NodePlan]]:
    """The head's address and the engine command of every node that starts one, from `deployment` (built by
    head_deployment when not given)."""
    from profiles import ProfileError
    from profiles.multinode import render_nodes

    chosen = ordered_nodes(fleet, int(profile.nodes))
    head_ip = str(chosen[0].get("ip") or "")
    base = deployment if deployment is not None else head_deployment(profile, overrides, fleet)
    try:
        nodes = render_nodes(profile, {**overrides, "head_address": head_ip}, start_ray=False, base=base)
    except ProfileError as exc:
        raise DoctorError(str(exc)) from None
    plans = []
    for node in nodes:
        if not node.commands:
            continue
        deployment = node.commands[-1].deployment.with_python(python)
        if profile.backend == "vllm" and ray_address and ray_address not in ("auto", "local"):
            # vLLM's ray.init joins this cluster, not a new one
            deployment = deployment.with_env(**{"RAY_ADDRESS": ray_address, **deployment.env})
        target = chosen[node.rank]
        plans.append(NodePlan(node.rank, str(target["node_id"]), str(target.get("ip") or ""), deployment.argv(),
                              dict(deployment.env), deployment))
    return head_ip, plans


def shell(plan: NodePlan) -> str:
    """One node's command as a redacted shell line."""
    from doctor.redact import redact_text

    env = " ".join(f"{k}={shellquote.quote(v)}" for k, v in sorted(plan.env.items()))
    return redact_text((env + " " if env else "") + shellquote.join(plan.argv))


def head_spec(profile: Any, plans: list[NodePlan], head_ip: str) -> LaunchSpec:  # noqa: ARG001
    """The spec a client uses: rank 0's command, reached at the head's address when it binds every address."""
    spec = LaunchSpec.of(plans[0].deployment)
    return replace(spec, host=head_ip) if spec.host in ANY_ADDRESS else spec


def launcher_spec(spec: LaunchSpec, plans: list[NodePlan], ray_address: str, run_dir: Path,
                  grace: float) -> LaunchSpec:
    """The launcher process deploy supervises in place of a single server: it talks to `spec`'s API."""
    plan_file, summary = run_dir / "fleet-plan.json", run_dir / "fleet-summary.json"
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_file.write_text(json.dumps({"address": ray_address, "grace": grace,
                                     "nodes": [p.to_dict() for p in plans]}), encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    paths = [root, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != root)]
    env = {"PYTHONPATH": os.pathsep.join(paths)}
    argv = [sys.executable, "-m", "doctor.fleet.launch_runner", "--plan", str(plan_file), "--out", str(summary)]
    return replace(spec, argv=argv, env=env, deployment=None)


def summary_of(run_dir: Path) -> dict[str, Any] | None:
    """The launcher's summary (None when it died before writing one)."""
    try:
        return json.loads((run_dir / "fleet-summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stop_result(summary: dict[str, Any] | None) -> Result:
    """QD-DEPLOY-FLEET-STOP: every node's engine process group is gone."""
    title = "Every node's engine stopped, nothing left behind"
    if summary is None:
        return Result("QD-DEPLOY-FLEET-STOP", title, "deploy", "critical", Status.FAIL,
                      "the Ray launcher wrote no summary: the node processes may still run",
                      fix=["`ray list tasks` shows the node tasks; stop them with `ray job stop` or by pid on each "
                           "node"])
    nodes = summary.get("nodes") or []
    left = {n["rank"]: n["survivors"] for n in nodes if n.get("survivors")}
    evidence = {f"node {n['rank']}": {"how": n.get("how"), "pid": (n.get("started") or {}).get("pid"),
                                      "exit_code": n.get("exit_code"), "survivors": n.get("survivors")}
                for n in nodes}
    if summary.get("status") != "ok":
        return Result("QD-DEPLOY-FLEET-STOP", title, "deploy", "critical", Status.FAIL,
                      f"the Ray launcher failed: {summary.get('error')}", evidence=evidence)
    if left:
        return Result("QD-DEPLOY-FLEET-STOP", title, "deploy", "critical", Status.WARN,
                      "processes outlived their node's stop and were killed by the sweep: " +
                      ", ".join(f"node {r}: {pids}" for r, pids in left.items()), evidence=evidence)
    return Result("QD-DEPLOY-FLEET-STOP", title, "deploy", "critical", Status.OK,
                  f"{len(nodes)} node process group(s) stopped ({summary.get('ended_by')})", evidence=evidence)
