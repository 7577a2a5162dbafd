"""Building a Deployment once: from a profile plus the user's overrides, or from a foreign command line (lint,
boot logs, `plan --flag`, a test's server) read through the same table."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from typing import Any, Mapping

from doctor.deployment import table
from doctor.deployment.launcher import LAUNCHERS, Launcher, launcher_of_argv
from doctor.deployment.model import (DEFAULT_HOST, DEFAULT_PORT, HOST, MODEL_OPTIONS, MODEL_SLOT, PORT, POSITIONAL,
                                     Deployment, Endpoint, Flag, Settings, settings_of)
from doctor.errors import DataError

_VARIABLE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class DeploymentError(DataError):
    """A deployment that cannot be built (a variable without a value, an override that does not apply)."""


def from_profile(profile: Any, overrides: Mapping[str, Any] | None = None, flags: Mapping[str, Any] | None = None,
                 version: str | None = None) -> Deployment:
    """The profile's deployment. `overrides` may set model, host, port, python and any declared variable (checked
    by the profile); `flags` (`--flag`) override or add engine flags (order kept, new ones last). DeploymentError
    on a valued option given bare or as `true`."""
    overrides = profile.checked_overrides(overrides or {})
    values = {k: v for k, v in profile.variables.items() if v is not None}
    values.update({k: str(v) for k, v in overrides.items() if k in profile.variables})
    sub = lambda value: _substitute(profile.name, value, values)  # noqa: E731
    launcher = LAUNCHERS[profile.launcher]
    if "python" in overrides:
        if not launcher.runs_python:
            raise DeploymentError(f"profile {profile.name}: launcher {profile.launcher!r} does not run through "
                                  "python; the python override does not apply")
        launcher = launcher.with_python(sub(str(overrides["python"])))
    slots = [Flag(next(iter(launcher.model_option), MODEL_SLOT), None), Flag(HOST, None), Flag(PORT, None)]
    options = [Flag(f"--{name}", sub(value)) for name, value in {**dict(profile.flags), **dict(flags or {})}.items()]
    deployment = Deployment(
        backend=profile.backend, version=version, launcher=launcher,
        model=sub(str(overrides.get("model", profile.model))),
        endpoint=Endpoint(sub(str(overrides.get("host", profile.host))), int(overrides.get("port", profile.port))),
        flags=(*slots, *options), env={k: sub(v) for k, v in profile.env.items()}, profile_name=profile.name)
    try:
        deployment.settings  # every setting read once here: `reasoning-parser: true` is a bad profile, not a crash
    except table.SettingError as exc:
        if exc.value is None:  # an unreadable value is left to the engine's own parser, whose message says more
            raise DeploymentError(f"profile {profile.name}: {exc}") from None
    return deployment


def _substitute(name: str, value: Any, values: Mapping[str, str]) -> Any:
    """`{variable}` replaced in every string of `value` (mapping keys and list items included)."""
    if isinstance(value, dict):
        return {_substitute(name, k, values): _substitute(name, v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(name, v, values) for v in value]
    if not isinstance(value, str):
        return value

    def repl(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise DeploymentError(f"profile {name}: variable {key!r} has no value; pass it as an override "
                                  f"({key}=...)")
        return values[key]

    return _VARIABLE.sub(repl, value)


def _is_value(token: str) -> bool:
    if not token.startswith("-") or token == "-":
        return True
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_options(args: list[str] | tuple[str, ...], backend: str | None = None,
                 version: str | None = None) -> list[Flag]:
    """A foreign command line's options (after the launcher) in order. A table switch takes no value, a table
    setting and the model / host / port take the next token, any other option the value tokens that follow."""
    out: list[Flag] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if _is_value(token):
            out.append(Flag(POSITIONAL, token))
            continue
        option, eq, inline = token.partition("=")
        if eq:
            out.append(Flag(option, inline, inline=True))
            continue
        row = table.row_of(option, backend, version)
        if row is not None and row.is_switch:
            out.append(Flag(option, True))
        elif row is not None or option in (*MODEL_OPTIONS, HOST, PORT):
            out.append(Flag(option, args[i] if i < len(args) else True))
            i += 1
        else:
            start = i
            while i < len(args) and _is_value(args[i]):
                i += 1
            taken = list(args[start:i])
            out.append(Flag(option, True if not taken else taken[0] if len(taken) == 1 else taken))
    return out


def read_engine_args(args: list[str] | tuple[str, ...], backend: str | None = None,
                     version: str | None = None) -> Settings:
    """The settings of engine arguments given without a launcher (`plan --flag`, boot logs, lint)."""
    return settings_of(read_options(args, backend, version), backend, version)


def split_command(text: str, comments: bool = False) -> list[str]:
    """A pasted command or flag string split as a shell would (a script's `# ...` dropped with `comments`);
    DeploymentError on unbalanced quotes."""
    try:
        return shlex.split(text, comments=comments)
    except ValueError as exc:
        raise DeploymentError(str(exc)) from None


def launch_in(text: str, backend: str) -> Deployment | None:
    """The deployment a pasted shell command starts (after whatever precedes its launcher: env assignments,
    `docker run ...`, `uv run`), or None when it names no launcher."""
    tokens = split_command(text, comments=True)
    for i, token in enumerate(tokens):
        for launcher in LAUNCHERS.values():
            if token == launcher.prefix[-1] and (launcher.name != "vllm-serve" or i and tokens[i - 1].endswith("vllm")):
                head = (*tokens[max(i + 1 - len(launcher.prefix), 0):i], token)
                return from_argv([*head, *tokens[i + 1:]], backend, launcher=replace(launcher, prefix=head))
    return None


def from_argv(argv: list[str] | tuple[str, ...], backend: str, env: Mapping[str, str] | None = None,
              version: str | None = None, profile_name: str = "", launcher: Launcher | None = None) -> Deployment:
    """The deployment a foreign command line starts (launcher, options in place); argv() renders it back.
    `launcher`: the one found in the command (else read from its first tokens)."""
    if backend not in DEFAULT_PORT:
        raise ValueError(f"backend must be one of {tuple(DEFAULT_PORT)}, got {backend!r}")
    launcher = launcher or launcher_of_argv(argv, backend)
    flags = read_options(list(argv[len(launcher.prefix):]), backend, version)
    if launcher.name == "vllm-serve" and flags and flags[0].option == POSITIONAL:
        flags[0] = Flag(MODEL_SLOT, flags[0].value)
    model = _last(flags, *MODEL_OPTIONS) or (flags[0].value if flags and flags[0].option == MODEL_SLOT else "")
    port = _last(flags, PORT)
    return Deployment(backend=backend, version=version, launcher=launcher, model=str(model or ""),
                      endpoint=Endpoint(str(_last(flags, HOST) or DEFAULT_HOST),
                                        int(port) if port else DEFAULT_PORT[backend]),
                      flags=tuple(flags), env=dict(env or {}), profile_name=profile_name)


def _last(flags: list[Flag], *options: str) -> Any:
    found = [f.value for f in flags if f.option in options and isinstance(f.value, str)]
    return found[-1] if found else None
