"""What deploy launches: the rendered command of a Deployment plus the few facts the exerciser needs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from doctor import shellquote
from doctor.deployment import Deployment

BACKENDS = ("vllm", "sglang")


@dataclass(frozen=True)
class LaunchSpec:
    """One server process to start: argv, extra env, and how a client talks to it (`deployment`: what it
    serves, typed; None for a process that is no engine, e.g. the fleet launcher)."""

    argv: list[str]
    env: dict[str, str]
    backend: str
    host: str
    port: int
    served_model_name: str
    reasoning_parser: str | None = None
    profile_name: str = ""
    api_key: str | None = None
    deployment: Deployment | None = None

    @classmethod
    def of(cls, deployment: Deployment) -> "LaunchSpec":
        """The process that starts `deployment`."""
        return cls(argv=deployment.argv(), env=dict(deployment.env), backend=deployment.backend,
                   host=deployment.endpoint.host, port=deployment.endpoint.port,
                   served_model_name=deployment.served_model_name,
                   reasoning_parser=deployment.setting("reasoning_parser"), profile_name=deployment.profile_name,
                   api_key=deployment.api_key, deployment=deployment)

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends: the bearer token when the server was started with an API key."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def with_python(self, python: str | None) -> "LaunchSpec":
        """Run the launcher with the backend's interpreter (a `python -m ...` launcher, or the `vllm` script
        next to it)."""
        if not python or self.deployment is None:
            return self
        return replace(LaunchSpec.of(self.deployment.with_python(python)), host=self.host)

    def shell(self) -> str:
        """One copy-pasteable line: env assignments, then the command."""
        env = " ".join(f"{k}={shellquote.quote(v)}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + shellquote.join(self.argv)


def from_argv(argv: list[str], env: Mapping[str, str], backend: str, profile_name: str = "",
              flags: Any = None) -> LaunchSpec:  # noqa: ARG001 (flags: the old signature's, unused)
    """The LaunchSpec of a foreign command line (read through doctor.deployment.from_argv)."""
    from doctor.deployment import from_argv as deployment_from_argv

    return LaunchSpec.of(deployment_from_argv(argv, backend, env, profile_name=profile_name))
