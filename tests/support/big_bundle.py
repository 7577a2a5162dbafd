"""Synthetic large-fleet bundles: the recorded A100 fixture with its GPUs (and topology) replicated."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "a100-8x-nvlink.json"


def big_bundle(gpus: int, topology_gpus: int = 0) -> dict[str, Any]:
    """`gpus` copies of GPU0 (indices and UUIDs renumbered), topology recorded for the first `topology_gpus`."""
    data = json.loads(FIXTURE.read_text())
    template = data["nvml"]["gpus"][0]
    data["nvml"]["gpus"] = [dict(copy.deepcopy(template), index=i, uuid=f"GPU-6e0c0000-0000-4000-8000-{i:012x}")
                            for i in range(gpus)]
    data["nvml"]["topology"] = [{"a": a, "b": b, "common_ancestor": "NODE", "p2p": {"read": "ok", "nvlink": "ok"},
                                 "errors": {}} for a, b in itertools.combinations(range(topology_gpus), 2)]
    return data
