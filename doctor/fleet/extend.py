"""Add the fleet, Ray GCS and Hugging Face sections to a freshly collected facts document."""

from __future__ import annotations

import os
from typing import Any

from doctor.errors import DoctorError


def extend(data: dict[str, Any], ray: str | None = None, spark: str | None = None, hf: bool = False,
           model: str | None = None, node_timeout_s: float = 60.0, probe_timeout_s: float = 10.0) -> None:
    """`ray`/`spark` are None (not asked), "" (asked, default address/master) or an address/master."""
    from doctor.net import ray_gcs

    if ray is not None and spark is not None:
        raise DoctorError("--ray and --spark are exclusive: check one fleet at a time")
    address, source = ray_gcs.address_from_env(ray)
    if ray is not None or os.environ.get("RAY_ADDRESS"):
        gcs = ray_gcs.probe(address or "auto", source if address else "default (auto)")
        data.setdefault("network", {})["ray_gcs"] = gcs
        if ray is not None:
            data["fleet"] = _ray_fleet(gcs, node_timeout_s, probe_timeout_s)
    if spark is not None:
        from doctor.fleet import gather

        data["fleet"] = gather.gather("spark", spark or None, node_timeout_s, probe_timeout_s)
    if hf:
        from doctor.net import hf as hf_probe

        data["hf"] = hf_probe.probe(model or hf_probe.DEFAULT_MODEL)


def _ray_fleet(gcs: dict[str, Any], node_timeout_s: float, probe_timeout_s: float) -> dict[str, Any]:
    from doctor.fleet import gather

    parsed = gcs["address"]
    if parsed["kind"] in ("invalid", "dashboard"):
        raise DoctorError(f"bad Ray address {parsed['raw']!r}: {parsed['error']}")
    gather.require("ray")
    tcp = gcs.get("tcp")
    if parsed["kind"] == "auto" and gcs.get("resolved_from") is None:
        return {"engine": "ray", "target": "auto", "status": "error", "error": parsed["error"], "cluster": {}, "nodes": []}
    if tcp is not None and not tcp["ok"]:
        return {"engine": "ray", "target": parsed["raw"], "status": "error",
                "error": f"GCS not reachable: {tcp['error']}", "cluster": {}, "nodes": []}
    return gather.gather("ray", parsed["raw"], node_timeout_s, probe_timeout_s)
