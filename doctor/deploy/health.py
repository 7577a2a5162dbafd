"""Waiting for a starting server: ready when /health and /v1/models answer, failed as soon as it dies
or logs a fatal signature, timed out otherwise."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from doctor.boundedhttp import bounded_client
from doctor.deploy.exercise import served_models
from doctor.deploy.follower import LogFollower
from doctor.deploy.process import ServerProcess
from doctor.safeio import reply_json

FATAL_GRACE_S = 10.0


def progress_window(timeout: float) -> float:
    """A server whose last meaningful log line is this recent when the timeout hits was still progressing
    (loading shards or compiling can log nothing for a while, so the window grows with the timeout)."""
    return max(30.0, timeout * 0.1)


@dataclass
class StartOutcome:
    """How the start ended: `state` is ready, died, fatal or timeout."""

    state: str
    seconds: float
    detail: str = ""
    models: list[str] = field(default_factory=list)
    returncode: int | None = None
    phase: str = ""
    progressing: bool = False
    quiet_s: float | None = None
    timeout: float = 0.0

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def to_dict(self) -> dict[str, Any]:
        out = {"state": self.state, "seconds": round(self.seconds, 1), "detail": self.detail,
               "models": self.models, "returncode": self.returncode}
        if self.phase:
            out["phase"] = self.phase
        if self.state == "timeout":
            out["still_progressing"] = self.progressing
        return out


def probe(client: httpx.Client, base_url: str) -> list[str] | None:
    """Model ids when /health is 200 and /v1/models lists at least one model; None otherwise."""
    try:
        if client.get(f"{base_url}/health").status_code != 200:
            return None
        r = client.get(f"{base_url}/v1/models")
        if r.status_code != 200:
            return None
        return [m["id"] for m in served_models(reply_json(r.content))] or None
    except (httpx.HTTPError, ValueError):
        return None


def wait_ready(base_url: str, server: ServerProcess, follower: LogFollower, timeout: float,
               poll: float = 1.0, headers: dict[str, str] | None = None) -> StartOutcome:
    """Poll until ready; stop waiting early when the server exits or a fatal log line appears."""
    started = time.monotonic()
    fatal_at: float | None = None
    with bounded_client(5.0, timeout=httpx.Timeout(5.0, connect=2.0), trust_env=False, headers=headers) as client:
        while True:
            elapsed = time.monotonic() - started
            server.remember_descendants()
            if not server.alive:
                server.wait_log_drained(5.0)
                return StartOutcome("died", elapsed, f"the server exited by itself with code {server.returncode} "
                                    f"during start (phase: {follower.phase})", returncode=server.returncode,
                                    phase=follower.phase)
            if follower.fatal_seen:
                fatal_at = fatal_at if fatal_at is not None else time.monotonic()
                if time.monotonic() - fatal_at >= FATAL_GRACE_S:
                    hit = follower.watch.fatal[0]
                    return StartOutcome("fatal", elapsed, f"fatal log line {hit.lineno} ({hit.id}) and the server "
                                        f"did not exit within {FATAL_GRACE_S:g} s")
            models = probe(client, base_url)
            if models is not None:
                return StartOutcome("ready", time.monotonic() - started, "health and /v1/models answer", models)
            if elapsed >= timeout:
                quiet = follower.quiet_for()
                progressing = quiet is not None and quiet <= progress_window(timeout)
                return StartOutcome("timeout", elapsed, f"not healthy after {timeout:g} s (phase: {follower.phase})",
                                    phase=follower.phase, progressing=progressing, quiet_s=quiet, timeout=timeout)
            time.sleep(poll)
