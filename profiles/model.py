"""Profile data model: a known-good deployment, validated at load and rendered to a command line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn

from doctor import shellquote
from doctor.deployment import Deployment, DeploymentError, Flag, from_profile
from doctor.deployment.launcher import DEFAULT_LAUNCHER, LAUNCHERS
from doctor.deployment.table import field_names
from doctor.errors import DataError, DoctorError
from doctor.flags.values import AUTO_LENGTH, AUTO_LENGTH_SINCE
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from profiles import values

BACKENDS = ("vllm", "sglang")
NVLINK_VALUES = ("required", "wanted", "no")
OVERRIDE_KEYS = ("model", "host", "port", "python")
PROVENANCE_KEYS = ("repository", "file", "commit", "date", "entry")
_FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class ProfileError(DataError):
    """A profile file is malformed or a render request is invalid; the message names file and field."""


@dataclass(frozen=True)
class Hardware:
    """What the profile needs from the machine."""

    gpu_count: int
    min_gpu_memory_gib: float
    min_compute_capability: str
    nvlink: str = "wanted"
    device: str = "cuda"
    gpu: str | None = None   # the GPU (catalogue name) the profile was written and planned for

    @property
    def min_cc_tuple(self) -> tuple[int, int]:
        """Minimum compute capability as (major, minor)."""
        major, minor = self.min_compute_capability.split(".")
        return int(major), int(minor)


@dataclass(frozen=True)
class RenderedCommand:
    """The exact process a profile starts: argv (launcher + backend flags) and extra environment."""

    argv: list[str]
    env: dict[str, str]
    backend: str
    launcher_len: int
    deployment: Deployment | None = field(default=None, compare=False)

    @property
    def backend_args(self) -> list[str]:
        """Arguments after the launcher prefix, as the backend's own parser sees them."""
        return self.argv[self.launcher_len:]

    def shell(self, one_flag_per_line: bool = True) -> str:
        """Shell text: env assignments then the command, one flag (with its value) per line."""
        lines = [f"export {k}={shellquote.quote(v)}" for k, v in sorted(self.env.items())]
        if not one_flag_per_line:
            return "\n".join(lines + [shellquote.join(self.argv)])
        parts: list[str] = [shellquote.join(self.argv[: self.launcher_len])]
        for token in self.backend_args:
            if token.startswith("-"):
                parts.append(shellquote.quote(token))
            else:
                parts[-1] += " " + shellquote.quote(token)
        return "\n".join(lines + [" \\\n  ".join(parts)])


@dataclass(frozen=True)
class Profile:
    """A known-good deployment: backend, version range, model, hardware (per node), env and flags.

    `nodes` > 1 spans several machines: profiles.multinode renders one command per node."""

    name: str
    description: str
    backend: str
    backend_version: SpecifierSet
    model: str
    hardware: Hardware
    sources: tuple[str, ...]
    launcher: str
    host: str
    port: int
    env: Mapping[str, str] = field(default_factory=dict)
    flags: Mapping[str, Any] = field(default_factory=dict)
    variables: Mapping[str, str | None] = field(default_factory=dict)
    path: Path | None = None
    nodes: int = 1
    provenance: Mapping[str, str] = field(default_factory=dict)   # where an imported profile came from

    def setting(self, *fields: str) -> Any:
        """The value of the first flag the profile sets for any of the table's `fields` (its own value), else None."""
        return self.flag(*field_names(self.backend, *fields))

    def flag(self, *names: str) -> Any:
        """Value of the first of `names` (flag names without --) set in the profile, else None."""
        return next((self.flags[n] for n in names if n in self.flags), None)

    # Attributes read by checks through CheckContext.option(name) (doctor/context.py).
    @property
    def tp(self) -> int | None:
        """Tensor-parallel size."""
        return self.setting("tp")

    @property
    def pp(self) -> int | None:
        """Pipeline-parallel size."""
        return self.setting("pp")

    @property
    def dp(self) -> int | None:
        """Data-parallel size (replicas)."""
        return self.setting("dp")

    tensor_parallel_size = tp
    pipeline_parallel_size = pp

    @property
    def quantization(self) -> str | None:
        """The quantization method, when the profile sets it (FP8 checkpoints need none)."""
        return self.setting("quantization")

    @property
    def gpu_memory_utilization(self) -> float | None:
        """vLLM's GPU memory fraction."""
        return self.setting("gpu_memory_utilization")

    @property
    def mem_fraction_static(self) -> float | None:
        """SGLang's static memory fraction."""
        return self.setting("mem_fraction_static")

    @property
    def max_model_len(self) -> int | None:
        """Context length (AUTO_LENGTH for vLLM's `auto`, fitted to the KV cache)."""
        value = self.setting("max_model_len")
        return AUTO_LENGTH if isinstance(value, str) else value

    def deployment(self, overrides: Mapping[str, Any] | None = None, flags: Mapping[str, Any] | None = None,
                   version: str | None = None) -> Deployment:
        """The typed deployment (doctor.deployment.from_profile); ProfileError on a bad override or variable."""
        try:
            return from_profile(self, overrides, flags, version)
        except DeploymentError as exc:
            raise ProfileError(str(exc)) from None

    def render(self, overrides: Mapping[str, Any] | None = None) -> RenderedCommand:
        """Render to argv/env. `overrides` may set model, host, port, python and any declared variable.

        `python` replaces the interpreter of python-launched profiles (e.g. the vLLM venv's python).

        Booleans render as a bare flag (true) or `--no-FLAG` (false); dicts as compact JSON;
        lists as repeated values after one flag. Raises ProfileError on unknown keys or missing variables.
        """
        return rendered(self.deployment(overrides))

    def checked_overrides(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Known keys only, each value of the right type: a port number, a host, non-empty one-line text."""
        unknown = sorted(set(map(str, overrides)) - set(OVERRIDE_KEYS) - set(self.variables))
        if unknown:
            allowed = ", ".join(list(OVERRIDE_KEYS) + sorted(self.variables))
            raise ProfileError(f"profile {self.name}: unknown override {unknown[0][:64]!r} (allowed: {allowed})")
        rules = {"port": values.port, "host": values.host}
        checked: dict[str, Any] = {}
        for key, value in overrides.items():
            rule = rules.get(key, lambda x: values.text(str(x) if isinstance(x, (int, float)) else x))
            try:
                checked[key] = rule(value)
            except values.ValueRuleError as exc:
                raise ProfileError(f"profile {self.name}: override {key}: {exc}") from None
        return checked


def rendered(deployment: Deployment) -> RenderedCommand:
    """The deployment's command line and environment as a RenderedCommand."""
    return RenderedCommand(argv=deployment.argv(), env=dict(deployment.env), backend=deployment.backend,
                           launcher_len=len(deployment.launcher.prefix), deployment=deployment)


def render_flag(flag: str, value: Any) -> list[str]:
    """One profile flag as argv tokens: true -> --flag, false -> --no-flag, dict -> JSON, list -> values."""
    return Flag(f"--{flag}", value).render()


def parse_profile(data: Any, origin: str, path: Path | None = None) -> Profile:
    """Validate a decoded YAML mapping and build a Profile; errors name `origin` and the field."""
    v = _Validator(origin)
    if not isinstance(data, dict):
        got = "an empty document" if data is None else type(data).__name__
        raise ProfileError(f"{origin}: a profile must be a YAML mapping, got {got}")
    known = {"name", "description", "backend", "backend_version", "model", "hardware", "sources", "launcher",
             "host", "port", "env", "flags", "variables", "nodes", "provenance"}
    for key in data:
        if key not in known:
            v.fail(str(key)[:64], f"unknown field (known: {', '.join(sorted(known))})")
    name = v.check("name", data.get("name"), _name)
    backend = v.choice(data, "backend", BACKENDS)
    launcher = data.get("launcher", DEFAULT_LAUNCHER[backend])
    if not isinstance(launcher, str) or launcher not in LAUNCHERS or not launcher.startswith(backend):
        allowed = [k for k in LAUNCHERS if k.startswith(backend)]
        v.fail("launcher", f"must be one of {allowed}, got {values.show(launcher)}")
    spec_text = v.check("backend_version", data.get("backend_version"), lambda x: values.text(x, limit=200))
    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier:
        v.fail("backend_version", f"not a version range: {spec_text!r} (e.g. '>=0.17.0,<0.35')")
    hw = data.get("hardware")
    if not isinstance(hw, dict):
        v.fail("hardware", "must be a mapping with gpu_count, min_gpu_memory_gib, min_compute_capability")
    hardware = Hardware(
        gpu_count=v.check("hardware.gpu_count", hw.get("gpu_count"), lambda x: values.integer(x, 0, values.MAX_GPUS)),
        min_gpu_memory_gib=float(v.check("hardware.min_gpu_memory_gib", hw.get("min_gpu_memory_gib"),
                                         lambda x: values.number(x, 0, 1e6))),
        min_compute_capability=v.cc(hw),
        nvlink=v.choice(hw, "hardware.nvlink", NVLINK_VALUES, default="wanted"),
        device=v.choice(hw, "hardware.device", ("cuda", "cpu"), default="cuda"),
        gpu=None if hw.get("gpu") is None else v.check("hardware.gpu", hw.get("gpu"), values.text),
    )
    sources = data.get("sources")
    if not isinstance(sources, list) or not sources or len(sources) > values.MAX_LIST \
            or not all(isinstance(s, str) and s and len(s) <= values.MAX_TEXT for s in sources):
        v.fail("sources", "must be a non-empty list of citations (URL or repo path)")
    auto_length = backend == "vllm" and _floor(spec) >= Version(AUTO_LENGTH_SINCE)
    flags = data.get("flags") or {}
    if not isinstance(flags, dict) or len(flags) > values.MAX_LIST:
        v.fail("flags", "must be a mapping of flag name (without --) to value")
    for flag, value in flags.items():
        if not isinstance(flag, str) or not _FLAG_NAME.match(flag) or len(flag) > 128:
            v.fail(f"flags.{str(flag)[:64]}", "flag names are lower-case, dash-separated, without the leading --")
        if flag in ("model", "model-path", "host", "port"):
            v.fail(f"flags.{flag}", "set this with the top-level model/host/port fields")
        v.check(f"flags.{flag}", value, lambda x, f=flag: values.flag_value(f, x, auto_length))
    env = data.get("env") or {}
    if not isinstance(env, dict) or len(env) > values.MAX_LIST:
        v.fail("env", "must be a mapping of NAME: value")
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key) or len(key) > 128:
            v.fail(f"env.{str(key)[:64]}", "environment variable names are UPPER_CASE")
        v.check(f"env.{key}", value, values.scalar)
    variables = data.get("variables") or {}
    if not isinstance(variables, dict) or len(variables) > values.MAX_LIST:
        v.fail("variables", "must be a mapping of name: default (null = required)")
    for key, value in variables.items():
        if not isinstance(key, str) or not values.VARIABLE_NAME.match(key):
            v.fail(f"variables.{str(key)[:64]}", "variable names are lower_case words (referenced as {name})")
        if value is not None:
            v.check(f"variables.{key}", value, values.scalar)
    nodes = v.check("nodes", data.get("nodes", 1), lambda x: values.integer(x, 1, 1024))
    provenance = data.get("provenance") or {}
    if not isinstance(provenance, dict) or not set(provenance) <= set(PROVENANCE_KEYS):
        v.fail("provenance", f"must be a mapping of {', '.join(PROVENANCE_KEYS)}")
    for key, value in provenance.items():
        v.check(f"provenance.{key}", value, lambda x: values.text(x, limit=values.MAX_TEXT))
    port = v.check("port", data.get("port", 8000 if backend == "vllm" else 30000), values.port)
    return Profile(
        name=name,
        description=v.check("description", data.get("description"), lambda x: values.text(x, single_line=False)),
        backend=backend,
        backend_version=spec,
        model=v.check("model", data.get("model"), values.text),
        hardware=hardware,
        sources=tuple(sources),
        launcher=launcher,
        host=v.check("host", data.get("host", "127.0.0.1"), values.host),
        port=port,
        env={str(k): _scalar(val) for k, val in env.items()},
        flags=dict(flags),
        variables={str(k): (None if val is None else _scalar(val)) for k, val in variables.items()},
        path=path,
        nodes=nodes,
        provenance={str(k): str(val) for k, val in provenance.items()},
    )


def _floor(spec: SpecifierSet) -> Version:
    """The lowest release `spec` admits, as far as its lower bounds say (0 when it has none)."""
    floors = [Version("0")]
    for item in spec:
        if item.operator in (">=", ">", "==", "~=", "==="):
            try:
                floors.append(Version(item.version.removesuffix(".*")))
            except InvalidVersion:
                continue
    return max(floors)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not values.NAME.match(value):
        raise values.ValueRuleError(f"must be 1-{values.MAX_NAME} letters, digits, '.', '_' or '-', starting with "
                                    f"a letter or digit; got {values.show(value)}")
    return value


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class _Validator:
    """Field checks that raise one ProfileError naming the file and the field."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, field_name: str, why: str) -> NoReturn:
        raise ProfileError(f"{self.origin}: field '{field_name}': {why}")

    def check(self, field_name: str, value: Any, rule: Callable[[Any], Any]) -> Any:
        """`rule(value)`, with its ValueRuleError turned into a ProfileError naming the field."""
        try:
            return rule(value)
        except values.ValueRuleError as exc:
            self.fail(field_name, str(exc))

    def choice(self, data: dict, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = data.get(key.split(".")[-1], default)
        if not isinstance(value, str) or value not in choices:
            self.fail(key, f"must be one of {', '.join(choices)}; got {values.show(value)}")
        return value

    def cc(self, hw: dict) -> str:
        value = hw.get("min_compute_capability", "")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool) \
                or not re.fullmatch(r"\d{1,2}\.\d{1,2}", str(value)):
            self.fail("hardware.min_compute_capability", f"must look like '8.0' or '8.9'; got {values.show(value)}")
        return str(value)


def load_file(path: Path) -> Profile:
    """Read (regular file, at most PROFILE_MAX_BYTES) and validate one profile YAML file, without alias bombs."""
    from doctor.safeio import PROFILE_MAX_BYTES, read_text
    from doctor.safeyaml import load_yaml

    try:
        data = load_yaml(read_text(path, "profile", PROFILE_MAX_BYTES), str(path))
    except ProfileError:
        raise
    except DoctorError as exc:
        raise ProfileError(str(exc)) from None
    return parse_profile(data, str(path), path)
