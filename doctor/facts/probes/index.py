"""Which versions the configured package index serves of a few projects (doctor/pkgindex.py), bounded in
time: the facts QD-VER-007 judges an engine release's pins against. Run on request only (`check --index`):
it is the one probe that leaves the machine."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Iterable

from doctor import pkgindex

DEFAULT_TIMEOUT_S = 8.0


def probe(projects: Iterable[str], timeout_s: float = DEFAULT_TIMEOUT_S,
          config: pkgindex.IndexConfig | None = None) -> dict[str, Any]:
    """{"url", "status": "ok"|"unreachable"|"timeout", "error", "seconds", "projects": {name: [versions]}}; a
    project the index does not know has an empty list."""
    started = time.monotonic()
    config = config or pkgindex.configured()
    names = sorted(set(projects))
    out: dict[str, Any] = {"url": config.index_url, "status": "ok", "error": None, "projects": {}}
    pool = ThreadPoolExecutor(max_workers=max(1, min(8, len(names))), thread_name_prefix="index")
    futures = {name: pool.submit(pkgindex.versions, name, config, timeout_s) for name in names}
    errors: list[str] = []
    for name, future in futures.items():
        remaining = max(0.0, timeout_s - (time.monotonic() - started))
        try:
            out["projects"][name] = [str(v) for v in future.result(timeout=remaining)]
        except FutureTimeout:
            out["status"], out["error"] = "timeout", f"the package index did not answer within {timeout_s:g} s"
            break
        except pkgindex.IndexUnreachable as exc:
            errors.append(str(exc))
    pool.shutdown(wait=False, cancel_futures=True)
    if errors and not out["projects"]:
        out["status"], out["error"] = "unreachable", errors[0]
    out["seconds"] = round(time.monotonic() - started, 3)
    return out
