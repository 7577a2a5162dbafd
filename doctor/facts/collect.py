"""Run every probe concurrently, each under a timeout, into one Facts snapshot."""

from __future__ import annotations

import datetime as dt
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from doctor import __version__
from doctor.facts.document import SCHEMA_NAME, SCHEMA_VERSION
from doctor.facts.model import Facts

Probe = Callable[[], dict[str, Any]]
DEFAULT_TIMEOUT_S = 10.0


def builtin_probes() -> dict[str, Probe]:
    """Section name -> probe function. Imported lazily so `--help` stays fast."""
    from doctor.facts.probes import env, host, inventory, netif, nvml, packages

    return {"nvml": nvml.probe, "packages": packages.probe, "inventory": inventory.probe, "host": host.probe,
            "env": env.probe, "netif": netif.probe}


def collect(probes: dict[str, Probe] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Facts:
    """Collect a snapshot; a probe that raises or overruns its timeout is recorded, never raised."""
    probes = builtin_probes() if probes is None else probes
    started = time.monotonic()
    data: dict[str, Any] = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "collected_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "probes": {},
    }
    pool = ThreadPoolExecutor(max_workers=max(1, len(probes)), thread_name_prefix="probe")
    futures: dict[str, tuple[Future[dict[str, Any]], float]] = {}
    for name, fn in probes.items():
        futures[name] = (pool.submit(_timed, fn), time.monotonic())
    for name, (future, t0) in futures.items():
        remaining = max(0.0, timeout_s - (time.monotonic() - started))
        try:
            value, seconds = future.result(timeout=remaining)
        except TimeoutError:
            data["probes"][name] = {"status": "timeout", "seconds": round(time.monotonic() - t0, 3),
                                    "error": f"probe '{name}' did not finish within {timeout_s:g} s"}
            data[name] = {}
            continue
        except Exception as exc:
            data["probes"][name] = {"status": "error", "seconds": round(time.monotonic() - t0, 3),
                                    "error": f"{type(exc).__name__}: {exc}"}
            data[name] = {}
            continue
        data["probes"][name] = {"status": "ok", "seconds": round(seconds, 3), "error": None}
        data[name] = value
    pool.shutdown(wait=False, cancel_futures=True)
    data["hostname"] = (data.get("host") or {}).get("hostname")
    data["collect_seconds"] = round(time.monotonic() - started, 3)
    return Facts(data)


def _timed(fn: Probe) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    return fn(), time.perf_counter() - t0
