"""Ray connectivity without a cluster: the address, and whether the head's GCS port answers."""

from __future__ import annotations

from typing import Any

from doctor.context import CheckContext
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

# The classic "Failed to connect to GCS at address ... within N seconds" (Ray), its causes and fixes:
# vllm-project/vllm#15385, #19543; ray-project/ray#1465; shared/reference/qwen35-facts.md error #25.
GCS_REFUSED_CAUSES = [
    "The head is not running: start it with `ray start --head --port=6379` (check `ray status` on the head).",
    "Wrong port: the GCS listens on 6379 by default; 10001 is the Ray Client server (ray://), 8265 the dashboard.",
    "The head listens on another interface: start it with `--node-ip-address=<reachable IP>`.",
]
GCS_TIMEOUT_CAUSES = [
    "A firewall or security group drops the traffic: open the GCS port (6379) and the node/object manager and "
    "worker port ranges between all nodes.",
    "Wrong head IP: a private IP that this host cannot route to, or a stale address in RAY_ADDRESS.",
    "The head is overloaded or stuck: check /tmp/ray/session_latest/logs/gcs_server.out on the head.",
]
VERSION_NOTE = ("Once connected, Ray also refuses a driver whose Ray or Python version differs from the cluster's: "
                "match them on every node.")


def _gcs(ctx: CheckContext) -> dict[str, Any] | None:
    return (ctx.facts.data.get("network") or {}).get("ray_gcs")


@check("QD-NET-001", "Ray address well-formed", category="network", severity="high")
def ray_address(ctx: CheckContext) -> Outcome:
    """RAY_ADDRESS / --ray must be auto, local, HOST:PORT (the GCS) or ray://HOST:PORT (Ray Client)."""
    gcs = _gcs(ctx)
    if gcs is None:
        return skip("no Ray address given (pass --ray ADDRESS or set RAY_ADDRESS)")
    parsed = gcs["address"]
    where = f"{parsed['raw']!r} from {gcs.get('source')}"
    fix = ["Use HOST:6379 (the head's GCS) with ray.init / `ray start --address`, or ray://HOST:10001 for Ray Client."]
    if parsed["kind"] in ("invalid", "dashboard"):
        return fail(f"{where}: {parsed['error']}", fix=fix, evidence=parsed)
    if parsed["kind"] == "auto" and parsed.get("error"):
        return fail(f"{where}: {parsed['error']}",
                    fix=["Start the cluster on this machine (`ray start --head`) or give the head's HOST:PORT."],
                    evidence=parsed)
    if parsed["kind"] in ("auto", "local"):
        return ok(f"{where}: {'a cluster started on this machine' if parsed['kind'] == 'auto' else 'a new local cluster'}",
                  evidence=parsed)
    return ok(f"{where}: {'Ray Client' if parsed['kind'] == 'client' else 'GCS'} at {parsed['host']}:{parsed['port']}",
              evidence=parsed)


@check("QD-NET-002", "Ray GCS reachable", category="network", severity="high")
def ray_gcs_reachable(ctx: CheckContext) -> Outcome:
    """A TCP connection to the head's GCS port, bounded by a timeout, before any Ray call can hang on it."""
    gcs = _gcs(ctx)
    if gcs is None:
        return skip("no Ray address given")
    tcp = gcs.get("tcp")
    if tcp is None:
        return skip(f"nothing to reach for address {gcs['address']['raw']!r}")
    target = f"{tcp['host']}:{tcp['port']}"
    evidence = {"host": tcp["host"], "port": tcp["port"], "seconds": tcp["seconds"], "error": tcp["error"]}
    if tcp["ok"]:
        return ok(f"{target} accepts connections ({tcp['seconds'] * 1000:.0f} ms)", evidence=evidence)
    refused = "refused" in (tcp["error"] or "")
    causes = GCS_REFUSED_CAUSES if refused else GCS_TIMEOUT_CAUSES
    details = [f"Ray reports this as: Failed to connect to GCS at address {target} within N seconds", *causes,
               VERSION_NOTE]
    return fail(f"{tcp['error']}", details=details,
                fix=[f"From this host: `nc -vz {tcp['host']} {tcp['port']}`; on the head: `ray status`.",
                     "Fix the address or open the port, then re-run `qwen-doctor check --ray ADDRESS`."],
                evidence=evidence)


@check("QD-NET-003", "Ray address propagated to Spark executors", category="network", severity="low")
def ray_address_in_spark(ctx: CheckContext) -> Outcome:
    """Ray-on-Spark drivers pass the GCS address to executors through spark.executorEnv.RAY_ADDRESS."""
    fleet = ctx.facts.data.get("fleet") or {}
    if fleet.get("engine") != "spark":
        return skip("not a Spark fleet")
    conf = (fleet.get("cluster") or {}).get("conf") or {}
    value = conf.get("spark.executorEnv.RAY_ADDRESS")
    if value is None:
        return skip("executors do not use Ray (spark.executorEnv.RAY_ADDRESS unset)")
    from doctor.net.ray_address import parse

    parsed = parse(value)
    if parsed.kind in ("invalid", "dashboard", "local"):
        why = parsed.error or "'local' would start a separate cluster inside every executor"
        return warn(f"spark.executorEnv.RAY_ADDRESS={value!r}: {why}",
                    fix=["Set it to the head's HOST:6379 (what `ray.get_runtime_context().gcs_address` returns)."])
    return ok(f"executors reach Ray at {value}")
