"""The engine's own default of each planner ServeConfig field, per version, from the flag schemas
(doctor/flags/schemas, extracted from each wheel by scripts/extract_flag_schema.py) of the nearest covered
version <= the one planned."""

from __future__ import annotations

from typing import Any

from doctor.deployment.table import field_names
from doctor.flags.schema import FlagDefault, SchemaError, flag_default

def engine_default(backend: str, version: str | None, field: str) -> FlagDefault | None:
    """The default of the flag behind ServeConfig `field` in `backend` `version` (nearest covered version
    <= it), or None when the backend has no such flag or its schema does not record the default."""
    names = field_names(backend, field)
    if not names:
        return None
    try:
        return flag_default(backend, version, names[0])
    except SchemaError:
        return None


def literal_default(backend: str, version: str | None, field: str) -> Any:
    """The value the engine uses for `field` when the user does not set it, where that is a fixed literal
    of the version; None when it is resolved at startup (GPU memory, model) or unknown."""
    found = engine_default(backend, version, field)
    if found is None or found.resolved_at_runtime and found.value is None:
        return None
    return found.value


def _tier_matches(tier: dict[str, Any], total_bytes: int, gpu_name: str, capability: tuple[int, int]) -> bool:
    return (total_bytes >= tier.get("min_memory_gib", 0) * (1 << 30)
            and not any(name in gpu_name.lower() for name in tier.get("exclude_names", ()))
            and list(capability) not in [list(c) for c in tier.get("exclude_capabilities", ())])


def vllm_batch_defaults_of(version: str | None, total_bytes: int, gpu_name: str,
                           capability: tuple[int, int]) -> tuple[int, int] | None:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` of `version` picks on a CUDA GPU with torch total
    `total_bytes`, from the get_batch_defaults tiers of its flag schema; None when the schema has no exact
    tiers (the caller's own rule applies)."""
    out = []
    for field in ("max_num_batched_tokens", "max_num_seqs"):
        found = engine_default("vllm", version, field)
        tiers = found.tiers if found else ()
        if not tiers or not all(t.get("exact") for t in tiers):
            return None
        match = next((t for t in tiers if _tier_matches(t, total_bytes, gpu_name, capability)), None)
        if match is None or not isinstance(match.get("value"), int):
            return None
        out.append(match["value"])
    return out[0], out[1]
