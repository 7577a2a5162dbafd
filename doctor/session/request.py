"""What a deploy is asked to do (Request) and what its target plans to start after the checks (Plan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from doctor.deploy.preflight import blocking
from doctor.results import Result, Status

@dataclass(frozen=True)
class Request:
    """What the user asked deploy to do (the CLI's options, parsed)."""

    profile: Any
    model: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    port: int | None = None
    host: str | None = None
    python: str | None = None
    dry_run: bool = False
    rehearse: bool = False
    ray: str | None = None
    keep: bool = False
    force: bool = False
    timeout: float = 900.0
    log_path: str | None = None
    burst: int = 8
    burst_tokens: int = 32
    slo: dict[str, float] = field(default_factory=dict)
    sweep: tuple[int, ...] = ()
    bench: bool = False

    @property
    def overrides(self) -> dict[str, Any]:
        """The profile's render overrides (doctor.deploy.prepare.overrides_of)."""
        from doctor.deploy.prepare import overrides_of

        return overrides_of(self.profile, self.port, self.host, self.model, self.variables)


@dataclass
class Plan:
    """What the run will start, after the checks: the target, its checks' results and the command shown."""

    target: Any
    results: list[Result]
    shown: str
    checked: str = "checks"
    launch: Any = None
    ready: bool = False

    @property
    def failing(self) -> list[Result]:
        return blocking(self.results)


def verdict_line(results: list[Result]) -> str:
    """The preflight verdict, said before the long start."""
    failing = [r.check_id for r in results if r.status in (Status.FAIL, Status.ERROR)]
    warned = [r.check_id for r in results if r.status == Status.WARN]
    ok = sum(1 for r in results if r.status == Status.OK)
    parts = [f"{ok} ok"]
    if warned:
        parts.append(f"{len(warned)} warn ({', '.join(warned)})")
    if failing:
        parts.append(f"{len(failing)} fail ({', '.join(failing)})")
    return "preflight: " + ", ".join(parts)
