"""One recipe entry resolved for one machine: the command it runs and where every part of it came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.recipes.sources import Origin


@dataclass(frozen=True)
class Candidate:
    """A profile to be: backend, checkpoint, GPUs, backend arguments (after the model), env and citations."""

    name: str
    backend: str
    model: str
    min_version: str
    gpu: str                      # GPU catalogue name (doctor/planner/gpus.yaml)
    gpu_count: int
    min_gpu_memory_gib: float
    min_compute_capability: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    description: str
    origin: Origin
    entry: str                    # what in the file: variant, hardware, strategy, features
    sources: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Skipped:
    """A recipe entry not imported for a machine, and why."""

    entry: str
    why: str


def dedupe_last_wins(args: list[str]) -> list[str]:
    """Keep the last `--flag [value]` of each flag, as the recipes site does (command-synthesis.js dedupeArgs)."""
    units: list[tuple[str | None, str | None]] = []   # (flag, value) or (None, positional)
    i = 0
    while i < len(args):
        token = args[i]
        if token.startswith("-"):
            following = args[i + 1] if i + 1 < len(args) else None
            if following is not None and not following.startswith("-"):
                units.append((token, following))
                i += 2
                continue
            units.append((token, None))
        else:
            units.append((None, token))
        i += 1
    seen: set[str] = set()
    keep = []
    for flag, value in reversed(units):
        if flag is None or flag not in seen:
            keep.append((flag, value))
            if flag is not None:
                seen.add(flag)
    out: list[str] = []
    for flag, value in reversed(keep):
        out += [t for t in (flag, value) if t is not None]
    return out
