"""The frozen Deployment: what one engine process serves, typed, built once; `argv()` only renders it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from doctor import shellquote
from doctor.deployment import table
from doctor.deployment.launcher import Launcher

DEFAULT_PORT = {"vllm": 8000, "sglang": 30000}
DEFAULT_HOST = "127.0.0.1"
MODEL_SLOT = "<model>"   # the positional model (`vllm serve MODEL`)
POSITIONAL = ""          # a stray positional token of a foreign command line, kept in its place
HOST, PORT = "--host", "--port"
MODEL_OPTIONS = ("--model", "--model-path")


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens."""

    host: str
    port: int

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True)
class Flag:
    """One option of the command line in its place: True renders a bare switch, False `--no-NAME`, a mapping
    compact JSON, a list repeated values, anything else one value (`--name=value` when `inline`). The model,
    host and port options are slots: they render the Deployment's own fields."""

    option: str
    value: Any = True
    inline: bool = False

    def render(self) -> list[str]:
        value = self.value
        if value is True:
            return [self.option]
        if value is False:
            return [f"--no-{self.option[2:]}"]
        if isinstance(value, dict):
            value = json.dumps(value, separators=(",", ":"))
        elif isinstance(value, (list, tuple)):
            return [self.option, *(str(v) for v in value)]
        if self.option in (POSITIONAL, MODEL_SLOT):
            return [str(value)]
        return [f"{self.option}={value}"] if self.inline else [self.option, str(value)]


class Settings(Mapping[str, Any]):
    """The typed engine settings a Deployment sets (table.SETTINGS fields); an unset field reads as None."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in _FIELDS:
            raise AttributeError(f"no engine setting {name!r} (see doctor/deployment/table.py)")
        return self._values.get(name)

    def __repr__(self) -> str:
        return f"Settings({self._values!r})"


_FIELDS = {row.field for row in table.SETTINGS}


@dataclass(frozen=True)
class Deployment:
    """One engine process: backend and its resolved version, launcher, model, endpoint, the command-line options
    in order (typed settings read through the one table, the rest kept as given) and the environment."""

    backend: str
    version: str | None
    launcher: Launcher
    model: str
    endpoint: Endpoint
    flags: tuple[Flag, ...]
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    profile_name: str = ""

    @cached_property
    def settings(self) -> Settings:
        """Every table setting the options set (the last occurrence wins). Raises table.SettingError on a value
        that does not read as its kind."""
        return settings_of(self.flags, self.backend, self.version)

    @property
    def remaining(self) -> tuple[Flag, ...]:
        """The options that are neither a slot nor a table setting, in order."""
        return tuple(f for f in self.flags
                     if f.option not in SLOTS and _field_of(f, self.backend, self.version) is None)

    def option_texts(self) -> dict[str, str]:
        """Each engine option (slots excluded) as its command line spells it, `--flag: value` ('' for a bare
        switch, compact JSON for a mapping); the last occurrence wins."""
        texts: dict[str, str] = {}
        for flag in self.flags:
            if flag.option in SLOTS:
                continue
            words = flag.render()
            name, _, inline = words[0].partition("=")
            texts[name] = inline or " ".join(words[1:])
        return texts

    @property
    def served_model_name(self) -> str:
        """The name clients ask for: the served-model-name setting, else the model."""
        return self.setting("served_model_name") or self.model

    @property
    def api_key(self) -> str | None:
        """The bearer token the server wants: its API-key setting, else vLLM's VLLM_API_KEY."""
        return self.setting("api_key") or self.env.get("VLLM_API_KEY")

    def argv(self) -> list[str]:
        """The command line: launcher, then every option in order, the slots holding model, host and port."""
        out = list(self.launcher.prefix)
        for flag in self.flags:
            if flag.option in (MODEL_SLOT, *MODEL_OPTIONS):
                flag = replace(flag, value=self.model)
            elif flag.option == HOST:
                flag = replace(flag, value=self.endpoint.host)
            elif flag.option == PORT:
                flag = replace(flag, value=str(self.endpoint.port))
            out += flag.render()
        return out

    def engine_args(self) -> list[str]:
        """The arguments the engine's own parser sees (after the launcher)."""
        return self.argv()[len(self.launcher.prefix):]

    def shell(self) -> str:
        """One copy-pasteable line: env assignments, then the command."""
        env = " ".join(f"{k}={shellquote.quote(v)}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + shellquote.join(self.argv())

    def with_flag(self, option: str, value: Any = True) -> "Deployment":
        """Every occurrence of `option` (`--name`) removed and `option value` appended last."""
        kept = tuple(f for f in self.flags if f.option != option)
        return replace(self, flags=(*kept, Flag(option, value)))

    def setting(self, name: str) -> Any:
        """One setting, read from its own options only (None when unset); SettingError on an unreadable value."""
        mine = [f for f in self.flags if f.option not in SLOTS and _field_of(f, self.backend, self.version) == name]
        return settings_of(mine, self.backend, self.version).get(name)

    def with_setting(self, name: str, value: Any) -> "Deployment":
        """Every option of setting `name` removed and the backend's own name for it appended with `value`."""
        row = next(r for r in table.SETTINGS if r.field == name and r.names(self.backend)
                   and (not r.is_switch or r.value == value))
        kept = tuple(f for f in self.flags if f.option in SLOTS or _field_of(f, self.backend, self.version) != name)
        flag = Flag(f"--{row.names(self.backend)[0]}", True if row.is_switch else value)
        return replace(self, flags=(*kept, flag))

    def with_model_last(self) -> "Deployment":
        """The model option (not a positional model) moved to the end of the command line."""
        slot = next((f for f in self.flags if f.option in MODEL_OPTIONS), None)
        return self if slot is None else self.with_flag(slot.option, None)

    def with_model(self, model: str) -> "Deployment":
        return replace(self, model=model)

    def with_env(self, **env: str) -> "Deployment":
        return replace(self, env={**self.env, **env})

    def with_python(self, python: str | None) -> "Deployment":
        """Launched by the backend's interpreter (python launchers) or the console script next to it."""
        return replace(self, launcher=self.launcher.with_python(python)) if python else self

    def with_version(self, version: str | None) -> "Deployment":
        return replace(self, version=version) if version != self.version else self


SLOTS = (POSITIONAL, MODEL_SLOT, *MODEL_OPTIONS, HOST, PORT)


def _field_of(flag: Flag, backend: str, version: str | None) -> str | None:
    option = f"--no-{flag.option[2:]}" if flag.value is False else flag.option
    row = table.row_of(option, backend, version)
    return row.field if row is not None else None


def settings_of(flags: list[Flag] | tuple[Flag, ...], backend: str | None = None,
                version: str | None = None) -> Settings:
    """The typed settings `flags` set (the last occurrence wins); table.SettingError on an unreadable value."""
    values: dict[str, Any] = {}
    for flag in flags:
        if flag.option in SLOTS:
            continue
        found = table.read(flag.option, flag.value, backend, version)
        if found is not None:
            values[found[0]] = found[1]
    return Settings(values)
