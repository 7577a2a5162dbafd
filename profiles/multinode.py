"""One command per node for a profile that spans several machines (`nodes` > 1).

- SGLang (srt/server_args.py `--nnodes`, `--node-rank`, `--dist-init-addr`; docs references/multi_node_deployment):
  the same `sglang.launch_server` on every node, each with its `--node-rank`; rank 0 serves the HTTP API.
- vLLM with the Ray executor (docs serving/parallelism_scaling.md "Multi-node deployment"): a Ray cluster spans the
  nodes (`ray start --head` on the head, `ray start --address HEAD:6379` on the others) and one `vllm serve` on the
  head places every worker through Ray placement groups.

The head's address comes from the profile variable `head_address` (an override, or the Ray head's IP under
`deploy --ray`); its default is the placeholder HEAD_IP, to be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from doctor import shellquote
from doctor.deployment import Deployment, SettingError
from profiles.model import Profile, ProfileError, RenderedCommand, rendered

RAY_GCS_PORT = 6379
PLACEHOLDER = "HEAD_IP"


@dataclass(frozen=True)
class NodeCommand:
    """What runs on one node: its rank, role and the commands in order (the last one is the long-running one)."""

    rank: int
    role: str
    commands: tuple[RenderedCommand, ...]


def head_address(profile: Profile, overrides: Mapping[str, Any] | None) -> str:
    return str((overrides or {}).get("head_address") or profile.variables.get("head_address") or PLACEHOLDER)


def render_nodes(profile: Profile, overrides: Mapping[str, Any] | None = None,
                 start_ray: bool = True, base: Deployment | None = None) -> list[NodeCommand]:
    """The commands of every node; `start_ray=False` when the Ray cluster already exists (`deploy --ray`).
    `base`: the profile's Deployment under these overrides when the caller has built it already."""
    overrides = dict(overrides or {})
    base = base if base is not None else profile.deployment(overrides)
    if profile.nodes <= 1:
        return [NodeCommand(0, "single node", (rendered(base),))]
    if profile.backend == "sglang":
        return _sglang(profile, base)
    return _vllm_ray(profile, overrides, base, start_ray)


def _sglang(profile: Profile, base: Deployment) -> list[NodeCommand]:
    nnodes = _setting(profile, base, "nnodes")
    if base.setting("dist_init_addr") is None or nnodes is None:
        raise ProfileError(f"profile {profile.name}: a multi-node SGLang profile sets nnodes and dist-init-addr")
    if nnodes != profile.nodes:
        raise ProfileError(f"profile {profile.name}: flags.nnodes is {nnodes} but nodes is {profile.nodes}")
    out = []
    for rank in range(profile.nodes):
        command = rendered(base.with_setting("node_rank", str(rank)))
        out.append(NodeCommand(rank, "head (serves the API)" if rank == 0 else "worker", (command,)))
    return out


def _ray_start(profile: Profile, env: dict[str, str], head: str | None) -> RenderedCommand:
    gpus = str(profile.hardware.gpu_count)
    argv = (["ray", "start", "--head", "--port", str(RAY_GCS_PORT), "--num-gpus", gpus] if head is None else
            ["ray", "start", "--address", f"{head}:{RAY_GCS_PORT}", "--num-gpus", gpus])
    return RenderedCommand(argv, env, "ray", len(argv))


def _vllm_ray(profile: Profile, overrides: dict[str, Any], base: Deployment, start_ray: bool) -> list[NodeCommand]:
    serve = rendered(base)
    if _setting(profile, serve.deployment, "distributed_executor_backend") != "ray":
        raise ProfileError(f"profile {profile.name}: a multi-node vLLM profile sets distributed-executor-backend: ray")
    head = head_address(profile, overrides)
    out = [NodeCommand(0, "head (Ray head, serves the API)",
                       ((_ray_start(profile, serve.env, None),) if start_ray else ()) + (serve,))]
    for rank in range(1, profile.nodes):
        commands = (_ray_start(profile, serve.env, head),) if start_ray else ()
        out.append(NodeCommand(rank, "worker (Ray node; vLLM places its workers here)", commands))
    return out


def _setting(profile: Profile, deployment: Deployment, name: str) -> Any:
    try:
        return deployment.setting(name)
    except SettingError as exc:
        raise ProfileError(f"profile {profile.name}: {exc}") from None


def render_text(nodes: list[NodeCommand]) -> str:
    """Shell text per node, as `profiles show --render` and `deploy --dry-run` print it."""
    parts = []
    for node in nodes:
        env = {k: v for c in node.commands for k, v in c.env.items()}
        exports = [f"export {k}={shellquote.quote(v)}" for k, v in sorted(env.items())]
        body = "\n".join(exports + [replace(c, env={}).shell() for c in node.commands])
        parts.append(f"# node {node.rank}: {node.role}\n"
                     f"{body or '# nothing to start: the running Ray node hosts the workers'}")
    return "\n\n".join(parts)
