"""Ray connectivity without a cluster: parse the address, then reach the GCS (or client) port over TCP."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from doctor.net import probes
from doctor.net.ray_address import parse

# `ray start --head` records the GCS address of the cluster it started here; address="auto" reads it
# (ray/_private/utils.py: get_ray_address_file -> <temp dir>/ray_current_cluster).
CURRENT_CLUSTER_FILE = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"


def probe(address: str | None, source: str, timeout_s: float = 2.0,
          current_cluster_file: Path = CURRENT_CLUSTER_FILE) -> dict[str, Any]:
    """The `network.ray_gcs` facts: the parsed address and, for a remote one, a bounded TCP connect."""
    parsed = parse(address)
    facts: dict[str, Any] = {"source": source, "address": parsed.to_dict(), "tcp": None, "resolved_from": None}
    host, port = parsed.host, parsed.port
    if parsed.kind == "auto":
        try:
            recorded = current_cluster_file.read_text(encoding="utf-8").strip()
        except OSError:
            facts["address"]["error"] = (f"address 'auto' needs a cluster started on this machine, but "
                                         f"{current_cluster_file} does not exist")
            return facts
        facts["resolved_from"] = str(current_cluster_file)
        resolved = parse(recorded)
        host, port = resolved.host, resolved.port
    if parsed.kind in ("gcs", "client", "dashboard", "auto") and host and port:
        facts["tcp"] = {"host": host, "port": port, **probes.tcp(host, port, timeout_s)}
    return facts


def address_from_env(cli_value: str | None) -> tuple[str | None, str]:
    """The address to use and where it came from: the --ray value first, then RAY_ADDRESS."""
    if cli_value:
        return cli_value, "--ray"
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    return None, "none"
