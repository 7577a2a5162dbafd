"""Fleet checks over the facts every node returned through Ray or Spark: answers, parity, GPUs, env, /dev/shm."""

from __future__ import annotations

import re
from typing import Any, Iterator

from checks.host import SHM_MIN, SHM_RECOMMENDED
from doctor.context import CheckContext
from doctor.fleet.model import Node, fleet_of, nodes
from doctor.gpus import gib
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

NO_FLEET = "no fleet facts; run `qwen-doctor check --ray [ADDRESS]` or `--spark [MASTER]`"
# Components that must match across nodes: Ray refuses mismatched Ray/Python between driver and cluster;
# torch / engine / transformers differences make workers disagree on kernels and weights layout.
PARITY_FAIL = ("python", "ray", "torch", "vllm", "sglang", "transformers")
PARITY_WARN = ("driver", "qwen-doctor")
# Variables that steer downloads, NCCL and the engines: a driver/worker difference breaks a multi-node start.
ENV_KEYS = re.compile(r"^(NCCL_.*|HF_.*|HUGGING_FACE_.*|TRANSFORMERS_.*|VLLM_.*|SGLANG_.*)$")
ENV_MUST_MATCH = ("HF_ENDPOINT", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_HOME", "HF_HUB_CACHE")
# vLLM's Ray executor asks for tp x pp bundles of {GPU: 1}, strategy PACK, the first pinned to the driver's node
# (vllm/v1/executor/ray_utils.py, initialize_ray_cluster; error #27 in shared/reference/qwen35-facts.md).


def _fleet(ctx: CheckContext) -> dict[str, Any] | None:
    return fleet_of(ctx.facts)


def versions(node_facts: Any) -> dict[str, str | None]:
    """The components compared across nodes, read from one node's facts."""
    return {
        "python": node_facts.host.get("python"),
        "ray": node_facts.package_version("ray"),
        "torch": node_facts.package_version("torch"),
        "vllm": node_facts.package_version("vllm"),
        "sglang": node_facts.package_version("sglang"),
        "transformers": node_facts.package_version("transformers"),
        "driver": node_facts.nvml.get("driver_version"),
        "qwen-doctor": node_facts.data.get("tool_version"),
    }


@check("QD-FLEET-001", "Every node answered", category="fleet", severity="high")
def every_node_answered(ctx: CheckContext) -> Iterator[Outcome]:
    """The collector ran on every alive node (one pinned Ray task each, or one Spark barrier task per executor)."""
    fleet = _fleet(ctx)
    if fleet is None:
        yield skip(NO_FLEET)
        return
    engine = fleet["engine"]
    if fleet.get("status") != "ok" and not fleet.get("nodes"):
        fix = (["See QD-NET-002 for the GCS connection; `ray status` on the head lists the nodes.",
                "If the GCS port answers but connecting fails: match the Ray and Python versions, and token "
                "authentication (Ray 2.5x: RAY_AUTH_MODE and the head's token in ~/.ray/auth_token; the GCS then logs "
                "'Missing authorization header in request!')."]
               if engine == "ray" else
               ["Check the master URL and that executors can start (Spark UI / driver log); a barrier stage needs "
                "as many free task slots as executors at once."])
        yield fail(f"{engine} fleet not reached ({fleet.get('status')}): {fleet.get('error')}", fix=fix,
                   evidence={"target": fleet.get("target")})
        return
    if fleet.get("status") != "ok":
        yield fail(f"{engine}: {fleet.get('error')}", evidence={"target": fleet.get("target")},
                   fix=["Re-run with a larger --node-timeout, or look at the node that did not answer."])
    for node in nodes(fleet):
        evidence = {"node_id": node.node_id, "ip": node.ip, "status": node.status, "error": node.error}
        if node.answered:
            took = node.raw.get("seconds")
            yield ok("answered" + (f" in {took} s" if took is not None else ""), subject=node.label, evidence=evidence)
        elif node.status == "dead":
            yield warn("marked dead by the Ray GCS", subject=node.label, evidence=evidence,
                       fix=["If this node should be up, restart it: `ray start --address HEAD:6379` on it."])
        elif node.status == "timeout":
            yield fail(node.error or "no answer", subject=node.label, evidence=evidence,
                       fix=["The node is listed but does not run tasks: check its raylet log "
                            "(/tmp/ray/session_latest/logs/raylet.out), CPU/memory pressure, network to the head."])
        else:
            yield fail(node.error or "failed", subject=node.label, evidence=evidence,
                       fix=["Check that qwen-doctor is installed on the node (same version) and the node is alive."])


def _differ(names: list[str]) -> str:
    return "differs" if len(names) == 1 else "differ"


def _answered(fleet: dict[str, Any]) -> list[Node]:
    return [n for n in nodes(fleet) if n.answered]


def _answered_nodes(ctx: CheckContext) -> list[Node] | Outcome:
    """The nodes that answered, or the skip that says why there are none to compare."""
    fleet = _fleet(ctx)
    if fleet is None:
        return skip(NO_FLEET)
    return _answered(fleet) or skip("no node answered (see QD-FLEET-001)")


@check("QD-FLEET-002", "Versions match across nodes", category="fleet", severity="high")
def version_parity(ctx: CheckContext) -> Outcome:
    """Ray, Python, torch, the engine and the NVIDIA driver must be the same on the driver and every node."""
    answered = _answered_nodes(ctx)
    if isinstance(answered, Outcome):
        return answered
    engine = fleet_of(ctx.facts)["engine"]
    table: dict[str, dict[str, str | None]] = {"driver host": versions(ctx.facts)}
    table.update({n.label: versions(n.facts) for n in answered})
    # Under Ray the driver process is part of the cluster; a Spark driver does not run the engine itself,
    # so there a package only on the driver host is no mismatch.
    counted = set(table) if engine == "ray" else {n.label for n in answered}
    mismatched_fail, mismatched_warn, details = [], [], []
    for component in (*PARITY_FAIL, *PARITY_WARN):
        values = {label: row[component] for label, row in table.items()}
        present = {v for v in values.values() if v}
        missing = any(values[label] is None for label in counted) and any(values[label] for label in counted)
        if len(present) > 1 or (missing and component in PARITY_FAIL):
            (mismatched_fail if component in PARITY_FAIL else mismatched_warn).append(component)
            details.append(f"{component}: " + ", ".join(f"{label} {v or 'missing'}" for label, v in values.items()))
    evidence = {"versions": table}
    if mismatched_fail:
        return fail(f"{', '.join(mismatched_fail)} {_differ(mismatched_fail)} across nodes", details=details, evidence=evidence,
                    fix=["Install the same versions everywhere (one image or one lock file for every node); "
                         "Ray itself refuses a driver whose Ray or Python version differs from the cluster's."])
    if mismatched_warn:
        return warn(f"{', '.join(mismatched_warn)} {_differ(mismatched_warn)} across nodes", details=details, evidence=evidence,
                    fix=["Align the NVIDIA driver and qwen-doctor versions on every node."])
    return ok(f"same versions on the driver and {len(answered)} node(s)", evidence=evidence)


def _gpus(node: Node, engine: str) -> int:
    """GPUs the scheduler can hand out on a node: Ray's GPU resource, else the node's NVML count."""
    if engine == "ray" and "GPU" in node.resources:
        return int(node.resources["GPU"])
    return len(node.facts.gpus) if node.facts else 0


@check("QD-FLEET-003", "GPUs for TP x PP across the fleet", category="fleet", severity="high")
def placement_feasible(ctx: CheckContext) -> Outcome:
    """vLLM asks Ray for tp x pp one-GPU bundles (PACK), one on the driver's node; TP should stay inside a node."""
    fleet = _fleet(ctx)
    if fleet is None:
        return skip(NO_FLEET)
    engine = fleet["engine"]
    alive = [n for n in nodes(fleet) if n.status == "ok"] if engine == "spark" else \
        [n for n in nodes(fleet) if n.status != "dead"]
    if engine == "spark":
        by_host: dict[str, Node] = {}
        for n in alive:
            by_host.setdefault(n.hostname or n.label, n)
        alive = list(by_host.values())
    if not alive:
        return skip("no node to place GPUs on (see QD-FLEET-001)")
    tp, pp = int(ctx.option("tp") or 1), int(ctx.option("pp") or 1)
    world = tp * pp
    per_node = {n.label: _gpus(n, engine) for n in alive}
    total, largest = sum(per_node.values()), max(per_node.values())
    evidence = {"tp": tp, "pp": pp, "world_size": world, "gpus_per_node": per_node, "total_gpus": total}
    shape = f"TP={tp} x PP={pp} needs {world} GPU(s)"
    have = f"{total} GPU(s) on {len(alive)} node(s) ({', '.join(f'{k}: {v}' for k, v in per_node.items())})"
    if total < world:
        return fail(f"{shape}, the fleet has {have}", evidence=evidence,
                    details=["vLLM waits, then fails with: Cannot provide a placement group requiring "
                             f"{world} GPUs"],
                    fix=["Add GPU nodes or lower --tensor-parallel-size / --pipeline-parallel-size; " + (
                        "`ray status` shows the GPUs Ray sees (start nodes with --num-gpus if it sees none)."
                        if engine == "ray" else "the table below lists the GPUs every executor's host reports.")])
    driver_id = (fleet.get("cluster") or {}).get("driver_node_id")
    driver = next((n for n in alive if n.node_id == driver_id), None)
    if engine == "ray" and driver is not None and _gpus(driver, engine) < 1:
        return fail(f"{shape} and the fleet has {total}, but the driver's node {driver.label} has no GPU",
                    evidence=evidence,
                    details=["vLLM: Current node has no GPU available ... vLLM engine cannot start without GPU."],
                    fix=["Start `vllm serve` on a node with a GPU (the head, if it has GPUs)."])
    if tp > largest:
        return warn(f"{shape}: fits in {have}, but TP={tp} spans nodes (at most {largest} GPU(s) per node)",
                    evidence=evidence,
                    fix=[f"Keep TP inside a node and use PP across nodes, e.g. TP={largest} x PP={-(-world // largest)}."])
    return ok(f"{shape}: {have}", evidence=evidence)


def _env_keys(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if ENV_KEYS.match(k)}


@check("QD-FLEET-004", "NCCL / HF / vLLM environment consistent across nodes", category="fleet", severity="medium")
def env_consistent(ctx: CheckContext) -> Outcome:
    """A variable set on the driver but not on the workers (HF_ENDPOINT, HF_HUB_OFFLINE, NCCL_*) splits the fleet."""
    answered = _answered_nodes(ctx)
    if isinstance(answered, Outcome):
        return answered
    driver_env = _env_keys(ctx.facts.env)
    keys = set(driver_env)
    for n in answered:
        keys |= set(_env_keys(n.facts.env))
    serious, other, details = [], [], []
    for key in sorted(keys):
        values = {"driver host": driver_env.get(key), **{n.label: _env_keys(n.facts.env).get(key) for n in answered}}
        if len(set(values.values())) > 1:
            (serious if key in ENV_MUST_MATCH or key.startswith("NCCL_") else other).append(key)
            details.append(f"{key}: " + ", ".join(f"{label}={v if v is not None else '(unset)'}"
                                                  for label, v in values.items()))
    evidence = {"differing": serious + other}
    where = ("Ray: set it in the environment of `ray start` on every node, or runtime_env={'env_vars': {...}}"
             if fleet_of(ctx.facts)["engine"] == "ray" else "Spark: spark.executorEnv.NAME=VALUE (and the driver's environment)")
    if serious:
        return fail(f"{', '.join(serious)} {_differ(serious)} between the driver and the nodes", details=details,
                    evidence=evidence, fix=[f"Set the same values everywhere. {where}."])
    if other:
        return warn(f"{', '.join(other)} {_differ(other)} between the driver and the nodes", details=details,
                    evidence=evidence, fix=[f"Set the same values everywhere unless intended. {where}."])
    return ok(f"{len(keys)} NCCL/HF/vLLM variable(s) identical on the driver and {len(answered)} node(s)",
              evidence=evidence)


@check("QD-FLEET-005", "/dev/shm on every node", category="fleet", severity="high")
def shm_per_node(ctx: CheckContext) -> Iterator[Outcome]:
    """NCCL's shared-memory transport and vLLM's broadcast need a large /dev/shm on each node, not just here."""
    answered = _answered_nodes(ctx)
    if isinstance(answered, Outcome):
        yield answered
        return
    fix = ["docker run --ipc=host (or --shm-size=16g) on that node; in Kubernetes an emptyDir medium: Memory at /dev/shm"]
    for n in answered:
        shm = n.facts.host.get("shm")
        if not shm:
            yield skip("/dev/shm not found", subject=n.label)
            continue
        size = shm["total"]
        if size < SHM_MIN:
            yield fail(f"/dev/shm is {gib(size)}", subject=n.label, fix=fix, evidence={"shm_bytes": size})
        elif size < SHM_RECOMMENDED:
            yield warn(f"/dev/shm is {gib(size)}, below {gib(SHM_RECOMMENDED)}", subject=n.label, fix=fix,
                       evidence={"shm_bytes": size})
        else:
            yield ok(f"/dev/shm is {gib(size)}", subject=n.label, evidence={"shm_bytes": size})


def _amount(conf: dict[str, str], key: str) -> float | None:
    value = conf.get(key)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _fraction(x: float) -> str:
    return f"1/{round(1 / x)}" if 0 < x < 1 and abs(1 / x - round(1 / x)) < 1e-6 else f"{x:g}"


@check("QD-FLEET-006", "Spark GPU scheduling matches the engine", category="fleet", severity="high")
def spark_gpu_conf(ctx: CheckContext) -> Iterator[Outcome]:
    """Executor/task GPU amounts, discovery script and executor count against nodes x GPUs and the engine's TP.

    Spark's rules (docs/configuration.md, "Custom Resource Scheduling"): a task amount needs an executor amount,
    executors find their GPUs through a discovery script, and a fractional task amount shares one GPU between
    tasks: an engine with TP=8 inside a task that owns 1/8 of a GPU cannot start.
    """
    fleet = _fleet(ctx)
    if fleet is None or fleet.get("engine") != "spark":
        yield skip("not a Spark fleet; run `qwen-doctor check --spark [MASTER]`")
        return
    conf = (fleet.get("cluster") or {}).get("conf") or {}
    master = conf.get("spark.master", "")
    executor_gpu = _amount(conf, "spark.executor.resource.gpu.amount")
    task_gpu = _amount(conf, "spark.task.resource.gpu.amount")
    tp = int(ctx.option("tp") or 1)
    if executor_gpu is None and task_gpu is None:
        if master.startswith("local"):
            yield skip(f"{master}: local mode schedules no GPUs (nothing to lint)")
        else:
            yield warn("Spark does not schedule GPUs: tasks run without owning the GPUs the engine will use",
                       fix=["Set spark.executor.resource.gpu.amount, spark.task.resource.gpu.amount and "
                            "spark.executor.resource.gpu.discoveryScript (one task per executor: equal amounts)."])
        return
    problems = 0
    if task_gpu is not None and executor_gpu is None:
        problems += 1
        yield fail("spark.task.resource.gpu.amount is set without spark.executor.resource.gpu.amount",
                   fix=["Set spark.executor.resource.gpu.amount to the GPUs each executor owns."])
    if executor_gpu is not None and task_gpu is None:
        problems += 1
        yield fail("spark.executor.resource.gpu.amount is set but spark.task.resource.gpu.amount is not: "
                   "tasks get no GPU addresses", fix=["Set spark.task.resource.gpu.amount (equal to the executor's "
                                                      "amount for one engine per executor)."])
    if executor_gpu is not None and task_gpu is not None and task_gpu > executor_gpu:
        problems += 1
        yield fail(f"a task asks for {task_gpu:g} GPU(s) but an executor owns {executor_gpu:g}: no task can start",
                   fix=["Make spark.task.resource.gpu.amount <= spark.executor.resource.gpu.amount."])
    if executor_gpu is not None and not master.startswith("local") and not (
            conf.get("spark.executor.resource.gpu.discoveryScript") or conf.get("spark.executor.resource.gpu.resourcesFile")):
        problems += 1
        yield warn("no spark.executor.resource.gpu.discoveryScript: executors cannot tell which GPUs they own "
                   "(unless the cluster manager assigns them)",
                   fix=["Ship Spark's examples/src/main/scripts/getGpusResources.sh and point "
                        "spark.executor.resource.gpu.discoveryScript at it."])
    if task_gpu is not None and task_gpu < tp:
        problems += 1
        share = f"{_fraction(task_gpu)} of a GPU" if task_gpu < 1 else f"{task_gpu:g} GPU(s)"
        yield fail(f"an engine with TP={tp} runs inside a task that owns {share}",
                   details=[f"With spark.task.resource.gpu.amount={task_gpu:g}, Spark packs "
                            f"{(executor_gpu or 1) / task_gpu:g} task(s) per executor and each engine still tries "
                            f"to open {tp} GPU(s): they collide on the same devices (OOM, NCCL errors)."],
                   fix=[f"One engine per executor: spark.executor.resource.gpu.amount={tp} and "
                        f"spark.task.resource.gpu.amount={tp}, executor count = nodes x GPUs per node / {tp}."])
    answered = [n for n in nodes(fleet) if n.answered]
    hosts = {n.hostname or n.label: len(n.facts.gpus) for n in answered}
    instances = _amount(conf, "spark.executor.instances")
    total = sum(hosts.values())
    if instances and executor_gpu and total:
        wanted = instances * executor_gpu
        if wanted > total:
            problems += 1
            yield fail(f"{instances:g} executors x {executor_gpu:g} GPU(s) = {wanted:g} GPUs, but the nodes that "
                       f"answered have {total}", fix=["Lower spark.executor.instances to nodes x GPUs per node / "
                                                      "GPUs per executor."])
        elif wanted < total:
            problems += 1
            yield warn(f"{instances:g} executors x {executor_gpu:g} GPU(s) = {wanted:g} of {total} GPUs: the rest idle",
                       fix=["Raise spark.executor.instances to use every GPU."])
    if not problems:
        yield ok(f"executor {executor_gpu:g} GPU(s), task {task_gpu:g} GPU(s), TP={tp}: one engine per task fits")
