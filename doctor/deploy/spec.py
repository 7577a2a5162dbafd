"""What deploy launches: the rendered command plus the few facts the exerciser needs."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

BACKENDS = ("vllm", "sglang")


@dataclass(frozen=True)
class LaunchSpec:
    """One server process to start: argv, extra env, and how a client talks to it."""

    argv: list[str]
    env: dict[str, str]
    backend: str
    host: str
    port: int
    served_model_name: str
    reasoning_parser: str | None = None
    max_model_len: int | None = None
    profile_name: str = ""
    flags: Mapping[str, Any] = field(default_factory=dict)
    api_key: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends: the bearer token when the server was started with --api-key."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def with_python(self, python: str | None) -> "LaunchSpec":
        """Run a `python -m ...` launcher with another interpreter (the backend lives in its own venv)."""
        if not python or not self.argv or self.argv[0] != "python":
            return self
        return replace(self, argv=[python, *self.argv[1:]])

    def shell(self) -> str:
        """One copy-pasteable line: env assignments, then the command."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + shlex.join(self.argv)


def flag_value(argv: list[str], *names: str) -> str | None:
    """The value of the last `--name VALUE` or `--name=VALUE` among `names` in argv."""
    found: str | None = None
    for i, token in enumerate(argv):
        for name in names:
            if token == name and i + 1 < len(argv):
                found = argv[i + 1]
            elif token.startswith(name + "="):
                found = token.split("=", 1)[1]
    return found


def from_argv(argv: list[str], env: Mapping[str, str], backend: str, profile_name: str = "",
              flags: Mapping[str, Any] | None = None) -> LaunchSpec:
    """Build a LaunchSpec from a rendered command line, reading host, port and names from its flags."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    model = flag_value(argv, "--model", "--model-path") or (argv[2] if argv[:2] == ["vllm", "serve"] else "")
    served = flag_value(argv, "--served-model-name") or model
    max_len = flag_value(argv, "--max-model-len", "--context-length")
    return LaunchSpec(
        argv=list(argv),
        env=dict(env),
        backend=backend,
        host=flag_value(argv, "--host") or "127.0.0.1",
        port=int(flag_value(argv, "--port") or (8000 if backend == "vllm" else 30000)),
        served_model_name=served,
        reasoning_parser=flag_value(argv, "--reasoning-parser"),
        max_model_len=int(max_len) if max_len and max_len.isdigit() else None,
        profile_name=profile_name,
        flags=dict(flags or {}),
        api_key=flag_value(argv, "--api-key") or env.get("VLLM_API_KEY"),
    )
