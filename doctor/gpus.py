"""Which GPUs a deployment will use: CUDA_VISIBLE_DEVICES order, then the first TP x PP of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from doctor.context import CheckContext
from doctor.facts.model import Facts

GIB = 1024**3


@dataclass
class Selection:
    """GPUs visible to CUDA (in CUDA order), the ones the deployment uses, and problems with the mask."""

    visible: list[dict[str, Any]]
    used: list[dict[str, Any]]
    world_size: int
    problems: list[str] = field(default_factory=list)


def visible_gpus(facts: Facts) -> tuple[list[dict[str, Any]], list[str]]:
    """GPUs in the order CUDA numbers them under CUDA_VISIBLE_DEVICES (indices, GPU-/MIG- UUIDs)."""
    gpus = facts.gpus
    mask = facts.env.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return gpus, []
    problems: list[str] = []
    chosen: list[dict[str, Any]] = []
    for token in [t.strip() for t in mask.split(",")]:
        if not token:
            continue
        found = None
        if token.lstrip("-").isdigit():
            idx = int(token)
            if idx < 0:
                break  # CUDA stops at the first invalid entry
            found = next((g for g in gpus if g.get("index") == idx), None)
        else:
            found = next((g for g in gpus if g.get("uuid") and str(g["uuid"]).startswith(token)), None)
        if found is None:
            problems.append(f"CUDA_VISIBLE_DEVICES entry {token!r} matches no GPU; CUDA ignores it and all after it")
            break
        chosen.append(found)
    return chosen, problems


def select(ctx: CheckContext) -> Selection:
    """The deployment's GPUs: tp x pp x dp of the visible ones (all visible when no size was given)."""
    visible, problems = visible_gpus(ctx.facts)
    tp = int(ctx.option("tp") or ctx.option("tensor_parallel_size") or 0)
    pp = int(ctx.option("pp") or ctx.option("pipeline_parallel_size") or 1)
    dp = int(ctx.option("dp") or ctx.option("data_parallel_size") or 1)
    world = tp * pp * dp if tp else len(visible)
    return Selection(visible, visible[:world], world, problems)


def label(gpu: dict[str, Any]) -> str:
    return f"GPU{gpu.get('index')} ({gpu.get('name') or 'unknown'})"


def capability(gpu: dict[str, Any]) -> tuple[int, int] | None:
    cc = gpu.get("compute_capability")
    if not cc:
        return None
    major, _, minor = str(cc).partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError:
        return None


def gib(n: int | float | None) -> str:
    """A byte count for people: MiB below 1 GiB, GiB above."""
    if n is None:
        return "?"
    return f"{n / 1024**2:.0f} MiB" if n < GIB else f"{n / GIB:.1f} GiB"
