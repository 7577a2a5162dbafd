"""Recipe hardware ids and precisions in qwen-doctor's terms (hardware.yaml), GPUs read through the planner."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return yaml.safe_load(resources.files("doctor.recipes").joinpath("hardware.yaml").read_text(encoding="utf-8"))


def catalogue_gpu(hardware_id: str) -> str | None:
    """The GPU catalogue name for a recipe / cookbook hardware id, None when unmapped."""
    return _data()["gpus"].get(hardware_id)


def gpu_known(name: str) -> bool:
    """Whether the planner's GPU catalogue has `name`."""
    from doctor.planner.errors import PlanInputError
    from doctor.planner.hardware import get_gpu

    try:
        get_gpu(name)
    except PlanInputError:
        return False
    return True


def min_capability(precision: str) -> str:
    """The lowest compute capability a checkpoint of `precision` runs on (8.0 when unknown)."""
    return str(_data()["precisions"].get(precision.lower(), "8.0"))
